// TimerQueue: expiry on the timer thread, periodic counting, disarming, and callbacks
// that give up their timer.
#include "sentry/kernel/timers.h"

#include "gtest/gtest.h"

namespace usentry::sentry {
namespace {

class TimerQueueTest : public ::testing::Test {
 protected:
  // Waits (with mu_ held) until `done` holds or 5 s pass.
  bool WaitFor(const std::function<bool()>& done) {
    absl::Time end = absl::Now() + absl::Seconds(5);
    while (!done() && absl::Now() < end) cv_.WaitWithTimeout(&mu_, absl::Milliseconds(5));
    return done();
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  TimerQueue queue_{&mu_};
};

TEST_F(TimerQueueTest, OneShotFiresOnceThenDisarms) {
  absl::MutexLock l(&mu_);
  int fired = 0;
  auto t = queue_.NewTimer([&](uint64_t n) {
    fired += static_cast<int>(n);
    cv_.Signal();
    return true;
  });
  absl::Time start = absl::Now();
  t->Arm(start + absl::Milliseconds(30), absl::ZeroDuration());
  EXPECT_TRUE(t->armed());
  ASSERT_TRUE(WaitFor([&] { return fired == 1; }));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(29));
  EXPECT_FALSE(t->armed());
  EXPECT_EQ(t->Remaining(absl::Now()), absl::ZeroDuration());
}

TEST_F(TimerQueueTest, PeriodicCountsMissedPeriods) {
  absl::MutexLock l(&mu_);
  uint64_t total = 0;
  int calls = 0;
  auto t = queue_.NewTimer([&](uint64_t n) {
    total += n;
    calls++;
    cv_.Signal();
    return true;
  });
  t->Arm(absl::Now() + absl::Milliseconds(5), absl::Milliseconds(5));
  EXPECT_EQ(t->interval(), absl::Milliseconds(5));
  // Holding the lock for 60 ms keeps the timer thread from running: the periods it
  // missed arrive as one call with a count.
  absl::SleepFor(absl::Milliseconds(60));
  ASSERT_TRUE(WaitFor([&] { return total >= 10; }));
  EXPECT_LT(calls, static_cast<int>(total));
  t->Disarm();
  EXPECT_FALSE(t->armed());
}

TEST_F(TimerQueueTest, DisarmedTimerNeverFires) {
  absl::MutexLock l(&mu_);
  int fired = 0;
  auto t = queue_.NewTimer([&](uint64_t) {
    fired++;
    return true;
  });
  t->Arm(absl::Now() + absl::Milliseconds(20), absl::ZeroDuration());
  t->Disarm();
  cv_.WaitWithTimeout(&mu_, absl::Milliseconds(60));
  EXPECT_EQ(fired, 0);
}

TEST_F(TimerQueueTest, CallbackReturningFalseDisarms) {
  absl::MutexLock l(&mu_);
  int fired = 0;
  auto t = queue_.NewTimer([&](uint64_t) {
    fired++;
    cv_.Signal();
    return false;  // owner gone
  });
  t->Arm(absl::Now() + absl::Milliseconds(5), absl::Milliseconds(5));
  ASSERT_TRUE(WaitFor([&] { return fired == 1; }));
  cv_.WaitWithTimeout(&mu_, absl::Milliseconds(40));
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(t->armed());
}

TEST_F(TimerQueueTest, EarlierTimerRearmsTheThread) {
  absl::MutexLock l(&mu_);
  int order = 0, late = 0, early = 0;
  auto a = queue_.NewTimer([&](uint64_t) {
    late = ++order;
    return true;
  });
  auto b = queue_.NewTimer([&](uint64_t) {
    early = ++order;
    cv_.Signal();
    return true;
  });
  a->Arm(absl::Now() + absl::Seconds(30), absl::ZeroDuration());
  b->Arm(absl::Now() + absl::Milliseconds(10), absl::ZeroDuration());
  ASSERT_TRUE(WaitFor([&] { return early == 1; }));
  EXPECT_EQ(late, 0);
  EXPECT_GT(a->Remaining(absl::Now()), absl::Seconds(29));
  a->Disarm();
}

}  // namespace
}  // namespace usentry::sentry
