// overlay namespace operations: create/mkdir/symlink/mknod/link over whiteouts, unlink
// and rmdir leaving whiteouts, rename with copy-up, merged readdir.
#include <dirent.h>
#include <linux/fs.h>

#include <map>

#include "sentry/fsimpl/overlay.h"

namespace usentry::sentry::fsimpl {

using vfs::DirEntry;
using vfs::Inode;

bool OverlayInode::LowerHas(std::string_view name) { return lower_ && lower_->Lookup(name).ok(); }

SysResult<bool> OverlayInode::RemoveWhiteout(std::string_view name) {
  if (!upper_) return false;
  auto r = upper_->Lookup(name);
  if (!r.ok() || !IsWhiteout(**r)) return false;
  RETURN_IF_ERRNO(upper_->Unlink(name));
  return true;
}

SysStatus OverlayInode::AddWhiteout(std::string_view name) {
  auto r = upper_->Mknod(name, S_IFCHR, 0, 0, 0);
  if (!r.ok()) return Errno{r.error()};
  return SysOk();
}

SysStatus OverlayInode::PurgeWhiteouts(Inode& upper_dir) {
  ASSIGN_OR_RETURN_ERRNO(auto entries, upper_dir.ReadDir());
  for (const DirEntry& e : entries) {
    if (e.type != DT_CHR) continue;
    auto c = upper_dir.Lookup(e.name);
    if (c.ok() && IsWhiteout(**c)) RETURN_IF_ERRNO(upper_dir.Unlink(e.name));
  }
  return SysOk();
}

SysResult<std::shared_ptr<Inode>> OverlayInode::Create(std::string_view name, uint32_t mode,
                                                       uint32_t uid, uint32_t gid) {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  RETURN_IF_ERRNO(CopyUp());
  RETURN_IF_ERRNO(RemoveWhiteout(name));
  ASSIGN_OR_RETURN_ERRNO(auto up, upper_->Create(name, mode, uid, gid));
  return Wrap(name, std::move(up));
}

SysResult<std::shared_ptr<Inode>> OverlayInode::Mkdir(std::string_view name, uint32_t mode,
                                                      uint32_t uid, uint32_t gid) {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  RETURN_IF_ERRNO(CopyUp());
  ASSIGN_OR_RETURN_ERRNO(bool replaced, RemoveWhiteout(name));
  ASSIGN_OR_RETURN_ERRNO(auto up, upper_->Mkdir(name, mode, uid, gid));
  // A directory recreated where a lower one was deleted must not show its old content.
  if (replaced || LowerHas(name)) RETURN_IF_ERRNO(up->SetXattr(kOpaqueXattr, "y"));
  return Wrap(name, std::move(up));
}

SysResult<std::shared_ptr<Inode>> OverlayInode::Symlink(std::string_view name,
                                                        std::string_view target, uint32_t uid,
                                                        uint32_t gid) {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  RETURN_IF_ERRNO(CopyUp());
  RETURN_IF_ERRNO(RemoveWhiteout(name));
  ASSIGN_OR_RETURN_ERRNO(auto up, upper_->Symlink(name, target, uid, gid));
  return Wrap(name, std::move(up));
}

SysResult<std::shared_ptr<Inode>> OverlayInode::Mknod(std::string_view name, uint32_t mode,
                                                      uint64_t rdev, uint32_t uid, uint32_t gid) {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  // A 0/0 character device would read back as a whiteout.
  if ((mode & S_IFMT) == S_IFCHR && rdev == 0) return Errno{EPERM};
  RETURN_IF_ERRNO(CopyUp());
  RETURN_IF_ERRNO(RemoveWhiteout(name));
  ASSIGN_OR_RETURN_ERRNO(auto up, upper_->Mknod(name, mode, rdev, uid, gid));
  return Wrap(name, std::move(up));
}

SysStatus OverlayInode::Link(std::string_view name, Inode& target) {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  auto* t = dynamic_cast<OverlayInode*>(&target);
  if (!t || t->fs_ != fs_) return Errno{EXDEV};
  RETURN_IF_ERRNO(t->CopyUp());
  RETURN_IF_ERRNO(CopyUp());
  RETURN_IF_ERRNO(RemoveWhiteout(name));
  RETURN_IF_ERRNO(upper_->Link(name, *t->upper_));
  auto w = Wrap(name, t->upper_);
  if (!w.ok()) return Errno{w.error()};
  return SysOk();
}

SysStatus OverlayInode::Unlink(std::string_view name) {
  ASSIGN_OR_RETURN_ERRNO(auto child, Child(name));
  if (child->type_ == S_IFDIR) return Errno{EISDIR};
  bool whiteout = LowerHas(name);
  RETURN_IF_ERRNO(CopyUp());
  if (child->upper_) RETURN_IF_ERRNO(upper_->Unlink(name));
  if (whiteout) RETURN_IF_ERRNO(AddWhiteout(name));
  ForgetChild(name);
  return SysOk();
}

SysStatus OverlayInode::Rmdir(std::string_view name) {
  ASSIGN_OR_RETURN_ERRNO(auto child, Child(name));
  if (child->type_ != S_IFDIR) return Errno{ENOTDIR};
  ASSIGN_OR_RETURN_ERRNO(auto entries, child->ReadDir());
  if (!entries.empty()) return Errno{ENOTEMPTY};
  bool whiteout = LowerHas(name);
  RETURN_IF_ERRNO(CopyUp());
  if (child->upper_) {
    RETURN_IF_ERRNO(PurgeWhiteouts(*child->upper_));
    RETURN_IF_ERRNO(upper_->Rmdir(name));
  }
  if (whiteout) RETURN_IF_ERRNO(AddWhiteout(name));
  ForgetChild(name);
  return SysOk();
}

SysStatus OverlayInode::Rename(std::string_view old_name, Inode& new_dir_inode,
                               std::string_view new_name, uint32_t flags) {
  auto* nd = dynamic_cast<OverlayInode*>(&new_dir_inode);
  if (!nd || nd->fs_ != fs_) return Errno{EXDEV};
  ASSIGN_OR_RETURN_ERRNO(auto src, Child(old_name));
  auto dst_r = nd->Child(new_name);
  if (!dst_r.ok() && dst_r.error() != ENOENT) return Errno{dst_r.error()};
  std::shared_ptr<OverlayInode> dst = dst_r.ok() ? dst_r.value() : nullptr;
  if (dst == src) return SysOk();
  bool exchange = flags & RENAME_EXCHANGE;
  if (exchange && !dst) return Errno{ENOENT};
  if ((flags & RENAME_NOREPLACE) && dst) return Errno{EEXIST};
  // Directories with lower content would need redirects: refuse like overlayfs does.
  if (src->type_ == S_IFDIR && src->lower_) return Errno{EXDEV};
  if (exchange && dst->type_ == S_IFDIR && dst->lower_) return Errno{EXDEV};
  if (dst && !exchange && dst->type_ == S_IFDIR) {
    ASSIGN_OR_RETURN_ERRNO(auto entries, dst->ReadDir());
    if (!entries.empty()) return Errno{ENOTEMPTY};
  }
  RETURN_IF_ERRNO(CopyUp());
  RETURN_IF_ERRNO(nd->CopyUp());
  RETURN_IF_ERRNO(src->CopyUp());
  if (exchange) RETURN_IF_ERRNO(dst->CopyUp());
  bool src_lower = LowerHas(old_name);
  bool dst_lower = nd->LowerHas(new_name);
  if (!exchange) {
    if (dst && dst->upper_ && dst->type_ == S_IFDIR) RETURN_IF_ERRNO(PurgeWhiteouts(*dst->upper_));
    if (!dst) RETURN_IF_ERRNO(nd->RemoveWhiteout(new_name));
    if (src->type_ == S_IFDIR && dst_lower)
      RETURN_IF_ERRNO(src->upper_->SetXattr(kOpaqueXattr, "y"));
    RETURN_IF_ERRNO(upper_->Rename(old_name, *nd->upper_, new_name, 0));
    if (src_lower) RETURN_IF_ERRNO(AddWhiteout(old_name));
    nd->ForgetChild(new_name);
    children_.erase(std::string(old_name));
    src->parent_ = std::static_pointer_cast<OverlayInode>(nd->shared_from_this());
    src->name_ = std::string(new_name);
    nd->children_[std::string(new_name)] = src;
    return SysOk();
  }
  if (src->type_ == S_IFDIR && dst_lower) RETURN_IF_ERRNO(src->upper_->SetXattr(kOpaqueXattr, "y"));
  if (dst->type_ == S_IFDIR && src_lower) RETURN_IF_ERRNO(dst->upper_->SetXattr(kOpaqueXattr, "y"));
  RETURN_IF_ERRNO(upper_->Rename(old_name, *nd->upper_, new_name, RENAME_EXCHANGE));
  children_.erase(std::string(old_name));
  nd->children_.erase(std::string(new_name));
  auto self = std::static_pointer_cast<OverlayInode>(shared_from_this());
  auto ndp = std::static_pointer_cast<OverlayInode>(nd->shared_from_this());
  std::swap(src->name_, dst->name_);
  src->parent_ = ndp;
  dst->parent_ = self;
  nd->children_[src->name_] = src;
  children_[dst->name_] = dst;
  return SysOk();
}

SysResult<std::vector<DirEntry>> OverlayInode::ReadDir() {
  if (type_ != S_IFDIR) return Errno{ENOTDIR};
  // A directory only the lower layer has (most of a read-only view) lists as it is:
  // merging by name cost ~0.3 us an entry (~70 us for /usr/lib/python3.11).
  if (!upper_) {
    if (!lower_) return std::vector<DirEntry>{};
    return lower_->ReadDir();
  }
  std::map<std::string, DirEntry> merged;
  if (lower_) {
    ASSIGN_OR_RETURN_ERRNO(auto entries, lower_->ReadDir());
    for (auto& e : entries) merged[e.name] = std::move(e);
  }
  if (upper_) {
    ASSIGN_OR_RETURN_ERRNO(auto entries, upper_->ReadDir());
    for (auto& e : entries) {
      auto child = upper_->Lookup(e.name);
      if (!child.ok()) continue;  // raced away; cannot happen under the kernel lock
      if (e.type == DT_CHR && IsWhiteout(**child)) {
        merged.erase(e.name);
        continue;
      }
      auto it = merged.find(e.name);
      bool merged_dir =
          it != merged.end() && e.type == DT_DIR && it->second.type == DT_DIR && !IsOpaque(**child);
      if (!merged_dir) {
        ASSIGN_OR_RETURN_ERRNO(e.ino, OverlayInoOf(child->get(), nullptr));
        merged[e.name] = std::move(e);
      }
    }
  }
  std::vector<DirEntry> out;
  out.reserve(merged.size());
  for (auto& [name, e] : merged) out.push_back(std::move(e));
  return out;
}

}  // namespace usentry::sentry::fsimpl
