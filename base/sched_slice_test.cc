#include "base/sched_slice.h"

#include <sys/resource.h>

#include <thread>

#include "gtest/gtest.h"

namespace usentry {
namespace {

// On a thread of its own: the request stays with that thread (and what it starts).
TEST(SchedSliceTest, RequestsTheShortSliceAndKeepsTheNiceValue) {
  std::thread([] {
    ASSERT_EQ(setpriority(PRIO_PROCESS, 0, 3), 0);  // this thread (Linux)
    const uint64_t before = SchedulerSliceNanos();
    ASSERT_TRUE(RequestShortSchedulerSlice());
    EXPECT_EQ(getpriority(PRIO_PROCESS, 0), 3);
    const uint64_t after = SchedulerSliceNanos();
    if (after != kShortSliceNanos) {
      GTEST_SKIP() << "this kernel has no custom slices (sched_runtime " << before << " -> "
                   << after << ")";
    }
    // A thread started from here inherits it.
    uint64_t inherited = 0;
    std::thread([&] { inherited = SchedulerSliceNanos(); }).join();
    EXPECT_EQ(inherited, kShortSliceNanos);
  }).join();
}

}  // namespace
}  // namespace usentry
