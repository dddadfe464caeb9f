// Vfs::Open / OpenPath: open(2) semantics on top of resolution.
#include <sys/stat.h>

#include "sentry/vfs/notify.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::vfs {
namespace {

// Group of a new file: the directory's if it is setgid, else the creator's fsgid.
uint32_t GidForNew(const Credentials& creds, const Attr& dir) {
  return (dir.mode & S_ISGID) ? dir.gid : creds.fsgid;
}

}  // namespace

SysResult<std::shared_ptr<FileDescription>> Vfs::OpenPath(const ResolveContext& ctx, const Path& p,
                                                          int flags) {
  Inode* inode = p.inode();
  uint32_t type = inode->FileType();
  if ((flags & O_DIRECTORY) && type != S_IFDIR) return Errno{ENOTDIR};
  if (flags & O_PATH) {
    return std::shared_ptr<FileDescription>(std::make_shared<PathOnlyDescription>(p, flags));
  }
  if (type == S_IFLNK) return Errno{ELOOP};
  int acc = flags & O_ACCMODE;
  if (acc == O_ACCMODE) return Errno{EINVAL};
  bool write = acc != O_RDONLY;
  if (type == S_IFDIR && (write || (flags & O_TRUNC))) return Errno{EISDIR};
  ASSIGN_OR_RETURN_ERRNO(Attr a, inode->Stat());
  int may = (acc != O_WRONLY ? kMayRead : 0) | (write || (flags & O_TRUNC) ? kMayWrite : 0);
  const char* op = may & kMayWrite ? "write" : "read";
  if (SysStatus st = CheckPermission(*ctx.creds, a, may); !st.ok()) {
    NoteDenied(ctx, op, p, "", st.error());
    return Errno{st.error()};
  }
  bool is_data = type == S_IFREG || type == S_IFDIR;
  if (write && is_data && p.mount->read_only()) {
    NoteDenied(ctx, op, p, "", EROFS);
    return Errno{EROFS};
  }
  if ((flags & O_TRUNC) && type == S_IFREG && write && a.size != 0) {
    if (p.mount->read_only()) return Errno{EROFS};
    SetAttrRequest req;
    req.mask = kSetSize;
    req.size = 0;
    RETURN_IF_ERRNO(inode->SetAttr(req));
    NotifyFile(p, IN_MODIFY);
  }
  auto file = inode->Open(p, flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_TRUNC));
  if (file.ok()) NotifyFile(p, IN_OPEN);
  // One "write" record per open for writing of a regular file (not per write(2)).
  if (ctx.observer && file.ok() && type == S_IFREG && (may & kMayWrite) && Audited(p)) {
    ctx.observer->Changed(ctx, "write", PathOf(p, ctx.root), "");
  }
  return file;
}

SysResult<std::shared_ptr<FileDescription>> Vfs::Open(const ResolveContext& ctx,
                                                      std::string_view path, int flags,
                                                      uint32_t mode) {
  auto r = OpenImpl(ctx, path, flags, mode);
  if (!r.ok() && r.error() == ENOENT && ctx.observer) {
    NoteAbsent(ctx, (flags & O_ACCMODE) != O_RDONLY ? "write" : "read", path);
  }
  return r;
}

void Vfs::NoteAbsent(const ResolveContext& ctx, std::string_view op, std::string_view path) {
  if (!ctx.observer || path.empty()) return;
  SysResult<ParentAndName> pn = ResolveParent(ctx, path);
  if (!pn.ok() || pn->name.empty() || pn->name == "." || pn->name == "..") return;
  std::string full = PathOf(pn->parent, ctx.root);
  if (full != "/") full += '/';
  full += pn->name;
  ctx.observer->Absent(ctx, op, full);
}

SysResult<std::shared_ptr<FileDescription>> Vfs::OpenForExec(const ResolveContext& ctx,
                                                             std::string_view path) {
  if (path.empty()) return Errno{ENOENT};
  // The file is opened read-only below: its lookup may open it too (LookupForOpen; one
  // gofer round trip instead of two for each binary and each interpreter).
  ResolveContext intent = ctx;
  intent.open_flags = O_RDONLY;
  ASSIGN_OR_RETURN_ERRNO(Path p, Resolve(intent, path, true));
  Inode* inode = p.inode();
  if (!inode->IsRegular()) return Errno{EACCES};
  if (p.mount->flags() & kMountNoExec) return Errno{EACCES};
  ASSIGN_OR_RETURN_ERRNO(Attr a, inode->Stat());
  RETURN_IF_ERRNO(CheckPermission(*ctx.creds, a, kMayExec));
  // execve needs only execute permission (an --x binary runs); open bypassing the read
  // check that OpenPath would make.
  return inode->Open(p, O_RDONLY);
}

