// memfd_create(2) files: anonymous regular files whose bytes live in pages of the
// sentry's MemoryFile, so that a MAP_SHARED mapping maps those very pages and stays
// coherent with read/write/ftruncate (and between processes sharing the file), plus
// file sealing (fcntl F_ADD_SEALS / F_GET_SEALS).
//
// The bytes are a PageStore (page_store.h, shared with tmpfs), which says how pages
// are reserved and what mappings see past the end of the file.
//
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_MEMFD_H_
#define USENTRY_SENTRY_FSIMPL_MEMFD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "sentry/fsimpl/page_store.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/mm/memory_file.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

// The file shared by every description of one memfd.
class MemfdFile {
 public:
  MemfdFile(mm::MemoryFile* mf, std::string name, bool allow_sealing, uint32_t uid, uint32_t gid);
  MemfdFile(const MemfdFile&) = delete;
  MemfdFile& operator=(const MemfdFile&) = delete;

  SysResult<size_t> Read(absl::Span<const iovec> dst, uint64_t off);
  // EPERM under F_SEAL_WRITE/F_SEAL_FUTURE_WRITE, or past the end under F_SEAL_GROW.
  SysResult<size_t> Write(absl::Span<const iovec> src, uint64_t off);
  // EPERM when F_SEAL_SHRINK/F_SEAL_GROW forbid the change.
  SysStatus Truncate(uint64_t size);
  uint64_t size() const { return data_.size(); }
  vfs::Attr Stat() const;

  int seals() const { return seals_; }
  // F_ADD_SEALS: EPERM once F_SEAL_SEAL is set, EBUSY for F_SEAL_WRITE while a shared
  // mapping exists, EINVAL for unknown bits.
  SysStatus AddSeals(int seals);

  // The pages currently holding the data, made to cover at least `len` bytes.
  SysResult<std::shared_ptr<mm::MemoryRange>> PagesCovering(uint64_t len) {
    return data_.PagesCovering(len);
  }
  const std::string& display_name() const { return display_name_; }  // "/memfd:x (deleted)"
  uint64_t ino() const { return ino_; }

 private:
  std::string display_name_;
  uint64_t ino_;
  uint32_t uid_, gid_;
  int seals_;
  PageStore data_;
  timespec mtime_, ctime_, atime_;
};

class MemfdDescription : public vfs::FileDescription {
 public:
  MemfdDescription(std::shared_ptr<MemfdFile> file, int flags);
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<int64_t> Seek(int64_t offset, int whence) override;
  SysResult<vfs::Attr> Stat() override { return file_->Stat(); }
  SysStatus Truncate(int64_t size) override;
  SysStatus ConfigureMMap(mm::MMapOpts& opts) override;
  SysResult<std::shared_ptr<vfs::FileDescription>> Reopen(int flags) override;
  std::string AnonName() const override { return file_->display_name(); }

  MemfdFile& file() { return *file_; }

 private:
  std::shared_ptr<MemfdFile> file_;
};

// memfd_create's name limit: NAME_MAX minus the "memfd:" prefix.
inline constexpr size_t kMemfdNameMax = 249;

// A new memfd description (O_RDWR, as Linux opens them).
std::shared_ptr<vfs::FileDescription> NewMemfd(mm::MemoryFile* mf, std::string name,
                                               bool allow_sealing, uint32_t uid, uint32_t gid);

// fcntl F_ADD_SEALS / F_GET_SEALS: EINVAL for files that are not memfds (as Linux for
// files without sealing support).
SysResult<uint64_t> MemfdSealFcntl(vfs::FileDescription& file, int cmd, uint64_t arg);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_MEMFD_H_
