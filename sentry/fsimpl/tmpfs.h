// tmpfs: a filesystem held in sentry memory. The writable upper layer of the root
// overlay, /tmp, /dev/shm, and a base for other synthetic trees. Regular files keep
// their bytes in MemoryFile pages (PageStore), so MAP_SHARED mappings of them are
// coherent with read/write/truncate. One byte budget may be shared by several
// instances (the sandbox's writable-layer cap): ENOSPC past it.
#ifndef USENTRY_SENTRY_FSIMPL_TMPFS_H_
#define USENTRY_SENTRY_FSIMPL_TMPFS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sentry/fsimpl/page_store.h"
#include "sentry/mm/memory_file.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry::fsimpl {

// Largest tmpfs file (EFBIG beyond).
inline constexpr uint64_t kTmpfsMaxFileSize = 1ull << 40;

// Bytes of file data (rounded to pages) charged against a cap.
struct ByteBudget {
  explicit ByteBudget(uint64_t limit) : limit(limit) {}
  uint64_t limit;
  uint64_t used = 0;
  // Called (kernel lock held) when a charge is refused: the sandbox's writable layer
  // reports --disk being hit (sentry_main.cc). Empty for other budgets.
  std::function<void(uint64_t limit, uint64_t wanted)> on_exhausted;
  // Charges new_bytes-old_bytes; ENOSPC if the cap would be exceeded.
  SysStatus Resize(uint64_t old_bytes, uint64_t new_bytes);
  // Charges `delta` bytes (negative: gives them back).
  SysStatus Charge(int64_t delta) {
    return delta >= 0 ? Resize(0, static_cast<uint64_t>(delta)) : Resize(-delta, 0);
  }
};

class TmpfsFilesystem : public vfs::Filesystem {
 public:
  // `mf` holds the file data and outlives the filesystem.
  TmpfsFilesystem(std::shared_ptr<ByteBudget> budget, mm::MemoryFile* mf);
  // A new root directory for this instance.
  std::shared_ptr<vfs::Inode> NewRoot(uint32_t mode, uint32_t uid, uint32_t gid);
  SysResult<struct statfs> StatFs() override;

  ByteBudget& budget() { return *budget_; }
  mm::MemoryFile* memory_file() const { return mf_; }
  uint64_t NextIno() { return next_ino_++; }

 private:
  std::shared_ptr<ByteBudget> budget_;
  mm::MemoryFile* mf_;
  uint64_t next_ino_ = 1;
};

class TmpfsInode : public vfs::Inode {
 public:
  TmpfsInode(TmpfsFilesystem* fs, uint32_t mode, uint32_t uid, uint32_t gid);
  ~TmpfsInode() override;

  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override;
  SysStatus SetAttr(const vfs::SetAttrRequest& req) override;
  uint32_t FileType() override { return attr_.mode & S_IFMT; }
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override;

  SysResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
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
  SysResult<int64_t> Size() override { return static_cast<int64_t>(data_.size()); }

  // Regular-file data access for descriptions (and overlay copy-up).
  SysResult<size_t> ReadData(absl::Span<const iovec> dst, uint64_t off);
  SysResult<size_t> WriteData(absl::Span<const iovec> src, uint64_t off);
  SysStatus Truncate(uint64_t size);
  // Pages for a MAP_SHARED mapping of [0, len) (PageStore::PagesCovering).
  SysResult<std::shared_ptr<mm::MemoryRange>> PagesCovering(uint64_t len) {
    return data_.PagesCovering(len);
  }
  // Charges the in-file part of a writable shared mapping (PageStore::ChargeMapping).
  SysStatus ChargeMapping(uint64_t off, uint64_t len) { return data_.ChargeMapping(off, len); }
  void TouchAtime();
  void TouchMtime();  // mtime+ctime
  void TouchCtime();

 private:
  SysResult<std::shared_ptr<TmpfsInode>> AddChild(std::string_view name, uint32_t mode,
                                                  uint32_t uid, uint32_t gid);
  TmpfsFilesystem* fs_;
  vfs::Attr attr_;
  PageStore data_;                                                            // regular files
  std::map<std::string, std::shared_ptr<TmpfsInode>, std::less<>> children_;  // dirs
  std::string target_;                                                        // symlinks
  std::map<std::string, std::string, std::less<>> xattrs_;
};

// Regular-file description for tmpfs.
class TmpfsFileDescription : public vfs::FileDescription {
 public:
  TmpfsFileDescription(vfs::Path path, int flags, std::shared_ptr<TmpfsInode> inode);
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<int64_t> Seek(int64_t offset, int whence) override;
  SysResult<vfs::Attr> Stat() override { return inode_->Stat(); }
  SysStatus Truncate(int64_t size) override;
  SysStatus ConfigureMMap(mm::MMapOpts& opts) override;

 private:
  std::shared_ptr<TmpfsInode> inode_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_TMPFS_H_
