// Abseil measures the cycle-clock frequency once per process, and its Mutex asks for it
// the first time each thread waits in a mutex's queue (to pace how often it re-reads
// the thread's scheduling priority). The measurement sleeps 3 ms or more (1 ms, then
// 2 ms, longer while two readings disagree), and until it ends every thread that queues
// on any contended absl::Mutex waits for it.
//
// The sentry measures on a thread of its own from its first moment
// (sentry::confine::StartCalibration), and on a 2-vCPU AMD guest that thread was still
// 0.6-1.5 ms from done, in 9 runs of 10, when the first task of `python3 -c pass` took
// Kernel::mu for the first time: a contended first lock there waited 0.5-1.6 ms
// (docs/benchmarks.md, session 27). LockWithoutCalibrationWait takes a lock that a
// thread may find contended while the measurement runs, without queueing.
#ifndef USENTRY_BASE_CYCLE_CLOCK_CALIBRATION_H_
#define USENTRY_BASE_CYCLE_CLOCK_CALIBRATION_H_

#include <sched.h>

#include <atomic>

#include "absl/synchronization/mutex.h"

namespace usentry {

// Said by whoever starts the measurement on a thread, before the thread starts, and by
// that thread once NominalCPUFrequency() has returned.
void NoteCycleClockCalibrationStarted();
void NoteCycleClockCalibrationDone();

namespace cycle_clock_internal {
extern std::atomic<bool> calibrating;  // set and cleared by the Note functions
}  // namespace cycle_clock_internal

// True from NoteCycleClockCalibrationStarted() until NoteCycleClockCalibrationDone().
// Inline: every task thread asks on each return from app code (one load).
inline bool CycleClockCalibrating() {
  return cycle_clock_internal::calibrating.load(std::memory_order_acquire);
}

// mu.Lock(), except that while the measurement runs it tries the lock between
// sched_yields (a holder of Kernel::mu lets go within microseconds) instead of
// queueing. Once the measurement is done, or when none was started, a plain Lock().
template <typename Lockable>
void LockWithoutCalibrationWaitOn(Lockable& mu) {
  while (CycleClockCalibrating()) {
    if (mu.TryLock()) return;
    sched_yield();
  }
  mu.Lock();
}

inline void LockWithoutCalibrationWait(absl::Mutex& mu)
    ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  LockWithoutCalibrationWaitOn(mu);
}

}  // namespace usentry

#endif  // USENTRY_BASE_CYCLE_CLOCK_CALIBRATION_H_
