// overlay: lookup, copy-up, attributes and file descriptions. Namespace operations
// (create, unlink, rename, readdir) are in overlay_dir.cc.
#include "sentry/fsimpl/overlay.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <string>

namespace usentry::sentry::fsimpl {

using vfs::Attr;
using vfs::Inode;

namespace {

// Bit 48 rather than 63: inode numbers stay positive for apps that store them signed.
constexpr uint64_t kUpperInoBit = 1ull << 48;

// Wraps the layer's description so that fstat/mmap report overlay identity and the
// description keeps its overlay path (for /proc/self/fd and PathOf).
class OverlayFileDescription : public vfs::FileDescription {
 public:
  OverlayFileDescription(vfs::Path path, int flags, std::shared_ptr<vfs::FileDescription> inner,
                         std::shared_ptr<OverlayInode> inode)
      : FileDescription(std::move(path), flags),
        inner_(std::move(inner)),
        inode_(std::move(inode)) {}

  SysStatus SetStatusFlags(int flags) override {
    RETURN_IF_ERRNO(inner_->SetStatusFlags(flags));
    return FileDescription::SetStatusFlags(flags);
  }
  SysResult<size_t> Read(Task* t, absl::Span<const iovec> dst, int64_t off) override {
    auto r = inner_->Read(t, dst, off);
    offset_ = inner_->offset();
    return r;
  }
  SysResult<size_t> Write(Task* t, absl::Span<const iovec> src, int64_t off) override {
    auto r = inner_->Write(t, src, off);
    offset_ = inner_->offset();
    return r;
  }
  SysResult<int64_t> Seek(int64_t off, int whence) override {
    auto r = inner_->Seek(off, whence);
    offset_ = inner_->offset();
    return r;
  }
  SysResult<Attr> Stat() override { return inode_->Stat(); }
  SysStatus Sync() override { return inner_->Sync(); }
  SysStatus Truncate(int64_t size) override { return inner_->Truncate(size); }
  SysResult<uint64_t> Ioctl(Task& t, uint64_t cmd, uint64_t arg) override {
    return inner_->Ioctl(t, cmd, arg);
  }
  SysStatus ConfigureMMap(mm::MMapOpts& opts) override {
    RETURN_IF_ERRNO(inner_->ConfigureMMap(opts));
    ASSIGN_OR_RETURN_ERRNO(Attr a, inode_->Stat());
    opts.dev = a.dev;
    opts.ino = a.ino;
    return SysOk();
  }
  std::shared_ptr<const UniqueFd> HostFileForMapping() override {
    return inner_->HostFileForMapping();
  }

