// BuildSandboxVfs: assembles the sandbox's mount tree (see sandbox_vfs.h).
#include "sentry/fsimpl/sandbox_vfs.h"

#include <fcntl.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/fsimpl/gofer_fs.h"
#include "sentry/fsimpl/overlay.h"
#include "sentry/fsimpl/tmpfs.h"

namespace usentry::sentry::fsimpl {
namespace {

absl::Status ErrnoError(const std::string& what, int err) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(what, " failed: ", std::strerror(err)));
}

// mkdir -p as sandbox root; existing directories are fine.
absl::Status MkdirAll(vfs::Vfs& v, const std::string& path, uint32_t mode) {
  static const Credentials kRoot;
  vfs::ResolveContext ctx{&kRoot, v.root(), v.root(), 0};
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("mount target '", path, "' is not absolute"));
  }
  std::string prefix;
  for (const std::string& comp :
       std::vector<std::string>(absl::StrSplit(path, '/', absl::SkipEmpty()))) {
    absl::StrAppend(&prefix, "/", comp);
    SysStatus st = v.Mkdir(ctx, prefix, mode);
    if (st.ok()) continue;
    if (st.error() != EEXIST) return ErrnoError(absl::StrCat("mkdir(", prefix, ")"), st.error());
    auto p = v.Resolve(ctx, prefix, true);
    if (!p.ok()) return ErrnoError(absl::StrCat("resolve(", prefix, ")"), p.error());
    if (!p->inode()->IsDir()) {
      return ErrnoError(absl::StrCat("mount point ", prefix), ENOTDIR);
    }
  }
  return absl::OkStatus();
}