SysResult<std::shared_ptr<FileDescription>> Vfs::OpenImpl(const ResolveContext& ctx,
                                                          std::string_view path, int flags,
                                                          uint32_t mode) {
  if (flags & O_PATH) flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  if (!(flags & O_CREAT)) {
    // The last component is looked up knowing it is about to be opened.
    ResolveContext intent = ctx;
    if (!(flags & O_PATH)) intent.open_flags = flags;
    if (!(flags & O_NOFOLLOW)) {
      // A symlink chain ending at a magic link to an anonymous file (/dev/fd/63 or
      // /dev/stdin of a pipe) reopens that file.
      ASSIGN_OR_RETURN_ERRNO(Final fin, ResolveFinal(intent, path));
      if (fin.file) {
        if ((flags & O_DIRECTORY)) return Errno{ENOTDIR};
        if (flags & O_PATH) return fin.file;
        return fin.file->Reopen(flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_TRUNC | O_CLOEXEC));
      }
      // A trailing slash adds Resolve's directory rules; otherwise this is the answer.
      if (path.back() != '/') return OpenPath(ctx, fin.path, flags);
    }
    ASSIGN_OR_RETURN_ERRNO(Path p, Resolve(intent, path, !(flags & O_NOFOLLOW)));
    if ((flags & O_NOFOLLOW) && !(flags & O_PATH) && p.inode()->IsSymlink()) return Errno{ELOOP};
    return OpenPath(ctx, p, flags);
  }
  if (flags & O_DIRECTORY) return Errno{EINVAL};
  // O_CREAT: follow at most kMaxSymlinks dangling/existing symlinks at the last component
  // (open creates the target of a dangling symlink unless O_EXCL/O_NOFOLLOW).
  ResolveContext cur = ctx;
  std::string target(path);
  for (int links = 0;; ++links) {
    ASSIGN_OR_RETURN_ERRNO(ParentAndName pn, ResolveParent(cur, target));
    if (pn.name.empty() || pn.name == "." || pn.name == ".." || pn.trailing_slash) {
      return Errno{EISDIR};
    }
    SysResult<Path> existing = Step(cur, pn.parent, pn.name);
    if (existing.ok()) {
      if (flags & O_EXCL) return Errno{EEXIST};
      Path p = std::move(existing).value();
      if (p.inode()->IsSymlink()) {
        if (flags & O_NOFOLLOW) return Errno{ELOOP};
        if (links >= kMaxSymlinks) return Errno{ELOOP};
        ASSIGN_OR_RETURN_ERRNO(target, p.inode()->Readlink());
        cur.start = pn.parent;
        continue;
      }
      if (p.inode()->IsDir()) return Errno{EISDIR};
      return OpenPath(ctx, p, flags);
    }
    if (existing.error() != ENOENT) return Errno{existing.error()};
    ASSIGN_OR_RETURN_ERRNO(Attr da, pn.parent.inode()->Stat());
    if (SysStatus st = CheckPermission(*ctx.creds, da, kMayWrite | kMayExec); !st.ok()) {
      NoteDenied(ctx, "create", pn.parent, pn.name, st.error());
      return Errno{st.error()};
    }
    if (pn.parent.mount->read_only()) {
      NoteDenied(ctx, "create", pn.parent, pn.name, EROFS);
      return Errno{EROFS};
    }
    uint32_t m = (mode & ~ctx.umask & 07777) | S_IFREG;
    ASSIGN_OR_RETURN_ERRNO(
        std::shared_ptr<Inode> inode,
        pn.parent.inode()->Create(pn.name, m, ctx.creds->fsuid, GidForNew(*ctx.creds, da)));
    Path p{pn.parent.mount, pn.parent.dentry->ChildFor(pn.name, inode)};
    if (ctx.observer && Audited(p)) ctx.observer->Changed(ctx, "create", PathOf(p, ctx.root), "");
    NotifyEntry(pn.parent, pn.name, IN_CREATE, /*is_dir=*/false);
    // A file just created may be opened with any access mode (creat(2) with mode 0444).
    auto file = inode->Open(p, flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_TRUNC));
    if (file.ok()) NotifyFile(p, IN_OPEN);
    return file;
  }
}

}  // namespace usentry::sentry::vfs
