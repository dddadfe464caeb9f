// Timer syscalls: alarm(2), getitimer/setitimer(2), timer_create(2) and friends,
// timerfd_create(2) and friends. The timers themselves are in sentry/kernel/timers.h
// and process_timers.h, timerfd descriptions in sentry/fsimpl/timerfd.h.
#include "sentry/syscalls/sys_timer.h"

#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>

#include <cstring>

#include "abi/signal.h"
#include "sentry/fsimpl/timerfd.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/process_timers.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/syscalls/time_args.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {

namespace {

enum class TimerKind { kPosix, kTimerfd };

// Validates a clock for a timer. The CPU-time clocks are accepted for POSIX timers but
// run on wall-clock time (no per-process CPU accounting yet). The _ALARM clocks need
// CAP_WAKE_ALARM, which the sandbox never grants.
SysStatus CheckTimerClock(int clock, TimerKind kind) {
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_BOOTTIME:
      return SysOk();
    case CLOCK_TAI:
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID:
      return kind == TimerKind::kPosix ? SysOk() : SysStatus(Errno{EINVAL});
    case CLOCK_REALTIME_ALARM:
    case CLOCK_BOOTTIME_ALARM:
      return Errno{EPERM};
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
      // Readable clocks without timer support.
      return kind == TimerKind::kPosix ? SysStatus(Errno{EOPNOTSUPP}) : SysStatus(Errno{EINVAL});
    default:
      return Errno{EINVAL};
  }
}

// Now on the app's `clock`, read the way clock_gettime(2) answers it (sys_time.cc maps
// the CPU clocks to the calling sentry thread's CPU time).
absl::Duration ClockNow(int clock) {
  clockid_t host = clock;
  if (clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID) {
    host = CLOCK_THREAD_CPUTIME_ID;
  }
  timespec now{};
  clock_gettime(host, &now);
  return absl::DurationFromTimespec(now);
}

// The absl deadline of an it_value on `clock`: relative, or absolute on that clock. A
// zero value means disarm (InfinitePast). Past absolute values expire at once.
absl::Time DeadlineOf(int clock, const timespec& value, bool absolute) {
  absl::Duration v = absl::DurationFromTimespec(value);
  if (v == absl::ZeroDuration()) return absl::InfinitePast();
  if (!absolute) return absl::Now() + v;
  return absl::Now() + (v - ClockNow(clock));
}

itimerspec ToItimerspec(absl::Duration value, absl::Duration interval) {
  return itimerspec{absl::ToTimespec(interval), absl::ToTimespec(value)};
}

timeval UsecTimeval(absl::Duration d) {
  return absl::ToTimeval(absl::Trunc(d, absl::Microseconds(1)));
}

// getitimer/setitimer report at least 1us while armed, like Linux.
itimerval ToItimerval(const TimerSetting& s) {
  absl::Duration value = s.value;
  if (value > absl::ZeroDuration()) value = std::max(value, absl::Microseconds(1));
  return itimerval{UsecTimeval(s.interval), UsecTimeval(value)};
}

SysResult<std::shared_ptr<fsimpl::TimerfdDescription>> GetTimerfd(Task& t, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(t, fd));
  auto tfd = std::dynamic_pointer_cast<fsimpl::TimerfdDescription>(file);
  if (!tfd) return Errno{EINVAL};
  return tfd;
}

}  // namespace

// ---- alarm / interval timers ---------------------------------------------------------

SyscallResult SysAlarm(Task& t, const SyscallArgs& a) {
  uint32_t seconds = a.u32(0);
  TimerSetting old = SetItimer(t.kernel(), t.thread_group(), ITIMER_REAL,
                               {absl::Seconds(seconds), absl::ZeroDuration()});
  // Linux rounds the remaining time to the nearest second, but reports at least 1 while
  // an alarm is pending.
  timeval rem = UsecTimeval(old.value);
  uint64_t secs = static_cast<uint64_t>(rem.tv_sec);
  if ((secs == 0 && rem.tv_usec > 0) || rem.tv_usec >= 500000) secs++;
  return secs;
}

SyscallResult SysGetitimer(Task& t, const SyscallArgs& a) {
  int which = a.i32(0);
  if (which < ITIMER_REAL || which > ITIMER_PROF) return Errno{EINVAL};
  itimerval out = ToItimerval(GetItimer(t.thread_group(), which));
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), out));
  return 0;
}

SyscallResult SysSetitimer(Task& t, const SyscallArgs& a) {
  int which = a.i32(0);
  if (which < ITIMER_REAL || which > ITIMER_PROF) return Errno{EINVAL};
  itimerval in{};  // a null new value disarms, as Linux still accepts
  if (!a.ptr(1).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(in, t.mm().CopyInObj<itimerval>(a.ptr(1)));
  }
  if (!ValidTimeval(in.it_value) || !ValidTimeval(in.it_interval)) return Errno{EINVAL};
  TimerSetting s{absl::DurationFromTimeval(in.it_value), absl::DurationFromTimeval(in.it_interval)};
  TimerSetting old = SetItimer(t.kernel(), t.thread_group(), which, s);
  if (!a.ptr(2).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(2), ToItimerval(old)));
  return 0;
}

// ---- POSIX timers --------------------------------------------------------------------

