// alarm(2), getitimer/setitimer(2), POSIX timers (timer_create(2) and friends) and
// timerfd (timerfd_create(2) and friends): expiry, periodic re-arming, overruns,
// remaining-time reports, errnos, and what fork and exec keep.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "gtest/gtest.h"
#include "tests/syscalls/signal_util.h"
#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

std::atomic<int> g_alarms{0};
std::atomic<int> g_last_code{0};

void CountingHandler(int, siginfo_t* info, void*) {
  g_alarms++;
  g_last_code = info->si_code;
}

// Waits until `count` reaches `n` or `limit_s` seconds pass, with the (otherwise
// blocked) signals unblocked only inside ppoll so no wakeup is missed.
void WaitForCount(std::atomic<int>& count, int n, double limit_s) {
  sigset_t empty;
  sigemptyset(&empty);
  double end = MonotonicSeconds() + limit_s;
  while (count.load() < n && MonotonicSeconds() < end) {
    timespec slice = {0, 100000000};
    ppoll(nullptr, 0, &slice, &empty);
  }
}

void DisarmReal() {
  itimerval zero = {};
  setitimer(ITIMER_REAL, &zero, nullptr);
}

// ---- alarm ---------------------------------------------------------------------------

TEST(Alarm, ZeroCancelsAndReturnsRemaining) {
  EXPECT_EQ(alarm(10), 0u);
  EXPECT_EQ(alarm(0), 10u);  // 9.99... rounds to the nearest second
  EXPECT_EQ(alarm(0), 0u);   // nothing pending any more
  itimerval cur;
  ASSERT_SYS_OK(getitimer(ITIMER_REAL, &cur));
  EXPECT_EQ(cur.it_value.tv_sec, 0);
  EXPECT_EQ(cur.it_value.tv_usec, 0);
}

TEST(Alarm, ReplacingReturnsPrevious) {
  EXPECT_EQ(alarm(30), 0u);
  unsigned prev = alarm(5);
  EXPECT_EQ(prev, 30u);
  itimerval cur;
  ASSERT_SYS_OK(getitimer(ITIMER_REAL, &cur));
  EXPECT_GE(cur.it_value.tv_sec, 4);
  EXPECT_LE(cur.it_value.tv_sec, 5);
  alarm(0);
}

TEST(Alarm, SubSecondRemainderReportsOne) {
  itimerval it = {};
  it.it_value.tv_usec = 300000;  // 0.3 s: rounds to 0, but a pending alarm reports 1
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  EXPECT_EQ(alarm(0), 1u);
}

TEST(Alarm, FiresSigalrmFromKernel) {
  ScopedBlock block({SIGALRM});
  ScopedHandler h(SIGALRM, CountingHandler);
  g_alarms = 0;
  double start = MonotonicSeconds();
  alarm(1);
  WaitForCount(g_alarms, 1, 5);
  double elapsed = MonotonicSeconds() - start;
  EXPECT_EQ(g_alarms.load(), 1);
  EXPECT_EQ(g_last_code.load(), SI_KERNEL);
  EXPECT_GE(elapsed, 0.9);
  EXPECT_LT(elapsed, 4.0);
  EXPECT_EQ(alarm(0), 0u);  // one-shot: nothing left
}

TEST(Alarm, SurvivesExec) {
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    alarm(1);
    execl("/bin/sleep", "sleep", "10", (char*)nullptr);
    _exit(127);
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGALRM);
}

// ---- interval timers -----------------------------------------------------------------

TEST(Itimer, GetReportsRemainingAndInterval) {
  itimerval it = {};
  it.it_value.tv_sec = 5;
  it.it_interval.tv_sec = 1;
  it.it_interval.tv_usec = 250000;
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  itimerval cur;
  ASSERT_SYS_OK(getitimer(ITIMER_REAL, &cur));
  EXPECT_EQ(cur.it_interval.tv_sec, 1);
  EXPECT_EQ(cur.it_interval.tv_usec, 250000);
  double v = cur.it_value.tv_sec + cur.it_value.tv_usec / 1e6;
  EXPECT_GT(v, 4.0);
  EXPECT_LE(v, 5.0);
  itimerval old;
  itimerval zero = {};
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &zero, &old));
  EXPECT_EQ(old.it_interval.tv_usec, 250000);
  EXPECT_GT(old.it_value.tv_sec + old.it_value.tv_usec / 1e6, 4.0);
  ASSERT_SYS_OK(getitimer(ITIMER_REAL, &cur));
  EXPECT_EQ(cur.it_value.tv_sec, 0);
  EXPECT_EQ(cur.it_value.tv_usec, 0);
}

