// Directory syscalls: getdents, mkdir, rmdir, unlink, rename, symlink, link, chdir, getcwd.
#include <fcntl.h>
#include <linux/fs.h>

#include <cstring>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
namespace {

// Fills `count` bytes of records from the directory cursor. `old_format` selects struct
// linux_dirent (getdents) instead of linux_dirent64.
SyscallResult DoGetdents(Task& task, int fd, mm::GuestAddr dirp, uint64_t count, bool old_format) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, fd));
  count = std::min<uint64_t>(count, kMaxRwCount);
  std::vector<uint8_t> buf;
  buf.reserve(std::min<uint64_t>(count, 1 << 16));
  bool refused = false;
  RETURN_IF_ERRNO(file->IterateDir([&](const vfs::DirEntry& e, int64_t next) {
    size_t reclen =
        old_format ? (18 + e.name.size() + 2 + 7) & ~size_t{7} : abi::Dirent64RecLen(e.name.size());
    if (buf.size() + reclen > count) {
      refused = true;
      return false;
    }
    size_t at = buf.size();
    buf.resize(at + reclen, 0);
    uint8_t* r = buf.data() + at;
    uint64_t ino = e.ino;
    int64_t off = next;
    uint16_t len = static_cast<uint16_t>(reclen);
    std::memcpy(r, &ino, 8);
    std::memcpy(r + 8, &off, 8);
    std::memcpy(r + 16, &len, 2);
    if (old_format) {
      std::memcpy(r + 18, e.name.data(), e.name.size());
      r[reclen - 1] = e.type;  // d_type is the record's last byte in linux_dirent
    } else {
      r[18] = e.type;
      std::memcpy(r + abi::kDirent64NameOffset, e.name.data(), e.name.size());
    }
    return true;
  }));
  vfs::NotifyFile(file->path(), IN_ACCESS);          // every listing call, as Linux's iterate_dir
  if (buf.empty() && refused) return Errno{EINVAL};  // buffer too small for one entry
  RETURN_IF_ERRNO(task.mm().CopyOut(dirp, buf.data(), buf.size()));
  return uint64_t{buf.size()};
}

// Copies in a path and builds the context for dirfd (EBADF/ENOTDIR for a bad dirfd).
struct PathArg {
  std::string path;
  vfs::ResolveContext ctx;
};
SysResult<PathArg> PathAt(Task& task, int dirfd, mm::GuestAddr addr) {
  PathArg p;
  ASSIGN_OR_RETURN_ERRNO(p.path, CopyInPath(task, addr));
  ASSIGN_OR_RETURN_ERRNO(p.ctx, vfs::ContextAt(task, dirfd, p.path));
  return p;
}

SyscallResult Done(SysStatus st) {
  if (!st.ok()) return Errno{st.error()};
  return uint64_t{0};
}

SyscallResult DoMkdir(Task& task, int dirfd, mm::GuestAddr path, uint32_t mode) {
  ASSIGN_OR_RETURN_ERRNO(PathArg p, PathAt(task, dirfd, path));
  return Done(task.kernel().vfs().Mkdir(p.ctx, p.path, mode & 07777));
}

SyscallResult DoMknod(Task& task, int dirfd, mm::GuestAddr path, uint32_t mode, uint64_t dev) {
  ASSIGN_OR_RETURN_ERRNO(PathArg p, PathAt(task, dirfd, path));
  return Done(task.kernel().vfs().Mknod(p.ctx, p.path, mode, dev));
}

SyscallResult DoUnlink(Task& task, int dirfd, mm::GuestAddr path, int flags) {
  if (flags & ~AT_REMOVEDIR) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(PathArg p, PathAt(task, dirfd, path));
  vfs::Vfs& v = task.kernel().vfs();
  return Done((flags & AT_REMOVEDIR) ? v.Rmdir(p.ctx, p.path) : v.Unlink(p.ctx, p.path));
}

SyscallResult DoRename(Task& task, int olddirfd, mm::GuestAddr oldpath, int newdirfd,
                       mm::GuestAddr newpath, uint32_t flags) {
  ASSIGN_OR_RETURN_ERRNO(PathArg o, PathAt(task, olddirfd, oldpath));
  ASSIGN_OR_RETURN_ERRNO(PathArg n, PathAt(task, newdirfd, newpath));
  // RENAME_WHITEOUT is an overlayfs-internal operation: refuse it.
  if (flags & RENAME_WHITEOUT) return Errno{EINVAL};
  return Done(task.kernel().vfs().Rename(o.ctx, o.path, n.ctx, n.path, flags));
}

SyscallResult DoSymlink(Task& task, mm::GuestAddr target_addr, int dirfd, mm::GuestAddr path) {
  ASSIGN_OR_RETURN_ERRNO(std::string target, CopyInPath(task, target_addr));
  ASSIGN_OR_RETURN_ERRNO(PathArg p, PathAt(task, dirfd, path));
  return Done(task.kernel().vfs().Symlink(p.ctx, target, p.path));
}

