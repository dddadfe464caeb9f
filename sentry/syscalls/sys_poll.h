// poll(2), ppoll(2), select(2), pselect6(2): readiness of many files at once, built on
// FileDescription::Readiness() and wait_queue().
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_POLL_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_POLL_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysPoll(Task& task, const SyscallArgs& args);
SyscallResult SysPpoll(Task& task, const SyscallArgs& args);
SyscallResult SysSelect(Task& task, const SyscallArgs& args);
SyscallResult SysPselect6(Task& task, const SyscallArgs& args);

// The temporary signal mask of ppoll-like calls (`mask_addr` null: none): EINVAL unless
// `size` is 8, EFAULT. On success the old mask is saved in task.sig (has_saved_mask);
// signal delivery restores it if the call is interrupted, the caller otherwise.
SysStatus SwapInMask(Task& task, mm::GuestAddr mask_addr, uint64_t size);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_POLL_H_
