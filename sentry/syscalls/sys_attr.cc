// Attribute syscalls: chmod, chown, utime family, truncate, umask.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <utime.h>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/fsize_limit.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
namespace {

SyscallResult Apply(Task& task, const vfs::Path& p, const vfs::SetAttrRequest& req) {
  // Anonymous files (pipes, sockets) have no attributes we could change.
  if (!p.valid()) return Errno{EINVAL};
  SysStatus st = task.kernel().vfs().SetAttr(vfs::TaskContext(task), p, req);
  if (!st.ok()) return Errno{st.error()};
  return uint64_t{0};
}

SyscallResult ApplyAt(Task& task, int dirfd, mm::GuestAddr path, int flags, bool empty_ok,
                      const vfs::SetAttrRequest& req) {
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW),
                                                 empty_ok && (flags & AT_EMPTY_PATH)));
  return Apply(task, t.path, req);
}

vfs::SetAttrRequest ChmodReq(uint32_t mode) {
  vfs::SetAttrRequest r;
  r.mask = vfs::kSetMode;
  r.mode = mode & 07777;
  return r;
}

vfs::SetAttrRequest ChownReq(uint32_t uid, uint32_t gid) {
  vfs::SetAttrRequest r;
  if (uid != static_cast<uint32_t>(-1)) r.mask |= vfs::kSetUid, r.uid = uid;
  if (gid != static_cast<uint32_t>(-1)) r.mask |= vfs::kSetGid, r.gid = gid;
  if (r.mask == 0) r.mask = vfs::kSetCtime;  // chown(-1, -1) still checks the path
  return r;
}

// Builds the request for utimensat-style times (nullopt = both "now").
SysResult<vfs::SetAttrRequest> TimesReq(const struct timespec* ts) {
  vfs::SetAttrRequest r;
  if (!ts) {
    r.mask = vfs::kSetAtime | vfs::kSetMtime;
    r.atime.tv_nsec = r.mtime.tv_nsec = UTIME_NOW;
    return r;
  }
  for (int i = 0; i < 2; ++i) {
    long ns = ts[i].tv_nsec;
    if (ns != UTIME_NOW && ns != UTIME_OMIT && (ns < 0 || ns >= 1000000000)) {
      return Errno{EINVAL};
    }
  }
  if (ts[0].tv_nsec != UTIME_OMIT) r.mask |= vfs::kSetAtime, r.atime = ts[0];
  if (ts[1].tv_nsec != UTIME_OMIT) r.mask |= vfs::kSetMtime, r.mtime = ts[1];
  return r;
}

SysResult<vfs::SetAttrRequest> TimevalsReq(Task& task, mm::GuestAddr addr) {
  if (addr.IsNull()) return TimesReq(nullptr);
  struct timeval tv[2];
  RETURN_IF_ERRNO(task.mm().CopyIn(addr, tv, sizeof(tv)));
  struct timespec ts[2];
  for (int i = 0; i < 2; ++i) {
    if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return Errno{EINVAL};
    ts[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
  }
  return TimesReq(ts);
}

}  // namespace

SyscallResult SysChmod(Task& task, const SyscallArgs& args) {
  return ApplyAt(task, AT_FDCWD, args.ptr(0), 0, false, ChmodReq(args.u32(1)));
}

SyscallResult SysFchmod(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  return Apply(task, file->path(), ChmodReq(args.u32(1)));
}

SyscallResult SysFchmodat(Task& task, const SyscallArgs& args) {
  // fchmodat(2) has no flags argument (AT_SYMLINK_NOFOLLOW is glibc's emulation).
  return ApplyAt(task, args.i32(0), args.ptr(1), 0, false, ChmodReq(args.u32(2)));
}

SyscallResult SysChown(Task& task, const SyscallArgs& args) {
  return ApplyAt(task, AT_FDCWD, args.ptr(0), 0, false, ChownReq(args.u32(1), args.u32(2)));
}

