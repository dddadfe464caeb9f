// Shared helpers of the file syscalls.
#include "sentry/syscalls/sys_file_util.h"

#include <fcntl.h>
#include <poll.h>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {

SysResult<std::string> CopyInPath(Task& task, mm::GuestAddr addr) {
  ASSIGN_OR_RETURN_ERRNO(std::string s, task.mm().CopyInString(addr, vfs::kPathMax));
  if (s.size() >= vfs::kPathMax) return Errno{ENAMETOOLONG};
  return s;
}

SysResult<std::shared_ptr<vfs::FileDescription>> GetFile(Task& task, int fd) {
  return task.fds().Get(fd);
}

SysResult<std::shared_ptr<vfs::FileDescription>> GetIoFile(Task& task, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto f, task.fds().Get(fd));
  if (f->is_path_only()) return Errno{EBADF};
  return f;
}

SysResult<Target> ResolveTarget(Task& task, int dirfd, mm::GuestAddr path_addr, bool follow,
                                bool empty_path_ok, int open_intent) {
  std::string path;
  // statx(2) accepts a NULL path with AT_EMPTY_PATH (Linux 6.11); so do we.
  if (!(empty_path_ok && path_addr.IsNull())) {
    ASSIGN_OR_RETURN_ERRNO(path, CopyInPath(task, path_addr));
  }
  if (path.empty()) {
    if (!empty_path_ok) return Errno{ENOENT};
    Target t;
    t.empty_path = true;
    if (dirfd == AT_FDCWD) {
      t.path = task.fs().cwd();
      return t;
    }
    ASSIGN_OR_RETURN_ERRNO(t.file, task.fds().Get(dirfd));
    t.path = t.file->path();
    return t;
  }
  ASSIGN_OR_RETURN_ERRNO(vfs::ResolveContext ctx, vfs::ContextAt(task, dirfd, path));
  ctx.open_flags = open_intent;
  vfs::Vfs& v = task.kernel().vfs();
  // A masked secret is as absent to stat/access/readlink as to open; the denial is
  // recorded the same way (reason "masked secret", op "stat").
  auto absent = [&](int err) -> SysResult<Target> {
    if (err == ENOENT) v.NoteAbsent(ctx, "stat", path);
    return Errno{err};
  };
  Target t;
  if (follow) {
    // stat("/proc/self/fd/N") or stat("/dev/stdin") of a pipe names an anonymous file.
    SysResult<vfs::Vfs::Final> fin = v.ResolveFinal(ctx, path);
    if (!fin.ok()) return absent(fin.error());
    if (fin->file) {
      t.file = fin->file;
      return t;
    }
  }
  SysResult<vfs::Path> p = v.Resolve(ctx, path, follow);
  if (!p.ok()) return absent(p.error());
  t.path = std::move(p).value();
  return t;
}

SysResult<vfs::Attr> StatTarget(const Target& t) {
  if (t.file) return t.file->Stat();
  return t.path.inode()->Stat();
}

SysResult<size_t> BlockingIo(Task& task, vfs::FileDescription& file, EventMask events,
                             absl::FunctionRef<SysResult<size_t>()> op) {
  SysResult<size_t> r = op();
  if (r.ok() || r.error() != EAGAIN || file.nonblocking()) return r;
  WaitQueue* q = file.wait_queue();
  if (!q) return r;
  Waiter w(&task);
  ScopedWait scoped(*q, w, events | POLLERR | POLLHUP);
  while (true) {
    r = op();
    if (r.ok() || r.error() != EAGAIN) return r;
    SysStatus st = task.Block(w);
    if (!st.ok()) return Errno{st.error() == EINTR ? kERestartSys : st.error()};
    w.clear();
  }
}

SysResult<uint32_t> FileTypeOf(vfs::FileDescription& file) {
  if (file.inode() != nullptr) return file.inode()->FileType();
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, file.Stat());
  return a.mode & S_IFMT;
}

abi::Stat ToAbiStat(const vfs::Attr& a) {
  abi::Stat s{};
  s.dev = a.dev;
  s.ino = a.ino;
  s.nlink = a.nlink;
  s.mode = a.mode;
  s.uid = a.uid;
  s.gid = a.gid;
  s.rdev = a.rdev;
  s.size = a.size;
  s.blksize = a.blksize;
  s.blocks = a.blocks;
  s.atime_sec = a.atime.tv_sec;
  s.atime_nsec = a.atime.tv_nsec;
  s.mtime_sec = a.mtime.tv_sec;
  s.mtime_nsec = a.mtime.tv_nsec;
  s.ctime_sec = a.ctime.tv_sec;
  s.ctime_nsec = a.ctime.tv_nsec;
  return s;
}

}  // namespace usentry::sentry