 private:
  std::shared_ptr<vfs::FileDescription> inner_;
  std::shared_ptr<OverlayInode> inode_;
};

}  // namespace

bool IsOpaque(Inode& upper_dir) {
  auto v = upper_dir.GetXattr(kOpaqueXattr);
  return v.ok() && *v == "y";
}

SysResult<uint64_t> OverlayInoOf(Inode* upper, Inode* lower) {
  if (lower) {
    ASSIGN_OR_RETURN_ERRNO(Attr a, lower->Stat());
    return a.ino;
  }
  auto origin = upper->GetXattr(kOriginXattr);
  if (origin.ok()) return std::stoull(*origin);
  ASSIGN_OR_RETURN_ERRNO(Attr a, upper->Stat());
  return a.ino | kUpperInoBit;
}

namespace {

SysStatus CopyData(Inode& from, Inode& to) {
  ASSIGN_OR_RETURN_ERRNO(auto src, from.Open(vfs::Path{}, O_RDONLY));
  ASSIGN_OR_RETURN_ERRNO(auto dst, to.Open(vfs::Path{}, O_WRONLY));
  std::vector<char> buf(1 << 16);
  for (int64_t off = 0;;) {
    iovec v{buf.data(), buf.size()};
    ASSIGN_OR_RETURN_ERRNO(size_t n, src->Read(nullptr, absl::MakeConstSpan(&v, 1), off));
    if (n == 0) return SysOk();
    iovec w{buf.data(), n};
    ASSIGN_OR_RETURN_ERRNO(size_t m, dst->Write(nullptr, absl::MakeConstSpan(&w, 1), off));
    if (m != n) return Errno{EIO};
    off += static_cast<int64_t>(n);
  }
}

}  // namespace

bool IsWhiteout(Inode& inode) {
  if (inode.FileType() != S_IFCHR) return false;
  auto a = inode.Stat();
  return a.ok() && a->rdev == 0;
}

OverlayFilesystem::OverlayFilesystem(std::shared_ptr<vfs::Filesystem> upper_fs,
                                     std::shared_ptr<Inode> upper_root,
                                     std::shared_ptr<vfs::Filesystem> lower_fs,
                                     std::shared_ptr<Inode> lower_root)
    : vfs::Filesystem("overlay"), upper_fs_(std::move(upper_fs)), lower_fs_(std::move(lower_fs)) {
  auto ino = OverlayInoOf(upper_root.get(), lower_root.get());
  root_ = std::make_shared<OverlayInode>(this, nullptr, "/", std::move(upper_root),
                                         std::move(lower_root), ino.ok() ? *ino : 2);
}

SysResult<struct statfs> OverlayFilesystem::StatFs() {
  ASSIGN_OR_RETURN_ERRNO(struct statfs s, upper_fs_->StatFs());
  s.f_type = 0x794c7630;  // OVERLAYFS_SUPER_MAGIC
  return s;
}

OverlayInode::OverlayInode(OverlayFilesystem* fs, std::shared_ptr<OverlayInode> parent,
                           std::string name, std::shared_ptr<Inode> upper,
                           std::shared_ptr<Inode> lower, uint64_t ino)
    : fs_(fs),
      parent_(std::move(parent)),
      name_(std::move(name)),
      upper_(std::move(upper)),
      lower_(std::move(lower)),
      ino_(ino) {
  type_ = Current().FileType();
}

SysResult<Attr> OverlayInode::Stat() {
  ASSIGN_OR_RETURN_ERRNO(Attr a, Current().Stat());
  a.dev = fs_->dev();
  a.ino = ino_;
  // A merged directory's subdirectory count is unknown without listing both layers;
  // nlink 1 tells find(1)/fts not to use the leaf optimisation (as btrfs/overlayfs do).
  if (type_ == S_IFDIR && upper_ && lower_) a.nlink = 1;
  return a;
}

SysStatus OverlayInode::SetAttr(const vfs::SetAttrRequest& req) {
  bool truncating_to_zero = (req.mask & vfs::kSetSize) && req.size == 0;
  RETURN_IF_ERRNO(CopyUp(!truncating_to_zero));
  return upper_->SetAttr(req);
}

SysResult<int64_t> OverlayInode::Size() { return Current().Size(); }
SysResult<std::string> OverlayInode::Readlink() { return Current().Readlink(); }
SysResult<std::string> OverlayInode::GetXattr(std::string_view name) {
  return Current().GetXattr(name);
}
SysStatus OverlayInode::SetXattr(std::string_view name, std::string_view value) {
  RETURN_IF_ERRNO(CopyUp());
  return upper_->SetXattr(name, value);
}

SysStatus OverlayInode::CopyUp(bool copy_data) {
  if (upper_) return SysOk();
  if (unlinked_ || !parent_) return Errno{ENOENT};
  RETURN_IF_ERRNO(parent_->CopyUp());
  ASSIGN_OR_RETURN_ERRNO(Attr a, lower_->Stat());
  Inode& pu = *parent_->upper_;
  SysResult<std::shared_ptr<Inode>> r = Errno{EIO};
  switch (type_) {
    case S_IFDIR:
      r = pu.Mkdir(name_, a.mode & 07777, a.uid, a.gid);
      break;
    case S_IFREG:
      r = pu.Create(name_, a.mode & 07777, a.uid, a.gid);
      break;
    case S_IFLNK: {
      ASSIGN_OR_RETURN_ERRNO(std::string target, lower_->Readlink());
      r = pu.Symlink(name_, target, a.uid, a.gid);
      break;
    }
    default:
      r = pu.Mknod(name_, a.mode, a.rdev, a.uid, a.gid);
      break;
  }
  if (!r.ok()) return Errno{r.error()};
  std::shared_ptr<Inode> up = std::move(r).value();
  SysStatus st = SysOk();
  if (type_ == S_IFREG && copy_data && a.size > 0) st = CopyData(*lower_, *up);
  if (st.ok()) st = up->SetXattr(kOriginXattr, std::to_string(ino_));
  if (st.ok()) {
    vfs::SetAttrRequest req;
    req.mask = vfs::kSetAtime | vfs::kSetMtime |
               (type_ == S_IFLNK ? 0u : static_cast<uint32_t>(vfs::kSetMode));
    req.mode = a.mode & 07777;
    req.atime = a.atime;
    req.mtime = a.mtime;
    st = up->SetAttr(req);
  }
  if (!st.ok()) {
    // Leave no half-copied object behind in the upper layer.
    (void)(type_ == S_IFDIR ? pu.Rmdir(name_) : pu.Unlink(name_));
    return st;
  }
  upper_ = std::move(up);
  // Directories keep merging the lower; other objects now live in the upper only.
  if (type_ != S_IFDIR) lower_ = nullptr;
  return SysOk();
}

SysResult<std::shared_ptr<vfs::FileDescription>> OverlayInode::Open(const vfs::Path& path,
                                                                    int flags) {
  if (type_ == S_IFDIR) return Inode::Open(path, flags);
  if (type_ != S_IFREG) return Current().Open(path, flags);
  if ((flags & O_ACCMODE) != O_RDONLY) RETURN_IF_ERRNO(CopyUp());
  ASSIGN_OR_RETURN_ERRNO(auto inner, Current().Open(path, flags));
  auto self = std::static_pointer_cast<OverlayInode>(shared_from_this());
  return std::shared_ptr<vfs::FileDescription>(
      std::make_shared<OverlayFileDescription>(path, flags, std::move(inner), std::move(self)));
}

SysResult<std::shared_ptr<Inode>> OverlayInode::Lookup(std::string_view name) {
  ASSIGN_OR_RETURN_ERRNO(auto c, Child(name));
  return std::shared_ptr<Inode>(std::move(c));
}

SysResult<std::shared_ptr<Inode>> OverlayInode::LookupForOpen(std::string_view name, int flags) {
  ASSIGN_OR_RETURN_ERRNO(auto c, Child(name, flags));
  return std::shared_ptr<Inode>(std::move(c));
}

SysResult<std::shared_ptr<Inode>> OverlayInode::LookupAhead(std::string_view name,
                                                            const vfs::WalkAhead& ahead) {
  ASSIGN_OR_RETURN_ERRNO(auto c, Child(name, -1, &ahead));
  return std::shared_ptr<Inode>(std::move(c));
}

SysResult<std::shared_ptr<OverlayInode>> OverlayInode::Child(std::string_view name, int open_flags,
                                                             const vfs::WalkAhead* ahead) {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  auto it = children_.find(name);
  if (it != children_.end()) {
    if (auto c = it->second.lock()) return c;
    children_.erase(it);
  }
  std::shared_ptr<Inode> up, low;
  if (upper_) {
    auto r = upper_->Lookup(name);
    if (r.ok()) {
      if (IsWhiteout(**r)) return Errno{ENOENT};
      up = std::move(r).value();
    } else if (r.error() != ENOENT) {
      return Errno{r.error()};
    }
  }
  if (lower_ && (!up || (up->IsDir() && !IsOpaque(*up)))) {
    // Only a read-only open reaches the lower file as it is (a write copies it up).
    const bool read_open = open_flags >= 0 && vfs::ReadOnlyOpen(open_flags);
    // What the lower layer walks ahead serves only the steps that reach it: each later
    // step asks the upper layer first.
    auto r = !up && read_open ? lower_->LookupForOpen(name, open_flags)
             : ahead          ? lower_->LookupAhead(name, *ahead)
                              : lower_->Lookup(name);
    if (r.ok()) {
      if (!up || (*r)->IsDir()) low = std::move(r).value();
    } else if (r.error() != ENOENT) {
      return Errno{r.error()};
    }
  }
  if (!up && !low) return Errno{ENOENT};
  ASSIGN_OR_RETURN_ERRNO(uint64_t ino, OverlayInoOf(up.get(), low.get()));
  auto self = std::static_pointer_cast<OverlayInode>(shared_from_this());
  auto c = std::make_shared<OverlayInode>(fs_, self, std::string(name), up, low, ino);
  children_[std::string(name)] = c;
  return c;
}

SysResult<std::shared_ptr<Inode>> OverlayInode::Wrap(std::string_view name,
                                                     std::shared_ptr<Inode> up) {
  ASSIGN_OR_RETURN_ERRNO(uint64_t ino, OverlayInoOf(up.get(), nullptr));
  auto self = std::static_pointer_cast<OverlayInode>(shared_from_this());
  auto c =
      std::make_shared<OverlayInode>(fs_, self, std::string(name), std::move(up), nullptr, ino);
  children_[std::string(name)] = c;
  return std::shared_ptr<Inode>(std::move(c));
}

void OverlayInode::ForgetChild(std::string_view name) {
  auto it = children_.find(name);
  if (it == children_.end()) return;
  if (auto c = it->second.lock()) c->unlinked_ = true;
  children_.erase(it);
}

}  // namespace usentry::sentry::fsimpl