SyscallResult SysLchown(Task& task, const SyscallArgs& args) {
  return ApplyAt(task, AT_FDCWD, args.ptr(0), AT_SYMLINK_NOFOLLOW, false,
                 ChownReq(args.u32(1), args.u32(2)));
}

SyscallResult SysFchown(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  return Apply(task, file->path(), ChownReq(args.u32(1), args.u32(2)));
}

SyscallResult SysFchownat(Task& task, const SyscallArgs& args) {
  int flags = args.i32(4);
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  return ApplyAt(task, args.i32(0), args.ptr(1), flags, true, ChownReq(args.u32(2), args.u32(3)));
}

SyscallResult SysUtime(Task& task, const SyscallArgs& args) {
  vfs::SetAttrRequest req;
  if (args.ptr(1).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(req, TimesReq(nullptr));
  } else {
    ASSIGN_OR_RETURN_ERRNO(struct utimbuf ub, task.mm().CopyInObj<struct utimbuf>(args.ptr(1)));
    struct timespec ts[2] = {{ub.actime, 0}, {ub.modtime, 0}};
    ASSIGN_OR_RETURN_ERRNO(req, TimesReq(ts));
  }
  return ApplyAt(task, AT_FDCWD, args.ptr(0), 0, false, req);
}

SyscallResult SysUtimes(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(vfs::SetAttrRequest req, TimevalsReq(task, args.ptr(1)));
  return ApplyAt(task, AT_FDCWD, args.ptr(0), 0, false, req);
}

SyscallResult SysFutimesat(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(vfs::SetAttrRequest req, TimevalsReq(task, args.ptr(2)));
  return ApplyAt(task, args.i32(0), args.ptr(1), 0, false, req);
}

SyscallResult SysUtimensat(Task& task, const SyscallArgs& args) {
  int dirfd = args.i32(0);
  int flags = args.i32(3);
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  vfs::SetAttrRequest req;
  if (args.ptr(2).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(req, TimesReq(nullptr));
  } else {
    struct timespec ts[2];
    RETURN_IF_ERRNO(task.mm().CopyIn(args.ptr(2), ts, sizeof(ts)));
    ASSIGN_OR_RETURN_ERRNO(req, TimesReq(ts));
  }
  // A NULL path means the file dirfd refers to (futimens).
  if (args.ptr(1).IsNull()) {
    if (dirfd == AT_FDCWD) return Errno{EFAULT};
    ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, dirfd));
    if (req.mask == 0) return uint64_t{0};
    return Apply(task, file->path(), req);
  }
  ASSIGN_OR_RETURN_ERRNO(Target t,
                         ResolveTarget(task, dirfd, args.ptr(1), !(flags & AT_SYMLINK_NOFOLLOW),
                                       flags & AT_EMPTY_PATH));
  if (req.mask == 0) return uint64_t{0};  // both UTIME_OMIT
  return Apply(task, t.path, req);
}

SyscallResult SysTruncate(Task& task, const SyscallArgs& args) {
  int64_t len = args.i64(1);
  if (len < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, AT_FDCWD, args.ptr(0), true, false));
  RETURN_IF_ERRNO(FsizeAllowedSize(task, static_cast<uint64_t>(len)));
  vfs::SetAttrRequest req;
  req.mask = vfs::kSetSize;
  req.size = len;
  return Apply(task, t.path, req);
}

SyscallResult SysFtruncate(Task& task, const SyscallArgs& args) {
  int64_t len = args.i64(1);
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  if (len < 0) return Errno{EINVAL};
  if (!file->writable()) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(uint32_t type, FileTypeOf(*file));  // memfds have no inode
  if (type != S_IFREG) return Errno{EINVAL};
  RETURN_IF_ERRNO(FsizeAllowedSize(task, static_cast<uint64_t>(len)));
  RETURN_IF_ERRNO(file->Truncate(len));
  vfs::NotifyFile(file->path(), IN_MODIFY);
  return uint64_t{0};
}

SyscallResult SysUmask(Task& task, const SyscallArgs& args) {
  return uint64_t{task.fs().SetUmask(args.u32(0))};
}

}  // namespace usentry::sentry
