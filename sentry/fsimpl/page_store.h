// PageStore: the bytes of one sentry-held regular file (tmpfs, memfd) kept in pages of
// the sentry's MemoryFile, so that a MAP_SHARED mapping of the file maps those very
// pages and stays coherent with read/write/truncate, across every process mapping it.
//
// The data is one contiguous MemoryRange (sparse: untouched pages cost nothing).
// Unmapped files reserve little and double their reservation as they grow; the first
// shared mapping reserves at least kMappedReserve so that later growth rarely has to
// move the data. A move while mappings exist leaves those mappings on the old pages:
// they stop seeing later changes (see docs/compatibility.md). Mappings read zeros past
// the end of the file instead of raising SIGBUS.
//
// Space accounting (for tmpfs's byte budget) follows the pages that hold data, like
// Linux tmpfs's blocks: pages written through Write, and the in-file part of every
// writable shared mapping (charged when it is made, since stores through it are not
// seen). A sparse file costs only what was written; st_blocks reports the same.
//
// Not thread-safe: callers hold Kernel::mu (or are single-threaded tests).
#ifndef USENTRY_SENTRY_FSIMPL_PAGE_STORE_H_
#define USENTRY_SENTRY_FSIMPL_PAGE_STORE_H_

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "absl/types/span.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/mm/memory_file.h"

namespace usentry::sentry::fsimpl {

class PageStore {
 public:
  // Offsets reserved by the first shared mapping (no memory until touched).
  static constexpr uint64_t kMappedReserve = 64ull << 20;

  // Called with +bytes before pages start to hold data (an error, e.g. ENOSPC, refuses
  // the write) and with -bytes when they are given back (the result is then ignored).
  using ChargeFn = std::function<SysStatus(int64_t delta)>;

  // `mf` outlives the store. Writes and truncation beyond `max_size` are EFBIG.
  PageStore(mm::MemoryFile* mf, uint64_t max_size, ChargeFn charge = nullptr)
      : mf_(mf), max_size_(max_size), charge_(std::move(charge)) {}
  ~PageStore();
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  uint64_t size() const { return size_; }
  uint64_t max_size() const { return max_size_; }
  // Bytes of pages charged as holding data (a page multiple).
  uint64_t charged_bytes() const { return charged_bytes_; }

  // Reads from `off` up to the end of the file into sentry buffers.
  SysResult<size_t> Read(absl::Span<const iovec> dst, uint64_t off) const;
  // Writes at `off`, growing the file (a gap reads as zeros). EFBIG past max_size,
  // ENOMEM/ENOSPC when the memory file is full.
  SysResult<size_t> Write(absl::Span<const iovec> src, uint64_t off);
  // Sets the size; bytes between the old and new size read as zero afterwards (also
  // what a shared mapping stored past the old end).
  SysStatus Truncate(uint64_t size);

  // The pages holding the data, made to cover at least `len` bytes (for a MAP_SHARED
  // mapping of [0, len)). ENOMEM past max_size or when the memory file is full.
  SysResult<std::shared_ptr<mm::MemoryRange>> PagesCovering(uint64_t len);
  // Charges the pages of [off, off+len) that lie inside the file, for a writable shared
  // mapping about to be made (ENOSPC from the charge function).
  SysStatus ChargeMapping(uint64_t off, uint64_t len);
  // Whether a mapping (or anyone but the store) holds the current pages.
  bool mapped() const { return pages_ && pages_.use_count() > 1; }

 private:
  // Makes the reservation cover `len` bytes, reserving at least `min_reserve`.
  SysStatus Reserve(uint64_t len, uint64_t min_reserve);
  // Zeros [from, to) of the pages (whole pages are given back to the host).
  void Zero(uint64_t from, uint64_t to);
  // Marks the pages of [from, to) as holding data, charging the ones that were not.
  SysStatus Charge(uint64_t from, uint64_t to);
  // Gives back the charge of every page from `from` (page-aligned) on.
  void UnchargeFrom(uint64_t from);

  mm::MemoryFile* mf_;
  uint64_t max_size_;
  ChargeFn charge_;
  uint64_t size_ = 0;
  std::shared_ptr<mm::MemoryRange> pages_;
  std::map<uint64_t, uint64_t> charged_;  // start -> end, page-aligned, disjoint, coalesced
  uint64_t charged_bytes_ = 0;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PAGE_STORE_H_
