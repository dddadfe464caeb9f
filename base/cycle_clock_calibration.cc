// Locking around Abseil's one-time cycle-clock measurement (cycle_clock_calibration.h).
#include "base/cycle_clock_calibration.h"

#include <atomic>

namespace usentry {
namespace {

std::atomic<bool> g_calibrating{false};

}  // namespace

void NoteCycleClockCalibrationStarted() { g_calibrating.store(true, std::memory_order_release); }

void NoteCycleClockCalibrationDone() { g_calibrating.store(false, std::memory_order_release); }

bool CycleClockCalibrating() { return g_calibrating.load(std::memory_order_acquire); }

}  // namespace usentry
