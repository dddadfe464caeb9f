// ConfineSentry in a forked child: the layers hold (empty root, open/socket/namespace
// syscalls kill) and the allowed ones still work.
#include "sentry/confine/confine.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "gtest/gtest.h"

namespace usentry::sentry::confine {
namespace {

// Runs `body` in a forked child that has its own mount namespace (as root; otherwise in a
// user namespace too) and returns the child's wait status. body's return is the exit code.
int RunInChild(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int flags = CLONE_NEWNS | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
    if (unshare(flags) != 0) {
      perror("unshare");
      _exit(100);
    }
    _exit(body());
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

// Confines with all layers; exits 101 if confinement itself failed.
int ConfineOrExit(ConfineOptions options = {}) {
  absl::StatusOr<ConfineReport> report = ConfineSentry(options);
  if (!report.ok()) {
    fprintf(stderr, "%s\n", std::string(report.status().message()).c_str());
    _exit(101);
  }
  return 0;
}

void ExpectKilledBySigsys(int status) {
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(ConfineTest, OpenKillsTheProcess) {
  int status = RunInChild([] {
    ConfineOrExit();
    int fd = open("/etc/passwd", O_RDONLY);
    return fd >= 0 ? 1 : 2;  // either way the filter failed to kill us
  });
  ExpectKilledBySigsys(status);
}

TEST(ConfineTest, SocketKillsTheProcess) {
  int status = RunInChild([] {
    ConfineOrExit();
    socket(AF_INET, SOCK_STREAM, 0);
    return 1;
  });
  ExpectKilledBySigsys(status);
}

TEST(ConfineTest, CloneWithNamespaceFlagKillsTheProcess) {
  int status = RunInChild([] {
    ConfineOrExit();
    syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    return 1;
  });
  ExpectKilledBySigsys(status);
}

TEST(ConfineTest, AllowedSyscallsStillWork) {
  int status = RunInChild([] {
    ConfineOrExit();
    if (getpid() <= 0) return 3;
    // Plain fork (clone without namespace flags) and wait are what stubs need.
    pid_t child = fork();
    if (child == 0) _exit(7);
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 7) return 4;
    const char msg[] = "";
    if (write(STDERR_FILENO, msg, 0) != 0) return 5;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// ConfineSentry loads the built-in program (sentry_bpf_program.h) unless debugging, for
// either platform: the systrap variant kills ptrace, the ptrace variant lets it through.
int ConfineBuiltInOrExit(bool allow_ptrace) {
  ConfineOptions options;
  options.allow_ptrace = allow_ptrace;
  absl::StatusOr<ConfineReport> report = ConfineSentry(options);
  if (!report.ok() || report->ToString().find("built in") == std::string::npos) _exit(101);
  return 0;
}

TEST(ConfineTest, BuiltInProgramIsTheAllowlist) {
  int killed = RunInChild([] {
    ConfineBuiltInOrExit(false);
    int fd = open("/etc/passwd", O_RDONLY);
    return fd >= 0 ? 1 : 2;
  });
  ExpectKilledBySigsys(killed);
  int ptrace_killed = RunInChild([] {
    ConfineBuiltInOrExit(false);
    syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);  // systrap's allowlist has no ptrace
    return 1;
  });
  ExpectKilledBySigsys(ptrace_killed);
  int ptrace_allowed = RunInChild([] {
    ConfineBuiltInOrExit(true);
    // Not traced, so PTRACE_TRACEME succeeds; the systrap variant killed the process.
    return syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0) == 0 ? 0 : 5;
  });
  ASSERT_TRUE(WIFEXITED(ptrace_allowed)) << "signal " << WTERMSIG(ptrace_allowed);
  EXPECT_EQ(WEXITSTATUS(ptrace_allowed), 0);
  int allowed = RunInChild([] {
    ConfineBuiltInOrExit(false);
    pid_t child = fork();
    if (child == 0) _exit(7);
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 7) return 4;
    return getpid() > 0 ? 0 : 3;
  });
  ASSERT_TRUE(WIFEXITED(allowed)) << "signal " << WTERMSIG(allowed);
  EXPECT_EQ(WEXITSTATUS(allowed), 0);
}

// With the calibration thread still running, ConfineSentry filters the calling thread
// without TSYNC: the sentry survives the calibration (which reads /sys), and a thread
// started after confinement inherits the filter.
TEST(ConfineTest, CalibrationRunsThroughConfinementAndLaterThreadsAreFiltered) {
  int survived = RunInChild([] {
    StartCalibration();
    ConfineOrExit();
    FinishCalibration();
    return getpid() > 0 ? 0 : 3;
  });
  ASSERT_TRUE(WIFEXITED(survived)) << "signal " << WTERMSIG(survived);
  EXPECT_EQ(WEXITSTATUS(survived), 0);
  int killed = RunInChild([] {
    StartCalibration();
    ConfineOrExit();
    FinishCalibration();
    std::thread([] { (void)open("/etc/passwd", O_RDONLY); }).join();
    return 1;
  });
  ExpectKilledBySigsys(killed);
}

// The calibration thread's own filter: it may read files, sleep and exit; anything
// else fails with EPERM, on that thread only.
TEST(ConfineTest, CalibrationThreadFiltersItself) {
  int status = RunInChild([] {
    int result = 0;
    std::thread([&result] {
      if (!ConfineCalibrationThread().ok()) {
        result = 2;
        return;
      }
      char c;
      int fd = open("/proc/self/status", O_RDONLY);
      if (fd < 0 || read(fd, &c, 1) != 1 || close(fd) != 0) result = 3;
      timespec ts{0, 1000};
      if (nanosleep(&ts, nullptr) != 0) result = 4;
      errno = 0;
      if (open("/dev/null", O_RDWR) != -1 || errno != EPERM) result = 5;
      errno = 0;
      if (open("/proc/self/status", O_RDONLY | O_APPEND) != -1 || errno != EPERM) result = 6;
      errno = 0;
      if (socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != EPERM) result = 7;
      errno = 0;
      if (syscall(SYS_getppid) != -1 || errno != EPERM) result = 8;
    }).join();
    if (result != 0) return result;
    // The other threads are not filtered.
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    if (sock < 0) return 9;
    close(sock);
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) return 10;
    close(fd);
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ConfineTest, RootIsEmptyAfterPivot) {
  int status = RunInChild([] {
    ConfineOptions options;
    options.seccomp = false;  // we need opendir to look
    ConfineOrExit(options);
    DIR* dir = opendir("/");
    if (dir == nullptr) return 2;
    int entries = 0;
    while (dirent* e = readdir(dir)) {
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++entries;
    }
    closedir(dir);
    if (entries != 0) return 3;
    // The host's files are gone, and the new root cannot be written.
    if (access("/etc/passwd", F_OK) == 0) return 4;
    if (mkdir("/x", 0755) == 0 || errno != EROFS) return 5;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ConfineTest, CapabilitiesAreGone) {
  int status = RunInChild([] {
    ConfineOptions options;
    options.seccomp = false;
    ConfineOrExit(options);
    // CAP_SYS_ADMIN would allow this mount; the bounding set must be empty too.
    if (mount("none", "/", "tmpfs", 0, nullptr) == 0) return 2;
    if (prctl(PR_CAPBSET_READ, 0 /* CAP_CHOWN */) != 0) return 3;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ConfineTest, ReportsMissingMountNamespace) {
  int status = RunInChild([] {
    ConfineOptions options;
    options.own_mount_namespace = false;
    options.seccomp = false;
    absl::StatusOr<ConfineReport> report = ConfineSentry(options);
    if (!report.ok()) return 2;
    std::vector<std::string> missing = report->Missing();
    if (missing.size() != 2) return 3;
    if (missing[0] != "empty-root (no mount namespace)") return 4;
    if (missing[1] != "seccomp (disabled)") return 6;
    // The root was left alone.
    if (access("/etc/passwd", F_OK) != 0) return 5;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace usentry::sentry::confine
