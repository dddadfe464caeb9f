// Vfs: mount table and path resolution (see vfs.h for the semantics).
#include "sentry/vfs/vfs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/permissions.h"

namespace usentry::sentry::vfs {

Vfs::Vfs(std::shared_ptr<Filesystem> fs, std::shared_ptr<Inode> root_inode, int mount_flags) {
  auto root = std::make_shared<Dentry>("/", nullptr, std::move(root_inode));
  root_mount_ = std::make_shared<Mount>(next_mount_id_++, std::move(fs), std::move(root),
                                        mount_flags, nullptr, nullptr);
  root_mount_->notify = notify_;
}

Vfs::~Vfs() = default;

Path Vfs::root() const { return CrossMounts(Path{root_mount_, root_mount_->root()}); }

SysResult<std::shared_ptr<Mount>> Vfs::MountAt(const Path& mountpoint,
                                               std::shared_ptr<Filesystem> fs,
                                               std::shared_ptr<Inode> root_inode, int mount_flags) {
  if (!mountpoint.valid()) return Errno{EINVAL};
  if (!mountpoint.inode()->IsDir() || !root_inode->IsDir()) return Errno{ENOTDIR};
  auto root = std::make_shared<Dentry>("/", nullptr, std::move(root_inode));
  auto m = std::make_shared<Mount>(next_mount_id_++, std::move(fs), std::move(root), mount_flags,
                                   mountpoint.mount, mountpoint.dentry);
  m->notify = notify_;
  mounts_[{mountpoint.mount.get(), mountpoint.dentry.get()}].push_back(m);
  mountpoint.dentry->mount_count++;
  return m;
}

SysResult<std::shared_ptr<Mount>> Vfs::MountAt(std::string_view abs_path,
                                               std::shared_ptr<Filesystem> fs,
                                               std::shared_ptr<Inode> root_inode, int mount_flags) {
  static const Credentials kRoot;
  ResolveContext ctx{&kRoot, root(), root()};
  ASSIGN_OR_RETURN_ERRNO(Path mp, Resolve(ctx, abs_path, true));
  return MountAt(mp, std::move(fs), std::move(root_inode), mount_flags);
}

std::shared_ptr<Mount> Vfs::MountedOn(const Mount& m, const Dentry& d) const {
  if (d.mount_count == 0) return nullptr;
  auto it = mounts_.find({&m, &d});
  if (it == mounts_.end() || it->second.empty()) return nullptr;
  return it->second.back();
}

std::vector<std::shared_ptr<Mount>> Vfs::Mounts() const {
  std::vector<std::shared_ptr<Mount>> out{root_mount_};
  for (const auto& [key, stack] : mounts_) out.insert(out.end(), stack.begin(), stack.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
  return out;
}

void Vfs::KeepRecent(const Mount& m, std::shared_ptr<Dentry> d) {
  if (m.fs().name() == "9p" && !m.read_only()) return;
  if (recent_.size() < kRecentDentries) {
    recent_.push_back(std::move(d));
    return;
  }
  recent_[recent_next_] = std::move(d);
  recent_next_ = (recent_next_ + 1) % kRecentDentries;
}

void Vfs::DropRecent(const Dentry* d) {
  for (auto& r : recent_) {
    if (r.get() == d) r.reset();
  }
}

Path Vfs::CrossMounts(Path p) const {
  while (auto m = MountedOn(*p.mount, *p.dentry)) p = Path{m, m->root()};
  return p;
}

SysResult<Path> Vfs::Step(const ResolveContext& ctx, const Path& dir, std::string_view name,
                          bool last, const WalkAhead* ahead) {
  Inode* di = dir.inode();
  if (!di->IsDir()) return Errno{ENOTDIR};
  ASSIGN_OR_RETURN_ERRNO(Attr da, di->Stat());
  if (SysStatus st = CheckPermission(*ctx.creds, da, kMayExec); !st.ok()) {
    // Walking through a directory the identity may not search: the same denial as
    // opening it would be (op "search", the directory's path).
    if (ctx.observer && Audited(dir)) NoteDenied(ctx, "search", dir, "", st.error());
    return Errno{st.error()};
  }
  if (name.empty() || name == ".") return dir;
  if (name == "..") {
    Path cur = dir;
    while (true) {
      if (cur == ctx.root) return cur;
      if (cur.dentry != cur.mount->root()) break;
      if (!cur.mount->parent()) return cur;  // the real root: ".." stays
      cur = Path{cur.mount->parent(), cur.mount->mountpoint()};
    }
    if (!cur.dentry->parent()) return cur;
    return CrossMounts(Path{cur.mount, cur.dentry->parent()});
  }
  if (name.size() > kNameMax) return Errno{ENAMETOOLONG};
  std::string n(name);
  const bool cached = di->CachesChildren();
  std::shared_ptr<Dentry> child = cached ? dir.dentry->CachedChild(n) : nullptr;
  if (!child) {
    ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<Inode> inode,
                           last && ctx.open_flags >= 0 ? di->LookupForOpen(name, ctx.open_flags)
                           : ahead && !ahead->names.empty() ? di->LookupAhead(name, *ahead)
                                                            : di->Lookup(name));
    child = dir.dentry->ChildFor(n, std::move(inode));
    if (cached) KeepRecent(*dir.mount, child);
  }
  return CrossMounts(Path{dir.mount, std::move(child)});
}

SysResult<Path> Vfs::FollowLink(const ResolveContext& ctx, const Path& dir, const Path& link,
                                int* symlinks, const WalkAhead* tail) {
  if (++*symlinks > kMaxSymlinks) return Errno{ELOOP};
  MagicLink magic;
  if (link.inode()->GetMagicLink(&magic)) {
    if (magic.path.valid()) return magic.path;
    return Errno{ENOENT};  // an anonymous file is not a directory to walk through
  }
  ASSIGN_OR_RETURN_ERRNO(std::string target, link.inode()->Readlink());
  if (target.empty()) return Errno{ENOENT};
  return WalkComponents(ctx, dir, target, true, symlinks, nullptr, nullptr, tail);
}

// Walks `path` from `cur` (or the root for absolute paths). If `last` is non-null, stops
// before the last component and stores it there (parent resolution).
SysResult<Path> Vfs::WalkComponents(const ResolveContext& ctx, Path cur, std::string_view path,
                                    bool follow_last, int* symlinks, bool* trailing_slash,
                                    std::string* last, const WalkAhead* tail) {
  if (path.empty()) return Errno{ENOENT};
  if (path.size() >= kPathMax) return Errno{ENAMETOOLONG};
  if (path[0] == '/') cur = ctx.root;
  bool slash = path.back() == '/';
  if (trailing_slash) *trailing_slash = slash;
  // Split into components, skipping empty ones ("a//b").
  std::vector<std::string_view> comps;
  for (size_t i = 0; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) comps.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  for (auto c : comps) {
    if (c.size() > kNameMax) return Errno{ENAMETOOLONG};
  }
  size_t n = comps.size();
  if (last) {
    if (n == 0) {
      last->clear();
      return cur;
    }
    *last = std::string(comps.back());
    --n;
  }
  const bool has_tail = tail != nullptr && !tail->names.empty();
  std::vector<std::string_view> rest;  // comps after the current one, then the tail
  for (size_t i = 0; i < n; ++i) {
    bool is_last = i + 1 == n && !last;
    // The rest of the walk, for a filesystem that can look ahead (Inode::LookupAhead).
    const auto after = std::span<const std::string_view>(comps).subspan(i + 1, n - i - 1);
    WalkAhead ahead{after, last ? -1 : ctx.open_flags};
    if (has_tail) {
      rest.assign(after.begin(), after.end());
      rest.insert(rest.end(), tail->names.begin(), tail->names.end());
      ahead = WalkAhead{rest, tail->last_open_flags};
    }
    ASSIGN_OR_RETURN_ERRNO(Path next, Step(ctx, cur, comps[i], is_last, &ahead));
    if (next.inode()->IsSymlink() && (!is_last || follow_last || slash)) {
      // Where a symlink stands for a directory on the way, its target's last component
      // is not what open(2) opens; the walk after it is what its target's walk looks
      // ahead to.
      ResolveContext link_ctx = ctx;
      if (!is_last) link_ctx.open_flags = -1;
      ASSIGN_OR_RETURN_ERRNO(next, FollowLink(link_ctx, cur, next, symlinks, &ahead));
    }
    if ((!is_last || (slash && !last)) && !next.inode()->IsDir()) return Errno{ENOTDIR};
    cur = std::move(next);
  }
  if (last && !cur.inode()->IsDir()) return Errno{ENOTDIR};
  return cur;
}

SysResult<Path> Vfs::Resolve(const ResolveContext& ctx, std::string_view path, bool follow) {
  int symlinks = 0;
  bool slash = false;
  return WalkComponents(ctx, ctx.start.valid() ? ctx.start : ctx.root, path, follow, &symlinks,
                        &slash, nullptr);
}

SysResult<Vfs::Final> Vfs::ResolveFinal(const ResolveContext& ctx, std::string_view path) {
  ASSIGN_OR_RETURN_ERRNO(Path cur, Resolve(ctx, path, false));
  for (int links = 0; cur.inode()->IsSymlink(); ++links) {
    if (links >= kMaxSymlinks) return Errno{ELOOP};
    MagicLink magic;
    if (cur.inode()->GetMagicLink(&magic)) {
      if (magic.file) return Final{Path{}, magic.file};
      if (!magic.path.valid()) return Errno{ENOENT};
      cur = magic.path;
      continue;
    }
    // An ordinary symlink: its text is resolved from the directory that holds it (only
    // the last step may be another symlink; intermediate ones are followed by Resolve).
    ASSIGN_OR_RETURN_ERRNO(std::string target, cur.inode()->Readlink());
    ResolveContext from = ctx;
    from.start = Path{cur.mount, cur.dentry->parent() ? cur.dentry->parent() : cur.dentry};
    ASSIGN_OR_RETURN_ERRNO(cur, Resolve(from, target, false));
  }
  return Final{cur, nullptr};
}

SysResult<ParentAndName> Vfs::ResolveParent(const ResolveContext& ctx, std::string_view path) {
  int symlinks = 0;
  ParentAndName out;
  ASSIGN_OR_RETURN_ERRNO(out.parent,
                         WalkComponents(ctx, ctx.start.valid() ? ctx.start : ctx.root, path, true,
                                        &symlinks, &out.trailing_slash, &out.name));
  return out;
}

std::string Vfs::PathOf(const Path& p, const Path& root) {
  if (!p.valid()) return "";
  std::vector<const std::string*> parts;
  Path cur = p;
  while (!(cur == root)) {
    if (cur.dentry == cur.mount->root()) {
      if (!cur.mount->parent()) break;
      cur = Path{cur.mount->parent(), cur.mount->mountpoint()};
      continue;
    }
    if (!cur.dentry->parent()) break;
    parts.push_back(&cur.dentry->name());
    cur.dentry = cur.dentry->parent();
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    out += '/';
    out += **it;
  }
  if (out.empty()) out = "/";
  if (p.dentry->dead()) out += " (deleted)";
  return out;
}

bool Vfs::Audited(const Path& p) {
  if (!p.valid()) return false;
  const std::string& fs = p.mount->fs().name();
  return fs != "proc" && fs != "devtmpfs";
}

void Vfs::NoteDenied(const ResolveContext& ctx, std::string_view op, const Path& p,
                     std::string_view name, int err) {
  if (!ctx.observer || !p.valid()) return;
  std::string path = PathOf(p, ctx.root);
  if (!name.empty()) {
    if (path != "/") path += '/';
    path += name;
  }
  if (err == EROFS) {
    std::string mnt = PathOf(Path{p.mount, p.mount->root()}, ctx.root);
    ctx.observer->Denied(ctx, op, path, err, absl::StrCat("read-only mount ", mnt), "mounts");
  } else if (err == EACCES || err == EPERM) {
    ctx.observer->Denied(ctx, op, path, err,
                         absl::StrCat("permission denied for uid ", ctx.creds->fsuid), "identity");
  }
}

}  // namespace usentry::sentry::vfs
