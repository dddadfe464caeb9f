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

}  // namespace

ScopedCpuPin::ScopedCpuPin() {
  if (sched_getaffinity(0, sizeof(home_), &home_) != 0) return;
  // glibc reads the CPU from the thread's rseq area: no system call.
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &home_)) return;
  if (CPU_COUNT(&home_) > 1) {
    // The thread is already on `cpu`: the kernel does not move it.
    if (!HoldOn(cpu)) return;
    restore_ = true;
  }
  cpu_ = static_cast<uint32_t>(cpu);
}

ScopedCpuPin::~ScopedCpuPin() {
  if (restore_) (void)sched_setaffinity(0, sizeof(home_), &home_);
}

CpuFollower::CpuFollower() {
  usable_ = sched_getaffinity(0, sizeof(allowed_), &allowed_) == 0 && CPU_COUNT(&allowed_) >= 2;
}

void CpuFollower::Follow(uint32_t cpu) {
  if (!usable_ || cpu == held_ || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed_)) return;
  if (HoldOn(static_cast<int>(cpu))) held_ = cpu;
}

}  // namespace usentry
