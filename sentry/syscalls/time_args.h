// Checks of time arguments shared by the clock, sleep, timer and signal-wait syscalls:
// Linux rejects a negative or denormalized value with EINVAL before anything else.
#ifndef USENTRY_SENTRY_SYSCALLS_TIME_ARGS_H_
#define USENTRY_SENTRY_SYSCALLS_TIME_ARGS_H_

#include <sys/time.h>
#include <time.h>

#include <cstdint>

namespace usentry::sentry {

inline constexpr int64_t kNsPerSec = 1000000000;
inline constexpr int64_t kUsPerSec = 1000000;

inline bool ValidTimespec(const timespec& ts) {
  return ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < kNsPerSec;
}
inline bool ValidTimeval(const timeval& tv) {
  return tv.tv_sec >= 0 && tv.tv_usec >= 0 && tv.tv_usec < kUsPerSec;
}

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_TIME_ARGS_H_
