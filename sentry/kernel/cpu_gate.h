// CpuGate: at most as many app threads run app code at once as the sandbox has CPUs.
//
// Natively a thread's syscall keeps its CPU: the kernel runs the call on it and returns,
// and another runnable thread gets the CPU only when this one sleeps or its time slice
// ends. Here a call hands the thread over to its sentry thread and back, two scheduling
// points, and the host picks whichever thread is owed the most CPU at each: on one CPU
// every emulated call let the other app threads in. Eight python3 threads passing the
// GIL around (each one's release wakes a waiter, which now ran at once and took the GIL,
// and the releasing thread then waited for it again) made 450,000 futex calls instead of
// ~200 and ran 65x native on one CPU. The sentry therefore schedules app threads itself,
// as a kernel would: a thread runs app code only while it holds one of the gate's slots,
// keeps it across its syscalls and faults, and gives it up when it sleeps in the sentry
// (Task::Block, a stop, a vfork, an exec's wait), exits, or has held it for a time
// slice while another thread waits. A thread still in app code at the end of its slice
// is interrupted (Task::Interrupt) and gives its slot up on its way back. Waiters get
// slots in the order they asked. A task that comes from a sleep does not wait for a
// whole slice, though: like the host's wake-up preemption, it asks the holder that has
// run longest to yield if that one has run for kWakeupGranularity. (A one-millisecond
// nanosleep beside a spinning thread on one CPU took 2.1 ms with slices alone, 1.07
// natively.) With no waiter, keeping a slot costs one branch a trap.
//
// Every method requires the kernel lock (Kernel::mu); waits release it.
#ifndef USENTRY_SENTRY_KERNEL_CPU_GATE_H_
#define USENTRY_SENTRY_KERNEL_CPU_GATE_H_

#include <deque>
#include <vector>

#include "absl/time/time.h"

namespace usentry::sentry {

class Task;

// A task's place at the gate (Task::cpu_slot).
struct CpuSlot {
  bool held = false;
  bool queued = false;
  // Asked to give the slot up at its next way into app code (its slice ended while
  // another task waited), and when it was last asked.
  bool yield = false;
  absl::Time asked;
  absl::Time since;  // when its slice began: it got the slot, or woke up with it
};

class CpuGate {
 public:
  // `slots` (at least 1): app threads that may run at once. `slice`: how long a thread
  // keeps its slot while another waits.
  CpuGate(int slots, absl::Duration slice, absl::Duration wakeup_granularity = kWakeupGranularity);
  // A time slice like the host scheduler's (its base slice grows with the CPU count),
  // and like Python's GIL switch interval (5 ms) in size.
  static constexpr absl::Duration kSlice = absl::Milliseconds(2);
  // How long a holder runs before a task waking from a sleep may take its slot (the
  // host's protects a running task for one base slice, 0.75 ms on one CPU).
  static constexpr absl::Duration kWakeupGranularity = absl::Microseconds(500);

  // Before `t` runs app code: returns true once it holds a slot, waiting (the kernel
  // lock released) while all are held. Returns false, without a slot, when `t` must not
  // run app code any more (killed, exiting): the caller then leaves its run loop.
  bool Enter(Task& t);
  // `t` will not run app code for a while (it sleeps in the sentry, or exits): its slot,
  // if it holds one, goes to the first waiter.
  void Leave(Task& t);
  // sched_yield: if another task waits, `t` gives its slot to it on its way back into
  // app code (natively the call lets another runnable thread have the CPU).
  void Yield(Task& t);

  int slots() const { return slots_; }
  int free_slots() const { return free_; }
  size_t waiting() const { return queue_.size(); }

 private:
  // Grants a slot to `t` (free_ already counted it out).
  void Grant(Task& t);
  // A waiter's deadline: the earliest end of a holder's slice, or of a slice since it
  // was asked to yield (the request is repeated: an interrupt that found the holder
  // between two runs of app code has nothing to interrupt).
  absl::Time NextDeadline() const;
  // Asks the holders whose slice has ended to give their slots up, again for those that
  // were asked a slice ago.
  void PreemptExpired(absl::Time now);
  // Asks the holder that has run longest to yield, if it has run `ran` or more.
  void PreemptLongestRunning(absl::Time now, absl::Duration ran);

  const int slots_;
  const absl::Duration slice_;
  const absl::Duration wakeup_granularity_;
  int free_;
  std::vector<Task*> holders_;
  std::deque<Task*> queue_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_CPU_GATE_H_
