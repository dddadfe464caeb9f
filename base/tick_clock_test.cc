// Tests of the tick clock against CLOCK_MONOTONIC on stretches a caller would time.
#include "base/tick_clock.h"

#include <unistd.h>

#include "absl/time/clock.h"
#include "base/mono_clock.h"
#include "gtest/gtest.h"

namespace usentry {
namespace {

// Times a stretch on both clocks.
std::pair<absl::Duration, absl::Duration> TimeBoth(absl::Duration sleep) {
  const absl::Duration mono0 = MonotonicNow();
  const int64_t tick0 = TickNow();
  absl::SleepFor(sleep);
  const int64_t tick1 = TickNow();
  const absl::Duration mono1 = MonotonicNow();
  return {TicksToDuration(tick1 - tick0), mono1 - mono0};
}

TEST(TickClockTest, StretchesMatchTheMonotonicClock) {
  // Before and after the rate settles (2 ms into the process), and for stretches from
  // a millisecond to a quarter second: within 1% (plus the reads' own time).
  for (absl::Duration d : {absl::Milliseconds(1), absl::Milliseconds(20), absl::Milliseconds(250),
                           absl::Milliseconds(3)}) {
    auto [ticked, mono] = TimeBoth(d);
    EXPECT_GE(ticked, d * 0.99) << d;
    EXPECT_LE(ticked, mono * 1.01 + absl::Microseconds(5)) << d;
  }
}

TEST(TickClockTest, NeverRunsBackwardsAndZeroIsZero) {
  EXPECT_EQ(TicksToDuration(0), absl::ZeroDuration());
  int64_t last = TickNow();
  for (int i = 0; i < 100000; ++i) {
    const int64_t now = TickNow();
    ASSERT_GE(now, last);
    last = now;
  }
}

}  // namespace
}  // namespace usentry
