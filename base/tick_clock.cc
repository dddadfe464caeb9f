// The tick clock's source and its rate (see tick_clock.h).
#include "base/tick_clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace usentry {
namespace {

// Whether the kernel's clocksource is the TSC. It refuses the TSC when the counter is
// unstable or unsynchronized across CPUs, so its choice is the test we trust; a file
// we cannot read (a confined process) means no.
bool KernelClockIsTsc() {
  const int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16] = {};
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  return n >= 3 && std::strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

int64_t MonotonicNanos() { return absl::ToInt64Nanoseconds(MonotonicNow()); }

// The pair the rate is measured from: both clocks at the process's start. A process
// cloned without exec (the sentry, the gofer) inherits it and its rate.
struct Origin {
  int64_t ticks;
  int64_t nanos;
};

const Origin& StartOrigin() {
  static const Origin origin{static_cast<int64_t>(__rdtsc()), MonotonicNanos()};
  return origin;
}

// Long enough that a read's jitter (tens of ns) is ~0.001% of it, and short enough that
// the rate is fixed before the sentry's first switch (~4 ms into a run): each conversion
// before then reads the clock, on the path from a trap to the resume.
constexpr int64_t kSettleNanos = 2'000'000;
std::atomic<double> settled_nanos_per_tick{0.0};

}  // namespace

namespace tick_internal {
const bool kUseTsc = (StartOrigin(), KernelClockIsTsc());
}  // namespace tick_internal

absl::Duration TicksToDuration(int64_t ticks) {
  if (!tick_internal::kUseTsc) return absl::Nanoseconds(ticks);
  double rate = settled_nanos_per_tick.load(std::memory_order_relaxed);
  if (rate == 0.0) {
    const Origin& o = StartOrigin();
    const int64_t nanos = MonotonicNanos() - o.nanos;
    const int64_t elapsed = static_cast<int64_t>(__rdtsc()) - o.ticks;
    if (nanos <= 0 || elapsed <= 0) return absl::ZeroDuration();  // too early to tell
    rate = static_cast<double>(nanos) / static_cast<double>(elapsed);
    if (nanos >= kSettleNanos) settled_nanos_per_tick.store(rate, std::memory_order_relaxed);
  }
  return absl::Nanoseconds(static_cast<int64_t>(static_cast<double>(ticks) * rate));
}

}  // namespace usentry
