// Scheduling, privilege and memory-residency basics, emulated in the sentry:
// capabilities, personality, nice values and policies (sys_sched.cc); mlock family,
// mincore, membarrier (sys_mem_hint.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_SCHED_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_SCHED_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

// sys_sched.cc
SyscallResult SysCapget(Task& t, const SyscallArgs& a);
SyscallResult SysCapset(Task& t, const SyscallArgs& a);
SyscallResult SysPersonality(Task& t, const SyscallArgs& a);
SyscallResult SysGetpriority(Task& t, const SyscallArgs& a);
SyscallResult SysSetpriority(Task& t, const SyscallArgs& a);
SyscallResult SysSchedGetscheduler(Task& t, const SyscallArgs& a);
SyscallResult SysSchedSetscheduler(Task& t, const SyscallArgs& a);
SyscallResult SysSchedGetparam(Task& t, const SyscallArgs& a);
SyscallResult SysSchedSetparam(Task& t, const SyscallArgs& a);
SyscallResult SysSchedGetPriorityMax(Task& t, const SyscallArgs& a);
SyscallResult SysSchedGetPriorityMin(Task& t, const SyscallArgs& a);
SyscallResult SysSchedRrGetInterval(Task& t, const SyscallArgs& a);
SyscallResult SysSchedSetattr(Task& t, const SyscallArgs& a);
SyscallResult SysSchedGetattr(Task& t, const SyscallArgs& a);

// sys_mem_hint.cc
SyscallResult SysMlock(Task& t, const SyscallArgs& a);
SyscallResult SysMlock2(Task& t, const SyscallArgs& a);
SyscallResult SysMunlock(Task& t, const SyscallArgs& a);
SyscallResult SysMlockall(Task& t, const SyscallArgs& a);
SyscallResult SysMunlockall(Task& t, const SyscallArgs& a);
SyscallResult SysMincore(Task& t, const SyscallArgs& a);
SyscallResult SysMembarrier(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_SCHED_H_
