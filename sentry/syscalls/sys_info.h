// System information, identity, time, limits and small per-task syscalls
// (sys_info.cc, sys_identity.cc, sys_time.cc, sys_futex.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_INFO_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_INFO_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

// sys_info.cc
SyscallResult SysUname(Task& t, const SyscallArgs& a);
SyscallResult SysSethostname(Task& t, const SyscallArgs& a);
SyscallResult SysSysinfo(Task& t, const SyscallArgs& a);
SyscallResult SysGetrandom(Task& t, const SyscallArgs& a);
SyscallResult SysGetrlimit(Task& t, const SyscallArgs& a);
SyscallResult SysSetrlimit(Task& t, const SyscallArgs& a);
SyscallResult SysPrlimit64(Task& t, const SyscallArgs& a);
SyscallResult SysGetrusage(Task& t, const SyscallArgs& a);
SyscallResult SysSchedGetaffinity(Task& t, const SyscallArgs& a);
SyscallResult SysSchedSetaffinity(Task& t, const SyscallArgs& a);
SyscallResult SysSchedYield(Task& t, const SyscallArgs& a);
SyscallResult SysGetcpu(Task& t, const SyscallArgs& a);
SyscallResult SysArchPrctl(Task& t, const SyscallArgs& a);
SyscallResult SysPrctl(Task& t, const SyscallArgs& a);
SyscallResult SysSetRobustList(Task& t, const SyscallArgs& a);
SyscallResult SysGetRobustList(Task& t, const SyscallArgs& a);

// sys_identity.cc
SyscallResult SysGetuid(Task& t, const SyscallArgs& a);
SyscallResult SysGeteuid(Task& t, const SyscallArgs& a);
SyscallResult SysGetgid(Task& t, const SyscallArgs& a);
SyscallResult SysGetegid(Task& t, const SyscallArgs& a);
SyscallResult SysGetresuid(Task& t, const SyscallArgs& a);
SyscallResult SysGetresgid(Task& t, const SyscallArgs& a);
SyscallResult SysSetuid(Task& t, const SyscallArgs& a);
SyscallResult SysSetgid(Task& t, const SyscallArgs& a);
SyscallResult SysSetreuid(Task& t, const SyscallArgs& a);
SyscallResult SysSetregid(Task& t, const SyscallArgs& a);
SyscallResult SysSetresuid(Task& t, const SyscallArgs& a);
SyscallResult SysSetresgid(Task& t, const SyscallArgs& a);
SyscallResult SysGetgroups(Task& t, const SyscallArgs& a);
SyscallResult SysSetgroups(Task& t, const SyscallArgs& a);
SyscallResult SysSetfsuid(Task& t, const SyscallArgs& a);
SyscallResult SysSetfsgid(Task& t, const SyscallArgs& a);

// sys_time.cc
SyscallResult SysRestartSyscall(Task& t, const SyscallArgs& a);
SyscallResult SysClockGettime(Task& t, const SyscallArgs& a);
SyscallResult SysClockGetres(Task& t, const SyscallArgs& a);
SyscallResult SysGettimeofday(Task& t, const SyscallArgs& a);
SyscallResult SysClockSettime(Task& t, const SyscallArgs& a);
SyscallResult SysSettimeofday(Task& t, const SyscallArgs& a);
SyscallResult SysTime(Task& t, const SyscallArgs& a);
SyscallResult SysNanosleep(Task& t, const SyscallArgs& a);
SyscallResult SysClockNanosleep(Task& t, const SyscallArgs& a);
SyscallResult SysTimes(Task& t, const SyscallArgs& a);

// sys_futex.cc
SyscallResult SysFutex(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_INFO_H_
