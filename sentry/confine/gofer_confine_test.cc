// ConfineGofer (+ gofer::EnterProcRoot) in a forked child: host paths cannot be named,
// the FDs it holds still work, and what the gofer never needs kills it.
#include "sentry/confine/gofer_confine.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <string>

#include "gofer/host_fs.h"
#include "gtest/gtest.h"

namespace usentry::sentry::confine {
namespace {

class GoferConfineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/usentry-gofer-confine-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    FILE* f = fopen((dir_ + "/file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("data", f);
    fclose(f);
  }
  void TearDown() override {
    unlink((dir_ + "/file").c_str());
    unlink((dir_ + "/new").c_str());
    unlink((dir_ + "/secret").c_str());
    rmdir(dir_.c_str());
  }

  // Opens the directory, confines as the gofer does, runs `body`; returns the status.
  int Run(const std::function<int(int dir_fd)>& body,
          GoferIdentity identity = GoferIdentity::kCaller) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      if (geteuid() != 0 && unshare(CLONE_NEWUSER) != 0) _exit(100);
      int dir_fd = open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (dir_fd < 0) _exit(102);
      if (!gofer::EnterProcRoot().ok()) _exit(103);
      if (!ConfineGofer(identity).ok()) _exit(101);
      _exit(body(dir_fd));
    }
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return status;
  }

  std::string dir_;
};

TEST_F(GoferConfineTest, HostPathsAreGoneHeldFdsWork) {
  int status = Run([](int dir_fd) {
    if (open("/etc/passwd", O_RDONLY) >= 0) return 1;
    if (open("/proc/self/fd", O_RDONLY) >= 0) return 2;
    // Beneath a held FD, and reopened through its /proc/self/fd entry: both work.
    int f = openat(dir_fd, "file", O_RDONLY);
    if (f < 0) return 3;
    char buf[8] = {};
    if (read(f, buf, sizeof(buf)) != 4) return 4;
    int again = open(gofer::ProcFdPath(dir_fd).c_str(), O_RDONLY | O_DIRECTORY);
    if (again < 0) return 5;
    // Changes in a tree it holds are allowed.
    int n = openat(dir_fd == again ? dir_fd : again, "new", O_CREAT | O_WRONLY, 0600);
    if (n < 0) return 6;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  struct stat st;
  EXPECT_EQ(stat((dir_ + "/new").c_str(), &st), 0);
}

TEST_F(GoferConfineTest, SocketKills) {
  int status = Run([](int) { return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? 0 : 1; });
  ASSERT_TRUE(WIFSIGNALED(status)) << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST_F(GoferConfineTest, ExecKills) {
  int status = Run([](int) {
    char* argv[] = {const_cast<char*>("true"), nullptr};
    execve("/fd/0", argv, nullptr);
    return 1;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST_F(GoferConfineTest, NoPrivilegeBeyondFileAccess) {
  int status = Run([](int) {
    // Raising capabilities back is impossible; mount/unshare/ptrace are not even callable.
    return unshare(CLONE_NEWNS) == 0 ? 0 : 1;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

// The default view's gofer, started as root: it keeps nothing of root's. A file only
// root may read stays closed to it (a compromised sentry asking for one gets EACCES),
// what every host user may read it still serves, through its held FDs too.
TEST_F(GoferConfineTest, AsHostNobodyRootOnlyFilesAreClosed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs host root: otherwise the gofer keeps the caller's uid";
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(chmod((dir_ + "/file").c_str(), 0644), 0);
  FILE* f = fopen((dir_ + "/secret").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("root only", f);
  fclose(f);
  ASSERT_EQ(chmod((dir_ + "/secret").c_str(), 0600), 0);
  int status = Run(
      [](int dir_fd) {
        // (geteuid() is not on the gofer's allowlist: what it may open says who it is.)
        errno = 0;
        if (openat(dir_fd, "secret", O_RDONLY) >= 0 || errno != EACCES) return 2;
        int again = open(gofer::ProcFdPath(dir_fd).c_str(), O_RDONLY | O_DIRECTORY);
        if (again < 0) return 3;
        int pub = openat(again, "file", O_RDONLY);
        if (pub < 0) return 4;
        char buf[8] = {};
        if (read(pub, buf, sizeof(buf)) != 4) return 5;
        // Not even the file-access capabilities the caller's gofer keeps.
        if (openat(dir_fd, "new", O_CREAT | O_WRONLY, 0600) >= 0 || errno != EACCES) return 6;
        return 0;
      },
      GoferIdentity::kHostNobody);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace usentry::sentry::confine
