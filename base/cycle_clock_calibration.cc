// Locking around Abseil's one-time cycle-clock measurement (cycle_clock_calibration.h).
#include "base/cycle_clock_calibration.h"

namespace usentry {

std::atomic<bool> cycle_clock_internal::calibrating{false};

void NoteCycleClockCalibrationStarted() {
  cycle_clock_internal::calibrating.store(true, std::memory_order_release);
}

void NoteCycleClockCalibrationDone() {
  cycle_clock_internal::calibrating.store(false, std::memory_order_release);
}

}  // namespace usentry
