// Two processes that hand one request back and forth (the sentry and the gofer) wait
// for each other on the same CPU. A wake-up across CPUs costs a virtual machine an
// interrupt to a halted vCPU: a gofer round trip took 20-55 µs with the two sides free
// to run anywhere and 4-7 µs with both held on one CPU (docs/benchmarks.md). The
// kernel's wake-up placement alone does not keep them together: it prefers an idle CPU
// for the woken side, and each hand-off then crosses.
//
// The caller holds itself on the CPU it is running on (HoldThreadCpu) and names that CPU
// in its request; the server moves itself there (CpuFollower) and stays until a request
// names another. The caller stays held from one call to the next, until it is about to
// sleep (ReleaseThreadCpu): holding and letting go around every call cost two
// sched_setaffinity calls each time (~4 µs here, ~0.4 ms of a python3 start-up), and a
// caller whose CPU changed between calls moved the server too.
#ifndef USENTRY_BASE_CPU_PIN_H_
#define USENTRY_BASE_CPU_PIN_H_

#include <sched.h>

#include <cstdint>

namespace usentry {

// A request that names no CPU (its sender was not held).
inline constexpr uint32_t kAnyCpu = UINT32_MAX;

// Holds the calling thread on the CPU it runs on, unless it is held already, and names
// that CPU. A thread that may run on one CPU only is named it and left as it is. A hold
// that something else undid (a new mask that moved the thread) is taken again.
// kAnyCpu, and nothing changed, when the host refuses (a cpuset that changed under us):
// holding is never needed for correctness.
uint32_t HoldThreadCpu();

// Gives a thread that HoldThreadCpu held the CPUs it had before; no system call when it
// holds none. A held thread cannot be moved to an idle CPU when it wakes up: call this
// before the thread sleeps, and before anything else changes its affinity.
void ReleaseThreadCpu();

// The serving side: Follow(cpu) holds the calling thread on `cpu` from then on (so that
// the next request wakes it there), changing nothing when it is already held there,
// when `cpu` is kAnyCpu, or when `cpu` is not one of the CPUs the thread had at
// construction (a request is data from another process: it can ask for no more).
class CpuFollower {
 public:
  CpuFollower();
  void Follow(uint32_t cpu);
  // The CPU the thread is held on, kAnyCpu before the first move.
  uint32_t held() const { return held_; }

 private:
  cpu_set_t allowed_{};
  bool usable_ = false;
  uint32_t held_ = kAnyCpu;
};

}  // namespace usentry

#endif  // USENTRY_BASE_CPU_PIN_H_
