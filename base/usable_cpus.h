// How many CPUs this process may run on, for code that sizes its concurrency to them.
#ifndef USENTRY_BASE_USABLE_CPUS_H_
#define USENTRY_BASE_USABLE_CPUS_H_

#include <sched.h>

#include <algorithm>

namespace usentry {

// The CPUs in this process's affinity mask (`taskset`, a cpuset), at least 1, read at
// the first call and then cached. cgroup CPU quotas are not seen: a container limited
// to one CPU's worth of time on a larger machine counts all the CPUs it may use.
inline int UsableCpus() {
  static const int n = [] {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(CPU_COUNT(&set), 1) : 1;
  }();
  return n;
}

}  // namespace usentry

#endif  // USENTRY_BASE_USABLE_CPUS_H_
