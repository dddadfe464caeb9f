// Job control: a stop signal's default action stops the whole process, wait4/waitid
// report the stop and the continue once each (WUNTRACED/WSTOPPED, WCONTINUED), the
// parent gets SIGCHLD CLD_STOPPED/CLD_CONTINUED unless SA_NOCLDSTOP, a stopped process
// runs no code, /proc/PID/stat says T, and a sleep interrupted by the stop continues
// to its deadline (restart_syscall).
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// A child that counts in shared memory until killed.
struct Counter {
  std::atomic<uint64_t>* n;
  pid_t pid;
};

Counter StartCounter() {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  auto* n = new (mem) std::atomic<uint64_t>(0);
  pid_t pid = fork();
  if (pid == 0) {
    while (true) n->fetch_add(1);
  }
  while (n->load() == 0) usleep(1000);
  return {n, pid};
}

char ProcState(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t paren = all.rfind(')');
  return paren == std::string::npos || paren + 2 >= all.size() ? '?' : all[paren + 2];
}

TEST(JobControl, StopAndContinueAreReportedOnceEach) {
  Counter c = StartCounter();
  ASSERT_EQ(kill(c.pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(c.pid, &status, WUNTRACED), c.pid);
  ASSERT_TRUE(WIFSTOPPED(status)) << status;
  EXPECT_EQ(WSTOPSIG(status), SIGSTOP);
  EXPECT_EQ(waitpid(c.pid, &status, WUNTRACED | WNOHANG), 0);  // reported already
  EXPECT_EQ(ProcState(c.pid), 'T');
  // A stopped process runs no code.
  uint64_t at_stop = c.n->load();
  usleep(100 * 1000);
  EXPECT_EQ(c.n->load(), at_stop);
  ASSERT_EQ(kill(c.pid, SIGCONT), 0);
  ASSERT_EQ(waitpid(c.pid, &status, WCONTINUED), c.pid);
  EXPECT_TRUE(WIFCONTINUED(status)) << status;
  EXPECT_EQ(waitpid(c.pid, &status, WCONTINUED | WNOHANG), 0);
  int64_t deadline = NowMs() + 5000;
  while (c.n->load() == at_stop && NowMs() < deadline) usleep(1000);
  EXPECT_GT(c.n->load(), at_stop);  // running again
  kill(c.pid, SIGKILL);
  ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
  EXPECT_TRUE(WIFSIGNALED(status));
}

TEST(JobControl, WaitWithoutWuntracedDoesNotSeeTheStop) {
  Counter c = StartCounter();
  ASSERT_EQ(kill(c.pid, SIGTSTP), 0);
  int status = 0;
  // Give the stop time to happen; a plain WNOHANG wait reports nothing.
  usleep(100 * 1000);
  EXPECT_EQ(waitpid(c.pid, &status, WNOHANG), 0);
  ASSERT_EQ(waitpid(c.pid, &status, WUNTRACED), c.pid);
  EXPECT_TRUE(WIFSTOPPED(status));
  EXPECT_EQ(WSTOPSIG(status), SIGTSTP);
  // SIGKILL ends a stopped process.
  ASSERT_EQ(kill(c.pid, SIGKILL), 0);
  ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST(JobControl, WaitidStoppedAndContinuedWithWnowait) {
  Counter c = StartCounter();
  ASSERT_EQ(kill(c.pid, SIGSTOP), 0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, c.pid, &info, WSTOPPED | WNOWAIT), 0);
  EXPECT_EQ(info.si_code, CLD_STOPPED);
  EXPECT_EQ(info.si_status, SIGSTOP);
  EXPECT_EQ(info.si_pid, c.pid);
  info = {};
  ASSERT_EQ(waitid(P_PID, c.pid, &info, WSTOPPED), 0);  // still there after WNOWAIT
  EXPECT_EQ(info.si_code, CLD_STOPPED);
  info = {};
  ASSERT_EQ(waitid(P_PID, c.pid, &info, WSTOPPED | WNOHANG), 0);
  EXPECT_EQ(info.si_pid, 0);  // nothing new
  ASSERT_EQ(kill(c.pid, SIGCONT), 0);
  info = {};
  ASSERT_EQ(waitid(P_PID, c.pid, &info, WCONTINUED), 0);
  EXPECT_EQ(info.si_code, CLD_CONTINUED);
  EXPECT_EQ(info.si_status, SIGCONT);
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
}

volatile sig_atomic_t g_last_code = 0;
volatile sig_atomic_t g_count = 0;
void OnChld(int, siginfo_t* si, void*) {
  g_last_code = si->si_code;
  g_count = g_count + 1;
}

TEST(JobControl, SigchldTellsTheParentUnlessNoCldStop) {
  struct sigaction sa {};
  sa.sa_sigaction = OnChld;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGCHLD, &sa, &old), 0);
  Counter c = StartCounter();
  g_count = 0;
  ASSERT_EQ(kill(c.pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(c.pid, &status, WUNTRACED), c.pid);
  for (int i = 0; i < 1000 && g_count == 0; ++i) usleep(1000);
  EXPECT_EQ(g_last_code, CLD_STOPPED);
  ASSERT_EQ(kill(c.pid, SIGCONT), 0);
  ASSERT_EQ(waitpid(c.pid, &status, WCONTINUED), c.pid);
  for (int i = 0; i < 1000 && g_count < 2; ++i) usleep(1000);
  EXPECT_EQ(g_last_code, CLD_CONTINUED);
  // With SA_NOCLDSTOP neither comes.
  sa.sa_flags |= SA_NOCLDSTOP;
  ASSERT_EQ(sigaction(SIGCHLD, &sa, nullptr), 0);
  int before = g_count;
  ASSERT_EQ(kill(c.pid, SIGSTOP), 0);
  ASSERT_EQ(waitpid(c.pid, &status, WUNTRACED), c.pid);
  usleep(50 * 1000);
  EXPECT_EQ(g_count, before);
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
  sigaction(SIGCHLD, &old, nullptr);
}

TEST(JobControl, ASleepStoppedAndContinuedEndsAtItsDeadline) {
  int p[2];
  ASSERT_SYS_OK(pipe(p));
  pid_t pid = fork();
  if (pid == 0) {
    int64_t start = NowMs();
    timespec req{0, 600 * 1000 * 1000};
    int rc = nanosleep(&req, nullptr);
    int64_t took = NowMs() - start;
    (void)!write(p[1], &took, sizeof(took));
    _exit(rc == 0 ? 0 : 1);
  }
  usleep(100 * 1000);
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  usleep(300 * 1000);
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  int64_t took = 0;
  ASSERT_EQ(read(p[0], &took, sizeof(took)), static_cast<ssize_t>(sizeof(took)));
  EXPECT_GE(took, 590);
  EXPECT_LT(took, 880) << "the sleep started over instead of keeping its deadline";
  close(p[0]);
  close(p[1]);
}

}  // namespace
}  // namespace syscall_test
