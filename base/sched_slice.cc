#include "base/sched_slice.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "abi/misc.h"

namespace usentry {
namespace {

using abi::SchedAttr;

bool GetAttr(SchedAttr* attr) {
  std::memset(attr, 0, sizeof(*attr));
  return syscall(SYS_sched_getattr, 0, attr, sizeof(*attr), 0) == 0;
}

}  // namespace

bool RequestShortSchedulerSlice() {
  SchedAttr attr;
  if (!GetAttr(&attr) || attr.sched_policy != SCHED_OTHER) return false;
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);  // this thread's (Linux)
  if (errno != 0) return false;
  attr.size = sizeof(attr);
  attr.sched_flags = 0;
  attr.sched_nice = nice;
  attr.sched_runtime = kShortSliceNanos;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

uint64_t SchedulerSliceNanos() {
  SchedAttr attr;
  return GetAttr(&attr) ? attr.sched_runtime : 0;
}

}  // namespace usentry
