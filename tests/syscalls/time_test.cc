// Clocks and sleeps: clock_gettime/getres, clock_settime's refusals, nanosleep and
// clock_nanosleep argument checks. Nothing here may set a clock: natively these run as
// root, so only calls Linux rejects before its permission check are made.
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

int64_t Ns(const timespec& ts) { return ts.tv_sec * 1000000000ll + ts.tv_nsec; }

// The vDSO: announced in the auxiliary vector, an ELF image the app can read (and the
// kernel can read from it: write(2) of its bytes), named in /proc/self/maps, and its
// clocks agree with the kernel's in a forked child and after an execve.
TEST(Vdso, AuxvPointsAtAnElfImageNamedInMaps) {
  const uint64_t ehdr = getauxval(AT_SYSINFO_EHDR);
  ASSERT_NE(ehdr, 0u);
  EXPECT_EQ(memcmp(reinterpret_cast<const void*>(ehdr),
                   "\x7f"
                   "ELF",
                   4),
            0);
  int p[2];
  ASSERT_SYS_OK(pipe(p));
  ASSERT_EQ(write(p[1], reinterpret_cast<const void*>(ehdr), 4), 4);
  char got[4];
  ASSERT_EQ(read(p[0], got, 4), 4);
  EXPECT_EQ(memcmp(got,
                   "\x7f"
                   "ELF",
                   4),
            0);
  close(p[0]);
  close(p[1]);
  std::ifstream maps("/proc/self/maps");
  bool named = false;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[vdso]") == std::string::npos) continue;
    uint64_t lo = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uint64_t hi = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    named = ehdr >= lo && ehdr < hi;
  }
  EXPECT_TRUE(named);
}

TEST(Vdso, ClocksAgreeWithTheSyscallInChildren) {
  timespec before{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &before));
  pid_t child = fork();
  if (child == 0) {
    timespec lib{}, sys{};
    clock_gettime(CLOCK_MONOTONIC, &lib);  // through the vDSO
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &sys);
    bool ok = Ns(lib) >= Ns(before) && Ns(sys) >= Ns(lib) &&
              Ns(sys) - Ns(lib) < 5000000000ll;  // generous: a loaded host
    if (!ok) _exit(1);
    // And after an execve, in a fresh image.
    execl("/bin/sh", "sh", "-c", "exec /bin/date +%s >/dev/null", static_cast<char*>(nullptr));
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(ClockGettime, DynamicCpuClocks) {
  clockid_t self = 0, other = 0;
  ASSERT_EQ(clock_getcpuclockid(0, &self), 0);
  timespec ts{};
  EXPECT_EQ(clock_gettime(self, &ts), 0) << strerror(errno);
  ASSERT_EQ(pthread_getcpuclockid(pthread_self(), &other), 0);
  EXPECT_EQ(clock_gettime(other, &ts), 0) << strerror(errno);
  EXPECT_EQ(clock_getres(other, &ts), 0) << strerror(errno);
  // A process that does not exist; an invalid clock type (3).
  const clockid_t missing = static_cast<clockid_t>(~static_cast<clockid_t>(4000000) << 3);
  EXPECT_ERRNO(clock_gettime(missing, &ts), EINVAL);
  EXPECT_ERRNO(clock_gettime(self | 3, &ts), EINVAL);
}

// CPU time is what the program's code burned: a busy loop advances the process clock
// (and getrusage, times, a waiting parent's figures); a sleeping thread's own clock
// hardly moves while another thread burns.
int64_t ClockNs(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return Ns(ts);
}

// Spins until the process CPU clock advanced `ms`; false if that took over 10 s of wall
// time (the clock does not count the loop). The loop makes no syscall for 50 ms at a
// time (the monotonic clock is the vDSO's), as computing code does not.
bool BurnCpu(int ms) {
  const int64_t cpu0 = ClockNs(CLOCK_PROCESS_CPUTIME_ID), wall0 = ClockNs(CLOCK_MONOTONIC);
  volatile uint64_t x = 0;
  while (ClockNs(CLOCK_PROCESS_CPUTIME_ID) - cpu0 < ms * 1000000ll) {
    const int64_t until = ClockNs(CLOCK_MONOTONIC) + 50000000;
    while (ClockNs(CLOCK_MONOTONIC) < until) {
      for (int i = 0; i < 10000; ++i) x = x + i;
    }
    if (ClockNs(CLOCK_MONOTONIC) - wall0 > 10000000000ll) return false;
  }
  return true;
}

int64_t Us(const timeval& tv) { return tv.tv_sec * 1000000ll + tv.tv_usec; }

TEST(CpuTime, BusyLoopAdvancesTheProcessClockGetrusageAndTimes) {
  const int64_t wall0 = ClockNs(CLOCK_MONOTONIC);
  const int64_t cpu0 = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  ASSERT_TRUE(BurnCpu(150)) << "the process CPU clock did not count a busy loop";
  const int64_t cpu = ClockNs(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  EXPECT_LE(cpu, ClockNs(CLOCK_MONOTONIC) - wall0 + 10000000);  // not more than it ran
  rusage ru{};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &ru), 0);
  EXPECT_GE(Us(ru.ru_utime) + Us(ru.ru_stime), 140000);
  tms t{};
  times(&t);
  EXPECT_GE(t.tms_utime + t.tms_stime, 14);  // 100 Hz ticks
}

