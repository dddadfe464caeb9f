// Waiting for signals and queueing them with data: rt_sigtimedwait(2) (sigwaitinfo,
// sigtimedwait), rt_sigqueueinfo(2)/rt_tgsigqueueinfo(2) (sigqueue), and signalfd(2).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "gtest/gtest.h"
#include "tests/syscalls/signal_util.h"
#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

std::atomic<int> g_handled{0};
std::atomic<int> g_value{0};
std::atomic<int> g_code{0};
std::atomic<int> g_pid{0};

void RecordingHandler(int, siginfo_t* info, void*) {
  g_handled++;
  g_value = info->si_value.sival_int;
  g_code = info->si_code;
  g_pid = info->si_pid;
}

// Forks a child that sends `sig` to this process after `delay_us`, then exits.
pid_t KillLater(int sig, int delay_us) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    usleep(delay_us);
    kill(parent, sig);
    _exit(0);
  }
  return pid;
}

void Reap(pid_t pid) {
  int status;
  waitpid(pid, &status, 0);
}

siginfo_t QueueInfo(int value) {
  siginfo_t info = {};
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_int = value;
  return info;
}

// ---- sigtimedwait / sigwaitinfo ------------------------------------------------------

TEST(Sigtimedwait, TimeoutIsEagain) {
  ScopedBlock block({SIGUSR1});
  timespec ts = {0, 150000000};
  double start = MonotonicSeconds();
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &ts), EAGAIN);
  double elapsed = MonotonicSeconds() - start;
  EXPECT_GE(elapsed, 0.13);
  EXPECT_LT(elapsed, 5.0);
}

TEST(Sigtimedwait, ZeroTimeoutPolls) {
  ScopedBlock block({SIGUSR1});
  timespec zero = {0, 0};
  double start = MonotonicSeconds();
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &zero), EAGAIN);
  EXPECT_LT(MonotonicSeconds() - start, 1.0);
}

TEST(Sigtimedwait, InvalidArgs) {
  ScopedBlock block({SIGUSR1});
  timespec bad = {0, 1000000000};
  EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &block.set(), nullptr, &bad, 8), EINVAL);
  bad = {-1, 0};
  EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &block.set(), nullptr, &bad, 8), EINVAL);
  timespec zero = {0, 0};
  EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &block.set(), nullptr, &zero, 4), EINVAL);
  EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, (void*)8, nullptr, &zero, 8), EFAULT);
}

TEST(Sigtimedwait, ReturnsPendingSignalWithInfo) {
  ScopedBlock block({SIGUSR1});
  ASSERT_SYS_OK(raise(SIGUSR1));
  siginfo_t info = {};
  ASSERT_EQ(sigwaitinfo(&block.set(), &info), SIGUSR1);
  EXPECT_EQ(info.si_signo, SIGUSR1);
  // raise() is tgkill (SI_TKILL); glibc's sigwaitinfo reports that as SI_USER.
  EXPECT_EQ(info.si_code, SI_USER);
  EXPECT_EQ(info.si_pid, getpid());
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGUSR1));  // consumed
}

TEST(Sigtimedwait, WokenBySignalFromOtherProcess) {
  ScopedBlock block({SIGUSR2});
  pid_t child = KillLater(SIGUSR2, 50000);
  ASSERT_SYS_OK(child);
  siginfo_t info = {};
  timespec ts = {5, 0};
  EXPECT_EQ(sigtimedwait(&block.set(), &info, &ts), SIGUSR2);
  EXPECT_EQ(info.si_code, SI_USER);
  EXPECT_EQ(info.si_pid, child);
  Reap(child);
}

TEST(Sigtimedwait, InterruptedByHandledSignal) {
  ScopedBlock block({SIGUSR1});
  ScopedHandler h(SIGUSR2, RecordingHandler);
  g_handled = 0;
  pid_t child = KillLater(SIGUSR2, 50000);
  ASSERT_SYS_OK(child);
  timespec ts = {5, 0};
  double start = MonotonicSeconds();
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &ts), EINTR);
  EXPECT_LT(MonotonicSeconds() - start, 4.0);
  EXPECT_EQ(g_handled.load(), 1);
  Reap(child);
}