SyscallResult DoLink(Task& task, int olddirfd, mm::GuestAddr oldpath, int newdirfd,
                     mm::GuestAddr newpath, int flags) {
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(PathArg o, PathAt(task, olddirfd, oldpath));
  ASSIGN_OR_RETURN_ERRNO(PathArg n, PathAt(task, newdirfd, newpath));
  // linkat(fd, "", ..., AT_EMPTY_PATH) (linking an open, possibly O_TMPFILE, file) is not
  // supported: it reports ENOENT as Linux does without the flag.
  return Done(task.kernel().vfs().Link(o.ctx, o.path, n.ctx, n.path, flags & AT_SYMLINK_FOLLOW));
}

SysStatus SetCwd(Task& task, const vfs::Path& p) {
  if (!p.valid() || !p.inode()->IsDir()) return Errno{ENOTDIR};
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, p.inode()->Stat());
  RETURN_IF_ERRNO(vfs::CheckPermission(task.creds(), a, vfs::kMayExec));
  task.fs().set_cwd(p);
  return SysOk();
}

}  // namespace

SyscallResult SysGetdents(Task& task, const SyscallArgs& args) {
  return DoGetdents(task, args.i32(0), args.ptr(1), args.u32(2), true);
}

SyscallResult SysGetdents64(Task& task, const SyscallArgs& args) {
  return DoGetdents(task, args.i32(0), args.ptr(1), args.u32(2), false);
}

SyscallResult SysMkdir(Task& task, const SyscallArgs& args) {
  return DoMkdir(task, AT_FDCWD, args.ptr(0), args.u32(1));
}

SyscallResult SysMkdirat(Task& task, const SyscallArgs& args) {
  return DoMkdir(task, args.i32(0), args.ptr(1), args.u32(2));
}

// The device number is the new-style encoding (unsigned int on x86-64).
SyscallResult SysMknod(Task& task, const SyscallArgs& args) {
  return DoMknod(task, AT_FDCWD, args.ptr(0), args.u32(1), args.u32(2));
}

SyscallResult SysMknodat(Task& task, const SyscallArgs& args) {
  return DoMknod(task, args.i32(0), args.ptr(1), args.u32(2), args.u32(3));
}

SyscallResult SysRmdir(Task& task, const SyscallArgs& args) {
  return DoUnlink(task, AT_FDCWD, args.ptr(0), AT_REMOVEDIR);
}

SyscallResult SysUnlink(Task& task, const SyscallArgs& args) {
  return DoUnlink(task, AT_FDCWD, args.ptr(0), 0);
}

SyscallResult SysUnlinkat(Task& task, const SyscallArgs& args) {
  return DoUnlink(task, args.i32(0), args.ptr(1), args.i32(2));
}

SyscallResult SysRename(Task& task, const SyscallArgs& args) {
  return DoRename(task, AT_FDCWD, args.ptr(0), AT_FDCWD, args.ptr(1), 0);
}

SyscallResult SysRenameat(Task& task, const SyscallArgs& args) {
  return DoRename(task, args.i32(0), args.ptr(1), args.i32(2), args.ptr(3), 0);
}

SyscallResult SysRenameat2(Task& task, const SyscallArgs& args) {
  return DoRename(task, args.i32(0), args.ptr(1), args.i32(2), args.ptr(3), args.u32(4));
}

SyscallResult SysSymlink(Task& task, const SyscallArgs& args) {
  return DoSymlink(task, args.ptr(0), AT_FDCWD, args.ptr(1));
}

SyscallResult SysSymlinkat(Task& task, const SyscallArgs& args) {
  return DoSymlink(task, args.ptr(0), args.i32(1), args.ptr(2));
}

SyscallResult SysLink(Task& task, const SyscallArgs& args) {
  return DoLink(task, AT_FDCWD, args.ptr(0), AT_FDCWD, args.ptr(1), 0);
}

SyscallResult SysLinkat(Task& task, const SyscallArgs& args) {
  return DoLink(task, args.i32(0), args.ptr(1), args.i32(2), args.ptr(3), args.i32(4));
}

SyscallResult SysChdir(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, AT_FDCWD, args.ptr(0), true, false));
  return Done(SetCwd(task, t.path));
}

SyscallResult SysFchdir(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(task, args.i32(0)));
  if (!file->path().valid()) return Errno{ENOTDIR};
  return Done(SetCwd(task, file->path()));
}

SyscallResult SysGetcwd(Task& task, const SyscallArgs& args) {
  const vfs::Path& cwd = task.fs().cwd();
  if (cwd.dentry->dead()) return Errno{ENOENT};
  std::string path = vfs::CwdPath(task);
  uint64_t size = args.u64(1);
  if (size < path.size() + 1) return Errno{ERANGE};
  RETURN_IF_ERRNO(task.mm().CopyOut(args.ptr(0), path.c_str(), path.size() + 1));
  return uint64_t{path.size() + 1};
}

}  // namespace usentry::sentry
