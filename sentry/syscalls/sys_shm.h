// System V shared memory (sys_shm.cc): shmget(2), shmat(2), shmdt(2), shmctl(2).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_SHM_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_SHM_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysShmget(Task& t, const SyscallArgs& a);
SyscallResult SysShmat(Task& t, const SyscallArgs& a);
SyscallResult SysShmdt(Task& t, const SyscallArgs& a);
SyscallResult SysShmctl(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_SHM_H_
