// Tests of ScopedCpuPin and CpuFollower on real threads: the masks the kernel reports.
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

TEST(ScopedCpuPinTest, HoldsTheThreadWhereItRunsAndGivesItsCpusBack) {
  OnThread([] {
    const cpu_set_t home = MaskOf(0);
    {
      ScopedCpuPin pin;
      ASSERT_NE(pin.cpu(), kAnyCpu);
      EXPECT_EQ(CpusIn(MaskOf(0)), std::vector<int>{static_cast<int>(pin.cpu())});
      EXPECT_EQ(sched_getcpu(), static_cast<int>(pin.cpu()));
      EXPECT_TRUE(CPU_ISSET(pin.cpu(), &home));
    }
    EXPECT_TRUE(SameMask(home, MaskOf(0)));
  });
}

TEST(ScopedCpuPinTest, AThreadOnOneCpuNamesItAndKeepsItsMask) {
  OnThread([] {
    const std::vector<int> cpus = CpusIn(MaskOf(0));
    ASSERT_FALSE(cpus.empty());
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus.back(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    {
      ScopedCpuPin pin;
      EXPECT_EQ(pin.cpu(), static_cast<uint32_t>(cpus.back()));
    }
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
