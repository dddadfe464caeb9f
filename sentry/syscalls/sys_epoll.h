// epoll_create(2), epoll_create1, epoll_ctl, epoll_wait, epoll_pwait, epoll_pwait2
// (sys_epoll.cc) and eventfd(2), eventfd2 (sys_eventfd.cc).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_EPOLL_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_EPOLL_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysEpollCreate(Task& task, const SyscallArgs& args);
SyscallResult SysEpollCreate1(Task& task, const SyscallArgs& args);
SyscallResult SysEpollCtl(Task& task, const SyscallArgs& args);
SyscallResult SysEpollWait(Task& task, const SyscallArgs& args);
SyscallResult SysEpollPwait(Task& task, const SyscallArgs& args);
SyscallResult SysEpollPwait2(Task& task, const SyscallArgs& args);

SyscallResult SysEventfd(Task& task, const SyscallArgs& args);
SyscallResult SysEventfd2(Task& task, const SyscallArgs& args);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_EPOLL_H_
