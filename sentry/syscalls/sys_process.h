// Process lifecycle syscalls (sys_process.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_PROCESS_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_PROCESS_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysFork(Task& t, const SyscallArgs& a);
SyscallResult SysVfork(Task& t, const SyscallArgs& a);
SyscallResult SysClone(Task& t, const SyscallArgs& a);
SyscallResult SysClone3(Task& t, const SyscallArgs& a);
SyscallResult SysExecve(Task& t, const SyscallArgs& a);
SyscallResult SysExecveat(Task& t, const SyscallArgs& a);  // sys_execveat.cc
SyscallResult SysExit(Task& t, const SyscallArgs& a);
SyscallResult SysExitGroup(Task& t, const SyscallArgs& a);
SyscallResult SysWait4(Task& t, const SyscallArgs& a);
SyscallResult SysWaitid(Task& t, const SyscallArgs& a);
SyscallResult SysGetpid(Task& t, const SyscallArgs& a);
SyscallResult SysGettid(Task& t, const SyscallArgs& a);
SyscallResult SysGetppid(Task& t, const SyscallArgs& a);
SyscallResult SysGetpgid(Task& t, const SyscallArgs& a);
SyscallResult SysGetpgrp(Task& t, const SyscallArgs& a);
SyscallResult SysSetpgid(Task& t, const SyscallArgs& a);
SyscallResult SysSetsid(Task& t, const SyscallArgs& a);
SyscallResult SysGetsid(Task& t, const SyscallArgs& a);
SyscallResult SysSetTidAddress(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_PROCESS_H_
