// pipe(2) and pipe2(2).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_PIPE_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_PIPE_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysPipe(Task& task, const SyscallArgs& args);
SyscallResult SysPipe2(Task& task, const SyscallArgs& args);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_PIPE_H_
