// inotify_init, inotify_init1, inotify_add_watch, inotify_rm_watch (sentry/fsimpl/inotify.h).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_INOTIFY_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_INOTIFY_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysInotifyInit(Task& task, const SyscallArgs& args);
SyscallResult SysInotifyInit1(Task& task, const SyscallArgs& args);
SyscallResult SysInotifyAddWatch(Task& task, const SyscallArgs& args);
SyscallResult SysInotifyRmWatch(Task& task, const SyscallArgs& args);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_INOTIFY_H_
