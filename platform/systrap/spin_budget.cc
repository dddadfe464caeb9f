#include "platform/systrap/spin_budget.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "base/mono_clock.h"

namespace usentry::platform::systrap {
namespace {

double MeasurePauseNanos() {
  constexpr int kRuns = 5;
  constexpr int kPausesPerRun = 128;  // 1.5-6 us a run on the hosts above
  double best = 1e9;
  for (int r = 0; r < kRuns; ++r) {
    const absl::Duration start = MonotonicNow();
    for (int i = 0; i < kPausesPerRun; ++i) _mm_pause();
    const double ns = absl::ToDoubleNanoseconds(MonotonicNow() - start) / kPausesPerRun;
    best = std::min(best, ns);  // a run that was preempted or interrupted only looks slower
  }
  // A clock too coarse to see the runs, or a pause that is a no-op: bounds that keep the
  // budgets sane either way.
  return std::clamp(best, 1.0, 1000.0);
}

}  // namespace

double PauseNanos() {
  static const double ns = MeasurePauseNanos();
  return ns;
}

uint32_t PausesFor(absl::Duration d) {
  const double n = std::ceil(absl::ToDoubleNanoseconds(d) / PauseNanos());
  return static_cast<uint32_t>(std::clamp(n, 1.0, 1e9));
}

}  // namespace usentry::platform::systrap