TEST(CpuTime, AChildsCpuTimeReachesItsParentAtWait) {
  pid_t pid = fork();
  if (pid == 0) _exit(BurnCpu(150) ? 0 : 1);
  int status = 0;
  rusage ru{};
  ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GE(Us(ru.ru_utime) + Us(ru.ru_stime), 140000);
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
  EXPECT_GE(Us(children.ru_utime) + Us(children.ru_stime), 140000);
}

TEST(CpuTime, ASleepingThreadsClockStaysSmallWhileAnotherBurns) {
  const int64_t mine0 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  const int64_t cpu0 = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  clockid_t burner_clock;
  std::atomic<bool> done{false}, read{false};
  bool burned = false;
  std::thread burner([&] {
    burned = BurnCpu(200);
    done = true;
    while (!read) usleep(1000);  // a thread's clock is gone with it
  });
  ASSERT_EQ(pthread_getcpuclockid(burner.native_handle(), &burner_clock), 0);
  while (!done) usleep(20000);
  const int64_t burner_ns = ClockNs(burner_clock);
  read = true;
  burner.join();
  ASSERT_TRUE(burned);
  EXPECT_GE(ClockNs(CLOCK_PROCESS_CPUTIME_ID) - cpu0, 190000000);
  EXPECT_LT(ClockNs(CLOCK_THREAD_CPUTIME_ID) - mine0, 100000000);
  EXPECT_GE(burner_ns, 150000000);
}

// ru_maxrss: the largest resident size, in KiB, of the process (SELF) and of its
// largest reaped child (CHILDREN, wait4's).
TEST(MaxRss, TouchedMemoryShowsInSelfChildAndChildren) {
  constexpr size_t kSize = 64 << 20;
  auto touch = [] {
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    memset(p, 1, kSize);
    return true;
  };
  pid_t pid = fork();
  if (pid == 0) _exit(touch() ? 0 : 1);
  int status = 0;
  rusage child{};
  ASSERT_EQ(wait4(pid, &status, 0, &child), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_GE(child.ru_maxrss, 60 << 10);
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
  EXPECT_GE(children.ru_maxrss, 60 << 10);
  ASSERT_TRUE(touch());
  rusage self{};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &self), 0);
  EXPECT_GE(self.ru_maxrss, 60 << 10);
}

TEST(ClockGettime, MonotonicNeverGoesBack) {
  timespec a{}, b{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &a));
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &b));
  EXPECT_LE(Ns(a), Ns(b));
}

TEST(ClockGettime, RealtimeAgreesWithGettimeofday) {
  timespec ts{};
  timeval tv{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_REALTIME, &ts));
  ASSERT_SYS_OK(gettimeofday(&tv, nullptr));
  EXPECT_LT(std::llabs(tv.tv_sec - ts.tv_sec), 2);
}

// time(2) reads the coarse clock that the vDSO's time() reads too: across the turn of
// a second the syscall is never a second ahead of the vDSO call made right after it
// (the fine clock runs up to a tick ahead of the coarse one).
TEST(Time, SyscallIsNeverAheadOfTheVdso) {
  const time_t start = time(nullptr);
  while (time(nullptr) < start + 2) {  // at least one whole turn of a second
    const long by_syscall = syscall(SYS_time, nullptr);
    const time_t by_vdso = time(nullptr);
    ASSERT_LE(by_syscall, by_vdso);
  }
}

TEST(ClockGettime, UnknownClockIsEinval) {
  timespec ts{};
  EXPECT_ERRNO(clock_gettime(1234, &ts), EINVAL);
  EXPECT_ERRNO(clock_getres(1234, &ts), EINVAL);
}

TEST(ClockGetres, MonotonicIsAtMostAMillisecond) {
  timespec res{};
  ASSERT_SYS_OK(clock_getres(CLOCK_MONOTONIC, &res));
  EXPECT_EQ(res.tv_sec, 0);
  EXPECT_LE(res.tv_nsec, 1000000);
}

TEST(ClockSettime, MonotonicIsNotSettable) {
  timespec ts{1, 0};
  EXPECT_ERRNO(clock_settime(CLOCK_MONOTONIC, &ts), EINVAL);
}

TEST(ClockSettime, BadNanosecondsAreEinval) {
  timespec ts{1, 1000000000};
  EXPECT_ERRNO(clock_settime(CLOCK_REALTIME, &ts), EINVAL);
}

TEST(Nanosleep, BadTimespecIsEinval) {
  timespec bad{0, -1};
  EXPECT_ERRNO(nanosleep(&bad, nullptr), EINVAL);
}

TEST(ClockNanosleep, AbsoluteDeadlineInThePastReturnsAtOnce) {
  timespec now{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &now));
  now.tv_sec -= 10;
  EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, nullptr), 0);
}

TEST(ClockNanosleep, RelativeSleepLastsAtLeastItsTime) {
  timespec a{}, b{};
  timespec req{0, 20 * 1000 * 1000};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &a));
  EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &req, nullptr), 0);
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &b));
  EXPECT_GE(Ns(b) - Ns(a), 20 * 1000 * 1000);
}

TEST(ClockNanosleep, ThreadCpuClockIsEinval) {
  timespec req{0, 1000};
  EXPECT_EQ(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &req, nullptr), EINVAL);
}

}  // namespace
}  // namespace syscall_test
