// ShmSegment: one System V shared memory segment: its permissions, size and times, and
// its pages, which are pages of the sentry's MemoryFile like a memfd's, so every
// attachment (in any process) maps the very same memory.
//
// A segment is a MappingObserver of the VMAs that attach it: shm_nattch is the number
// of those VMAs, kept by mm (mapping_observer.h), so fork, exec, exit, munmap and
// mremap count as on Linux without the shm code being told. A segment marked for
// destruction (IPC_RMID) leaves its registry when the count reaches zero.
//
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_KERNEL_SHM_SEGMENT_H_
#define USENTRY_SENTRY_KERNEL_SHM_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "sentry/kernel/ipc_perm.h"
#include "sentry/mm/guest_addr.h"
#include "sentry/mm/mapping_observer.h"
#include "sentry/mm/memory_file.h"

namespace usentry::sentry {

class ShmRegistry;

// What IPC_STAT, SHM_STAT and /proc/sysvipc/shm report about a segment.
struct ShmStatus {
  int32_t id = 0;
  IpcPerm perm;
  uint64_t size = 0;
  int64_t atime = 0, dtime = 0, ctime = 0;  // seconds since the epoch; 0 = never
  int32_t cpid = 0, lpid = 0;
  uint64_t nattch = 0;
  // The segment's pages, for callers that report resident memory.
  const mm::MemoryRange* pages = nullptr;
};

class ShmSegment final : public mm::MappingObserver {
 public:
  ShmSegment(ShmRegistry* registry, int32_t id, IpcPerm perm, uint64_t size,
             std::shared_ptr<mm::MemoryRange> pages, int32_t cpid, int64_t ctime);
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment() = default;

  int32_t id() const { return id_; }
  // The key it was created with (IPC_RMID clears perm().key): its mappings are named
  // "/SYSV<key in hex> (deleted)" in /proc/PID/maps, as Linux names its file.
  int32_t creation_key() const { return creation_key_; }
  uint64_t size() const { return size_; }
  uint64_t pages_count() const { return pages_->len() / mm::kPageSize; }
  const std::shared_ptr<mm::MemoryRange>& pages() const { return pages_; }
  IpcPerm& perm() { return perm_; }
  const IpcPerm& perm() const { return perm_; }
  uint64_t nattch() const { return nattch_; }
  bool marked_for_destruction() const;
  void set_ctime(int64_t t) { ctime_ = t; }
  ShmStatus Status() const;

  // SHM_LOCK accounting: the real uid charged for the lock while the segment is locked.
  std::optional<uint32_t> lock_charged_to;

  // mm::MappingObserver: a VMA attaching the segment appeared / went away. Sets the
  // attach or detach time and the last pid like Linux's shm_open/shm_close.
  void VmaOpened() override;
  void VmaClosed() override;

  // Held by shmat between its checks and the mapping (Linux's temporary nattch++), so
  // that a SHM_REMAP over the last attachment of a removed segment cannot free it.
  void Pin() { nattch_++; }
  void Unpin();

  // The registry is gone (kernel teardown): later closes only count.
  void Orphan() { registry_ = nullptr; }

 private:
  void DestroyIfUnused();

  ShmRegistry* registry_;
  const int32_t id_;
  const int32_t creation_key_;
  IpcPerm perm_;
  const uint64_t size_;
  const std::shared_ptr<mm::MemoryRange> pages_;
  const int32_t cpid_;
  int32_t lpid_ = 0;
  int64_t atime_ = 0, dtime_ = 0, ctime_;
  uint64_t nattch_ = 0;
};

// Pin()/Unpin() for the span of one shmat.
class ShmPin {
 public:
  explicit ShmPin(std::shared_ptr<ShmSegment> s) : s_(std::move(s)) { s_->Pin(); }
  ~ShmPin() { s_->Unpin(); }
  ShmPin(const ShmPin&) = delete;
  ShmPin& operator=(const ShmPin&) = delete;

 private:
  std::shared_ptr<ShmSegment> s_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_SHM_SEGMENT_H_
