// stat family, statx, statfs, readlink, access.
#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
namespace {

// statfs f_flags bits (linux/statfs.h; kStValid tells the app f_flags is meaningful).
constexpr long kStRdonly = 0x0001;
constexpr long kStNoexec = 0x0008;
constexpr long kStValid = 0x0020;

SyscallResult DoFstatat(Task& task, int dirfd, mm::GuestAddr path, mm::GuestAddr buf, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW),
                                                 flags & AT_EMPTY_PATH));
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, StatTarget(t));
  RETURN_IF_ERRNO(task.mm().CopyOutObj(buf, ToAbiStat(a)));
  return uint64_t{0};
}

SyscallResult DoReadlink(Task& task, int dirfd, mm::GuestAddr path_addr, mm::GuestAddr buf,
                         int64_t size) {
  if (size <= 0) return Errno{EINVAL};
  // An empty path reads the symlink an O_PATH|O_NOFOLLOW dirfd refers to. realpath()
  // readlinks every component, and what is not a symlink is then most often opened for
  // reading (cc1 readlinks each header before opening it): the lookup may open it too,
  // which on the gofer's trees saves the open its own round trip.
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, dirfd, path_addr, false, true, O_RDONLY));
  if (!t.path.valid()) return Errno{ENOENT};
  vfs::Inode* inode = t.path.inode();
  if (!inode->IsSymlink()) return Errno{t.empty_path ? ENOENT : EINVAL};
  ASSIGN_OR_RETURN_ERRNO(std::string target, inode->Readlink());
  size_t n = std::min<size_t>(target.size(), static_cast<size_t>(size));
  RETURN_IF_ERRNO(task.mm().CopyOut(buf, target.data(), n));
  return uint64_t{n};
}

SyscallResult DoAccess(Task& task, int dirfd, mm::GuestAddr path, int mode, int flags) {
  if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  if (mode & ~(R_OK | W_OK | X_OK)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW),
                                                 flags & AT_EMPTY_PATH));
  if (!t.path.valid()) return mode == F_OK ? SyscallResult(uint64_t{0}) : Errno{EACCES};
  // access(2) checks with the real IDs unless AT_EACCESS.
  Credentials creds = task.creds();
  if (!(flags & AT_EACCESS)) {
    creds.fsuid = creds.ruid;
    creds.fsgid = creds.rgid;
  }
  vfs::ResolveContext ctx = vfs::TaskContext(task);
  ctx.creds = &creds;
  RETURN_IF_ERRNO(task.kernel().vfs().Access(ctx, t.path, mode));
  return uint64_t{0};
}

SyscallResult CopyOutStatfs(Task& task, const vfs::Path& p, vfs::FileDescription* file,
                            mm::GuestAddr buf) {
  struct statfs s {};
  if (p.valid()) {
    ASSIGN_OR_RETURN_ERRNO(s, p.mount->fs().StatFs());
    s.f_flags = kStValid | (p.mount->read_only() ? kStRdonly : 0) |
                ((p.mount->flags() & vfs::kMountNoExec) ? kStNoexec : 0);
    uint64_t dev = p.mount->fs().dev();
    s.f_fsid.__val[0] = static_cast<int>(dev);
  } else {
    s.f_type = 0x50495045;  // PIPEFS_MAGIC: anonymous files
    s.f_bsize = 4096;
    s.f_namelen = 255;
    s.f_flags = kStValid;
  }
  RETURN_IF_ERRNO(task.mm().CopyOutObj(buf, s));
  return uint64_t{0};
}

}  // namespace

SyscallResult SysStat(Task& task, const SyscallArgs& args) {
  return DoFstatat(task, AT_FDCWD, args.ptr(0), args.ptr(1), 0);
}

SyscallResult SysLstat(Task& task, const SyscallArgs& args) {
  return DoFstatat(task, AT_FDCWD, args.ptr(0), args.ptr(1), AT_SYMLINK_NOFOLLOW);
}

