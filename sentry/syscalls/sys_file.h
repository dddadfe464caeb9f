// File and filesystem syscalls (open/read/write/stat/dirs/attributes/fd management).
// Handlers live in sys_open.cc, sys_read_write.cc, sys_fd.cc, sys_stat.cc, sys_dir.cc,
// sys_attr.cc; shared helpers in sys_file_util.h.
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_FILE_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_FILE_H_

#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

// sys_open.cc
SyscallResult SysOpen(Task& task, const SyscallArgs& args);
SyscallResult SysOpenat(Task& task, const SyscallArgs& args);
SyscallResult SysCreat(Task& task, const SyscallArgs& args);
SyscallResult SysClose(Task& task, const SyscallArgs& args);
SyscallResult SysCloseRange(Task& task, const SyscallArgs& args);
SyscallResult SysDup(Task& task, const SyscallArgs& args);
SyscallResult SysDup2(Task& task, const SyscallArgs& args);
SyscallResult SysDup3(Task& task, const SyscallArgs& args);

// sys_read_write.cc
SyscallResult SysRead(Task& task, const SyscallArgs& args);
SyscallResult SysWrite(Task& task, const SyscallArgs& args);
SyscallResult SysPread64(Task& task, const SyscallArgs& args);
SyscallResult SysPwrite64(Task& task, const SyscallArgs& args);
SyscallResult SysReadv(Task& task, const SyscallArgs& args);
SyscallResult SysWritev(Task& task, const SyscallArgs& args);
SyscallResult SysPreadv(Task& task, const SyscallArgs& args);
SyscallResult SysPwritev(Task& task, const SyscallArgs& args);
SyscallResult SysPreadv2(Task& task, const SyscallArgs& args);
SyscallResult SysPwritev2(Task& task, const SyscallArgs& args);
SyscallResult SysLseek(Task& task, const SyscallArgs& args);

// sys_fd.cc
SyscallResult SysFcntl(Task& task, const SyscallArgs& args);
SyscallResult SysIoctl(Task& task, const SyscallArgs& args);
SyscallResult SysFsync(Task& task, const SyscallArgs& args);
SyscallResult SysFdatasync(Task& task, const SyscallArgs& args);
SyscallResult SysSync(Task& task, const SyscallArgs& args);
SyscallResult SysSyncfs(Task& task, const SyscallArgs& args);
SyscallResult SysFadvise64(Task& task, const SyscallArgs& args);
SyscallResult SysFlock(Task& task, const SyscallArgs& args);

// sys_stat.cc
SyscallResult SysStat(Task& task, const SyscallArgs& args);
SyscallResult SysFstat(Task& task, const SyscallArgs& args);
SyscallResult SysLstat(Task& task, const SyscallArgs& args);
SyscallResult SysNewfstatat(Task& task, const SyscallArgs& args);
SyscallResult SysStatx(Task& task, const SyscallArgs& args);
SyscallResult SysStatfs(Task& task, const SyscallArgs& args);
SyscallResult SysFstatfs(Task& task, const SyscallArgs& args);
SyscallResult SysReadlink(Task& task, const SyscallArgs& args);
SyscallResult SysReadlinkat(Task& task, const SyscallArgs& args);
SyscallResult SysAccess(Task& task, const SyscallArgs& args);
SyscallResult SysFaccessat(Task& task, const SyscallArgs& args);
SyscallResult SysFaccessat2(Task& task, const SyscallArgs& args);

// sys_dir.cc
SyscallResult SysGetdents(Task& task, const SyscallArgs& args);
SyscallResult SysGetdents64(Task& task, const SyscallArgs& args);
SyscallResult SysMkdir(Task& task, const SyscallArgs& args);
SyscallResult SysMkdirat(Task& task, const SyscallArgs& args);
SyscallResult SysMknod(Task& task, const SyscallArgs& args);
SyscallResult SysMknodat(Task& task, const SyscallArgs& args);
SyscallResult SysRmdir(Task& task, const SyscallArgs& args);
SyscallResult SysUnlink(Task& task, const SyscallArgs& args);
SyscallResult SysUnlinkat(Task& task, const SyscallArgs& args);
SyscallResult SysRename(Task& task, const SyscallArgs& args);
SyscallResult SysRenameat(Task& task, const SyscallArgs& args);
SyscallResult SysRenameat2(Task& task, const SyscallArgs& args);
SyscallResult SysSymlink(Task& task, const SyscallArgs& args);
SyscallResult SysSymlinkat(Task& task, const SyscallArgs& args);
SyscallResult SysLink(Task& task, const SyscallArgs& args);
SyscallResult SysLinkat(Task& task, const SyscallArgs& args);
SyscallResult SysChdir(Task& task, const SyscallArgs& args);
SyscallResult SysFchdir(Task& task, const SyscallArgs& args);
SyscallResult SysGetcwd(Task& task, const SyscallArgs& args);

// sys_attr.cc
SyscallResult SysChmod(Task& task, const SyscallArgs& args);
SyscallResult SysFchmod(Task& task, const SyscallArgs& args);
SyscallResult SysFchmodat(Task& task, const SyscallArgs& args);
SyscallResult SysChown(Task& task, const SyscallArgs& args);
SyscallResult SysFchown(Task& task, const SyscallArgs& args);
SyscallResult SysLchown(Task& task, const SyscallArgs& args);
SyscallResult SysFchownat(Task& task, const SyscallArgs& args);
SyscallResult SysUtime(Task& task, const SyscallArgs& args);
SyscallResult SysUtimes(Task& task, const SyscallArgs& args);
SyscallResult SysFutimesat(Task& task, const SyscallArgs& args);
SyscallResult SysUtimensat(Task& task, const SyscallArgs& args);
SyscallResult SysTruncate(Task& task, const SyscallArgs& args);
SyscallResult SysFtruncate(Task& task, const SyscallArgs& args);
SyscallResult SysUmask(Task& task, const SyscallArgs& args);

// sys_xattr.cc
SyscallResult SysGetxattr(Task& task, const SyscallArgs& args);
SyscallResult SysLgetxattr(Task& task, const SyscallArgs& args);
SyscallResult SysFgetxattr(Task& task, const SyscallArgs& args);
SyscallResult SysListxattr(Task& task, const SyscallArgs& args);
SyscallResult SysLlistxattr(Task& task, const SyscallArgs& args);
SyscallResult SysFlistxattr(Task& task, const SyscallArgs& args);
SyscallResult SysSetxattr(Task& task, const SyscallArgs& args);
SyscallResult SysLsetxattr(Task& task, const SyscallArgs& args);
SyscallResult SysFsetxattr(Task& task, const SyscallArgs& args);
SyscallResult SysRemovexattr(Task& task, const SyscallArgs& args);
SyscallResult SysLremovexattr(Task& task, const SyscallArgs& args);
SyscallResult SysFremovexattr(Task& task, const SyscallArgs& args);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_FILE_H_
