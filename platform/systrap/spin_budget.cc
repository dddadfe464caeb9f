#include "platform/systrap/spin_budget.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "base/mono_clock.h"
#include "base/tick_clock.h"
#include "base/usable_cpus.h"

namespace usentry::platform::systrap {
namespace {

std::atomic<int> g_active_app_threads{0};

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

uint64_t YieldLostASliceTicks() {
  static const uint64_t ticks = [] {
    double ticks_per_ns = 3.0;  // a guess where the host's clock is not the counter
    if (tick_internal::kUseTsc) {
      const double ns = absl::ToDoubleNanoseconds(TicksToDuration(1'000'000));
      if (ns > 0) ticks_per_ns = 1e6 / ns;
    }
    // Below 2^31: the generated code compares with a sign-extended 32-bit immediate.
    return static_cast<uint64_t>(
        std::clamp(absl::ToDoubleNanoseconds(kYieldLostASlice) * ticks_per_ns, 1.0, 2e9));
  }();
  return ticks;
}

void AddActiveAppThreads(int delta) {
  g_active_app_threads.fetch_add(delta, std::memory_order_relaxed);
}

bool CpusOversubscribed() {
  return Oversubscribed(g_active_app_threads.load(std::memory_order_relaxed), UsableCpus());
}

uint32_t PausesFor(absl::Duration d) {
  const double n = std::ceil(absl::ToDoubleNanoseconds(d) / PauseNanos());
  return static_cast<uint32_t>(std::clamp(n, 1.0, 1e9));
}

}  // namespace usentry::platform::systrap
