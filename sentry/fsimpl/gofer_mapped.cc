// MappedHostFile: a host file's bytes in a PageStore while it is mapped shared.
#include "sentry/fsimpl/gofer_mapped.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sentry/mm/bounce_buffer.h"

namespace usentry::sentry::fsimpl {

SysResult<std::shared_ptr<MappedHostFile>> MappedHostFile::Load(mm::MemoryFile* mf,
                                                                std::shared_ptr<UniqueFd> fd) {
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return Errno{errno};
  if (static_cast<uint64_t>(st.st_size) > kMaxSize) return Errno{ENODEV};
  auto file = std::make_shared<MappedHostFile>(mf);
  mm::BounceBuffer buf;
  for (uint64_t off = 0;;) {
    const ssize_t n =
        pread(fd->get(), buf.data(), mm::BounceBuffer::kSize, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno{EIO};
    if (n == 0) break;
    iovec v{buf.data(), static_cast<size_t>(n)};
    ASSIGN_OR_RETURN_ERRNO(size_t stored, file->store_.Write(absl::MakeConstSpan(&v, 1), off));
    off += stored;
    if (off > kMaxSize) return Errno{ENODEV};  // grew on the host meanwhile
  }
  // Holes at the end (a file extended with ftruncate) are part of the size too.
  if (static_cast<uint64_t>(st.st_size) > file->store_.size()) {
    RETURN_IF_ERRNO(file->store_.Truncate(static_cast<uint64_t>(st.st_size)));
  }
  file->fd_ = std::move(fd);
  return file;
}

void MappedHostFile::UseFd(std::shared_ptr<UniqueFd> fd, bool writable) {
  if (!fd_ || (writable && !fd_writable_)) {
    fd_ = std::move(fd);
    fd_writable_ = writable;
  }
}

SysResult<size_t> MappedHostFile::Write(int fd, absl::Span<const iovec> src, uint64_t off) {
  size_t done = 0;
  for (const iovec& v : src) {
    const auto* base = static_cast<const uint8_t*>(v.iov_base);
    size_t w = 0;
    while (w < v.iov_len) {
      const ssize_t n = pwrite(fd, base + w, v.iov_len - w, static_cast<off_t>(off + done + w));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      w += static_cast<size_t>(n);
    }
    done += w;
    if (w < v.iov_len) {
      if (done == 0) return Errno{errno != 0 ? errno : EIO};
      break;  // a short write: the store takes what reached the host
    }
  }
  size_t left = done;
  uint64_t pos = off;
  for (const iovec& v : src) {
    if (left == 0) break;
    iovec part{v.iov_base, std::min(left, v.iov_len)};
    ASSIGN_OR_RETURN_ERRNO(size_t n, store_.Write(absl::MakeConstSpan(&part, 1), pos));
    pos += n;
    left -= n;
  }
  return done;
}

SysStatus MappedHostFile::Truncate(int fd, uint64_t size) {
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) return Errno{errno};
  return store_.Truncate(size);
}

SysStatus MappedHostFile::WriteBack() {
  if (!mapped_writable_ || !fd_ || !fd_writable_) return SysOk();
  mm::BounceBuffer buf;
  const uint64_t size = store_.size();
  for (uint64_t off = 0; off < size;) {
    iovec v{buf.data(),
            static_cast<size_t>(std::min<uint64_t>(mm::BounceBuffer::kSize, size - off))};
    ASSIGN_OR_RETURN_ERRNO(size_t n, store_.Read(absl::MakeConstSpan(&v, 1), off));
    if (n == 0) break;
    for (size_t w = 0; w < n;) {
      const ssize_t r = pwrite(fd_->get(), buf.data() + w, n - w, static_cast<off_t>(off + w));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return Errno{EIO};
      w += static_cast<size_t>(r);
    }
    off += n;
  }
  return SysOk();
}

void MappedHostFile::VmaClosed() {
  if (--vmas_ == 0) (void)WriteBack();
}

}  // namespace usentry::sentry::fsimpl
