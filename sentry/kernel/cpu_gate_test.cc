// CpuGate: slots go to waiters in order, a slice's end asks the holder to yield, a
// killed waiter leaves the queue; a task's thread lets go of its CPU hold to wait.
#include "sentry/kernel/cpu_gate.h"

#include <sched.h>

#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "base/cpu_pin.h"
#include "gtest/gtest.h"
#include "sentry/kernel/test_kernel.h"

namespace usentry::sentry {
namespace {

class CpuGateTest : public ::testing::Test {
 protected:
  // A task of a new process in the test kernel (no platform context: Interrupt only
  // wakes its condition variable).
  std::unique_ptr<Task> NewTask() {
    absl::MutexLock l(&k().mu);
    auto tg = std::make_shared<ThreadGroup>(k().AllocatePid());
    return std::make_unique<Task>(&k(), tg, tg->pid());
  }
  Kernel& k() { return tk_.kernel(); }
  // Waits (the kernel lock released) until `cond` holds, for at most 10 s.
  bool Await(const std::function<bool()>& cond) {
    absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!cond()) {
      if (absl::Now() > give_up) return false;
      k().mu.Unlock();
      absl::SleepFor(absl::Milliseconds(1));
      k().mu.Lock();
    }
    return true;
  }
  // Enter on a thread of its own; `result` is set when it returns.
  std::thread EnterOnThread(CpuGate& gate, Task& t, int& result) {
    return std::thread([this, &gate, &t, &result] {
      absl::MutexLock l(&k().mu);
      result = gate.Enter(t) ? 1 : 0;
    });
  }

  // `a` takes the gate's only slot, then `b` asks for it on a thread of its own (`rb`
  // is its Enter's result), which is returned once `b` waits. Kernel lock held.
  std::thread HoldAndQueue(CpuGate& gate, Task& a, Task& b, int& rb) {
    EXPECT_TRUE(gate.Enter(a));
    std::thread tb = EnterOnThread(gate, b, rb);
    EXPECT_TRUE(Await([&] { return gate.waiting() == 1; }));
    return tb;
  }

  // `a` holds the gate's only slot, marked to yield, and `b` waits for it (`rb` is
  // its Enter's result): a's way back into app code gives b the slot and queues a, and
  // b's Leave gives it back to a, no longer marked. Kernel lock held.
  void ExpectYieldToWaiterAndBack(CpuGate& gate, Task& a, Task& b, const int& rb) {
    int ra = -1;
    std::thread ta = EnterOnThread(gate, a, ra);
    EXPECT_TRUE(Await([&] { return rb == 1; }));
    EXPECT_TRUE(b.cpu_slot.held);
    EXPECT_TRUE(Await([&] { return a.cpu_slot.queued; }));
    gate.Leave(b);
    EXPECT_TRUE(Await([&] { return ra == 1; }));
    EXPECT_TRUE(a.cpu_slot.held);
    EXPECT_FALSE(a.cpu_slot.yield);
    gate.Leave(a);
    ta.join();  // it left Enter and the lock: this thread holds the lock again
  }

