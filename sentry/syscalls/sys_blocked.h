// Privileged syscalls the sandbox refuses by policy (sys_blocked.cc): mount, bpf,
// module loading, ptrace, ... They fail as they would for an unprivileged Linux process
// (EPERM), and the audit stream gets a "syscall" record with status "blocked".
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_BLOCKED_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_BLOCKED_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

// EPERM (ENOSYS for the key-management calls, which programs probe and skip), recorded.
SyscallResult SysBlocked(Task& t, const SyscallArgs& a);
// unshare(2): 0 for no flags; EPERM + blocked record for any namespace flag; EINVAL for
// the other flags (fd table / fs / sysvsem unsharing is not implemented).
SyscallResult SysUnshare(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_BLOCKED_H_
