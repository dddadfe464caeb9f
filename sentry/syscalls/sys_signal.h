// Signal syscalls (sys_signal.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_SIGNAL_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_SIGNAL_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysRtSigaction(Task& t, const SyscallArgs& a);
SyscallResult SysRtSigprocmask(Task& t, const SyscallArgs& a);
SyscallResult SysRtSigreturn(Task& t, const SyscallArgs& a);
SyscallResult SysRtSigpending(Task& t, const SyscallArgs& a);
SyscallResult SysRtSigsuspend(Task& t, const SyscallArgs& a);
SyscallResult SysPause(Task& t, const SyscallArgs& a);
SyscallResult SysSigaltstack(Task& t, const SyscallArgs& a);
SyscallResult SysKill(Task& t, const SyscallArgs& a);
SyscallResult SysTkill(Task& t, const SyscallArgs& a);
SyscallResult SysTgkill(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_SIGNAL_H_
