// Time syscalls: clocks read from the host's clocks (the sentry may call clock_gettime),
// sleeps implemented as interruptible waits in the sentry.
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/kernel/wall_seconds.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_info.h"
#include "sentry/syscalls/time_args.h"

namespace usentry::sentry {

namespace {

constexpr int kClockTicks = 100;

// Host clock for an app clock id. A CPU-time clock has no host clock of the app's
// (clock_nanosleep on one waits on the sentry thread's; clock_gettime reads the app's
// CPU time instead: ResolveClock).
SysResult<clockid_t> HostClock(int clock) {
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
    case CLOCK_TAI:
      return clock;
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID:
      return CLOCK_THREAD_CPUTIME_ID;
    case CLOCK_REALTIME_ALARM:
    case CLOCK_BOOTTIME_ALARM:
      return clock - 8 == 0 ? CLOCK_REALTIME : CLOCK_BOOTTIME;
    default:
      return Errno{EINVAL};
  }
}

// What a clock id of clock_gettime/getres names: a host clock (the wall clocks), or the
// app CPU time of a thread or a process. CPU clocks are CLOCK_{PROCESS,THREAD}_CPUTIME_ID
// or dynamic ones (clock_getcpuclockid, pthread_getcpuclockid): (~pid << 3) | type, bit
// 2 for one thread. Their pid (0: the caller) must exist, a thread's in the caller's
// thread group, as Linux checks.
struct AppClock {
  clockid_t host = -1;
  const Task* thread = nullptr;
  const ThreadGroup* process = nullptr;
};

SysResult<AppClock> ResolveClock(Task& t, int clock) {
  if (clock == CLOCK_PROCESS_CPUTIME_ID) return AppClock{.process = &t.thread_group()};
  if (clock == CLOCK_THREAD_CPUTIME_ID) return AppClock{.thread = &t};
  if (clock >= 0) {
    ASSIGN_OR_RETURN_ERRNO(clockid_t host, HostClock(clock));
    return AppClock{.host = host};
  }
  constexpr int kPerThread = 4, kTypeMask = 3, kTypeMax = 2;  // PROF, VIRT, SCHED
  if ((clock & kTypeMask) > kTypeMax) return Errno{EINVAL};
  const int32_t id = ~(clock >> 3);
  if (clock & kPerThread) {
    if (id == 0) return AppClock{.thread = &t};
    Task* target = t.kernel().FindTask(id);
    if (!target || &target->thread_group() != &t.thread_group()) return Errno{EINVAL};
    return AppClock{.thread = target};
  }
  if (id == 0) return AppClock{.process = &t.thread_group()};
  std::shared_ptr<ThreadGroup> tg = t.kernel().FindThreadGroup(id);
  if (!tg) return Errno{EINVAL};
  return AppClock{.process = tg.get()};  // kept alive by the kernel while t.kernel().mu is held
}

// Sleeps until `deadline`; on a signal writes the remaining time to `rem` (if given).
SyscallResult SleepUntil(Task& t, absl::Time deadline, mm::GuestAddr rem) {
  Waiter w(&t);
  SysStatus s = t.Block(w, deadline);
  if (s.ok() || s.error() == ETIMEDOUT) return 0;
  if (!rem.IsNull()) {
    absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
    timespec ts = absl::ToTimespec(left);
    RETURN_IF_ERRNO(t.mm().CopyOutObj(rem, ts));
  }
  // Restarted without a handler running (a stop and SIGCONT): sleep to the same deadline.
  t.restart_block = [deadline, rem](Task& task) -> SysResult<uint64_t> {
    return SleepUntil(task, deadline, rem);
  };
  return Errno{kERestartRestartBlock};
}

}  // namespace

// restart_syscall(2): the sentry never restarts through it (an interrupted sleep
// re-enters with its own number and the dispatcher resumes Task::restart_block), so a
// direct call has nothing to resume: EINTR, as Linux's do_no_restart_syscall.
SyscallResult SysRestartSyscall(Task&, const SyscallArgs&) { return Errno{EINTR}; }

SyscallResult SysClockGettime(Task& t, const SyscallArgs& a) {
  ASSIGN_OR_RETURN_ERRNO(AppClock c, ResolveClock(t, a.i32(0)));
  timespec ts{};
  if (c.thread) {
    ts = absl::ToTimespec(c.thread->CpuTime());
  } else if (c.process) {
    ts = absl::ToTimespec(c.process->CpuTime());
  } else if (clock_gettime(c.host, &ts) != 0) {
    return Errno{EINVAL};
  }
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), ts));
  return 0;
}

