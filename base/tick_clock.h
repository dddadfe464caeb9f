// A cheaper clock than MonotonicNow for timing the app's runs between two traps, which
// the platforms do on every switch (SwitchResult::ran_ticks: the app's CPU accounting).
//
// A vDSO clock read is `rdtscp` (or `lfence; rdtsc`) plus its conversion: ~20 ns, and it
// waits for every earlier instruction. systrap's wait for app code reads the clock at
// every look at the slot, so that no read sits between the stub's report and its resume
// (two there were ~40 ns of a patched getpid's ~460, docs/benchmarks.md). TickNow is a
// bare `rdtsc` (~8 ns, waits for nothing) where the host kernel keeps its own clock on
// the time-stamp counter (clocksource "tsc": constant rate, the same on every CPU), and
// CLOCK_MONOTONIC nanoseconds where it does not.
#ifndef USENTRY_BASE_TICK_CLOCK_H_
#define USENTRY_BASE_TICK_CLOCK_H_

#include <x86intrin.h>

#include <cstdint>

#include "absl/time/time.h"
#include "base/mono_clock.h"

namespace usentry {

namespace tick_internal {
// Decided once, before main (tick_clock.cc).
extern const bool kUseTsc;
}  // namespace tick_internal

// A point on the tick clock. Only differences mean anything; they are not ordered with
// the instructions around them to better than a few tens of nanoseconds.
inline int64_t TickNow() {
  if (tick_internal::kUseTsc) return static_cast<int64_t>(__rdtsc());
  return absl::ToInt64Nanoseconds(MonotonicNow());
}

// The length of `ticks` (a difference of two TickNow()s). The counter's rate is measured
// against CLOCK_MONOTONIC from the process's start: fixed once 2 ms have passed (before
// the sentry runs any app code), read afresh by each call before then.
absl::Duration TicksToDuration(int64_t ticks);

}  // namespace usentry

#endif  // USENTRY_BASE_TICK_CLOCK_H_