TEST(Sigtimedwait, LowestSignalFirst) {
  ScopedBlock block({SIGUSR1, SIGUSR2, SIGTERM});
  raise(SIGTERM);
  raise(SIGUSR2);
  raise(SIGUSR1);
  timespec zero = {0, 0};
  EXPECT_EQ(sigtimedwait(&block.set(), nullptr, &zero), SIGUSR1);
  EXPECT_EQ(sigtimedwait(&block.set(), nullptr, &zero), SIGUSR2);
  EXPECT_EQ(sigtimedwait(&block.set(), nullptr, &zero), SIGTERM);
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &zero), EAGAIN);
}

// ---- sigqueue ------------------------------------------------------------------------

TEST(Sigqueue, ValueReachesSiginfoHandler) {
  const int sig = SIGRTMIN;
  ScopedHandler h(sig, RecordingHandler);
  g_handled = 0;
  sigval v;
  v.sival_int = 1234;
  ASSERT_SYS_OK(sigqueue(getpid(), sig, v));
  // A signal sent to oneself and not blocked is delivered before sigqueue returns.
  EXPECT_EQ(g_handled.load(), 1);
  EXPECT_EQ(g_value.load(), 1234);
  EXPECT_EQ(g_code.load(), SI_QUEUE);
  EXPECT_EQ(g_pid.load(), getpid());
}

TEST(Sigqueue, RealtimeSignalsQueueInOrder) {
  const int sig = SIGRTMIN + 1;
  ScopedBlock block({sig});
  for (int i = 1; i <= 3; i++) {
    sigval v;
    v.sival_int = i * 10;
    ASSERT_SYS_OK(sigqueue(getpid(), sig, v));
  }
  timespec zero = {0, 0};
  for (int i = 1; i <= 3; i++) {
    siginfo_t info = {};
    ASSERT_EQ(sigtimedwait(&block.set(), &info, &zero), sig);
    EXPECT_EQ(info.si_value.sival_int, i * 10);
  }
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &zero), EAGAIN);
}

TEST(Sigqueue, StandardSignalsDoNotQueue) {
  ScopedBlock block({SIGUSR1});
  sigval v;
  v.sival_int = 1;
  ASSERT_SYS_OK(sigqueue(getpid(), SIGUSR1, v));
  v.sival_int = 2;
  ASSERT_SYS_OK(sigqueue(getpid(), SIGUSR1, v));
  timespec zero = {0, 0};
  siginfo_t info = {};
  ASSERT_EQ(sigtimedwait(&block.set(), &info, &zero), SIGUSR1);
  EXPECT_EQ(info.si_value.sival_int, 1);  // the first instance is kept
  EXPECT_ERRNO(sigtimedwait(&block.set(), nullptr, &zero), EAGAIN);
}

TEST(Sigqueue, ForgedCodeToOtherProcessIsEperm) {
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) {
    pause();
    _exit(0);
  }
  siginfo_t info = QueueInfo(1);
  info.si_code = SI_USER;
  EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info), EPERM);
  info.si_code = SI_TKILL;
  EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info), EPERM);
  info.si_code = SI_KERNEL;
  EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info), EPERM);
  // SI_QUEUE is allowed: it kills the child (default action).
  info.si_code = SI_QUEUE;
  ASSERT_SYS_OK(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info));
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGUSR1);
}

TEST(Sigqueue, ForgedCodeToSelfAllowed) {
  ScopedBlock block({SIGUSR2});
  siginfo_t info = QueueInfo(7);
  info.si_code = SI_USER;
  ASSERT_SYS_OK(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR2, &info));
  siginfo_t got = {};
  timespec zero = {0, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &got, &zero), SIGUSR2);
  EXPECT_EQ(got.si_code, SI_USER);
}

