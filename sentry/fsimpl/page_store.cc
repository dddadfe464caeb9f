// PageStore: file bytes in MemoryFile pages, read and written with pread/pwrite on the
// memory file (not through the sentry's mapping, whose page faults cost more than the
// copy).
#include "sentry/fsimpl/page_store.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint64_t kPage = 4096;
uint64_t PageUp(uint64_t n) { return (n + kPage - 1) & ~(kPage - 1); }
uint64_t PageDown(uint64_t n) { return n & ~(kPage - 1); }

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

PageStore::~PageStore() {
  if (charge_ && charged_bytes_ > 0) (void)charge_(-static_cast<int64_t>(charged_bytes_));
}

SysStatus PageStore::Charge(uint64_t from, uint64_t to) {
  from = PageDown(from);
  to = PageUp(to);
  if (from >= to) return SysOk();
  // The charged intervals overlapping or touching [from, to) merge with it.
  auto it = charged_.upper_bound(from);
  if (it != charged_.begin() && std::prev(it)->second >= from) --it;
  const auto first = it;
  uint64_t covered = 0, lo = from, hi = to;
  for (; it != charged_.end() && it->first <= to; ++it) {
    covered += std::min(it->second, to) - std::max(it->first, from);
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second);
  }
  const uint64_t need = (to - from) - covered;
  if (need > 0 && charge_) RETURN_IF_ERRNO(charge_(static_cast<int64_t>(need)));
  charged_.erase(first, it);
  charged_[lo] = hi;
  charged_bytes_ += need;
  return SysOk();
}

void PageStore::UnchargeFrom(uint64_t from) {
  uint64_t removed = 0;
  auto it = charged_.upper_bound(from);
  if (it != charged_.begin() && std::prev(it)->second > from) {
    auto straddling = std::prev(it);
    removed += straddling->second - from;
    straddling->second = from;
    if (straddling->first == from) charged_.erase(straddling);
  }
  while (it != charged_.end()) {
    removed += it->second - it->first;
    it = charged_.erase(it);
  }
  charged_bytes_ -= removed;
  if (removed > 0 && charge_) (void)charge_(-static_cast<int64_t>(removed));
}

SysStatus PageStore::ChargeMapping(uint64_t off, uint64_t len) {
  if (off >= size_) return SysOk();
  return Charge(off, len > size_ - off ? size_ : off + len);
}

SysStatus PageStore::Reserve(uint64_t len, uint64_t min_reserve) {
  if (pages_ && len <= pages_->len() && min_reserve <= pages_->len()) return SysOk();
  const uint64_t have = pages_ ? pages_->len() : 0;
  uint64_t want = std::max({PageUp(len), min_reserve, PageUp(std::min(2 * have, max_size_))});
  std::shared_ptr<mm::MemoryRange> fresh = mf_->Allocate(want);
  if (!fresh) return Errno{ENOMEM};
  if (pages_) mf_->CopySparse(pages_->offset(), fresh->offset(), std::min(have, PageUp(size_)));
  pages_ = std::move(fresh);
  return SysOk();
}

SysResult<std::shared_ptr<mm::MemoryRange>> PageStore::PagesCovering(uint64_t len) {
  if (len > max_size_) return Errno{ENOMEM};
  // The first mapping takes a large reservation while moving the data is still free of
  // consequences, so that the file can grow under its mappings.
  RETURN_IF_ERRNO(Reserve(len, mapped() ? kPage : std::min(kMappedReserve, PageUp(max_size_))));
  return pages_;
}

SysResult<size_t> PageStore::Read(absl::Span<const iovec> dst, uint64_t off) const {
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
  return done;
}

SysResult<size_t> PageStore::Write(absl::Span<const iovec> src, uint64_t off) {
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(src));
  if (len == 0) return size_t{0};
  if (off > max_size_ || len > max_size_ - off) return Errno{EFBIG};
  const uint64_t end = off + len;
  RETURN_IF_ERRNO(Reserve(end, kPage));
  RETURN_IF_ERRNO(Charge(off, end));
  if (off > size_) RETURN_IF_ERRNO(Truncate(off));  // clears what mappings left past EOF
  for (const iovec& v : src) {
    if (!PwriteAll(mf_->fd(), static_cast<const uint8_t*>(v.iov_base), v.iov_len,
                   pages_->offset() + off)) {
      return Errno{ENOSPC};
    }
    off += v.iov_len;
  }
  size_ = std::max(size_, end);
  return len;
}

void PageStore::Zero(uint64_t from, uint64_t to) {
  to = std::min(to, pages_->len());
  if (from >= to) return;
  const uint64_t whole_from = std::min(PageUp(from), to);
  const uint64_t whole_to = std::max(whole_from, PageDown(to));
  static const std::vector<uint8_t> zeros(kPage);
  if (whole_from > from)
    PwriteAll(mf_->fd(), zeros.data(), whole_from - from, pages_->offset() + from);
  if (whole_to > whole_from) mf_->Decommit(pages_->offset() + whole_from, whole_to - whole_from);
  if (to > whole_to) PwriteAll(mf_->fd(), zeros.data(), to - whole_to, pages_->offset() + whole_to);
}

SysStatus PageStore::Truncate(uint64_t size) {
  if (size > max_size_) return Errno{EFBIG};
  if (size == size_) return SysOk();
  if (size == 0 && !mapped()) {
    // Nobody maps the pages: give the reservation back too.
    pages_.reset();
    size_ = 0;
    UnchargeFrom(0);
    return SysOk();
  }
  RETURN_IF_ERRNO(Reserve(size, kPage));
  // On shrink the bytes past the new end go away; on growth whatever a shared mapping
  // stored past the old end is cleared.
  Zero(std::min(size, size_), PageUp(std::max(size, size_)));
  if (size < size_) UnchargeFrom(PageUp(size));
  size_ = size;
  return SysOk();
}

}  // namespace usentry::sentry::fsimpl
