// Keeping a caller and its server on one CPU (see cpu_pin.h).
#include "base/cpu_pin.h"

namespace usentry {
namespace {

// Holds the calling thread on `cpu` alone.
bool HoldOn(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(0, sizeof(one), &one) == 0;
}

// The calling thread's hold: the CPU HoldThreadCpu narrowed its mask to (kAnyCpu:
// none), and the mask to give back.
struct ThreadHold {
  uint32_t cpu = kAnyCpu;
  cpu_set_t home{};
};
thread_local ThreadHold t_hold;

}  // namespace

uint32_t HoldThreadCpu() {
  ThreadHold& h = t_hold;
  // glibc reads the CPU from the thread's rseq area: no system call.
  const int cpu = sched_getcpu();
  if (h.cpu != kAnyCpu) {
    if (cpu == static_cast<int>(h.cpu)) return h.cpu;
    h.cpu = kAnyCpu;  // something else set this thread's mask since: no hold is left
  }
  if (sched_getaffinity(0, sizeof(h.home), &h.home) != 0) return kAnyCpu;
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &h.home)) return kAnyCpu;
  // A thread that may run on this CPU only is not held: nothing to give back.
  if (CPU_COUNT(&h.home) == 1) return static_cast<uint32_t>(cpu);
  // The thread is already on `cpu`: the kernel does not move it.
  if (!HoldOn(cpu)) return kAnyCpu;
  h.cpu = static_cast<uint32_t>(cpu);
  return h.cpu;
}

void ReleaseThreadCpu() {
  ThreadHold& h = t_hold;
  if (h.cpu == kAnyCpu) return;
  (void)sched_setaffinity(0, sizeof(h.home), &h.home);
  h.cpu = kAnyCpu;
}

CpuFollower::CpuFollower() {
  usable_ = sched_getaffinity(0, sizeof(allowed_), &allowed_) == 0 && CPU_COUNT(&allowed_) >= 2;
}

void CpuFollower::Follow(uint32_t cpu) {
  if (!usable_ || cpu == held_ || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed_)) return;
  if (HoldOn(static_cast<int>(cpu))) held_ = cpu;
}

}  // namespace usentry