SyscallResult SysTimerCreate(Task& t, const SyscallArgs& a) {
  int clock = a.i32(0);
  RETURN_IF_ERRNO(CheckTimerClock(clock, TimerKind::kPosix));
  ThreadGroup& tg = t.thread_group();
  PosixTimer pt;
  pt.clock = clock;
  bool default_value = true;
  if (!a.ptr(1).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(abi::SigEvent ev, t.mm().CopyInObj<abi::SigEvent>(a.ptr(1)));
    switch (ev.notify) {
      case abi::kSigevSignal | abi::kSigevThreadId: {
        Task* target = t.kernel().FindTask(ev.un.tid);
        if (!target || &target->thread_group() != &tg) return Errno{EINVAL};
        pt.target_tid = ev.un.tid;
        [[fallthrough]];
      }
      case abi::kSigevSignal:
      case abi::kSigevThread:
        if (ev.signo <= 0 || ev.signo > kNumSignals) return Errno{EINVAL};
        break;
      case abi::kSigevNone:
        break;
      default:
        return Errno{EINVAL};
    }
    pt.notify = ev.notify == abi::kSigevThread ? SIGEV_SIGNAL : ev.notify;
    pt.signo = ev.signo;
    memcpy(&pt.value, &ev.value, sizeof(pt.value));
    default_value = false;
  }
  ASSIGN_OR_RETURN_ERRNO(int32_t id, CreatePosixTimer(t.kernel(), tg, pt));
  PosixTimer* created = FindPosixTimer(tg, id);
  // Without a sigevent: SIGEV_SIGNAL, SIGALRM, and the timer id as the value.
  if (default_value) created->value.sival_int = id;
  if (auto st = t.mm().CopyOutObj<int32_t>(a.ptr(2), id); !st.ok()) {
    (void)DeletePosixTimer(t.kernel(), tg, id);
    return Errno{st.error()};
  }
  return 0;
}

SyscallResult SysTimerSettime(Task& t, const SyscallArgs& a) {
  ThreadGroup& tg = t.thread_group();
  PosixTimer* pt = FindPosixTimer(tg, a.i32(0));
  if (!pt) return Errno{EINVAL};
  if (a.ptr(2).IsNull()) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(itimerspec in, t.mm().CopyInObj<itimerspec>(a.ptr(2)));
  if (!ValidTimespec(in.it_value) || !ValidTimespec(in.it_interval)) return Errno{EINVAL};
  absl::Time now = absl::Now();
  itimerspec old = ToItimerspec(pt->timer->Remaining(now), pt->timer->interval());
  ArmPosixTimer(t.kernel(), tg, *pt, DeadlineOf(pt->clock, in.it_value, a.i32(1) & TIMER_ABSTIME),
                absl::DurationFromTimespec(in.it_interval));
  if (!a.ptr(3).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(3), old));
  return 0;
}

SyscallResult SysTimerGettime(Task& t, const SyscallArgs& a) {
  PosixTimer* pt = FindPosixTimer(t.thread_group(), a.i32(0));
  if (!pt) return Errno{EINVAL};
  itimerspec cur = ToItimerspec(pt->timer->Remaining(absl::Now()), pt->timer->interval());
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), cur));
  return 0;
}

SyscallResult SysTimerGetoverrun(Task& t, const SyscallArgs& a) {
  ThreadGroup& tg = t.thread_group();
  PosixTimer* pt = FindPosixTimer(tg, a.i32(0));
  if (!pt) return Errno{EINVAL};
  return static_cast<uint64_t>(PosixTimerOverrun(t.kernel(), tg, *pt));
}

SyscallResult SysTimerDelete(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(DeletePosixTimer(t.kernel(), t.thread_group(), a.i32(0)));
  return 0;
}

// ---- timerfd -------------------------------------------------------------------------

SyscallResult SysTimerfdCreate(Task& t, const SyscallArgs& a) {
  int clock = a.i32(0);
  int flags = a.i32(1);
  if (flags & ~(TFD_NONBLOCK | TFD_CLOEXEC)) return Errno{EINVAL};
  RETURN_IF_ERRNO(CheckTimerClock(clock, TimerKind::kTimerfd));
  auto file = fsimpl::TimerfdDescription::New(t.kernel().timer_queue(), clock, flags);
  ASSIGN_OR_RETURN_ERRNO(int fd, t.fds().Install(file, flags & TFD_CLOEXEC));
  return static_cast<uint64_t>(fd);
}

SyscallResult SysTimerfdSettime(Task& t, const SyscallArgs& a) {
  int flags = a.i32(1);
  // As Linux: the setting is checked before the descriptor.
  ASSIGN_OR_RETURN_ERRNO(itimerspec in, t.mm().CopyInObj<itimerspec>(a.ptr(2)));
  if (flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)) return Errno{EINVAL};
  if (!ValidTimespec(in.it_value) || !ValidTimespec(in.it_interval)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto tfd, GetTimerfd(t, a.i32(0)));
  // TFD_TIMER_CANCEL_ON_SET: ECANCELED would need the realtime clock to be set, which
  // the sandbox cannot do, so accepting the flag is all there is to it.
  itimerspec old = ToItimerspec(tfd->Remaining(), tfd->interval());
  tfd->Set(DeadlineOf(tfd->clock(), in.it_value, flags & TFD_TIMER_ABSTIME),
           absl::DurationFromTimespec(in.it_interval));
  if (!a.ptr(3).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(3), old));
  return 0;
}

SyscallResult SysTimerfdGettime(Task& t, const SyscallArgs& a) {
  ASSIGN_OR_RETURN_ERRNO(auto tfd, GetTimerfd(t, a.i32(0)));
  itimerspec cur = ToItimerspec(tfd->Remaining(), tfd->interval());
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), cur));
  return 0;
}

}  // namespace usentry::sentry
