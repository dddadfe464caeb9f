#include "platform/systrap/spin_budget.h"

#include <sched.h>

#include "gtest/gtest.h"

namespace usentry::platform::systrap {
namespace {

TEST(SpinBudgetTest, APauseIsMeasuredOnceAndIsPlausible) {
  const double ns = PauseNanos();
  EXPECT_GE(ns, 1.0);
  EXPECT_LE(ns, 1000.0);
  EXPECT_EQ(PauseNanos(), ns);  // cached: every stub of a run gets the same budget
}

TEST(SpinBudgetTest, PauseCountsScaleWithTheBudget) {
  const uint32_t a = PausesFor(absl::Microseconds(100));
  const uint32_t b = PausesFor(absl::Microseconds(400));
  EXPECT_GE(a, 100u);  // a pause takes at most 1 us
  EXPECT_NEAR(static_cast<double>(b) / a, 4.0, 0.05);
  EXPECT_EQ(PausesFor(absl::ZeroDuration()), 1u);  // never a loop that does not run
  EXPECT_LT(PausesFor(kStubSpinBudgetBeforeHint), PausesFor(kStubSpinBudget));
  // The sentry's first yield comes long before it would stop spinning.
  EXPECT_LT(PausesFor(kSentryFirstYieldAfter) * 10, PausesFor(kSentrySpinBudget));
}

TEST(SpinBudgetTest, OversubscribedOnlyWithMoreActiveAppThreadsThanCpus) {
  EXPECT_FALSE(Oversubscribed(1, 1));
  EXPECT_FALSE(Oversubscribed(8, 1));  // one CPU: hand-offs go through the scheduler anyway
  EXPECT_FALSE(Oversubscribed(2, 2));  // two processes taking turns through a pipe
  EXPECT_TRUE(Oversubscribed(3, 2));
}

TEST(SpinBudgetTest, ActiveAppThreadsAreCounted) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cpus = CPU_COUNT(&set);
  if (cpus < 2) GTEST_SKIP() << "one usable CPU: never oversubscribed";
  EXPECT_FALSE(CpusOversubscribed());
  AddActiveAppThreads(cpus);
  EXPECT_FALSE(CpusOversubscribed());
  AddActiveAppThreads(1);
  EXPECT_TRUE(CpusOversubscribed());
  AddActiveAppThreads(-(cpus + 1));
  EXPECT_FALSE(CpusOversubscribed());
}

}  // namespace
}  // namespace usentry::platform::systrap
