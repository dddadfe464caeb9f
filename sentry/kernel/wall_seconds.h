// WallSeconds: the wall clock in whole seconds, as Linux's time(2) and its IPC timestamps
// read it.
#ifndef USENTRY_SENTRY_KERNEL_WALL_SECONDS_H_
#define USENTRY_SENTRY_KERNEL_WALL_SECONDS_H_

#include <time.h>

#include <cstdint>

namespace usentry::sentry {

// Linux's ktime_get_real_seconds(): the coarse realtime clock, which the vDSO's time()
// reads too. absl::Now() (CLOCK_REALTIME) runs up to a tick ahead of it, so at the turn
// of a second a timestamp taken with it could be later than the time() the app reads
// right after (shm_test's ctime check failed so, once in a CI run).
inline int64_t WallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts.tv_sec;
}

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_WALL_SECONDS_H_