SyscallResult SysClockGetres(Task& t, const SyscallArgs& a) {
  ASSIGN_OR_RETURN_ERRNO(AppClock c, ResolveClock(t, a.i32(0)));
  timespec ts{};
  clock_getres(c.host >= 0 ? c.host : CLOCK_THREAD_CPUTIME_ID, &ts);  // CPU clocks: 1 ns
  if (!a.ptr(1).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), ts));
  return 0;
}

SyscallResult SysGettimeofday(Task& t, const SyscallArgs& a) {
  if (!a.ptr(0).IsNull()) {
    timeval tv{};
    gettimeofday(&tv, nullptr);
    RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), tv));
  }
  if (!a.ptr(1).IsNull()) {
    struct timezone tz {};  // UTC: the sandbox has no host timezone
    RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), tz));
  }
  return 0;
}

// Setting a clock would set the host's: the sandbox refuses with EPERM (what a process
// without CAP_SYS_TIME gets), after Linux's own argument checks.
SyscallResult SysClockSettime(Task& t, const SyscallArgs& a) {
  if (a.i32(0) != CLOCK_REALTIME) return Errno{EINVAL};  // the only settable clock
  ASSIGN_OR_RETURN_ERRNO(timespec ts, t.mm().CopyInObj<timespec>(a.ptr(1)));
  if (!ValidTimespec(ts)) return Errno{EINVAL};
  return Errno{EPERM};
}

SyscallResult SysSettimeofday(Task& t, const SyscallArgs& a) {
  if (!a.ptr(0).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(timeval tv, t.mm().CopyInObj<timeval>(a.ptr(0)));
    if (!ValidTimeval(tv)) return Errno{EINVAL};
  }
  if (!a.ptr(1).IsNull()) RETURN_IF_ERRNO(t.mm().CopyInObj<struct timezone>(a.ptr(1)));
  return Errno{EPERM};
}

SyscallResult SysTime(Task& t, const SyscallArgs& a) {
  const int64_t now = WallSeconds();  // what the vDSO's time() says
  if (!a.ptr(0).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), now));
  return static_cast<uint64_t>(now);
}

SyscallResult SysNanosleep(Task& t, const SyscallArgs& a) {
  ASSIGN_OR_RETURN_ERRNO(timespec req, t.mm().CopyInObj<timespec>(a.ptr(0)));
  if (!ValidTimespec(req)) return Errno{EINVAL};
  return SleepUntil(t, absl::Now() + absl::DurationFromTimespec(req), a.ptr(1));
}

SyscallResult SysClockNanosleep(Task& t, const SyscallArgs& a) {
  int clock = a.i32(0);
  int flags = a.i32(1);
  if (clock == CLOCK_THREAD_CPUTIME_ID) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(clockid_t host, HostClock(clock));
  ASSIGN_OR_RETURN_ERRNO(timespec req, t.mm().CopyInObj<timespec>(a.ptr(2)));
  if (!ValidTimespec(req)) return Errno{EINVAL};
  absl::Duration d = absl::DurationFromTimespec(req);
  if (flags & TIMER_ABSTIME) {
    timespec now{};
    clock_gettime(host, &now);
    d = d - absl::DurationFromTimespec(now);
    // An absolute sleep is simply resumed after a signal: no remaining time.
    return SleepUntil(t, absl::Now() + d, mm::GuestAddr());
  }
  return SleepUntil(t, absl::Now() + d, a.ptr(3));
}

SyscallResult SysTimes(Task& t, const SyscallArgs& a) {
  ThreadGroup& tg = t.thread_group();
  auto ticks = [](int64_t us) { return static_cast<clock_t>(us * kClockTicks / 1000000); };
  if (!a.ptr(0).IsNull()) {
    struct tms b {};
    b.tms_utime = ticks(absl::ToInt64Microseconds(tg.CpuTime()));
    b.tms_stime = ticks(tg.stime_us);
    b.tms_cutime = ticks(tg.child_utime_us);
    b.tms_cstime = ticks(tg.child_stime_us);
    RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), b));
  }
  return static_cast<uint64_t>(absl::ToInt64Milliseconds(absl::Now() - t.kernel().boot_time()) /
                               10);
}

}  // namespace usentry::sentry
