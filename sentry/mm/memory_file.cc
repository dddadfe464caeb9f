// MemoryFile implementation: a first-fit allocator of offsets over one sparse memfd.
#include "sentry/mm/memory_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sentry/mm/guest_addr.h"

namespace usentry::sentry::mm {

MemoryRange::~MemoryRange() { mf_->Free(offset_, len_); }

uint8_t* MemoryRange::data() const { return mf_->base() + offset_; }

absl::StatusOr<std::unique_ptr<MemoryFile>> MemoryFile::Create(uint64_t capacity) {
  UniqueFd fd(memfd_create("usentry-memory", MFD_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("memfd_create(usentry-memory)");
  if (ftruncate(fd.get(), static_cast<off_t>(capacity)) != 0) {
    return ErrnoStatus(absl::StrCat("ftruncate(memfd, ", capacity, ")"));
  }
  // NORESERVE: the file is sparse; pages exist only once the app touches them. Low in the
  // address space (a hint; the kernel goes elsewhere if it is taken): left to the
  // kernel, this TiB lands right under the mmap base, and without ASLR (setarch -R, gdb,
  // randomize_va_space=0) that covers the high addresses the platforms' stub code and
  // the systrap zygote page must have.
  constexpr uintptr_t kPlacementHint = 0x100000000000;
  void* base = mmap(reinterpret_cast<void*>(kPlacementHint), capacity, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_NORESERVE, fd.get(), 0);
  if (base == MAP_FAILED) return ErrnoStatus(absl::StrCat("mmap(memfd, ", capacity, ")"));
  return std::unique_ptr<MemoryFile>(
      new MemoryFile(std::move(fd), static_cast<uint8_t*>(base), capacity));
}

MemoryFile::MemoryFile(UniqueFd fd, uint8_t* base, uint64_t capacity)
    : fd_(std::move(fd)), base_(base), capacity_(capacity) {
  // Offset 0 is never handed out so that a zero offset can mean "none" in debugging.
  free_[kPageSize] = capacity - kPageSize;
}

MemoryFile::~MemoryFile() { munmap(base_, capacity_); }

std::shared_ptr<MemoryRange> MemoryFile::Allocate(uint64_t len) {
  len = (len + kPageSize - 1) & ~(kPageSize - 1);
  if (len == 0 || run_ended_.load(std::memory_order_relaxed)) return nullptr;
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      absl::MutexLock l(&mu_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second < len) continue;
        uint64_t off = it->first;
        uint64_t rest = it->second - len;
        free_.erase(it);
        if (rest > 0) free_[off + len] = rest;
        return std::make_shared<MemoryRange>(this, off, len);
      }
      if (pending_.empty()) return nullptr;
    }
    ReclaimAll();  // the offsets that wait may be what fits
  }
  return nullptr;
}

void MemoryFile::Decommit(uint64_t offset, uint64_t len) {
  if (len == 0) return;
  decommits_.fetch_add(1, std::memory_order_relaxed);
  fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
            static_cast<off_t>(len));
}

void MemoryFile::Release(uint64_t offset, uint64_t len) {
  if (!run_ended_.load(std::memory_order_relaxed)) Decommit(offset, len);
}

void MemoryFile::Free(uint64_t offset, uint64_t len) {
  if (run_ended_.load(std::memory_order_relaxed)) return;  // never reused: see EndRun
  {
    absl::MutexLock l(&mu_);
    const uint64_t pending = pending_bytes_.load(std::memory_order_relaxed);
    if (pending + len <= kMaxPendingFree) {
      pending_.emplace_back(offset, len);
      pending_bytes_.store(pending + len, std::memory_order_relaxed);
      return;
    }
  }
  PunchAndFree(offset, len);
}

bool MemoryFile::ReclaimSome(uint64_t max_len) {
  uint64_t offset;
  uint64_t len;
  {
    absl::MutexLock l(&mu_);
    // After the run, the whole file goes with the sentry (EndRun).
    if (pending_.empty() || run_ended_.load(std::memory_order_relaxed)) return false;
    auto& front = pending_.front();
    offset = front.first;
    len = std::min(front.second, std::max<uint64_t>(max_len & ~(kPageSize - 1), kPageSize));
    if (len == front.second) {
      pending_.pop_front();
    } else {
      front.first += len;
      front.second -= len;
    }
    // Taken out of the queue but not yet in free_: no one can be handed these offsets
    // while the punch runs without the lock.
    pending_bytes_.fetch_sub(len, std::memory_order_relaxed);
  }
  PunchAndFree(offset, len);
  return true;
}

void MemoryFile::ReclaimAll() {
  while (reclaim_pending() && ReclaimSome(capacity_)) {
  }
}

void MemoryFile::PunchAndFree(uint64_t offset, uint64_t len) {
  Decommit(offset, len);
  absl::MutexLock l(&mu_);
  AddFree(offset, len);
}

void MemoryFile::AddFree(uint64_t offset, uint64_t len) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += len;
      return;
    }
  }
  free_[offset] = len;
}

}  // namespace usentry::sentry::mm

namespace usentry::sentry::mm {

void MemoryFile::CopyData(uint64_t src, uint64_t dst, uint64_t len) {
  // In the kernel, page cache to page cache: the pages are never mapped into the
  // sentry. A memcpy through base_ takes two page faults per page (read the source,
  // allocate the destination) and the later hole punch of each a TLB shootdown; on a
  // virtualized host that made a fork of a ~40-VMA process take ~25 ms instead of ~2.
  off64_t in = static_cast<off64_t>(src);
  off64_t out = static_cast<off64_t>(dst);
  uint64_t left = len;
  while (left > 0) {
    const ssize_t n = copy_file_range(fd_.get(), &in, fd_.get(), &out, left, 0);
    if (n <= 0) break;  // e.g. ENOSYS/EXDEV on old kernels: copy the rest by hand
    left -= static_cast<uint64_t>(n);
  }
  const uint64_t done = len - left;
  if (left > 0) memcpy(base_ + dst + done, base_ + src + done, left);
}

void MemoryFile::CopySparse(uint64_t src, uint64_t dst, uint64_t len) {
  uint64_t pos = src;
  const uint64_t end = src + len;
  while (pos < end) {
    off_t data = lseek(fd_.get(), static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0 || static_cast<uint64_t>(data) >= end) return;  // ENXIO: no more data
    off_t hole = lseek(fd_.get(), data, SEEK_HOLE);
    uint64_t stop = hole < 0 ? end : std::min<uint64_t>(static_cast<uint64_t>(hole), end);
    CopyData(static_cast<uint64_t>(data), dst + (data - src), stop - data);
    pos = stop;
  }
}

}  // namespace usentry::sentry::mm