// Puts `content` at `path` as sandbox root, in a new file of the writable layer that
// replaces whatever the view has there without following or even looking at it: a
// host's /etc/resolv.conf is often a symlink into /run (systemd-resolved), which the
// view does not have, and a lookup in the lower layer is a gofer round trip per file.
absl::Status PlaceFile(vfs::Vfs& v, const std::string& path, const std::string& content) {
  static const Credentials kRoot;
  vfs::ResolveContext ctx{&kRoot, v.root(), v.root(), 0};
  const size_t slash = path.rfind('/');
  auto dir = v.Resolve(ctx, slash == 0 ? "/" : path.substr(0, slash), true);
  if (!dir.ok()) {
    return ErrnoError(absl::StrCat("resolve(", path.substr(0, slash), ")"), dir.error());
  }
  // Held until the open below has found it (the overlay keeps its children weakly). A
  // directory that is not the overlay's (none is mounted over at this point) gets a
  // plain create, which refuses a symlink there (O_NOFOLLOW) rather than follow it.
  std::shared_ptr<vfs::Inode> placed;
  if (auto* overlay_dir = dynamic_cast<OverlayInode*>(dir->inode())) {
    auto made = overlay_dir->Create(path.substr(slash + 1), 0644, 0, 0);
    if (!made.ok()) return ErrnoError(absl::StrCat("create(", path, ")"), made.error());
    placed = std::move(made).value();
  }
  auto f = v.Open(ctx, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (!f.ok()) return ErrnoError(absl::StrCat("create(", path, ")"), f.error());
  iovec iov{const_cast<char*>(content.data()), content.size()};
  auto n = (*f)->Write(nullptr, absl::MakeConstSpan(&iov, 1), -1);
  if (!n.ok()) return ErrnoError(absl::StrCat("write(", path, ")"), n.error());
  if (*n != content.size()) return ErrnoError(absl::StrCat("write(", path, ")"), EIO);
  return absl::OkStatus();
}

// mkdir -p of a directory for the program: if the view lacks it, the sandbox makes it
// and gives it to the program (an ordinary user must be able to work in its workdir and
// home); one that exists (a host directory, a --mount) keeps its owner.
absl::Status MakeAppDir(vfs::Vfs& v, const std::string& path, uint32_t uid, uint32_t gid) {
  static const Credentials kRoot;
  vfs::ResolveContext ctx{&kRoot, v.root(), v.root(), 0};
  if (v.Resolve(ctx, path, true).ok()) return absl::OkStatus();
  if (absl::Status st = MkdirAll(v, path, 0755); !st.ok()) return st;
  if (uid == 0 && gid == 0) return absl::OkStatus();
  auto p = v.Resolve(ctx, path, true);
  if (!p.ok()) return ErrnoError(absl::StrCat("resolve(", path, ")"), p.error());
  vfs::SetAttrRequest req;
  req.mask = vfs::kSetUid | vfs::kSetGid;
  req.uid = uid;
  req.gid = gid;
  SysStatus st = v.SetAttr(ctx, *p, req);
  if (!st.ok()) return ErrnoError(absl::StrCat("chown(", path, ")"), st.error());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<vfs::Vfs>> BuildSandboxVfs(gofer::Client& gofer,
                                                          const VfsConfig& cfg,
                                                          gofer::Client* mounts_gofer) {
  auto budget = std::make_shared<ByteBudget>(cfg.tmpfs_limit_bytes);
  budget->on_exhausted = cfg.on_disk_full;
  auto upper_fs = std::make_shared<TmpfsFilesystem>(budget, cfg.memory_file);
  // The root's lower layer is the sandbox's alone: its metadata may be cached.
  auto lower_fs = std::make_shared<GoferFilesystem>(&gofer, "root", /*exclusive=*/true);
  auto attached = lower_fs->Attach();
  if (!attached.ok()) return ErrnoError("gofer Attach(\"root\")", attached.error());
  std::shared_ptr<vfs::Inode> lower_root = attached->first;
  // The lower root's names, known from here on: the default view's allowlist makes the
  // lookups there misses as often as not (/tmp, /dev and /proc below, then /home,
  // /root...), and one listing answers them all.
  (void)lower_root->ReadDir();
  auto la = lower_root->Stat();
  if (!la.ok()) return ErrnoError("gofer Stat(root)", la.error());
  auto overlay = std::make_shared<OverlayFilesystem>(
      upper_fs, upper_fs->NewRoot(la->mode & 07777, la->uid, la->gid), lower_fs, lower_root);
  auto v = std::make_unique<vfs::Vfs>(overlay, overlay->root(), 0);

  // Fresh /tmp (its own tmpfs, sharing the writable-layer budget), /dev and /proc.
  if (absl::Status st = MkdirAll(*v, "/tmp", 01777); !st.ok()) return st;
  auto tmp_fs = std::make_shared<TmpfsFilesystem>(budget, cfg.memory_file);
  auto m = v->MountAt("/tmp", tmp_fs, tmp_fs->NewRoot(01777, 0, 0), 0);
  if (!m.ok()) return ErrnoError("mount(/tmp)", m.error());
  if (absl::Status st = MkdirAll(*v, "/dev", 0755); !st.ok()) return st;
  if (absl::Status st = MkdirAll(*v, "/proc", 0555); !st.ok()) return st;
  for (const auto& [path, content] : cfg.files) {
    std::string dir = path.substr(0, path.rfind('/'));
    if (!dir.empty()) {
      if (absl::Status st = MkdirAll(*v, dir, 0755); !st.ok()) return st;
    }
    if (absl::Status st = PlaceFile(*v, path, content); !st.ok()) return st;
  }

  for (const MountSpec& spec : cfg.mounts) {
    const OwnerSwap owners{cfg.host_uid, cfg.host_gid, cfg.app_uid, cfg.app_gid};
    auto fs = std::make_shared<GoferFilesystem>(mounts_gofer ? mounts_gofer : &gofer, spec.tree,
                                                /*exclusive=*/false, owners, cfg.memory_file);
    auto root = fs->Attach();
    if (!root.ok())
      return ErrnoError(absl::StrCat("gofer Attach(\"", spec.tree, "\")"), root.error());
    if (!root->first->IsDir()) {
      return ErrnoError(absl::StrCat("--mount ", spec.target, " (source is not a directory)"),
                        ENOTDIR);
    }
    if (absl::Status st = MkdirAll(*v, spec.target, 0755); !st.ok()) return st;
    int flags = (spec.read_only || root->second) ? vfs::kMountReadOnly : 0;
    auto mounted = v->MountAt(spec.target, fs, root->first, flags);
    if (!mounted.ok()) return ErrnoError(absl::StrCat("mount(", spec.target, ")"), mounted.error());
  }
  for (const std::string& dir : {cfg.workdir, cfg.home}) {
    if (dir.empty()) continue;
    if (absl::Status st = MakeAppDir(*v, dir, cfg.app_uid, cfg.app_gid); !st.ok()) return st;
  }
  return v;
}

}  // namespace usentry::sentry::fsimpl
