// The time since boot on CLOCK_MONOTONIC, for measuring stretches inside the sentry.
#ifndef USENTRY_BASE_MONO_CLOCK_H_
#define USENTRY_BASE_MONO_CLOCK_H_

#include <time.h>

#include "absl/time/time.h"

namespace usentry {

// One vDSO read, ~20 ns. The sentry reads the clock twice per trapped syscall (the app's
// CPU time is the time between traps); absl::Now cost ~80 ns for the two, on the path
// between the stub's trap and its resume (docs/benchmarks.md).
inline absl::Duration MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return absl::DurationFromTimespec(ts);
}

}  // namespace usentry

#endif  // USENTRY_BASE_MONO_CLOCK_H_
