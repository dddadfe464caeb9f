// memfd files: data in a PageStore (MemoryFile pages), shared mappings of the same
// pages, and seals.
#include "sentry/fsimpl/memfd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint64_t kPage = 4096;
uint64_t PageUp(uint64_t n) { return (n + kPage - 1) & ~(kPage - 1); }

// The largest memfd (EFBIG beyond).
constexpr uint64_t kMaxSize = 64ull << 30;

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif
constexpr int kKnownSeals =
    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE | F_SEAL_EXEC;

// shmem's device number as fstat shows it for memfds here, and their inode numbers.
constexpr uint64_t kMemfdDev = 0x1;
std::atomic<uint64_t> next_ino{1};

}  // namespace

MemfdFile::MemfdFile(mm::MemoryFile* mf, std::string name, bool allow_sealing, uint32_t uid,
                     uint32_t gid)
    : display_name_(absl::StrCat("/memfd:", name, " (deleted)")),
      ino_(next_ino++),
      uid_(uid),
      gid_(gid),
      seals_(allow_sealing ? 0 : F_SEAL_SEAL),
      data_(mf, kMaxSize) {
  mtime_ = ctime_ = atime_ = vfs::NowTimespec();
}

SysResult<size_t> MemfdFile::Read(absl::Span<const iovec> dst, uint64_t off) {
  ASSIGN_OR_RETURN_ERRNO(size_t done, data_.Read(dst, off));
  atime_ = vfs::NowTimespec();
  return done;
}

SysResult<size_t> MemfdFile::Write(absl::Span<const iovec> src, uint64_t off) {
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(src));
  if (seals_ & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) return Errno{EPERM};
  if (len == 0) return size_t{0};
  if (off > kMaxSize || len > kMaxSize - off) return Errno{EFBIG};
  if ((seals_ & F_SEAL_GROW) && off + len > data_.size()) return Errno{EPERM};
  ASSIGN_OR_RETURN_ERRNO(size_t n, data_.Write(src, off));
  mtime_ = ctime_ = vfs::NowTimespec();
  return n;
}

SysStatus MemfdFile::Truncate(uint64_t size) {
  if (size > kMaxSize) return Errno{EFBIG};
  if (size < data_.size() && (seals_ & F_SEAL_SHRINK)) return Errno{EPERM};
  if (size > data_.size() && (seals_ & F_SEAL_GROW)) return Errno{EPERM};
  if (size == data_.size()) return SysOk();
  RETURN_IF_ERRNO(data_.Truncate(size));
  mtime_ = ctime_ = vfs::NowTimespec();
  return SysOk();
}

vfs::Attr MemfdFile::Stat() const {
  vfs::Attr a;
  a.dev = kMemfdDev;
  a.ino = ino_;
  a.mode = S_IFREG | 0777;
  a.nlink = 1;
  a.uid = uid_;
  a.gid = gid_;
  a.size = static_cast<int64_t>(data_.size());
  a.blksize = kPage;
  a.blocks = static_cast<int64_t>(PageUp(data_.size()) / 512);
  a.atime = atime_;
  a.mtime = mtime_;
  a.ctime = ctime_;
  return a;
}

SysStatus MemfdFile::AddSeals(int seals) {
  if (seals & ~kKnownSeals) return Errno{EINVAL};
  if (seals_ & F_SEAL_SEAL) return Errno{EPERM};
  // A shared mapping holds a reference to the pages: F_SEAL_WRITE must wait until no
  // writable mapping exists (read-only shared ones count too, as Linux counts those of
  // files opened for writing).
  if ((seals & F_SEAL_WRITE) && !(seals_ & F_SEAL_WRITE) && data_.mapped()) {
    return Errno{EBUSY};
  }
  seals_ |= seals;
  return SysOk();
}

MemfdDescription::MemfdDescription(std::shared_ptr<MemfdFile> file, int flags)
    : FileDescription(vfs::Path{}, flags), file_(std::move(file)) {}

SysResult<size_t> MemfdDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  uint64_t off = offset < 0 ? offset_ : offset;
  ASSIGN_OR_RETURN_ERRNO(size_t n, file_->Read(dst, off));
  if (offset < 0) offset_ += n;
  return n;
}

SysResult<size_t> MemfdDescription::Write(Task*, absl::Span<const iovec> src, int64_t offset) {
  uint64_t off = offset < 0 ? offset_ : offset;
  if (flags_ & O_APPEND) off = file_->size();
  ASSIGN_OR_RETURN_ERRNO(size_t n, file_->Write(src, off));
  if (offset < 0) offset_ = off + n;
  return n;
}

SysResult<int64_t> MemfdDescription::Seek(int64_t offset, int whence) {
  return SeekWithSize(offset, whence, [this]() -> SysResult<int64_t> {
    return static_cast<int64_t>(file_->size());
  });
}

SysStatus MemfdDescription::Truncate(int64_t size) {
  if (size < 0) return Errno{EINVAL};
  return file_->Truncate(static_cast<uint64_t>(size));
}

SysStatus MemfdDescription::ConfigureMMap(mm::MMapOpts& opts) {
  opts.name = file_->display_name();
  opts.dev = kMemfdDev;
  opts.ino = file_->ino();
  opts.file_ref = file_;
  if ((opts.flags & MAP_TYPE) != MAP_PRIVATE) {
    if (file_->seals() & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) {
      if (opts.prot & PROT_WRITE) return Errno{EPERM};
      opts.max_prot &= ~PROT_WRITE;
    }
    const uint64_t len = PageUp(opts.len);
    if (len < opts.len || opts.file_off > kMaxSize || len > kMaxSize - opts.file_off) {
      return Errno{ENOMEM};
    }
    ASSIGN_OR_RETURN_ERRNO(opts.shared_pages, file_->PagesCovering(opts.file_off + len));
    return SysOk();
  }
  std::shared_ptr<MemfdFile> file = file_;
  opts.fill = [file](uint8_t* dst, uint64_t len, uint64_t off) -> SysResult<uint64_t> {
    iovec v{dst, len};
    ASSIGN_OR_RETURN_ERRNO(size_t n, file->Read(absl::MakeConstSpan(&v, 1), off));
    return static_cast<uint64_t>(n);
  };
  return SysOk();
}

SysResult<std::shared_ptr<vfs::FileDescription>> MemfdDescription::Reopen(int flags) {
  if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) RETURN_IF_ERRNO(file_->Truncate(0));
  return std::shared_ptr<vfs::FileDescription>(std::make_shared<MemfdDescription>(
      file_, flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC)));
}

std::shared_ptr<vfs::FileDescription> NewMemfd(mm::MemoryFile* mf, std::string name,
                                               bool allow_sealing, uint32_t uid, uint32_t gid) {
  auto file = std::make_shared<MemfdFile>(mf, std::move(name), allow_sealing, uid, gid);
  return std::make_shared<MemfdDescription>(std::move(file), O_RDWR);
}

SysResult<uint64_t> MemfdSealFcntl(vfs::FileDescription& file, int cmd, uint64_t arg) {
  auto* m = dynamic_cast<MemfdDescription*>(&file);
  if (m == nullptr) return Errno{EINVAL};
  if (cmd == F_GET_SEALS) return static_cast<uint64_t>(m->file().seals());
  if (!file.writable()) return Errno{EPERM};
  RETURN_IF_ERRNO(m->file().AddSeals(static_cast<int>(arg)));
  return uint64_t{0};
}

}  // namespace usentry::sentry::fsimpl
