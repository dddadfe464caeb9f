// Vfs namespace operations: mkdir, mknod, rmdir, unlink, symlink, link, rename,
// readlink, setattr, access. Error precedence follows Linux where tests can tell.
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sentry/vfs/notify.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::vfs {
namespace {

uint32_t GidForNew(const Credentials& creds, const Attr& dir) {
  return (dir.mode & S_ISGID) ? dir.gid : creds.fsgid;
}

bool IsDotOrEmpty(const std::string& n) { return n.empty() || n == "." || n == ".."; }

// Permission to add/remove entries in `dir` (a denial of `op` on `name` is reported).
SysStatus MayModifyDir(const ResolveContext& ctx, const Path& dir, std::string_view op,
                       std::string_view name) {
  ASSIGN_OR_RETURN_ERRNO(Attr da, dir.inode()->Stat());
  SysStatus st = CheckPermission(*ctx.creds, da, kMayWrite | kMayExec);
  if (st.ok() && dir.mount->read_only()) st = Errno{EROFS};
  if (!st.ok()) Vfs::NoteDenied(ctx, op, dir, name, st.error());
  return st;
}

// Reports a change of `name` in `dir` (or of `p` itself when name is empty).
void NoteChanged(const ResolveContext& ctx, std::string_view op, const Path& dir,
                 std::string_view name, const std::string& to = "") {
  if (!ctx.observer || !Vfs::Audited(dir)) return;
  std::string path = Vfs::PathOf(dir, ctx.root);
  if (!name.empty()) {
    if (path != "/") path += '/';
    path += name;
  }
  ctx.observer->Changed(ctx, op, path, to);
}

// The events of a setattr, as Linux's fsnotify_change maps its attribute mask: owner
// and mode are IN_ATTRIB, size IN_MODIFY; both times (utimes) IN_ATTRIB, atime alone
// IN_ACCESS, mtime alone IN_MODIFY.
uint32_t AttrChangeEvents(uint32_t m) {
  uint32_t ev = 0;
  if (m & (kSetMode | kSetUid | kSetGid)) ev |= IN_ATTRIB;
  if (m & kSetSize) ev |= IN_MODIFY;
  if ((m & (kSetAtime | kSetMtime)) == (kSetAtime | kSetMtime)) {
    ev |= IN_ATTRIB;
  } else if (m & kSetAtime) {
    ev |= IN_ACCESS;
  } else if (m & kSetMtime) {
    ev |= IN_MODIFY;
  }
  return ev;
}

// After `victim` (entry `name` of `dir`, which had `links` links) was unlinked or
// removed: a file loses a link (IN_ATTRIB); with none left it is gone (IN_DELETE_SELF)
// and the watches on it end (IN_IGNORED); then the directory says so (IN_DELETE). The count
// is taken before: an overlay's whited-out lower file still stats as linked.
void NotifyRemoved(const Path& victim, const Path& dir, std::string_view name, bool is_dir,
                   uint64_t links) {
  NotifyHub* hub = HubOf(dir);
  if (!hub || hub->empty()) return;
  const bool gone = is_dir || links <= 1;
  if (!is_dir) NotifySelf(victim, IN_ATTRIB);
  if (gone) {
    NotifySelf(victim, IN_DELETE_SELF);
    DropWatches(victim);
  }
  NotifyEntry(dir, name, IN_DELETE, is_dir);
}

// A rename's events (Linux's fsnotify_move): IN_MOVED_FROM and IN_MOVED_TO sharing a
// cookie, IN_ATTRIB on a replaced or exchanged target, IN_MOVE_SELF on what moved; a
// replaced target with no other link (`dst_links` before) is gone. An exchange moves
// both ways.
void NotifyMoved(const Path& from_dir, std::string_view from, const Path& to_dir,
                 std::string_view to, const Path& src, const Path* dst, uint64_t dst_links,
                 bool exchange) {
  NotifyHub* hub = HubOf(from_dir);
  if (!hub || hub->empty()) return;
  auto move = [&](const Path& a_dir, std::string_view a, const Path& b_dir, std::string_view b,
                  const Path& what, const Path* target) {
    uint32_t cookie = hub->NewCookie();
    bool dir = what.inode()->IsDir();
    const uint32_t in_dir = a_dir.dentry == b_dir.dentry ? kRenameInDir : 0;
    NotifyEntry(a_dir, a, IN_MOVED_FROM | in_dir, dir, cookie);
    NotifyEntry(b_dir, b, IN_MOVED_TO, dir, cookie);
    if (target) NotifySelf(*target, IN_ATTRIB);
    NotifySelf(what, IN_MOVE_SELF);
  };
  move(from_dir, from, to_dir, to, src, dst);
  if (exchange) {
    move(to_dir, to, from_dir, from, *dst, nullptr);
  } else if (dst) {
    if (dst->inode()->IsDir() || dst_links <= 1) {
      NotifySelf(*dst, IN_DELETE_SELF);
      DropWatches(*dst);
    }
  }
}

}  // namespace

// Creation helpers share: resolve parent, EEXIST if present, permission, EROFS.
#define USENTRY_CREATE_PROLOGUE(ctx, path, pn, op)                    \
  ASSIGN_OR_RETURN_ERRNO(ParentAndName pn, ResolveParent(ctx, path)); \
  if (IsDotOrEmpty(pn.name)) return Errno{EEXIST};                    \
  {                                                                   \
    SysResult<Path> existing = Step(ctx, pn.parent, pn.name);         \
    if (existing.ok()) return Errno{EEXIST};                          \
    if (existing.error() != ENOENT) return Errno{existing.error()};   \
  }                                                                   \
  RETURN_IF_ERRNO(MayModifyDir(ctx, pn.parent, op, pn.name))

SysStatus Vfs::Mkdir(const ResolveContext& ctx, std::string_view path, uint32_t mode) {
  USENTRY_CREATE_PROLOGUE(ctx, path, pn, "mkdir");
  ASSIGN_OR_RETURN_ERRNO(Attr da, pn.parent.inode()->Stat());
  uint32_t m = (mode & ~ctx.umask & 01777) | (da.mode & S_ISGID) | S_IFDIR;
  ASSIGN_OR_RETURN_ERRNO(auto inode, pn.parent.inode()->Mkdir(pn.name, m, ctx.creds->fsuid,
                                                              GidForNew(*ctx.creds, da)));
  pn.parent.dentry->ChildFor(pn.name, inode);
  NoteChanged(ctx, "mkdir", pn.parent, pn.name);
  NotifyEntry(pn.parent, pn.name, IN_CREATE, /*is_dir=*/true);
  return SysOk();
}

SysStatus Vfs::Mknod(const ResolveContext& ctx, std::string_view path, uint32_t mode,
                     uint64_t dev) {
  uint32_t type = mode & S_IFMT;
  if (type == 0) type = S_IFREG;
  if (type == S_IFDIR) return Errno{EPERM};
  if ((type == S_IFCHR || type == S_IFBLK) && !ctx.creds->IsRoot()) return Errno{EPERM};
  if (type != S_IFREG && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
      type != S_IFSOCK) {
    return Errno{EINVAL};
  }
  USENTRY_CREATE_PROLOGUE(ctx, path, pn, type == S_IFREG ? "create" : "mknod");
  if (pn.trailing_slash) return Errno{ENOENT};
  ASSIGN_OR_RETURN_ERRNO(Attr da, pn.parent.inode()->Stat());
  uint32_t m = (mode & ~ctx.umask & 07777) | type;
  uid_t uid = ctx.creds->fsuid;
  gid_t gid = GidForNew(*ctx.creds, da);
  SysResult<std::shared_ptr<Inode>> r = type == S_IFREG
                                            ? pn.parent.inode()->Create(pn.name, m, uid, gid)
                                            : pn.parent.inode()->Mknod(pn.name, m, dev, uid, gid);
  if (!r.ok()) return Errno{r.error()};
  pn.parent.dentry->ChildFor(pn.name, r.value());
  NoteChanged(ctx, type == S_IFREG ? "create" : "mknod", pn.parent, pn.name);
  NotifyEntry(pn.parent, pn.name, IN_CREATE, /*is_dir=*/false);
  return SysOk();
}

SysStatus Vfs::Symlink(const ResolveContext& ctx, std::string_view target, std::string_view path) {
  if (target.empty()) return Errno{ENOENT};
  if (target.size() >= kPathMax) return Errno{ENAMETOOLONG};
  USENTRY_CREATE_PROLOGUE(ctx, path, pn, "symlink");
  if (pn.trailing_slash) return Errno{ENOENT};
  ASSIGN_OR_RETURN_ERRNO(Attr da, pn.parent.inode()->Stat());
  ASSIGN_OR_RETURN_ERRNO(auto inode, pn.parent.inode()->Symlink(pn.name, target, ctx.creds->fsuid,
                                                                GidForNew(*ctx.creds, da)));
  pn.parent.dentry->ChildFor(pn.name, inode);
  NoteChanged(ctx, "symlink", pn.parent, pn.name, std::string(target));
  NotifyEntry(pn.parent, pn.name, IN_CREATE, /*is_dir=*/false);
  return SysOk();
}

SysStatus Vfs::Link(const ResolveContext& old_ctx, std::string_view old_path,
                    const ResolveContext& new_ctx, std::string_view new_path, bool follow) {
  ASSIGN_OR_RETURN_ERRNO(Path old, Resolve(old_ctx, old_path, follow));
  if (old.inode()->IsDir()) return Errno{EPERM};
  USENTRY_CREATE_PROLOGUE(new_ctx, new_path, pn, "link");
  if (pn.trailing_slash) return Errno{ENOENT};
  if (pn.parent.mount != old.mount) return Errno{EXDEV};
  RETURN_IF_ERRNO(pn.parent.inode()->Link(pn.name, *old.inode()));
  pn.parent.dentry->ChildFor(pn.name, old.dentry->inode());
  if (new_ctx.observer) NoteChanged(new_ctx, "link", pn.parent, pn.name, PathOf(old, old_ctx.root));
  NotifySelf(old, IN_ATTRIB);  // its link count
  NotifyEntry(pn.parent, pn.name, IN_CREATE, /*is_dir=*/false);
  return SysOk();
}

#undef USENTRY_CREATE_PROLOGUE

SysStatus Vfs::Unlink(const ResolveContext& ctx, std::string_view path) {
  ASSIGN_OR_RETURN_ERRNO(ParentAndName pn, ResolveParent(ctx, path));
  if (IsDotOrEmpty(pn.name)) return Errno{EISDIR};
  ASSIGN_OR_RETURN_ERRNO(Path victim, Step(ctx, pn.parent, pn.name));
  if (victim.mount != pn.parent.mount) return Errno{EBUSY};
  if (victim.inode()->IsDir()) return Errno{EISDIR};
  if (pn.trailing_slash) return Errno{ENOTDIR};
  RETURN_IF_ERRNO(MayModifyDir(ctx, pn.parent, "delete", pn.name));
  ASSIGN_OR_RETURN_ERRNO(Attr da, pn.parent.inode()->Stat());
  ASSIGN_OR_RETURN_ERRNO(Attr va, victim.inode()->Stat());
  RETURN_IF_ERRNO(CheckSticky(*ctx.creds, da, va));
  RETURN_IF_ERRNO(pn.parent.inode()->Unlink(pn.name));
  pn.parent.dentry->Forget(pn.name);
  DropRecent(victim.dentry.get());
  NoteChanged(ctx, "delete", pn.parent, pn.name);
  NotifyRemoved(victim, pn.parent, pn.name, /*is_dir=*/false, va.nlink);
  return SysOk();
}

SysStatus Vfs::Rmdir(const ResolveContext& ctx, std::string_view path) {
  ASSIGN_OR_RETURN_ERRNO(ParentAndName pn, ResolveParent(ctx, path));
  if (pn.name.empty()) return Errno{EBUSY};
  if (pn.name == ".") return Errno{EINVAL};
  if (pn.name == "..") return Errno{ENOTEMPTY};
  ASSIGN_OR_RETURN_ERRNO(Path victim, Step(ctx, pn.parent, pn.name));
  if (victim.mount != pn.parent.mount) return Errno{EBUSY};
  if (!victim.inode()->IsDir()) return Errno{ENOTDIR};
  if (victim == ctx.root) return Errno{EBUSY};
  RETURN_IF_ERRNO(MayModifyDir(ctx, pn.parent, "rmdir", pn.name));
  ASSIGN_OR_RETURN_ERRNO(Attr da, pn.parent.inode()->Stat());
  ASSIGN_OR_RETURN_ERRNO(Attr va, victim.inode()->Stat());
  RETURN_IF_ERRNO(CheckSticky(*ctx.creds, da, va));
  RETURN_IF_ERRNO(pn.parent.inode()->Rmdir(pn.name));
  pn.parent.dentry->Forget(pn.name);
  DropRecent(victim.dentry.get());
  NoteChanged(ctx, "rmdir", pn.parent, pn.name);
  NotifyRemoved(victim, pn.parent, pn.name, /*is_dir=*/true, va.nlink);
  return SysOk();
}

SysStatus Vfs::Rename(const ResolveContext& old_ctx, std::string_view old_path,
                      const ResolveContext& new_ctx, std::string_view new_path, uint32_t flags) {
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) return Errno{EINVAL};
  if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(ParentAndName op, ResolveParent(old_ctx, old_path));
  ASSIGN_OR_RETURN_ERRNO(ParentAndName np, ResolveParent(new_ctx, new_path));
  if (IsDotOrEmpty(op.name) || IsDotOrEmpty(np.name)) return Errno{EBUSY};
  ASSIGN_OR_RETURN_ERRNO(Path src, Step(old_ctx, op.parent, op.name));
  if (src.mount != op.parent.mount) return Errno{EBUSY};
  if (op.parent.mount != np.parent.mount) return Errno{EXDEV};
  bool src_dir = src.inode()->IsDir();
  if ((op.trailing_slash || np.trailing_slash) && !src_dir) return Errno{ENOTDIR};
  SysResult<Path> dst_r = Step(new_ctx, np.parent, np.name);
  if (!dst_r.ok() && dst_r.error() != ENOENT) return Errno{dst_r.error()};
  bool dst_exists = dst_r.ok();
  if ((flags & RENAME_EXCHANGE) && !dst_exists) return Errno{ENOENT};
  if ((flags & RENAME_NOREPLACE) && dst_exists) return Errno{EEXIST};
  Path dst;
  if (dst_exists) {
    dst = std::move(dst_r).value();
    if (dst.mount != np.parent.mount) return Errno{EBUSY};
    if (dst.inode() == src.inode()) return SysOk();  // same file: nothing to do
    bool dst_dir = dst.inode()->IsDir();
    if (!(flags & RENAME_EXCHANGE)) {
      if (src_dir && !dst_dir) return Errno{ENOTDIR};
      if (!src_dir && dst_dir) return Errno{EISDIR};
    }
  }
  // A directory cannot move beneath itself (and with EXCHANGE, neither can the other).
  auto beneath = [](const Path& dir, const Path& ancestor) {
    for (auto d = dir.dentry; d; d = d->parent()) {
      if (d == ancestor.dentry) return true;
    }
    return false;
  };
  if (src_dir && beneath(np.parent, src)) return Errno{EINVAL};
  if (dst_exists && (flags & RENAME_EXCHANGE) && dst.inode()->IsDir() && beneath(op.parent, dst)) {
    return Errno{EINVAL};
  }
  if (dst_exists && !(flags & RENAME_EXCHANGE) && beneath(op.parent, dst)) return Errno{ENOTEMPTY};
  RETURN_IF_ERRNO(MayModifyDir(old_ctx, op.parent, "rename", op.name));
  RETURN_IF_ERRNO(MayModifyDir(new_ctx, np.parent, "rename", np.name));
  ASSIGN_OR_RETURN_ERRNO(Attr oda, op.parent.inode()->Stat());
  ASSIGN_OR_RETURN_ERRNO(Attr nda, np.parent.inode()->Stat());
  ASSIGN_OR_RETURN_ERRNO(Attr sa, src.inode()->Stat());
  RETURN_IF_ERRNO(CheckSticky(*old_ctx.creds, oda, sa));
  uint64_t dst_links = 0;
  if (dst_exists) {
    ASSIGN_OR_RETURN_ERRNO(Attr dsa, dst.inode()->Stat());
    RETURN_IF_ERRNO(CheckSticky(*new_ctx.creds, nda, dsa));
    dst_links = dsa.nlink;
  }
  // Moving a directory to another parent rewrites its "..": needs write on it.
  if (src_dir && op.parent.dentry != np.parent.dentry) {
    RETURN_IF_ERRNO(CheckPermission(*old_ctx.creds, sa, kMayWrite));
  }
  RETURN_IF_ERRNO(op.parent.inode()->Rename(op.name, *np.parent.inode(), np.name, flags));
  if (old_ctx.observer && Audited(op.parent)) {
    std::string to = PathOf(np.parent, new_ctx.root);
    if (to != "/") to += '/';
    to += np.name;
    NoteChanged(old_ctx, (flags & RENAME_EXCHANGE) ? "exchange" : "rename", op.parent, op.name, to);
  }
  if (dst_exists && !(flags & RENAME_EXCHANGE)) DropRecent(dst.dentry.get());
  NotifyMoved(op.parent, op.name, np.parent, np.name, src, dst_exists ? &dst : nullptr, dst_links,
              flags & RENAME_EXCHANGE);
  if (flags & RENAME_EXCHANGE) {
    op.parent.dentry->ExchangeChildren(op.name, *np.parent.dentry, np.name);
  } else {
    op.parent.dentry->MoveChild(op.name, *np.parent.dentry, np.name);
  }
  return SysOk();
}

