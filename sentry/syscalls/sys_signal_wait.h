// Waiting for and queueing signals with their siginfo, and signalfd
// (sys_signal_wait.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_SIGNAL_WAIT_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_SIGNAL_WAIT_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysRtSigtimedwait(Task& t, const SyscallArgs& a);
SyscallResult SysRtSigqueueinfo(Task& t, const SyscallArgs& a);
SyscallResult SysRtTgsigqueueinfo(Task& t, const SyscallArgs& a);
SyscallResult SysSignalfd(Task& t, const SyscallArgs& a);
SyscallResult SysSignalfd4(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_SIGNAL_WAIT_H_
