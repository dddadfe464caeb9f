// Timer syscalls (sys_timer.cc): alarm, interval timers, POSIX timers, timerfd.
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_TIMER_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_TIMER_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysAlarm(Task& t, const SyscallArgs& a);
SyscallResult SysGetitimer(Task& t, const SyscallArgs& a);
SyscallResult SysSetitimer(Task& t, const SyscallArgs& a);
SyscallResult SysTimerCreate(Task& t, const SyscallArgs& a);
SyscallResult SysTimerSettime(Task& t, const SyscallArgs& a);
SyscallResult SysTimerGettime(Task& t, const SyscallArgs& a);
SyscallResult SysTimerGetoverrun(Task& t, const SyscallArgs& a);
SyscallResult SysTimerDelete(Task& t, const SyscallArgs& a);
SyscallResult SysTimerfdCreate(Task& t, const SyscallArgs& a);
SyscallResult SysTimerfdSettime(Task& t, const SyscallArgs& a);
SyscallResult SysTimerfdGettime(Task& t, const SyscallArgs& a);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_TIMER_H_
