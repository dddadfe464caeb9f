// tmpfs regular-file data and its file description.
//
// Data is one contiguous std::vector per file, charged (rounded up to pages) against the
// shared ByteBudget: a sparse write far past EOF costs real memory up to the cap.
#include <sys/mman.h>

#include <cstring>

#include "sentry/fsimpl/tmpfs.h"

namespace usentry::sentry::fsimpl {
namespace {
uint64_t PageRound(uint64_t n) { return (n + 4095) & ~4095ull; }
// Largest file tmpfs accepts (well below what a vector can hold; EFBIG beyond).
constexpr uint64_t kMaxFileSize = 1ull << 40;
}  // namespace

SysResult<std::shared_ptr<vfs::FileDescription>> TmpfsInode::Open(const vfs::Path& path,
                                                                  int flags) {
  if (FileType() == S_IFREG) {
    auto self = std::static_pointer_cast<TmpfsInode>(shared_from_this());
    return std::shared_ptr<vfs::FileDescription>(
        std::make_shared<TmpfsFileDescription>(path, flags, std::move(self)));
  }
  return vfs::Inode::Open(path, flags);
}

SysResult<size_t> TmpfsInode::ReadData(absl::Span<const iovec> dst, uint64_t off) {
  size_t done = 0;
  for (const iovec& v : dst) {
    if (off >= data_.size()) break;
    size_t n = std::min<uint64_t>(v.iov_len, data_.size() - off);
    std::memcpy(v.iov_base, data_.data() + off, n);
    done += n;
    off += n;
    if (n < v.iov_len) break;
  }
  return done;
}

SysResult<size_t> TmpfsInode::WriteData(absl::Span<const iovec> src, uint64_t off) {
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(src));
  if (len == 0) return size_t{0};
  if (off > kMaxFileSize || len > kMaxFileSize - off) return Errno{EFBIG};
  uint64_t end = off + len;
  if (end > data_.size()) {
    RETURN_IF_ERRNO(fs_->budget().Resize(PageRound(data_.size()), PageRound(end)));
    data_.resize(end);
  }
  for (const iovec& v : src) {
    std::memcpy(data_.data() + off, v.iov_base, v.iov_len);
    off += v.iov_len;
  }
  TouchMtime();
  return len;
}

SysStatus TmpfsInode::Truncate(uint64_t size) {
  if (size > kMaxFileSize) return Errno{EFBIG};
  RETURN_IF_ERRNO(fs_->budget().Resize(PageRound(data_.size()), PageRound(size)));
  data_.resize(size);
  if (size < data_.capacity() / 2) data_.shrink_to_fit();
  TouchMtime();
  return SysOk();
}

TmpfsFileDescription::TmpfsFileDescription(vfs::Path path, int flags,
                                           std::shared_ptr<TmpfsInode> inode)
    : FileDescription(std::move(path), flags), inode_(std::move(inode)) {}

SysResult<size_t> TmpfsFileDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  uint64_t off = offset < 0 ? offset_ : offset;
  ASSIGN_OR_RETURN_ERRNO(size_t n, inode_->ReadData(dst, off));
  if (offset < 0) offset_ += n;
  return n;
}

SysResult<size_t> TmpfsFileDescription::Write(Task*, absl::Span<const iovec> src, int64_t offset) {
  uint64_t off = offset < 0 ? offset_ : offset;
  // O_APPEND writes go to the end, even for pwrite (Linux behaviour).
  if (flags_ & O_APPEND) off = inode_->Size().value();
  ASSIGN_OR_RETURN_ERRNO(size_t n, inode_->WriteData(src, off));
  if (offset < 0) offset_ = off + n;
  return n;
}

SysResult<int64_t> TmpfsFileDescription::Seek(int64_t offset, int whence) {
  return SeekWithSize(offset, whence, [this] { return inode_->Size(); });
}

SysStatus TmpfsFileDescription::Truncate(int64_t size) {
  if (size < 0) return Errno{EINVAL};
  return inode_->Truncate(size);
}

SysStatus TmpfsFileDescription::ConfigureMMap(mm::MMapOpts& opts) {
  std::shared_ptr<TmpfsInode> inode = inode_;
  mm::FileFiller fill = [inode](uint8_t* dst, uint64_t len,
                                uint64_t file_off) -> SysResult<uint64_t> {
    iovec v{dst, len};
    SysResult<size_t> r = inode->ReadData(absl::MakeConstSpan(&v, 1), file_off);
    if (!r.ok()) return Errno{r.error()};
    return static_cast<uint64_t>(*r);
  };
  return vfs::ConfigureCopyMMap(*this, opts, std::move(fill), inode_);
}

}  // namespace usentry::sentry::fsimpl