TEST(Sigqueue, Errors) {
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) _exit(0);
  Reap(child);  // its PID is now free
  siginfo_t info = QueueInfo(1);
  EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info), ESRCH);
  EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, (void*)8), EFAULT);
  EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, getpid(), 65, &info), EINVAL);
  EXPECT_ERRNO(syscall(SYS_rt_tgsigqueueinfo, 0, gettid(), SIGUSR1, &info), EINVAL);
  EXPECT_ERRNO(syscall(SYS_rt_tgsigqueueinfo, getpid(), -1, SIGUSR1, &info), EINVAL);
  EXPECT_ERRNO(syscall(SYS_rt_tgsigqueueinfo, getpid(), child, SIGUSR1, &info), ESRCH);
  // Signal 0 checks only.
  EXPECT_EQ(syscall(SYS_rt_sigqueueinfo, getpid(), 0, &info), 0);
}

TEST(Sigqueue, TgsigqueueinfoToOwnThread) {
  const int sig = SIGRTMIN + 2;
  ScopedBlock block({sig});
  siginfo_t info = QueueInfo(99);
  ASSERT_SYS_OK(syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &info));
  siginfo_t got = {};
  timespec zero = {0, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &got, &zero), sig);
  EXPECT_EQ(got.si_code, SI_QUEUE);
  EXPECT_EQ(got.si_value.sival_int, 99);
}

// ---- signalfd ------------------------------------------------------------------------

TEST(Signalfd, ReadsQueuedRealtimeSignal) {
  const int sig = SIGRTMIN + 3;
  ScopedBlock block({sig});
  ScopedFd fd(signalfd(-1, &block.set(), SFD_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
  sigval v;
  v.sival_int = 77;
  ASSERT_SYS_OK(sigqueue(getpid(), sig, v));
  signalfd_siginfo ssi = {};
  ASSERT_EQ(read(fd.get(), &ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi)));
  EXPECT_EQ(ssi.ssi_signo, static_cast<uint32_t>(sig));
  EXPECT_EQ(ssi.ssi_code, SI_QUEUE);
  EXPECT_EQ(ssi.ssi_int, 77);
  EXPECT_EQ(ssi.ssi_pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(ssi.ssi_uid, getuid());
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, sig));
}

TEST(Signalfd, NonblockingAndShortBuffer) {
  ScopedBlock block({SIGUSR1});
  ScopedFd fd(signalfd(-1, &block.set(), SFD_NONBLOCK));
  ASSERT_GE(fd.get(), 0);
  signalfd_siginfo ssi;
  EXPECT_ERRNO(read(fd.get(), &ssi, sizeof(ssi)), EAGAIN);
  raise(SIGUSR1);
  char small[64];
  EXPECT_ERRNO(read(fd.get(), small, sizeof(small)), EINVAL);
  ASSERT_EQ(read(fd.get(), &ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi)));
  EXPECT_EQ(ssi.ssi_signo, static_cast<uint32_t>(SIGUSR1));
  EXPECT_EQ(ssi.ssi_code, SI_TKILL);
}

TEST(Signalfd, ReadsSeveralRecords) {
  const int sig = SIGRTMIN + 4;
  ScopedBlock block({sig});
  ScopedFd fd(signalfd(-1, &block.set(), SFD_NONBLOCK));
  ASSERT_GE(fd.get(), 0);
  for (int i = 0; i < 3; i++) {
    sigval v;
    v.sival_int = i;
    ASSERT_SYS_OK(sigqueue(getpid(), sig, v));
  }
  signalfd_siginfo ssi[4];
  // Room for two and a half: two records.
  ASSERT_EQ(read(fd.get(), ssi, sizeof(ssi[0]) * 5 / 2), static_cast<ssize_t>(2 * sizeof(ssi[0])));
  EXPECT_EQ(ssi[0].ssi_int, 0);
  EXPECT_EQ(ssi[1].ssi_int, 1);
  ASSERT_EQ(read(fd.get(), ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi[0])));
  EXPECT_EQ(ssi[0].ssi_int, 2);
}

