// Memory syscalls (sys_mm.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_MM_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_MM_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysMmap(Task& t, const SyscallArgs& a);
SyscallResult SysMunmap(Task& t, const SyscallArgs& a);
SyscallResult SysMprotect(Task& t, const SyscallArgs& a);
SyscallResult SysBrk(Task& t, const SyscallArgs& a);
SyscallResult SysMremap(Task& t, const SyscallArgs& a);
SyscallResult SysMadvise(Task& t, const SyscallArgs& a);
SyscallResult SysMsync(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_MM_H_
