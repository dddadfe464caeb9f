// execveat: execve relative to a directory FD, or of an open file (AT_EMPTY_PATH,
// fexecve). It names the file by its sandbox path and hands over to execve's DoExecve.
#include <fcntl.h>
#include <sys/stat.h>

#include "sentry/kernel/task_clone.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/syscalls/sys_process.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/task_context.h"

namespace usentry::sentry {
namespace {

constexpr size_t kMaxArgs = 2 << 20;

// The sandbox path execve should load for execveat(dirfd, path, flags).
SysResult<std::string> ExecPath(Task& t, int dirfd, mm::GuestAddr path_addr, int flags) {
  ASSIGN_OR_RETURN_ERRNO(std::string path, CopyInPath(t, path_addr));
  if (path.empty()) {
    if (!(flags & AT_EMPTY_PATH)) return Errno{ENOENT};
    if (dirfd == AT_FDCWD) return Errno{EACCES};  // the cwd is a directory
    ASSIGN_OR_RETURN_ERRNO(auto file, t.fds().Get(dirfd));
    // Anonymous files (memfds) have no path to load from: not supported yet.
    if (!file->path().valid()) return Errno{ENOENT};
    return vfs::FilePath(t, *file);
  }
  if (flags & AT_SYMLINK_NOFOLLOW) {
    ASSIGN_OR_RETURN_ERRNO(Target target, ResolveTarget(t, dirfd, path_addr, false, false));
    if (target.path.valid() && target.path.inode()->IsSymlink()) return Errno{ELOOP};
  }
  if (path[0] == '/' || dirfd == AT_FDCWD) return path;
  // ContextAt checks that dirfd is an open directory (EBADF / ENOTDIR).
  RETURN_IF_ERRNO(vfs::ContextAt(t, dirfd, path));
  ASSIGN_OR_RETURN_ERRNO(auto dir, t.fds().Get(dirfd));
  std::string dir_path = vfs::FilePath(t, *dir);
  if (dir_path.empty() || dir_path.back() != '/') dir_path += '/';
  return dir_path + path;
}

}  // namespace

// execveat(dirfd, path, argv, envp, flags)
SyscallResult SysExecveat(Task& t, const SyscallArgs& a) {
  const int flags = a.i32(4);
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(std::string path, ExecPath(t, a.i32(0), a.ptr(1), flags));
  mm::MemoryManager& m = t.mm();
  ASSIGN_OR_RETURN_ERRNO(std::vector<std::string> argv, m.CopyInStringArray(a.ptr(2), kMaxArgs));
  ASSIGN_OR_RETURN_ERRNO(std::vector<std::string> envp, m.CopyInStringArray(a.ptr(3), kMaxArgs));
  RETURN_IF_ERRNO(DoExecve(t, path, std::move(argv), std::move(envp)));
  return 0;
}

}  // namespace usentry::sentry