TEST(Itimer, InvalidArgs) {
  itimerval it = {};
  EXPECT_ERRNO(getitimer(static_cast<__itimer_which>(7), &it), EINVAL);
  EXPECT_ERRNO(setitimer(static_cast<__itimer_which>(-1), &it, nullptr), EINVAL);
  it.it_value.tv_usec = 1000000;
  EXPECT_ERRNO(setitimer(ITIMER_REAL, &it, nullptr), EINVAL);
  it.it_value.tv_usec = 0;
  it.it_interval.tv_usec = -1;
  EXPECT_ERRNO(setitimer(ITIMER_REAL, &it, nullptr), EINVAL);
  EXPECT_ERRNO(syscall(SYS_getitimer, ITIMER_REAL, (void*)1), EFAULT);
}

TEST(Itimer, PeriodicFiresRepeatedly) {
  ScopedBlock block({SIGALRM});
  ScopedHandler h(SIGALRM, CountingHandler);
  g_alarms = 0;
  itimerval it = {};
  it.it_value.tv_usec = 20000;
  it.it_interval.tv_usec = 20000;
  double start = MonotonicSeconds();
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  WaitForCount(g_alarms, 5, 10);
  double elapsed = MonotonicSeconds() - start;
  DisarmReal();
  EXPECT_GE(g_alarms.load(), 5);
  EXPECT_GE(elapsed, 0.09);
  EXPECT_LT(elapsed, 8.0);
  itimerval cur;
  ASSERT_SYS_OK(getitimer(ITIMER_REAL, &cur));
  EXPECT_EQ(cur.it_value.tv_usec, 0);
}

TEST(Itimer, InterruptsCodeThatMakesNoSyscalls) {
  ScopedHandler h(SIGALRM, CountingHandler);
  g_alarms = 0;
  itimerval it = {};
  it.it_value.tv_usec = 50000;
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  // Spin without syscalls: only an asynchronous interruption of the running code can
  // deliver the signal. The iteration cap (several seconds) ends the loop if none does.
  double start = MonotonicSeconds();
  for (uint64_t i = 0; g_alarms.load(std::memory_order_relaxed) == 0 && i < (1ull << 33); i++) {
  }
  double elapsed = MonotonicSeconds() - start;
  DisarmReal();
  EXPECT_EQ(g_alarms.load(), 1);
  EXPECT_GE(elapsed, 0.04);
  EXPECT_LT(elapsed, 4.0);
}

TEST(Itimer, VirtualAndProfAccepted) {
  for (int which : {ITIMER_VIRTUAL, ITIMER_PROF}) {
    itimerval it = {};
    it.it_value.tv_sec = 100;
    ASSERT_SYS_OK(setitimer(static_cast<__itimer_which>(which), &it, nullptr));
    itimerval cur;
    ASSERT_SYS_OK(getitimer(static_cast<__itimer_which>(which), &cur));
    EXPECT_GT(cur.it_value.tv_sec + cur.it_value.tv_usec, 0) << which;
    itimerval zero = {};
    ASSERT_SYS_OK(setitimer(static_cast<__itimer_which>(which), &zero, nullptr));
    ASSERT_SYS_OK(getitimer(static_cast<__itimer_which>(which), &cur));
    EXPECT_EQ(cur.it_value.tv_sec + cur.it_value.tv_usec, 0) << which;
  }
}

// ---- POSIX timers --------------------------------------------------------------------

// The kernel's timer id (glibc's timer_t hides it for SIGEV_THREAD only).
int RawTimerCreate(clockid_t clock, sigevent* ev, int* id) {
  return static_cast<int>(syscall(SYS_timer_create, clock, ev, id));
}

