#include "platform/systrap/spin_budget.h"

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

}  // namespace
}  // namespace usentry::platform::systrap
