#include "base/cycle_clock_calibration.h"

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace usentry {
namespace {

// A lock that is busy for its first `busy_tries` TryLock()s and counts what it is asked.
struct FakeLock {
  int busy_tries = 0;
  int try_locks = 0;
  int locks = 0;
  bool TryLock() { return ++try_locks > busy_tries; }
  void Lock() { ++locks; }
};

// Each test leaves the flag as it found it (clear).
class CycleClockCalibrationTest : public testing::Test {
 protected:
  void TearDown() override { NoteCycleClockCalibrationDone(); }
};

TEST_F(CycleClockCalibrationTest, NotedStartAndEnd) {
  EXPECT_FALSE(CycleClockCalibrating());
  NoteCycleClockCalibrationStarted();
  EXPECT_TRUE(CycleClockCalibrating());
  NoteCycleClockCalibrationDone();
  EXPECT_FALSE(CycleClockCalibrating());
}

// While Abseil measures, a contended lock is tried again, never queued for (queueing
// behind another waiter would wait for the measurement's end).
TEST_F(CycleClockCalibrationTest, WhileMeasuringTriesInsteadOfQueueing) {
  NoteCycleClockCalibrationStarted();
  FakeLock lock{.busy_tries = 5};
  LockWithoutCalibrationWaitOn(lock);
  EXPECT_EQ(lock.try_locks, 6);
  EXPECT_EQ(lock.locks, 0);
}

TEST_F(CycleClockCalibrationTest, OtherwiseAPlainLock) {
  FakeLock lock{.busy_tries = 5};
  LockWithoutCalibrationWaitOn(lock);
  EXPECT_EQ(lock.try_locks, 0);
  EXPECT_EQ(lock.locks, 1);

  absl::Mutex mu;
  NoteCycleClockCalibrationStarted();
  LockWithoutCalibrationWait(mu);  // free: the first try takes it
  mu.AssertHeld();
  mu.Unlock();
}

}  // namespace
}  // namespace usentry
