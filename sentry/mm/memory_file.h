// MemoryFile: the single sentry-owned memfd that holds every page of app memory.
// The sentry maps it whole (MAP_SHARED|MAP_NORESERVE) and reads/writes app memory
// through that mapping; stubs map ranges of it into app address spaces.
#ifndef USENTRY_SENTRY_MM_MEMORY_FILE_H_
#define USENTRY_SENTRY_MM_MEMORY_FILE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/unique_fd.h"

namespace usentry::sentry::mm {

class MemoryFile;

// A page-aligned range of the memory file, freed (hole punched) when the last
// reference goes away. Shared between VMAs after splits, forks of shared mappings, etc.
class MemoryRange {
 public:
  MemoryRange(MemoryFile* mf, uint64_t offset, uint64_t len)
      : mf_(mf), offset_(offset), len_(len) {}
  ~MemoryRange();
  MemoryRange(const MemoryRange&) = delete;
  MemoryRange& operator=(const MemoryRange&) = delete;
  uint64_t offset() const { return offset_; }
  uint64_t len() const { return len_; }
  uint8_t* data() const;
  MemoryFile* file() const { return mf_; }

 private:
  MemoryFile* mf_;
  uint64_t offset_;
  uint64_t len_;
};

class MemoryFile {
 public:
  // Creates a memfd of `capacity` bytes (sparse) and maps it into the sentry.
  static absl::StatusOr<std::unique_ptr<MemoryFile>> Create(uint64_t capacity);
  ~MemoryFile();

  int fd() const { return fd_.get(); }
  uint8_t* base() const { return base_; }
  uint64_t capacity() const { return capacity_; }

  // Allocates `len` (page multiple) bytes of offsets; nullptr when the file is full or
  // the run has ended (EndRun). The pages read as zero.
  std::shared_ptr<MemoryRange> Allocate(uint64_t len);
  // The run is over (init is exiting, every other process is being killed): freed ranges
  // are no longer given back to the host one by one, since the whole file goes with the
  // sentry a moment later; tearing down a python3's address space punched ~50 holes,
  // ~1.4 ms of its run. So that no stale page can ever be handed out, nothing is
  // allocated from here on either. Irreversible.
  void EndRun() { run_ended_.store(true, std::memory_order_relaxed); }
  // Releases the pages of [offset, offset+len) back to the host (reads as zero after).
  void Decommit(uint64_t offset, uint64_t len);
  // Freed ranges wait here before their pages go back to the host (ReclaimSome): a hole
  // punch costs ~0.9 us per page here (python3's 1 MiB munmap at start-up: ~0.23 ms), and
  // the sentry thread of a task whose app code is running only spins waiting for it
  // (platform::IdleWork), so the punch is better done there than on the path of the
  // munmap or exit that freed the range. A waiting range is given to no one until it
  // has been punched. The wait is bounded: past kMaxPendingFree bytes a range is punched
  // at once. Its pages still count in the file's blocks (LimitMonitor::ResidentBytes):
  // whoever compares them against a limit reclaims everything first.
  static constexpr uint64_t kMaxPendingFree = 32 << 20;
  // Punches up to `max_len` bytes of the oldest waiting range and makes them allocatable;
  // whether there was one.
  bool ReclaimSome(uint64_t max_len);
  // Punches every waiting range.
  void ReclaimAll();
  // Whether freed ranges wait: a hint, read without the lock.
  bool reclaim_pending() const { return pending_bytes_.load(std::memory_order_relaxed) != 0; }
  // How many Decommits ran (hole punches), for tests that a path punches none.
  uint64_t decommits() const { return decommits_.load(std::memory_order_relaxed); }
  // Gives back pages that no mapping reads again (an unmapped VMA's, a freed range's):
  // Decommit until the run ends, nothing after.
  void Release(uint64_t offset, uint64_t len);
  // Copies [src, src+len) to [dst, dst+len), skipping holes so that untouched pages of
  // the source stay unallocated in the copy (fork of a mostly-sparse address space).
  // The destination must read as zero beforehand.
  void CopySparse(uint64_t src, uint64_t dst, uint64_t len);

 private:
  friend class MemoryRange;
  MemoryFile(UniqueFd fd, uint8_t* base, uint64_t capacity);
  void Free(uint64_t offset, uint64_t len);
  // Punches [offset, offset+len), which no one may be handed meanwhile, then makes it
  // allocatable.
  void PunchAndFree(uint64_t offset, uint64_t len) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds punched [offset, offset+len) to free_.
  void AddFree(uint64_t offset, uint64_t len) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies [src, src+len) to [dst, dst+len) of the file; the ranges must not overlap.
  void CopyData(uint64_t src, uint64_t dst, uint64_t len);

  UniqueFd fd_;
  uint8_t* base_;
  uint64_t capacity_;
  std::atomic<bool> run_ended_{false};
  std::atomic<uint64_t> decommits_{0};
  absl::Mutex mu_;
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);  // offset -> len, coalesced
  // Freed, not yet punched (oldest first): offset, len.
  std::deque<std::pair<uint64_t, uint64_t>> pending_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> pending_bytes_{0};  // their total; written under mu_
};

}  // namespace usentry::sentry::mm

#endif  // USENTRY_SENTRY_MM_MEMORY_FILE_H_