TEST(Signalfd, PollReportsPendingSignal) {
  ScopedBlock block({SIGUSR2});
  ScopedFd fd(signalfd(-1, &block.set(), SFD_NONBLOCK));
  ASSERT_GE(fd.get(), 0);
  pollfd pfd = {fd.get(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  pid_t child = KillLater(SIGUSR2, 50000);
  ASSERT_SYS_OK(child);
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  EXPECT_EQ(pfd.revents, POLLIN);
  signalfd_siginfo ssi;
  ASSERT_EQ(read(fd.get(), &ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi)));
  EXPECT_EQ(ssi.ssi_pid, static_cast<uint32_t>(child));
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  Reap(child);
}

TEST(Signalfd, BlockingReadWokenBySignal) {
  ScopedBlock block({SIGUSR1});
  ScopedFd fd(signalfd(-1, &block.set(), 0));
  ASSERT_GE(fd.get(), 0);
  pid_t child = KillLater(SIGUSR1, 50000);
  ASSERT_SYS_OK(child);
  signalfd_siginfo ssi;
  ASSERT_EQ(read(fd.get(), &ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi)));
  EXPECT_EQ(ssi.ssi_signo, static_cast<uint32_t>(SIGUSR1));
  EXPECT_EQ(ssi.ssi_code, SI_USER);
  Reap(child);
}

TEST(Signalfd, UpdateMaskKeepsDescriptor) {
  ScopedBlock block({SIGUSR1, SIGUSR2});
  sigset_t only1 = SetOf({SIGUSR1});
  ScopedFd fd(signalfd(-1, &only1, SFD_NONBLOCK));
  ASSERT_GE(fd.get(), 0);
  raise(SIGUSR2);
  signalfd_siginfo ssi;
  EXPECT_ERRNO(read(fd.get(), &ssi, sizeof(ssi)), EAGAIN);  // not in the mask
  sigset_t only2 = SetOf({SIGUSR2});
  EXPECT_EQ(signalfd(fd.get(), &only2, 0), fd.get());
  ASSERT_EQ(read(fd.get(), &ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi)));
  EXPECT_EQ(ssi.ssi_signo, static_cast<uint32_t>(SIGUSR2));
}

TEST(Signalfd, ReadsTimerSignal) {
  const int sig = SIGRTMIN + 5;
  ScopedBlock block({sig});
  ScopedFd fd(signalfd(-1, &block.set(), 0));
  ASSERT_GE(fd.get(), 0);
  sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  ev.sigev_value.sival_int = 555;
  int id;
  ASSERT_SYS_OK(syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &id));
  itimerspec its = {};
  its.it_value.tv_nsec = 20000000;
  ASSERT_SYS_OK(syscall(SYS_timer_settime, id, 0, &its, nullptr));
  signalfd_siginfo ssi;
  ASSERT_EQ(read(fd.get(), &ssi, sizeof(ssi)), static_cast<ssize_t>(sizeof(ssi)));
  EXPECT_EQ(ssi.ssi_code, SI_TIMER);
  EXPECT_EQ(ssi.ssi_tid, static_cast<uint32_t>(id));
  EXPECT_EQ(ssi.ssi_int, 555);
  EXPECT_EQ(ssi.ssi_overrun, 0u);
  ASSERT_SYS_OK(syscall(SYS_timer_delete, id));
}

TEST(Signalfd, InvalidArgs) {
  sigset_t set = SetOf({SIGUSR1});
  EXPECT_ERRNO(signalfd(-1, &set, 0x4000), EINVAL);
  EXPECT_ERRNO(syscall(SYS_signalfd4, -1, &set, 4, 0), EINVAL);
  EXPECT_ERRNO(syscall(SYS_signalfd4, -1, (void*)8, 8, 0), EFAULT);
  EXPECT_ERRNO(signalfd(9999, &set, 0), EBADF);
  int p[2];
  ASSERT_SYS_OK(pipe(p));
  ScopedFd r(p[0]), w(p[1]);
  EXPECT_ERRNO(signalfd(r.get(), &set, 0), EINVAL);
  ScopedFd fd(signalfd(-1, &set, 0));
  ASSERT_GE(fd.get(), 0);
  EXPECT_ERRNO(write(fd.get(), "x", 1), EINVAL);
  char link[64], target[128] = {};
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd.get());
  ASSERT_SYS_OK(readlink(link, target, sizeof(target) - 1));
  EXPECT_STREQ(target, "anon_inode:[signalfd]");
}