  TestKernel tk_;
};

TEST_F(CpuGateTest, SlotsGoToWaitersInTheOrderTheyAsked) {
  CpuGate gate(2, absl::Hours(1), absl::Hours(1));
  auto a = NewTask(), b = NewTask(), c = NewTask(), d = NewTask();
  int rc = -1, rd = -1;
  std::thread tc, td;
  {
    absl::MutexLock l(&k().mu);
    ASSERT_TRUE(gate.Enter(*a));
    ASSERT_TRUE(gate.Enter(*b));
    EXPECT_EQ(gate.free_slots(), 0);
    // A holder alone keeps its slot however often it comes back.
    EXPECT_TRUE(gate.Enter(*a));
    tc = EnterOnThread(gate, *c, rc);
    ASSERT_TRUE(Await([&] { return gate.waiting() == 1; }));
    td = EnterOnThread(gate, *d, rd);
    ASSERT_TRUE(Await([&] { return gate.waiting() == 2; }));
    EXPECT_EQ(rc, -1);
    gate.Leave(*b);
    ASSERT_TRUE(Await([&] { return rc == 1; }));
    EXPECT_TRUE(c->cpu_slot.held);
    EXPECT_FALSE(d->cpu_slot.held);
    EXPECT_EQ(rd, -1);
    gate.Leave(*a);
    ASSERT_TRUE(Await([&] { return rd == 1; }));
    gate.Leave(*c);
    gate.Leave(*d);
    EXPECT_EQ(gate.free_slots(), 2);
    EXPECT_EQ(gate.waiting(), 0u);
  }
  tc.join();
  td.join();
}

TEST_F(CpuGateTest, AHolderWhoseSliceEndedGivesItsSlotToTheWaiter) {
  CpuGate gate(1, absl::Milliseconds(20), absl::Hours(1));
  auto a = NewTask(), b = NewTask();
  int rb = -1;
  std::thread tb;
  {
    absl::MutexLock l(&k().mu);
    tb = HoldAndQueue(gate, *a, *b, rb);
    // The waiter asks the holder to yield once the holder's slice is over.
    ASSERT_TRUE(Await([&] { return a->cpu_slot.yield; }));
    EXPECT_TRUE(a->cpu_slot.held);
    EXPECT_EQ(rb, -1);
    // The holder comes back from app code: the slot goes to the waiter, and it waits.
    ExpectYieldToWaiterAndBack(gate, *a, *b, rb);
  }
  tb.join();
}

TEST_F(CpuGateTest, AHolderThatDoesNotYieldIsAskedAgainASliceLater) {
  // An interrupt may find the holder between two runs of app code (nothing to stop):
  // the waiter asks again.
  CpuGate gate(1, absl::Milliseconds(20), absl::Hours(1));
  auto a = NewTask(), b = NewTask();
  int rb = -1;
  std::thread tb;
  {
    absl::MutexLock l(&k().mu);
    tb = HoldAndQueue(gate, *a, *b, rb);
    ASSERT_TRUE(Await([&] { return a->cpu_slot.yield; }));
    const absl::Time first = a->cpu_slot.asked;
    ASSERT_TRUE(Await([&] { return a->cpu_slot.asked > first; }));
    EXPECT_GE(a->cpu_slot.asked - first, absl::Milliseconds(20));
    gate.Leave(*a);
    ASSERT_TRUE(Await([&] { return rb == 1; }));
    gate.Leave(*b);
  }
  tb.join();
}

TEST_F(CpuGateTest, ATaskWakingFromASleepAsksAHolderThatRanAWhileToYield) {
  CpuGate gate(1, absl::Hours(1), absl::Milliseconds(200));
  auto a = NewTask(), b = NewTask(), c = NewTask();
  int rb = -1, rc = -1;
  std::thread tb, tc;
  {
    absl::MutexLock l(&k().mu);
    // Within its first 200 ms the holder keeps its slot (and its slice is an hour).
    tb = HoldAndQueue(gate, *a, *b, rb);
    EXPECT_FALSE(a->cpu_slot.yield);
    // Past them, the next task to wake up asks it to yield at once.
    k().mu.Unlock();
    absl::SleepFor(absl::Milliseconds(250));
    k().mu.Lock();
    EXPECT_FALSE(a->cpu_slot.yield);
    tc = EnterOnThread(gate, *c, rc);
    ASSERT_TRUE(Await([&] { return gate.waiting() == 2; }));
    EXPECT_TRUE(a->cpu_slot.yield);
    gate.Leave(*a);  // slots still go in order: b first
    ASSERT_TRUE(Await([&] { return rb == 1; }));
    EXPECT_EQ(rc, -1);
    gate.Leave(*b);
    ASSERT_TRUE(Await([&] { return rc == 1; }));
    gate.Leave(*c);
  }
  tb.join();
  tc.join();
}

TEST_F(CpuGateTest, SchedYieldPassesTheSlotOnlyWhenSomeoneWaits) {
  CpuGate gate(1, absl::Hours(1), absl::Hours(1));
  auto a = NewTask(), b = NewTask();
  int rb = -1;
  std::thread tb;
  {
    absl::MutexLock l(&k().mu);
    ASSERT_TRUE(gate.Enter(*a));
    gate.Yield(*a);
    EXPECT_FALSE(a->cpu_slot.yield);
    EXPECT_TRUE(gate.Enter(*a));
    tb = EnterOnThread(gate, *b, rb);
    ASSERT_TRUE(Await([&] { return gate.waiting() == 1; }));
    gate.Yield(*a);
    EXPECT_TRUE(a->cpu_slot.yield);
    ExpectYieldToWaiterAndBack(gate, *a, *b, rb);
  }
  tb.join();
}

TEST_F(CpuGateTest, AKilledWaiterLeavesTheQueueWithoutASlot) {
  CpuGate gate(1, absl::Hours(1), absl::Hours(1));
  auto a = NewTask(), b = NewTask();
  int rb = -1;
  std::thread tb;
  {
    absl::MutexLock l(&k().mu);
    tb = HoldAndQueue(gate, *a, *b, rb);
    b->killed = true;
    b->Interrupt();
    ASSERT_TRUE(Await([&] { return rb == 0; }));
    EXPECT_FALSE(b->cpu_slot.held);
    EXPECT_EQ(gate.waiting(), 0u);
    gate.Leave(*a);
    EXPECT_EQ(gate.free_slots(), 1);
  }
  tb.join();
}

TEST_F(CpuGateTest, LeavingWithoutASlotChangesNothing) {
  CpuGate gate(1, absl::Hours(1), absl::Hours(1));
  auto a = NewTask();
  absl::MutexLock l(&k().mu);
  gate.Leave(*a);
  EXPECT_EQ(gate.free_slots(), 1);
  ASSERT_TRUE(gate.Enter(*a));
  gate.Leave(*a);
  gate.Leave(*a);
  EXPECT_EQ(gate.free_slots(), 1);
}

TEST_F(CpuGateTest, BlockingGivesTheKernelsSlotAway) {
  // Task::Block leaves the kernel's own gate before it sleeps.
  CpuGate& gate = k().cpu_gate();
  Task& t = tk_.task();
  absl::MutexLock l(&k().mu);
  const int free_before = gate.free_slots();
  ASSERT_TRUE(gate.Enter(t));
  EXPECT_EQ(gate.free_slots(), free_before - 1);
  Waiter w(&t);
  EXPECT_EQ(t.Block(w, absl::Now() + absl::Milliseconds(1)).error(), ETIMEDOUT);
  EXPECT_FALSE(t.cpu_slot.held);
  EXPECT_EQ(gate.free_slots(), free_before);
}

// A task's thread held on its CPU by its gofer calls (base/cpu_pin.h) lets go of it
// before it sleeps, when it queues for a slot and when it blocks (Task::Sleep): it
// must be free to wake up on an idle CPU.
TEST_F(CpuGateTest, AThreadThatWaitsLetsGoOfItsCpuHold) {
  cpu_set_t home;
  ASSERT_EQ(sched_getaffinity(0, sizeof(home), &home), 0);
  if (CPU_COUNT(&home) < 2) GTEST_SKIP() << "one CPU: a hold changes no mask";
  CpuGate gate(1, absl::Hours(1), absl::Hours(1));
  auto a = NewTask(), b = NewTask();
  int rb = -1;
  uint32_t held = kAnyCpu;
  cpu_set_t after_queue{}, after_sleep{};
  std::thread tb;
  {
    absl::MutexLock l(&k().mu);
    ASSERT_TRUE(gate.Enter(*a));
    tb = std::thread([&] {
      held = HoldThreadCpu();
      absl::MutexLock l2(&k().mu);
      rb = gate.Enter(*b) ? 1 : 0;
      sched_getaffinity(0, sizeof(after_queue), &after_queue);
      gate.Leave(*b);
      HoldThreadCpu();
      (void)b->Sleep(absl::Milliseconds(1));
      sched_getaffinity(0, sizeof(after_sleep), &after_sleep);
    });
    ASSERT_TRUE(Await([&] { return gate.waiting() == 1; }));
    gate.Leave(*a);
  }
  tb.join();
  ASSERT_NE(held, kAnyCpu);
  EXPECT_EQ(rb, 1);
  EXPECT_TRUE(CPU_EQUAL(&home, &after_queue));
  EXPECT_TRUE(CPU_EQUAL(&home, &after_sleep));
}

}  // namespace
}  // namespace usentry::sentry
