// tmpfs regular-file data and its file description.
//
// Data is a PageStore per file (MemoryFile pages, shared with MAP_SHARED mappings),
// charged against the shared ByteBudget for the pages that hold data (see
// page_store.h): sparse files cost what was written, as on Linux tmpfs.
#include <sys/mman.h>

#include <cstring>

#include "sentry/fsimpl/tmpfs.h"

namespace usentry::sentry::fsimpl {
namespace {
uint64_t PageRound(uint64_t n) { return (n + 4095) & ~4095ull; }
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
  return data_.Read(dst, off);
}

SysResult<size_t> TmpfsInode::WriteData(absl::Span<const iovec> src, uint64_t off) {
  ASSIGN_OR_RETURN_ERRNO(size_t n, data_.Write(src, off));
  if (n > 0) TouchMtime();
  return n;
}

SysStatus TmpfsInode::Truncate(uint64_t size) {
  RETURN_IF_ERRNO(data_.Truncate(size));
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

// MAP_SHARED maps the file's own pages (coherent with read/write and between
// processes); MAP_PRIVATE gets a copy of the bytes.
SysStatus TmpfsFileDescription::ConfigureMMap(mm::MMapOpts& opts) {
  if (!readable()) return Errno{EACCES};
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, inode_->Stat());
  opts.dev = a.dev;
  opts.ino = a.ino;
  opts.name = vfs::AbsolutePathOf(path());
  opts.file_ref = inode_;
  if ((opts.flags & MAP_TYPE) != MAP_PRIVATE) {
    const uint64_t len = PageRound(opts.len);
    if (len < opts.len || opts.file_off > kTmpfsMaxFileSize ||
        len > kTmpfsMaxFileSize - opts.file_off) {
      return Errno{ENOMEM};
    }
    if (!writable()) {
      if (opts.prot & PROT_WRITE) return Errno{EACCES};
      opts.max_prot = PROT_READ | PROT_EXEC;
    } else {
      // Stores through the mapping are not seen: charge its part of the file now. A
      // read-only mapping that does not fit (a huge sparse file) is made without the
      // right to become writable.
      opts.max_prot = PROT_READ | PROT_WRITE | PROT_EXEC;
      if (!inode_->ChargeMapping(opts.file_off, len).ok()) {
        if (opts.prot & PROT_WRITE) return Errno{ENOMEM};
        opts.max_prot &= ~PROT_WRITE;
      }
    }
    ASSIGN_OR_RETURN_ERRNO(opts.shared_pages, inode_->PagesCovering(opts.file_off + len));
    return SysOk();
  }
  opts.max_prot = PROT_READ | PROT_WRITE | PROT_EXEC;
  std::shared_ptr<TmpfsInode> inode = inode_;
  opts.fill = [inode](uint8_t* dst, uint64_t len, uint64_t file_off) -> SysResult<uint64_t> {
    iovec v{dst, len};
    ASSIGN_OR_RETURN_ERRNO(size_t n, inode->ReadData(absl::MakeConstSpan(&v, 1), file_off));
    return static_cast<uint64_t>(n);
  };
  opts.fill_is_whole_file = true;
  return SysOk();
}

}  // namespace usentry::sentry::fsimpl
