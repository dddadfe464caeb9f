// Process file descriptors (sys_pidfd.cc): pidfd_open(2), pidfd_send_signal(2).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_PIDFD_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_PIDFD_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysPidfdOpen(Task& t, const SyscallArgs& a);
SyscallResult SysPidfdSendSignal(Task& t, const SyscallArgs& a);
// waitid(P_PIDFD, fd): the PID of the process behind pidfd `fd` (EBADF if not one).
SysResult<int32_t> PidOfPidfd(Task& t, int fd);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_PIDFD_H_
