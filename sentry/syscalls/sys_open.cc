// open/openat/creat, close/close_range, dup/dup2/dup3.
#include <fcntl.h>
#include <linux/close_range.h>

#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_lock.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
namespace {

SyscallResult DoOpen(Task& task, int dirfd, mm::GuestAddr path_addr, int flags, uint32_t mode) {
  ASSIGN_OR_RETURN_ERRNO(std::string path, CopyInPath(task, path_addr));
  // O_TMPFILE needs unnamed inodes + linkat(AT_EMPTY_PATH): not supported yet.
  if ((flags & O_TMPFILE) == O_TMPFILE) return Errno{EOPNOTSUPP};
  ASSIGN_OR_RETURN_ERRNO(vfs::ResolveContext ctx, vfs::ContextAt(task, dirfd, path));
  // x86-64 Linux always adds O_LARGEFILE (F_GETFL shows it).
  ASSIGN_OR_RETURN_ERRNO(auto file,
                         task.kernel().vfs().Open(ctx, path, flags | O_LARGEFILE, mode & 07777));
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(std::move(file), flags & O_CLOEXEC));
  return static_cast<uint64_t>(fd);
}

}  // namespace

SyscallResult SysOpen(Task& task, const SyscallArgs& args) {
  return DoOpen(task, AT_FDCWD, args.ptr(0), args.i32(1), args.u32(2));
}

SyscallResult SysOpenat(Task& task, const SyscallArgs& args) {
  return DoOpen(task, args.i32(0), args.ptr(1), args.i32(2), args.u32(3));
}

SyscallResult SysCreat(Task& task, const SyscallArgs& args) {
  return DoOpen(task, AT_FDCWD, args.ptr(0), O_CREAT | O_WRONLY | O_TRUNC, args.u32(1));
}

SyscallResult SysClose(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, task.fds().Remove(args.i32(0)));
  // POSIX record locks die with any close of the file by the process.
  ReleasePosixLocks(task, *file);
  return uint64_t{0};
}

SyscallResult SysCloseRange(Task& task, const SyscallArgs& args) {
  unsigned first = args.u32(0), last = args.u32(1);
  unsigned flags = args.u32(2);
  if (flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) return Errno{EINVAL};
  if (first > last) return Errno{EINVAL};
  if ((flags & CLOSE_RANGE_UNSHARE) && task.fds_ptr().use_count() > 1) {
    task.set_fds(task.fds().Fork());
  }
  if (!(flags & CLOSE_RANGE_CLOEXEC)) {
    for (const auto& [fd, entry] : task.fds().entries()) {
      if (static_cast<unsigned>(fd) >= first && static_cast<unsigned>(fd) <= last) {
        ReleasePosixLocks(task, *entry.file);
      }
    }
  }
  task.fds().CloseRange(first, last, flags & CLOSE_RANGE_CLOEXEC);
  return uint64_t{0};
}

SyscallResult SysDup(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, task.fds().Get(args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(std::move(file), false));
  return static_cast<uint64_t>(fd);
}

SyscallResult SysDup2(Task& task, const SyscallArgs& args) {
  int oldfd = args.i32(0), newfd = args.i32(1);
  if (oldfd == newfd) {
    RETURN_IF_ERRNO(task.fds().Get(oldfd));
    return static_cast<uint64_t>(newfd);
  }
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().DupTo(oldfd, newfd, false));
  return static_cast<uint64_t>(fd);
}

SyscallResult SysDup3(Task& task, const SyscallArgs& args) {
  int oldfd = args.i32(0), newfd = args.i32(1), flags = args.i32(2);
  if (flags & ~O_CLOEXEC) return Errno{EINVAL};
  if (oldfd == newfd) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().DupTo(oldfd, newfd, flags & O_CLOEXEC));
  return static_cast<uint64_t>(fd);
}

}  // namespace usentry::sentry