TEST(PosixTimer, InvalidArgs) {
  int id;
  EXPECT_ERRNO(RawTimerCreate(12345, nullptr, &id), EINVAL);
  sigevent ev = {};
  ev.sigev_notify = 99;
  EXPECT_ERRNO(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id), EINVAL);
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = 0;
  EXPECT_ERRNO(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id), EINVAL);
  ev.sigev_signo = 65;
  EXPECT_ERRNO(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id), EINVAL);
  itimerspec its = {};
  EXPECT_ERRNO(syscall(SYS_timer_settime, 4242, 0, &its, nullptr), EINVAL);
  EXPECT_ERRNO(syscall(SYS_timer_gettime, 4242, &its), EINVAL);
  EXPECT_ERRNO(syscall(SYS_timer_getoverrun, 4242), EINVAL);
  EXPECT_ERRNO(syscall(SYS_timer_delete, 4242), EINVAL);
}

TEST(PosixTimer, SigevNoneGettimeCountsDown) {
  sigevent ev = {};
  ev.sigev_notify = SIGEV_NONE;
  timer_t t;
  ASSERT_SYS_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
  itimerspec cur;
  ASSERT_SYS_OK(timer_gettime(t, &cur));
  EXPECT_EQ(cur.it_value.tv_sec + cur.it_value.tv_nsec, 0);  // created disarmed
  itimerspec its = {};
  its.it_value.tv_sec = 2;
  ASSERT_SYS_OK(timer_settime(t, 0, &its, nullptr));
  ASSERT_SYS_OK(timer_gettime(t, &cur));
  double first = cur.it_value.tv_sec + cur.it_value.tv_nsec / 1e9;
  EXPECT_GT(first, 1.5);
  EXPECT_LE(first, 2.0);
  usleep(100000);
  ASSERT_SYS_OK(timer_gettime(t, &cur));
  double second = cur.it_value.tv_sec + cur.it_value.tv_nsec / 1e9;
  EXPECT_LT(second, first - 0.05);
  EXPECT_GT(second, 0.5);
  ASSERT_SYS_OK(timer_delete(t));
  EXPECT_ERRNO(timer_gettime(t, &cur), EINVAL);
}

TEST(PosixTimer, SettimeReturnsOldSetting) {
  sigevent ev = {};
  ev.sigev_notify = SIGEV_NONE;
  timer_t t;
  ASSERT_SYS_OK(timer_create(CLOCK_REALTIME, &ev, &t));
  itimerspec its = {};
  its.it_value.tv_sec = 30;
  its.it_interval.tv_nsec = 5000000;
  ASSERT_SYS_OK(timer_settime(t, 0, &its, nullptr));
  itimerspec zero = {}, old;
  ASSERT_SYS_OK(timer_settime(t, 0, &zero, &old));
  EXPECT_EQ(old.it_interval.tv_nsec, 5000000);
  EXPECT_GE(old.it_value.tv_sec, 29);
  itimerspec bad = {};
  bad.it_value.tv_nsec = 1000000000;
  EXPECT_ERRNO(timer_settime(t, 0, &bad, nullptr), EINVAL);
  ASSERT_SYS_OK(timer_delete(t));
}

TEST(PosixTimer, SignalCarriesTimerIdAndValue) {
  const int sig = SIGRTMIN + 2;
  ScopedBlock block({sig});
  sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  ev.sigev_value.sival_int = 4242;
  int id;
  ASSERT_SYS_OK(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id));
  itimerspec its = {};
  its.it_value.tv_nsec = 20000000;
  ASSERT_SYS_OK(syscall(SYS_timer_settime, id, 0, &its, nullptr));
  siginfo_t info;
  timespec limit = {5, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &limit), sig);
  EXPECT_EQ(info.si_code, SI_TIMER);
  EXPECT_EQ(info.si_timerid, id);
  EXPECT_EQ(info.si_value.sival_int, 4242);
  EXPECT_EQ(info.si_overrun, 0);
  ASSERT_SYS_OK(syscall(SYS_timer_delete, id));
}

