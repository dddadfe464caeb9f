// overlay: the sandbox root. A writable upper layer (tmpfs) over a read-only lower layer
// (the gofer tree "root", or any Inode tree in tests), with Linux overlayfs semantics:
// merged lookups and readdir, copy-up (data, mode, owner, times; parents first) before
// any modification of a lower object, whiteouts (0/0 character devices in the upper)
// hiding deleted lower entries, opaque directories ("trusted.overlay.opaque" = "y") after
// a lower directory is removed and recreated.
//
// Inode numbers are stable per object: a lower object keeps its lower st_ino after
// copy-up (recorded in the upper's "trusted.overlay.origin" xattr); upper-only objects
// use the upper st_ino with bit 48 set so the two ranges do not collide (host inodes
// that large are vanishingly rare).
//
// Limitation: renaming a directory that has lower content fails with EXDEV (like
// overlayfs without redirect_dir); `mv` then falls back to copy + delete.
#ifndef USENTRY_SENTRY_FSIMPL_OVERLAY_H_
#define USENTRY_SENTRY_FSIMPL_OVERLAY_H_

#include <map>
#include <memory>
#include <string>

#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry::fsimpl {

class OverlayInode;

class OverlayFilesystem : public vfs::Filesystem {
 public:
  // `upper_root` must be a writable directory (tmpfs); `lower_root` is never modified.
  OverlayFilesystem(std::shared_ptr<vfs::Filesystem> upper_fs,
                    std::shared_ptr<vfs::Inode> upper_root,
                    std::shared_ptr<vfs::Filesystem> lower_fs,
                    std::shared_ptr<vfs::Inode> lower_root);
  std::shared_ptr<OverlayInode> root() const { return root_; }
  SysResult<struct statfs> StatFs() override;

 private:
  std::shared_ptr<vfs::Filesystem> upper_fs_;
  std::shared_ptr<vfs::Filesystem> lower_fs_;
  std::shared_ptr<OverlayInode> root_;
};

class OverlayInode : public vfs::Inode {
 public:
  OverlayInode(OverlayFilesystem* fs, std::shared_ptr<OverlayInode> parent, std::string name,
               std::shared_ptr<vfs::Inode> upper, std::shared_ptr<vfs::Inode> lower, uint64_t ino);

  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override;
  SysStatus SetAttr(const vfs::SetAttrRequest& req) override;
  uint32_t FileType() override { return type_; }
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override;

  SysResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
  SysResult<std::shared_ptr<vfs::Inode>> LookupForOpen(std::string_view name, int flags) override;
  // The lower layer may look ahead (the upper one is in memory).
  SysResult<std::shared_ptr<vfs::Inode>> LookupAhead(std::string_view name,
                                                     const vfs::WalkAhead& ahead) override;
  SysResult<std::shared_ptr<vfs::Inode>> Create(std::string_view name, uint32_t mode, uint32_t uid,
                                                uint32_t gid) override;
  SysResult<std::shared_ptr<vfs::Inode>> Mkdir(std::string_view name, uint32_t mode, uint32_t uid,
                                               uint32_t gid) override;
  SysResult<std::shared_ptr<vfs::Inode>> Symlink(std::string_view name, std::string_view target,
                                                 uint32_t uid, uint32_t gid) override;
  SysResult<std::shared_ptr<vfs::Inode>> Mknod(std::string_view name, uint32_t mode, uint64_t rdev,
                                               uint32_t uid, uint32_t gid) override;
  SysStatus Link(std::string_view name, vfs::Inode& target) override;
  SysStatus Unlink(std::string_view name) override;
  SysStatus Rmdir(std::string_view name) override;
  SysStatus Rename(std::string_view old_name, vfs::Inode& new_dir, std::string_view new_name,
                   uint32_t flags) override;
  SysResult<std::vector<vfs::DirEntry>> ReadDir() override;
  SysResult<std::string> Readlink() override;
  SysResult<std::string> GetXattr(std::string_view name) override;
  SysStatus SetXattr(std::string_view name, std::string_view value) override;
  SysResult<int64_t> Size() override;

  // Copies this object (and its parents) to the upper layer if it is not there yet.
  // copy_data=false skips file contents (the caller truncates to 0 anyway).
  SysStatus CopyUp(bool copy_data = true);
  bool has_upper() const { return upper_ != nullptr; }
  bool has_lower() const { return lower_ != nullptr; }
  const std::shared_ptr<vfs::Inode>& upper() const { return upper_; }
  const std::shared_ptr<vfs::Inode>& lower() const { return lower_; }

 private:
  friend class OverlayFilesystem;
  vfs::Inode& Current() const { return upper_ ? *upper_ : *lower_; }
  // Child object for `name` (cached), or ENOENT.
  // `open_flags` >= 0: the child is about to be opened so (Inode::LookupForOpen).
  // `ahead`: the walk goes on through the child (Inode::LookupAhead).
  SysResult<std::shared_ptr<OverlayInode>> Child(std::string_view name, int open_flags = -1,
                                                 const vfs::WalkAhead* ahead = nullptr);
  // Drops a name from the cache, marking the object unlinked.
  void ForgetChild(std::string_view name);
  // Removes a whiteout at `name` in the upper dir if there is one; true if it did.
  SysResult<bool> RemoveWhiteout(std::string_view name);
  // True if the lower layer has `name` below this directory.
  bool LowerHas(std::string_view name);
  SysStatus AddWhiteout(std::string_view name);
  // Removes the whiteouts inside an (otherwise merged-empty) upper directory.
  static SysStatus PurgeWhiteouts(vfs::Inode& upper_dir);
  SysResult<std::shared_ptr<vfs::Inode>> Wrap(std::string_view name,
                                              std::shared_ptr<vfs::Inode> upper);

  OverlayFilesystem* fs_;
  std::shared_ptr<OverlayInode> parent_;
  std::string name_;
  std::shared_ptr<vfs::Inode> upper_;
  std::shared_ptr<vfs::Inode> lower_;  // for dirs: the merged lower dir (null if opaque)
  uint64_t ino_;
  uint32_t type_;
  bool unlinked_ = false;
  std::map<std::string, std::weak_ptr<OverlayInode>, std::less<>> children_;
};

// True for an upper-layer whiteout (character device 0/0).
bool IsWhiteout(vfs::Inode& inode);
// True for an upper directory marked opaque (lower content hidden).
bool IsOpaque(vfs::Inode& upper_dir);
// st_ino of an overlay object from its layers (see the file comment).
SysResult<uint64_t> OverlayInoOf(vfs::Inode* upper, vfs::Inode* lower);
inline constexpr char kOpaqueXattr[] = "trusted.overlay.opaque";
inline constexpr char kOriginXattr[] = "trusted.overlay.origin";

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_OVERLAY_H_
