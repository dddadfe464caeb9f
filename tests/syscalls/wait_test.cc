// wait4/waitpid/waitid: statuses, ECHILD, WNOHANG, and auto-reaping when SIGCHLD is
// ignored.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

TEST(Wait, ReportsTheExitCode) {
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) _exit(7);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

TEST(Wait, ReportsTheKillingSignal) {
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(Wait, NoChildrenIsEchild) {
  EXPECT_ERRNO(waitpid(-1, nullptr, WNOHANG), ECHILD);
  EXPECT_ERRNO(waitpid(getpid(), nullptr, 0), ECHILD);
}

TEST(Wait, WnohangWithARunningChildReturnsZero) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    char c;
    close(fds[1]);
    (void)!read(fds[0], &c, 1);
    _exit(0);
  }
  close(fds[0]);
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0);
  close(fds[1]);
  EXPECT_EQ(waitpid(pid, nullptr, 0), pid);
}

// With SIGCHLD ignored children are reaped as they exit; a blocked wait then fails with
// ECHILD once none is left instead of sleeping forever.
TEST(Wait, IgnoredSigchldReapsAndBlockedWaitGetsEchild) {
  struct sigaction old {};
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ASSERT_SYS_OK(sigaction(SIGCHLD, &ign, &old));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    usleep(50 * 1000);
    _exit(3);
  }
  EXPECT_ERRNO(waitpid(pid, nullptr, 0), ECHILD);
  sigaction(SIGCHLD, &old, nullptr);
}

TEST(Waitid, WnowaitLeavesTheChildWaitable) {
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) _exit(5);
  siginfo_t info{};
  ASSERT_SYS_OK(waitid(P_PID, pid, &info, WEXITED | WNOWAIT));
  EXPECT_EQ(info.si_pid, pid);
  EXPECT_EQ(info.si_status, 5);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 5);
}

}  // namespace
}  // namespace syscall_test