// ---- pidfd ---------------------------------------------------------------------------

int PidfdOpen(pid_t pid, unsigned flags) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, flags));
}

TEST(Pidfd, ReadableWhenProcessExitsAndSignals) {
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) {
    pause();
    _exit(0);
  }
  ScopedFd fd(PidfdOpen(child, 0));
  ASSERT_GE(fd.get(), 0);
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);  // always close-on-exec
  pollfd pfd = {fd.get(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  ASSERT_SYS_OK(syscall(SYS_pidfd_send_signal, fd.get(), 0, nullptr, 0));
  ASSERT_SYS_OK(syscall(SYS_pidfd_send_signal, fd.get(), SIGTERM, nullptr, 0));
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  EXPECT_TRUE(pfd.revents & POLLIN);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  // Reaped: the process is gone for good.
  EXPECT_ERRNO(syscall(SYS_pidfd_send_signal, fd.get(), SIGTERM, nullptr, 0), ESRCH);
}

TEST(Pidfd, BlockingPollWokenByExit) {
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) {
    usleep(100000);
    _exit(7);
  }
  ScopedFd fd(PidfdOpen(child, 0));
  ASSERT_GE(fd.get(), 0);
  pollfd pfd = {fd.get(), POLLIN, 0};
  double start = MonotonicSeconds();
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  EXPECT_LT(MonotonicSeconds() - start, 4.0);
  siginfo_t info = {};
  ASSERT_SYS_OK(waitid(P_PIDFD, fd.get(), &info, WEXITED));
  EXPECT_EQ(info.si_pid, child);
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 7);
}

TEST(Pidfd, SendSignalWithInfoToSelf) {
  const int sig = SIGRTMIN + 6;
  ScopedBlock block({sig});
  ScopedFd fd(PidfdOpen(getpid(), 0));
  ASSERT_GE(fd.get(), 0);
  siginfo_t info = QueueInfo(31);
  info.si_signo = sig;
  ASSERT_SYS_OK(syscall(SYS_pidfd_send_signal, fd.get(), sig, &info, 0));
  siginfo_t got = {};
  timespec zero = {0, 0};
  ASSERT_EQ(sigtimedwait(&block.set(), &got, &zero), sig);
  EXPECT_EQ(got.si_code, SI_QUEUE);
  EXPECT_EQ(got.si_value.sival_int, 31);
  // si_signo must match the signal.
  info.si_signo = SIGUSR1;
  EXPECT_ERRNO(syscall(SYS_pidfd_send_signal, fd.get(), sig, &info, 0), EINVAL);
}

TEST(Pidfd, Errors) {
  EXPECT_ERRNO(PidfdOpen(getpid(), 0x1), EINVAL);
  EXPECT_ERRNO(PidfdOpen(-1, 0), EINVAL);
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) _exit(0);
  Reap(child);
  EXPECT_ERRNO(PidfdOpen(child, 0), ESRCH);
  int p[2];
  ASSERT_SYS_OK(pipe(p));
  ScopedFd r(p[0]), w(p[1]);
  EXPECT_ERRNO(syscall(SYS_pidfd_send_signal, r.get(), SIGUSR1, nullptr, 0), EBADF);
  ScopedFd fd(PidfdOpen(getpid(), 0));
  ASSERT_GE(fd.get(), 0);
  EXPECT_ERRNO(syscall(SYS_pidfd_send_signal, fd.get(), SIGUSR1, nullptr, 0x100), EINVAL);
  EXPECT_ERRNO(syscall(SYS_pidfd_send_signal, fd.get(), 65, nullptr, 0), EINVAL);
}

}  // namespace
}  // namespace syscall_test