TEST(PosixTimer, DefaultSigeventIsSigalrmWithId) {
  ScopedBlock block({SIGALRM});
  int id;
  ASSERT_SYS_OK(RawTimerCreate(CLOCK_REALTIME, nullptr, &id));
  itimerspec its = {};
  its.it_value.tv_nsec = 10000000;
  ASSERT_SYS_OK(syscall(SYS_timer_settime, id, 0, &its, nullptr));
  siginfo_t info;
  timespec limit = {5, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &limit), SIGALRM);
  EXPECT_EQ(info.si_code, SI_TIMER);
  EXPECT_EQ(info.si_value.sival_int, id);
  ASSERT_SYS_OK(syscall(SYS_timer_delete, id));
}

TEST(PosixTimer, OverrunsCountedWhileBlocked) {
  const int sig = SIGRTMIN + 3;
  ScopedBlock block({sig});
  sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  timer_t t;
  ASSERT_SYS_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
  itimerspec its = {};
  its.it_value.tv_nsec = 5000000;
  its.it_interval.tv_nsec = 5000000;
  ASSERT_SYS_OK(timer_settime(t, 0, &its, nullptr));
  usleep(200000);  // ~40 periods while the signal stays pending
  itimerspec zero = {};
  siginfo_t info;
  timespec limit = {5, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &limit), sig);
  // Only one instance was queued; the rest are overruns.
  EXPECT_GE(info.si_overrun, 10);
  EXPECT_LE(info.si_overrun, 200);
  int overrun = timer_getoverrun(t);
  ASSERT_SYS_OK(timer_settime(t, 0, &zero, nullptr));
  EXPECT_GE(overrun, 10);
  EXPECT_LE(overrun, info.si_overrun + 2);
  ASSERT_SYS_OK(timer_delete(t));
}

TEST(PosixTimer, AbsoluteDeadline) {
  const int sig = SIGRTMIN + 4;
  ScopedBlock block({sig});
  sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  timer_t t;
  ASSERT_SYS_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double start = MonotonicSeconds();
  itimerspec its = {};
  its.it_value = now;
  its.it_value.tv_nsec += 150000000;
  if (its.it_value.tv_nsec >= 1000000000) its.it_value.tv_sec++, its.it_value.tv_nsec -= 1000000000;
  ASSERT_SYS_OK(timer_settime(t, TIMER_ABSTIME, &its, nullptr));
  siginfo_t info;
  timespec limit = {5, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &limit), sig);
  double elapsed = MonotonicSeconds() - start;
  EXPECT_GE(elapsed, 0.13);
  EXPECT_LT(elapsed, 4.0);
  // A deadline in the past fires at once.
  its.it_value.tv_sec = 1;
  its.it_value.tv_nsec = 0;
  ASSERT_SYS_OK(timer_settime(t, TIMER_ABSTIME, &its, nullptr));
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &limit), sig);
  ASSERT_SYS_OK(timer_delete(t));
}

TEST(PosixTimer, ThreadIdTargetsCaller) {
  const int sig = SIGRTMIN + 5;
  ScopedBlock block({sig});
  sigevent ev = {};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = sig;
  ev._sigev_un._tid = static_cast<int>(gettid());
  int id;
  ASSERT_SYS_OK(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id));
  itimerspec its = {};
  its.it_value.tv_nsec = 10000000;
  ASSERT_SYS_OK(syscall(SYS_timer_settime, id, 0, &its, nullptr));
  siginfo_t info;
  timespec limit = {5, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &limit), sig);
  EXPECT_EQ(info.si_code, SI_TIMER);
  ASSERT_SYS_OK(syscall(SYS_timer_delete, id));
  // A thread of another process is refused.
  ev._sigev_un._tid = 1;
  if (getpid() != 1) EXPECT_ERRNO(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id), EINVAL);
}