SysResult<std::string> Vfs::Readlink(const ResolveContext& ctx, std::string_view path) {
  ASSIGN_OR_RETURN_ERRNO(Path p, Resolve(ctx, path, false));
  if (!p.inode()->IsSymlink()) return Errno{EINVAL};
  return p.inode()->Readlink();
}

SysStatus Vfs::SetAttr(const ResolveContext& ctx, const Path& p, SetAttrRequest req) {
  if (req.mask == 0) return SysOk();
  const Credentials& c = *ctx.creds;
  Inode* inode = p.inode();
  ASSIGN_OR_RETURN_ERRNO(Attr a, inode->Stat());
  const char* op = (req.mask & kSetSize)              ? "truncate"
                   : (req.mask & kSetMode)            ? "chmod"
                   : (req.mask & (kSetUid | kSetGid)) ? "chown"
                                                      : "utimes";
  if (p.mount->read_only()) {
    NoteDenied(ctx, op, p, "", EROFS);
    return Errno{EROFS};
  }
  bool is_dir = (a.mode & S_IFMT) == S_IFDIR;
  if (req.mask & kSetSize) {
    if (is_dir) return Errno{EISDIR};
    if ((a.mode & S_IFMT) != S_IFREG) return Errno{EINVAL};
    if (req.size < 0) return Errno{EINVAL};
    RETURN_IF_ERRNO(CheckPermission(c, a, kMayWrite));
  }
  if (req.mask & (kSetAtime | kSetMtime)) {
    bool all_now = (!(req.mask & kSetAtime) || req.atime.tv_nsec == UTIME_NOW) &&
                   (!(req.mask & kSetMtime) || req.mtime.tv_nsec == UTIME_NOW);
    if (all_now) {
      // Owner, root, or anyone who may write the file may set "now".
      if (!CheckOwner(c, a).ok()) RETURN_IF_ERRNO(CheckPermission(c, a, kMayWrite));
    } else {
      RETURN_IF_ERRNO(CheckOwner(c, a));
    }
  }
  if (req.mask & (kSetUid | kSetGid)) {
    bool uid_change = (req.mask & kSetUid) && req.uid != a.uid;
    bool gid_change = (req.mask & kSetGid) && req.gid != a.gid;
    if (!c.IsRoot()) {
      if (uid_change) return Errno{EPERM};
      if ((req.mask & (kSetUid | kSetGid)) && c.fsuid != a.uid) return Errno{EPERM};
      if (gid_change && !c.InGroup(req.gid)) return Errno{EPERM};
    }
    // chown clears setuid, and setgid when it means "set group id" (group exec set).
    if (!is_dir && (a.mode & (S_ISUID | S_ISGID))) {
      uint32_t mode = (req.mask & kSetMode) ? req.mode : (a.mode & 07777);
      mode &= ~S_ISUID;
      if (mode & S_IXGRP) mode &= ~S_ISGID;
      req.mask |= kSetMode;
      req.mode = mode;
    }
  }
  if (req.mask & kSetMode) {
    if (!(req.mask & (kSetUid | kSetGid))) RETURN_IF_ERRNO(CheckOwner(c, a));
    req.mode &= 07777;
    uint32_t gid = (req.mask & kSetGid) ? req.gid : a.gid;
    if (!c.IsRoot() && !c.InGroup(gid)) req.mode &= ~S_ISGID;
  }
  RETURN_IF_ERRNO(inode->SetAttr(req));
  NotifyFile(p, AttrChangeEvents(req.mask));
  // Timestamps alone (touch) are not a change worth a record.
  if (ctx.observer && std::string_view(op) != "utimes") NoteChanged(ctx, op, p, "");
  return SysOk();
}

SysStatus Vfs::Access(const ResolveContext& ctx, const Path& p, int mode) {
  if (mode & ~(R_OK | W_OK | X_OK)) return Errno{EINVAL};
  if (mode == F_OK) return SysOk();
  ASSIGN_OR_RETURN_ERRNO(Attr a, p.inode()->Stat());
  uint32_t type = a.mode & S_IFMT;
  if ((mode & W_OK) && p.mount->read_only() &&
      (type == S_IFREG || type == S_IFDIR || type == S_IFLNK)) {
    return Errno{EROFS};
  }
  return CheckPermission(*ctx.creds, a, mode);
}

}  // namespace usentry::sentry::vfs
