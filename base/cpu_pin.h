// Two processes that hand one request back and forth (the sentry and the gofer) wait
// for each other on the same CPU. A wake-up across CPUs costs a virtual machine an
// interrupt to a halted vCPU: a gofer round trip took 20-55 µs with the two sides free
// to run anywhere and 4-7 µs with both held on one CPU (docs/benchmarks.md). The
// kernel's wake-up placement alone does not keep them together: it prefers an idle CPU
// for the woken side, and each hand-off then crosses.
//
// The caller holds itself on the CPU it is running on for the length of one call
// (ScopedCpuPin) and names that CPU in its request; the server moves itself there
// (CpuFollower) and stays until a request names another.
#ifndef USENTRY_BASE_CPU_PIN_H_
#define USENTRY_BASE_CPU_PIN_H_

#include <sched.h>

#include <cstdint>

namespace usentry {

// A request that names no CPU (its sender was not pinned).
inline constexpr uint32_t kAnyCpu = UINT32_MAX;

// Holds the calling thread on the CPU it runs on until destroyed, then gives it back
// the CPUs it had; cpu() names that CPU (the only one, for a thread that may run on one
// CPU only). cpu() is kAnyCpu, and nothing changed, when the host refuses (a cpuset
// that changed under us): pinning is never needed for correctness.
class ScopedCpuPin {
 public:
  ScopedCpuPin();
  ~ScopedCpuPin();
  ScopedCpuPin(const ScopedCpuPin&) = delete;
  ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;

  uint32_t cpu() const { return cpu_; }

 private:
  uint32_t cpu_ = kAnyCpu;
  bool restore_ = false;
  cpu_set_t home_{};
};

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
