// Advisory file locks: POSIX record locks (fcntl F_SETLK/F_SETLKW/F_GETLK, owned by the
// process), open-file-description locks (F_OFD_*), and flock(2) locks. Kept in sentry
// memory per (st_dev, st_ino); they coordinate processes inside one sandbox only.
// Blocking variants poll every 10 ms (no wakeup on unlock yet).
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_FILE_LOCK_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_FILE_LOCK_H_

#include <fcntl.h>

#include "sentry/kernel/task.h"
#include "sentry/syscalls/syscall.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry {

// fcntl lock commands (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW).
SyscallResult FcntlLock(Task& task, vfs::FileDescription& file, int cmd, mm::GuestAddr arg);
// flock(2) operation on `file`.
SyscallResult FlockOp(Task& task, vfs::FileDescription& file, int op);
// Drops the calling process's POSIX locks on `file`'s inode (close semantics).
void ReleasePosixLocks(Task& task, vfs::FileDescription& file);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_FILE_LOCK_H_
