// memfd files: data in MemoryFile pages, read and written with pread/pwrite on the
// memory file (not through the sentry's mapping, whose page faults cost more than the
// copy), shared mappings of the same pages, and seals.
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
uint64_t PageDown(uint64_t n) { return n & ~(kPage - 1); }

// First reservation of memory-file offsets (no memory until written), and the largest
// memfd (EFBIG beyond).
constexpr uint64_t kInitialReserve = 64ull << 20;
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

// pread/pwrite of the whole range, retrying short transfers and EINTR.
bool PreadAll(int fd, uint8_t* dst, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t r = pread(fd, dst, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    dst += r, n -= r, off += r;
  }
  return true;
}
bool PwriteAll(int fd, const uint8_t* src, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t r = pwrite(fd, src, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    src += r, n -= r, off += r;
  }
  return true;
}

}  // namespace

MemfdFile::MemfdFile(mm::MemoryFile* mf, std::string name, bool allow_sealing, uint32_t uid,
                     uint32_t gid)
    : mf_(mf),
      display_name_(absl::StrCat("/memfd:", name, " (deleted)")),
      ino_(next_ino++),
      uid_(uid),
      gid_(gid),
      seals_(allow_sealing ? 0 : F_SEAL_SEAL) {
  mtime_ = ctime_ = atime_ = vfs::NowTimespec();
}

SysStatus MemfdFile::Reserve(uint64_t len) {
  if (pages_ && len <= pages_->len()) return SysOk();
  uint64_t want = std::max({kInitialReserve, PageUp(len), pages_ ? 2 * pages_->len() : 0});
  std::shared_ptr<mm::MemoryRange> fresh = mf_->Allocate(want);
  if (!fresh) return Errno{ENOMEM};
  if (pages_) mf_->CopySparse(pages_->offset(), fresh->offset(), PageUp(size_));
  pages_ = std::move(fresh);
  return SysOk();
}

SysResult<std::shared_ptr<mm::MemoryRange>> MemfdFile::PagesCovering(uint64_t len) {
  if (len > kMaxSize) return Errno{ENOMEM};
  RETURN_IF_ERRNO(Reserve(len));
  return pages_;
}

SysResult<size_t> MemfdFile::Read(absl::Span<const iovec> dst, uint64_t off) {
  size_t done = 0;
  for (const iovec& v : dst) {
    if (off >= size_) break;
    size_t n = std::min<uint64_t>(v.iov_len, size_ - off);
    if (!PreadAll(mf_->fd(), static_cast<uint8_t*>(v.iov_base), n, pages_->offset() + off)) {
      return Errno{EIO};
    }
    done += n;
    off += n;
    if (n < v.iov_len) break;
  }
  atime_ = vfs::NowTimespec();
  return done;
}

SysResult<size_t> MemfdFile::Write(absl::Span<const iovec> src, uint64_t off) {
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(src));
  if (seals_ & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) return Errno{EPERM};
  if (len == 0) return size_t{0};
  if (off > kMaxSize || len > kMaxSize - off) return Errno{EFBIG};
  const uint64_t end = off + len;
  if ((seals_ & F_SEAL_GROW) && end > size_) return Errno{EPERM};
  RETURN_IF_ERRNO(Reserve(end));
  if (off > size_) RETURN_IF_ERRNO(Truncate(off));  // clears what mappings left past EOF
  for (const iovec& v : src) {
    if (!PwriteAll(mf_->fd(), static_cast<const uint8_t*>(v.iov_base), v.iov_len,
                   pages_->offset() + off)) {
      return Errno{ENOSPC};
    }
    off += v.iov_len;
  }
  size_ = std::max(size_, end);
  mtime_ = ctime_ = vfs::NowTimespec();
  return len;
}

SysStatus MemfdFile::Truncate(uint64_t size) {
  if (size > kMaxSize) return Errno{EFBIG};
  if (size < size_ && (seals_ & F_SEAL_SHRINK)) return Errno{EPERM};
  if (size > size_ && (seals_ & F_SEAL_GROW)) return Errno{EPERM};
  if (size == size_) return SysOk();
  RETURN_IF_ERRNO(Reserve(size));
  // Bytes between the two sizes read as zero afterwards: on shrink they go away, on
  // growth whatever a shared mapping stored past the old end is cleared.
  const uint64_t from = std::min(size, size_);
  const uint64_t to = std::min<uint64_t>(PageUp(std::max(size, size_)), pages_->len());
  const uint64_t whole_from = std::min(PageUp(from), to);
  const uint64_t whole_to = std::max(whole_from, PageDown(to));
  static const std::vector<uint8_t> zeros(kPage);
  if (whole_from > from)
    PwriteAll(mf_->fd(), zeros.data(), whole_from - from, pages_->offset() + from);
  if (whole_to > whole_from) mf_->Decommit(pages_->offset() + whole_from, whole_to - whole_from);
  if (to > whole_to) PwriteAll(mf_->fd(), zeros.data(), to - whole_to, pages_->offset() + whole_to);
  size_ = size;
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
  a.size = static_cast<int64_t>(size_);
  a.blksize = kPage;
  a.blocks = static_cast<int64_t>(PageUp(size_) / 512);
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
  if ((seals & F_SEAL_WRITE) && !(seals_ & F_SEAL_WRITE) && pages_ && pages_.use_count() > 1) {
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
