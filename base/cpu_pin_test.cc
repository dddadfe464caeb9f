// Tests of HoldThreadCpu, ReleaseThreadCpu and CpuFollower on real threads: the masks the
// kernel reports.
#include "base/cpu_pin.h"

#include <sched.h>

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace usentry {
namespace {

cpu_set_t MaskOf(pid_t tid) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(tid, sizeof(mask), &mask), 0);
  return mask;
}

bool SameMask(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b); }

std::vector<int> CpusIn(const cpu_set_t& mask) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  }
  return cpus;
}

// Each test runs on a thread of its own: affinity is per thread, and the test runner's
// main thread must keep its mask.
template <typename F>
void OnThread(F f) {
  std::thread t(f);
  t.join();
}

TEST(HoldThreadCpuTest, HoldsTheThreadWhereItRunsUntilReleased) {
  OnThread([] {
    const cpu_set_t home = MaskOf(0);
    const uint32_t cpu = HoldThreadCpu();
    ASSERT_NE(cpu, kAnyCpu);
    EXPECT_TRUE(CPU_ISSET(cpu, &home));
    EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{static_cast<int>(cpu)});
    EXPECT_EQ(sched_getcpu(), static_cast<int>(cpu));
    // Held already: the same CPU again, and still held after any number of calls.
    EXPECT_EQ(HoldThreadCpu(), cpu);
    EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{static_cast<int>(cpu)});
    ReleaseThreadCpu();
    EXPECT_TRUE(SameMask(home, MaskOf(0)));
    // Releasing a thread that holds nothing changes nothing, nor does it forget the mask.
    ReleaseThreadCpu();
    EXPECT_TRUE(SameMask(home, MaskOf(0)));
  });
}

TEST(HoldThreadCpuTest, AHoldIsPerThread) {
  OnThread([] {
    const cpu_set_t home = MaskOf(0);
    const uint32_t cpu = HoldThreadCpu();
    ASSERT_NE(cpu, kAnyCpu);
    // A thread it starts inherits the narrow mask but no hold: releasing changes nothing.
    OnThread([&] {
      ReleaseThreadCpu();
      EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{static_cast<int>(cpu)});
    });
    EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{static_cast<int>(cpu)});
    ReleaseThreadCpu();
    EXPECT_TRUE(SameMask(home, MaskOf(0)));
  });
}

TEST(HoldThreadCpuTest, AHoldThatSomethingElseUndidIsTakenAgain) {
  OnThread([] {
    const cpu_set_t home = MaskOf(0);
    const std::vector<int> cpus = CpusIn(home);
    if (cpus.size() < 2) GTEST_SKIP() << "one CPU: a hold changes no mask";
    const uint32_t first = HoldThreadCpu();
    ASSERT_NE(first, kAnyCpu);
    const int other = static_cast<int>(first) == cpus.front() ? cpus.back() : cpus.front();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(other, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // moves the thread
    EXPECT_EQ(HoldThreadCpu(), static_cast<uint32_t>(other));
    ASSERT_EQ(sched_setaffinity(0, sizeof(home), &home), 0);
    const uint32_t again = HoldThreadCpu();
    ASSERT_NE(again, kAnyCpu);
    EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{static_cast<int>(again)});
    ReleaseThreadCpu();
    EXPECT_TRUE(SameMask(home, MaskOf(0)));
  });
}

TEST(HoldThreadCpuTest, AThreadOnOneCpuNamesItAndKeepsItsMask) {
  OnThread([] {
    const std::vector<int> cpus = CpusIn(MaskOf(0));
    ASSERT_FALSE(cpus.empty());
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus.back(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_EQ(HoldThreadCpu(), static_cast<uint32_t>(cpus.back()));
    ReleaseThreadCpu();
    EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{cpus.back()});
  });
}

TEST(CpuFollowerTest, MovesToANamedCpuItMayUseAndIgnoresOthers) {
  OnThread([] {
    const cpu_set_t home = MaskOf(0);
    const std::vector<int> cpus = CpusIn(home);
    CpuFollower follower;
    follower.Follow(kAnyCpu);
    follower.Follow(CPU_SETSIZE + 5);
    EXPECT_EQ(follower.held(), kAnyCpu);
    EXPECT_TRUE(SameMask(home, MaskOf(0)));
    if (cpus.size() < 2) {
      // One CPU: nowhere to move, and nothing to gain.
      follower.Follow(cpus[0]);
      EXPECT_EQ(follower.held(), kAnyCpu);
      EXPECT_TRUE(SameMask(home, MaskOf(0)));
      return;
    }
    for (int cpu : {cpus.back(), cpus.front()}) {
      follower.Follow(cpu);
      EXPECT_EQ(follower.held(), static_cast<uint32_t>(cpu));
      EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{cpu});
      EXPECT_EQ(sched_getcpu(), cpu);  // the kernel moved it before returning
    }
    // A CPU outside the mask it started with is refused, even when free to the host.
    int outside = 0;
    while (CPU_ISSET(outside, &home)) ++outside;
    follower.Follow(outside);
    EXPECT_EQ(follower.held(), static_cast<uint32_t>(cpus.front()));
    EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{cpus.front()});
  });
}

}  // namespace
}  // namespace usentry