TEST(PosixTimer, TimersNotInheritedByFork) {
  sigevent ev = {};
  ev.sigev_notify = SIGEV_NONE;
  int id;
  ASSERT_SYS_OK(RawTimerCreate(CLOCK_MONOTONIC, &ev, &id));
  itimerspec its = {};
  its.it_value.tv_sec = 100;
  ASSERT_SYS_OK(syscall(SYS_timer_settime, id, 0, &its, nullptr));
  itimerval it = {};
  it.it_value.tv_sec = 100;
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    int bad = 0;
    itimerval cur;
    getitimer(ITIMER_REAL, &cur);
    if (cur.it_value.tv_sec != 0 || cur.it_value.tv_usec != 0) bad |= 1;
    if (alarm(0) != 0) bad |= 2;
    itimerspec ts;
    if (syscall(SYS_timer_gettime, id, &ts) != -1 || errno != EINVAL) bad |= 4;
    _exit(bad);
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's timers are untouched.
  itimerspec cur;
  ASSERT_SYS_OK(syscall(SYS_timer_gettime, id, &cur));
  EXPECT_GT(cur.it_value.tv_sec, 90);
  EXPECT_GT(alarm(0), 90u);
  ASSERT_SYS_OK(syscall(SYS_timer_delete, id));
}

TEST(PosixTimer, DeleteOrRearmDropsPendingSignal) {
  const int sig = SIGRTMIN + 6;
  ScopedBlock block({sig});
  sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  itimerspec soon = {};
  soon.it_value.tv_nsec = 1000000;
  timespec zero = {0, 0};
  timer_t t;
  ASSERT_SYS_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
  ASSERT_SYS_OK(timer_settime(t, 0, &soon, nullptr));
  usleep(50000);  // expired: its signal is pending (blocked)
  ASSERT_SYS_OK(timer_delete(t));
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &zero), EAGAIN);
  ASSERT_SYS_OK(timer_create(CLOCK_MONOTONIC, &ev, &t));
  ASSERT_SYS_OK(timer_settime(t, 0, &soon, nullptr));
  usleep(50000);
  itimerspec later = {};
  later.it_value.tv_sec = 30;
  ASSERT_SYS_OK(timer_settime(t, 0, &later, nullptr));
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &zero), EAGAIN);
  // A signal from elsewhere is not taken with it.
  sigval v;
  v.sival_int = 5;
  ASSERT_SYS_OK(sigqueue(getpid(), sig, v));
  ASSERT_SYS_OK(timer_delete(t));
  EXPECT_EQ(sigtimedwait(&block.set(), nullptr, &zero), sig);
}

// ---- timerfd -------------------------------------------------------------------------

TEST(Timerfd, InvalidArgs) {
  EXPECT_ERRNO(timerfd_create(CLOCK_MONOTONIC, 0x4000), EINVAL);
  EXPECT_ERRNO(timerfd_create(12345, 0), EINVAL);
  EXPECT_ERRNO(timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, 0));
  ASSERT_GE(fd.get(), 0);
  itimerspec its = {};
  EXPECT_ERRNO(timerfd_settime(fd.get(), 0x10, &its, nullptr), EINVAL);
  its.it_interval.tv_nsec = -1;
  EXPECT_ERRNO(timerfd_settime(fd.get(), 0, &its, nullptr), EINVAL);
  // The setting is validated before the descriptor.
  EXPECT_ERRNO(timerfd_settime(9999, 0, &its, nullptr), EINVAL);
  its.it_interval.tv_nsec = 0;
  EXPECT_ERRNO(timerfd_settime(9999, 0, &its, nullptr), EBADF);
  int p[2];
  ASSERT_SYS_OK(pipe(p));
  ScopedFd r(p[0]), w(p[1]);
  itimerspec cur;
  EXPECT_ERRNO(timerfd_gettime(r.get(), &cur), EINVAL);
  EXPECT_ERRNO(write(fd.get(), "12345678", 8), EINVAL);
}

TEST(Timerfd, NonblockingReadAndShortBuffer) {
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
  EXPECT_TRUE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK);
  uint64_t n;
  EXPECT_ERRNO(read(fd.get(), &n, sizeof(n)), EAGAIN);
  uint32_t small;
  EXPECT_ERRNO(read(fd.get(), &small, sizeof(small)), EINVAL);
}

