// Process file descriptors (sys_pidfd.cc): pidfd_open(2), pidfd_send_signal(2).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_PIDFD_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_PIDFD_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysPidfdOpen(Task& t, const SyscallArgs& a);
SyscallResult SysPidfdSendSignal(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_PIDFD_H_