SyscallResult SysFstat(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, file->Stat());
  RETURN_IF_ERRNO(task.mm().CopyOutObj(args.ptr(1), ToAbiStat(a)));
  return uint64_t{0};
}

SyscallResult SysNewfstatat(Task& task, const SyscallArgs& args) {
  return DoFstatat(task, args.i32(0), args.ptr(1), args.ptr(2), args.i32(3));
}

SyscallResult SysStatx(Task& task, const SyscallArgs& args) {
  int dirfd = args.i32(0);
  int flags = args.i32(2);
  uint32_t mask = args.u32(3);
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | abi::kAtStatxSyncType)) {
    return Errno{EINVAL};
  }
  if ((flags & abi::kAtStatxSyncType) == abi::kAtStatxSyncType) return Errno{EINVAL};
  if (mask & abi::kStatxReserved) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Target t,
                         ResolveTarget(task, dirfd, args.ptr(1), !(flags & AT_SYMLINK_NOFOLLOW),
                                       flags & AT_EMPTY_PATH));
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, StatTarget(t));
  abi::Statx sx{};
  sx.mask = abi::kStatxBasicStats;
  sx.blksize = a.blksize;
  sx.nlink = static_cast<uint32_t>(a.nlink);
  sx.uid = a.uid;
  sx.gid = a.gid;
  sx.mode = static_cast<uint16_t>(a.mode);
  sx.ino = a.ino;
  sx.size = static_cast<uint64_t>(a.size);
  sx.blocks = static_cast<uint64_t>(a.blocks);
  sx.atime = {a.atime.tv_sec, static_cast<uint32_t>(a.atime.tv_nsec), 0};
  sx.mtime = {a.mtime.tv_sec, static_cast<uint32_t>(a.mtime.tv_nsec), 0};
  sx.ctime = {a.ctime.tv_sec, static_cast<uint32_t>(a.ctime.tv_nsec), 0};
  sx.rdev_major = major(a.rdev);
  sx.rdev_minor = minor(a.rdev);
  sx.dev_major = major(a.dev);
  sx.dev_minor = minor(a.dev);
  if (t.path.valid()) {
    sx.mask |= abi::kStatxMntId;
    sx.mnt_id = t.path.mount->id();
    sx.attributes_mask = abi::kStatxAttrMountRoot;
    if (t.path.dentry == t.path.mount->root()) sx.attributes |= abi::kStatxAttrMountRoot;
  }
  RETURN_IF_ERRNO(task.mm().CopyOutObj(args.ptr(4), sx));
  return uint64_t{0};
}

SyscallResult SysStatfs(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, AT_FDCWD, args.ptr(0), true, false));
  return CopyOutStatfs(task, t.path, nullptr, args.ptr(1));
}

SyscallResult SysFstatfs(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(task, args.i32(0)));
  return CopyOutStatfs(task, file->path(), file.get(), args.ptr(1));
}

SyscallResult SysReadlink(Task& task, const SyscallArgs& args) {
  // readlink(2) has no dirfd: an empty path is ENOENT.
  ASSIGN_OR_RETURN_ERRNO(std::string path, CopyInPath(task, args.ptr(0)));
  if (path.empty()) return Errno{ENOENT};
  return DoReadlink(task, AT_FDCWD, args.ptr(0), args.ptr(1), args.i64(2));
}

SyscallResult SysReadlinkat(Task& task, const SyscallArgs& args) {
  return DoReadlink(task, args.i32(0), args.ptr(1), args.ptr(2), args.i64(3));
}

SyscallResult SysAccess(Task& task, const SyscallArgs& args) {
  return DoAccess(task, AT_FDCWD, args.ptr(0), args.i32(1), 0);
}

SyscallResult SysFaccessat(Task& task, const SyscallArgs& args) {
  return DoAccess(task, args.i32(0), args.ptr(1), args.i32(2), 0);
}

SyscallResult SysFaccessat2(Task& task, const SyscallArgs& args) {
  return DoAccess(task, args.i32(0), args.ptr(1), args.i32(2), args.i32(3));
}

}  // namespace usentry::sentry