TEST(Timerfd, OneShotBlockingRead) {
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, 0));
  ASSERT_GE(fd.get(), 0);
  itimerspec its = {};
  its.it_value.tv_nsec = 100000000;
  double start = MonotonicSeconds();
  ASSERT_SYS_OK(timerfd_settime(fd.get(), 0, &its, nullptr));
  uint64_t n = 0;
  ASSERT_EQ(read(fd.get(), &n, sizeof(n)), 8);
  double elapsed = MonotonicSeconds() - start;
  EXPECT_EQ(n, 1u);
  EXPECT_GE(elapsed, 0.09);
  EXPECT_LT(elapsed, 4.0);
  itimerspec cur;
  ASSERT_SYS_OK(timerfd_gettime(fd.get(), &cur));
  EXPECT_EQ(cur.it_value.tv_sec + cur.it_value.tv_nsec, 0);  // expired, not periodic
}

TEST(Timerfd, PeriodicReadCountsExpirations) {
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
  ASSERT_GE(fd.get(), 0);
  itimerspec its = {};
  its.it_value.tv_nsec = 10000000;
  its.it_interval.tv_nsec = 10000000;
  ASSERT_SYS_OK(timerfd_settime(fd.get(), 0, &its, nullptr));
  usleep(200000);
  uint64_t n = 0;
  ASSERT_EQ(read(fd.get(), &n, sizeof(n)), 8);
  EXPECT_GE(n, 8u);
  EXPECT_LE(n, 25u);
  itimerspec cur;
  ASSERT_SYS_OK(timerfd_gettime(fd.get(), &cur));
  EXPECT_EQ(cur.it_interval.tv_nsec, 10000000);
  EXPECT_LE(cur.it_value.tv_nsec, 10000000);
  itimerspec zero = {}, old;
  ASSERT_SYS_OK(timerfd_settime(fd.get(), 0, &zero, &old));
  EXPECT_EQ(old.it_interval.tv_nsec, 10000000);
  EXPECT_ERRNO(read(fd.get(), &n, sizeof(n)), EAGAIN);  // disarmed, count reset
}

TEST(Timerfd, PollReportsExpiry) {
  ScopedFd fd(timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK));
  ASSERT_GE(fd.get(), 0);
  itimerspec its = {};
  its.it_value.tv_nsec = 50000000;
  ASSERT_SYS_OK(timerfd_settime(fd.get(), 0, &its, nullptr));
  pollfd pfd = {fd.get(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  double start = MonotonicSeconds();
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  EXPECT_EQ(pfd.revents, POLLIN);
  EXPECT_GE(MonotonicSeconds() - start, 0.03);
  uint64_t n;
  ASSERT_EQ(read(fd.get(), &n, sizeof(n)), 8);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
}

TEST(Timerfd, AbsoluteTimeInThePastFiresAtOnce) {
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, 0));
  ASSERT_GE(fd.get(), 0);
  itimerspec its = {};
  its.it_value.tv_sec = 1;
  ASSERT_SYS_OK(
      timerfd_settime(fd.get(), TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, nullptr));
  uint64_t n = 0;
  ASSERT_EQ(read(fd.get(), &n, sizeof(n)), 8);
  EXPECT_EQ(n, 1u);
}

TEST(Timerfd, ProcFdName) {
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, 0));
  ASSERT_GE(fd.get(), 0);
  char link[64], target[128] = {};
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd.get());
  ASSERT_SYS_OK(readlink(link, target, sizeof(target) - 1));
  EXPECT_STREQ(target, "anon_inode:[timerfd]");
}

TEST(Timerfd, IntervalKeptWhileDisarmed) {
  ScopedFd fd(timerfd_create(CLOCK_MONOTONIC, 0));
  ASSERT_GE(fd.get(), 0);
  itimerspec its = {};
  its.it_interval.tv_sec = 2;  // no value: disarmed, but the interval is remembered
  ASSERT_SYS_OK(timerfd_settime(fd.get(), 0, &its, nullptr));
  itimerspec cur;
  ASSERT_SYS_OK(timerfd_gettime(fd.get(), &cur));
  EXPECT_EQ(cur.it_interval.tv_sec, 2);
  EXPECT_EQ(cur.it_value.tv_sec + cur.it_value.tv_nsec, 0);
  // Interval timers and POSIX timers forget it.
  itimerval it = {};
  it.it_interval.tv_sec = 2;
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  itimerval icur;
  ASSERT_SYS_OK(getitimer(ITIMER_REAL, &icur));
  EXPECT_EQ(icur.it_interval.tv_sec, 0);
}

}  // namespace
}  // namespace syscall_test
