// Per-process timers: the three interval timers (alarm(2), setitimer(2)) and POSIX
// timers (timer_create(2)), on top of the kernel's TimerQueue. Expiry sends a signal to
// the process (or one thread for SIGEV_THREAD_ID), which interrupts a task running app
// code so delivery is prompt.
//
// Lifetime, as Linux: none of them is inherited by fork; exec deletes POSIX timers and
// keeps the interval timers; process exit deletes all (ProcessTimersOnExec/OnExit).
// ITIMER_VIRTUAL and ITIMER_PROF count wall-clock time, not CPU time: the sentry does not
// account app CPU time per process yet. All functions require Kernel::mu.
#ifndef USENTRY_SENTRY_KERNEL_PROCESS_TIMERS_H_
#define USENTRY_SENTRY_KERNEL_PROCESS_TIMERS_H_

#include <signal.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/time/time.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/timers.h"

namespace usentry::sentry {

class Kernel;
class ThreadGroup;

struct TimerSetting {
  absl::Duration value;  // time to the next expiry; zero = disarmed
  absl::Duration interval;
};

// A timer_create(2) timer.
struct PosixTimer {
  int32_t id = 0;
  int clock = 0;
  int notify = SIGEV_SIGNAL;  // SIGEV_NONE, SIGEV_SIGNAL (SIGEV_THREAD too), SIGEV_THREAD_ID
  int signo = SIGALRM;
  int32_t target_tid = 0;  // SIGEV_THREAD_ID
  sigval_t value{};
  std::shared_ptr<Timer> timer;
  // Overruns: while the timer's signal is still pending, further expirations are added
  // to its si_overrun instead of queueing again; the value at delivery is what
  // timer_getoverrun then reports (detected lazily: the signal left the queue).
  bool queued = false;
  int32_t queued_to_tid = 0;  // 0: the process's queue
  int32_t queued_overrun = 0;
  int32_t last_overrun = 0;
};

struct ProcessTimers {
  std::array<std::shared_ptr<Timer>, 3> itimers;  // ITIMER_REAL, _VIRTUAL, _PROF
  std::map<int32_t, std::shared_ptr<PosixTimer>> posix;
};

// ---- interval timers -----------------------------------------------------------------
TimerSetting GetItimer(ThreadGroup& tg, int which);
// Arms (or with a zero value disarms) `which` and returns the previous setting.
TimerSetting SetItimer(Kernel& k, ThreadGroup& tg, int which, const TimerSetting& s);

// ---- POSIX timers --------------------------------------------------------------------
// `timer` fields id and timer are filled in; EAGAIN past the per-process limit.
SysResult<int32_t> CreatePosixTimer(Kernel& k, ThreadGroup& tg, PosixTimer timer);
// The timer `id` of `tg`, or null.
PosixTimer* FindPosixTimer(ThreadGroup& tg, int32_t id);
// Arms at `deadline` (absl::InfinitePast(): disarm). A signal of the old setting still
// pending is dropped, as is that of a deleted timer.
void ArmPosixTimer(Kernel& k, ThreadGroup& tg, PosixTimer& pt, absl::Time deadline,
                   absl::Duration interval);
int32_t PosixTimerOverrun(Kernel& k, ThreadGroup& tg, PosixTimer& pt);
SysStatus DeletePosixTimer(Kernel& k, ThreadGroup& tg, int32_t id);

// ---- lifetime hooks ------------------------------------------------------------------
void ProcessTimersOnExec(ThreadGroup& tg);
void ProcessTimersOnExit(ThreadGroup& tg);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_PROCESS_TIMERS_H_
