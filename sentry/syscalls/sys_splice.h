// File data movers and file-space syscalls: sendfile, splice, tee, vmsplice,
// copy_file_range (sys_splice.cc); fallocate, readahead, sync_file_range
// (sys_file_space.cc); memfd_create (sys_memfd.cc). All of them move bytes through the
// FileDescription Read/Write interface, so every filesystem (tmpfs, overlay copy-up, gofer, host
// FDs) behaves as it does for read(2)/write(2).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_SPLICE_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_SPLICE_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

// sys_splice.cc
SyscallResult SysSendfile(Task& task, const SyscallArgs& args);
SyscallResult SysSplice(Task& task, const SyscallArgs& args);
SyscallResult SysTee(Task& task, const SyscallArgs& args);
SyscallResult SysVmsplice(Task& task, const SyscallArgs& args);
SyscallResult SysCopyFileRange(Task& task, const SyscallArgs& args);

// sys_file_space.cc
SyscallResult SysFallocate(Task& task, const SyscallArgs& args);
SyscallResult SysReadahead(Task& task, const SyscallArgs& args);
SyscallResult SysSyncFileRange(Task& task, const SyscallArgs& args);

// sys_memfd.cc
SyscallResult SysMemfdCreate(Task& task, const SyscallArgs& args);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_SPLICE_H_
