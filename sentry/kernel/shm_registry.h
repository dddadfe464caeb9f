// ShmRegistry: the System V shared memory segments of one sandbox (one IPC namespace):
// shmget's key lookup and creation, the limits it enforces, permission-checked lookups
// for shmat and shmctl, removal, and the SHM_LOCK accounting. The syscall handlers
// (sentry/syscalls/sys_shm.cc) copy arguments and map attachments; /proc/sysvipc/shm
// and /proc/sys/kernel/shm* show what is here.
//
// Every method runs under Kernel::mu (or in single-threaded tests).
#ifndef USENTRY_SENTRY_KERNEL_SHM_REGISTRY_H_
#define USENTRY_SENTRY_KERNEL_SHM_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "sentry/kernel/credentials.h"
#include "sentry/kernel/ipc_ids.h"
#include "sentry/kernel/shm_segment.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/mm/memory_file.h"

namespace usentry::sentry {

// The limits, Linux's defaults (which /proc/sys/kernel/shm* show and the registry
// enforces; they cannot be changed from inside).
inline constexpr uint64_t kShmMin = 1;                          // bytes
inline constexpr uint64_t kShmMax = UINT64_MAX - (1ull << 24);  // bytes per segment
inline constexpr uint64_t kShmAll = UINT64_MAX - (1ull << 24);  // pages in all segments
inline constexpr int kShmMni = 4096;                            // segments

class ShmRegistry {
 public:
  // `mf` holds the segments' pages and outlives the registry. `current_pid` names the
  // process whose syscall is running (0 when none): the last pid of attaches and
  // detaches that happen inside mm (fork, exit, munmap).
  ShmRegistry(mm::MemoryFile* mf, std::function<int32_t()> current_pid);
  ~ShmRegistry();
  ShmRegistry(const ShmRegistry&) = delete;
  ShmRegistry& operator=(const ShmRegistry&) = delete;

  // shmget(key, size, flags) by `c` in process `pid`: the id of the segment. A new
  // segment's pages are reserved only if `memory_fits(bytes)` (unless SHM_NORESERVE),
  // the --memory check that Linux's overcommit accounting makes.
  SysResult<int32_t> Get(const Credentials& c, int32_t pid, int32_t key, uint64_t size, int flags,
                         absl::FunctionRef<bool(uint64_t)> memory_fits);

  // shmat's lookup: the segment `id` if `c` may use it for `access` (0444, 0666...).
  SysResult<std::shared_ptr<ShmSegment>> ForAttach(const Credentials& c, int32_t id,
                                                   uint32_t access);

  // IPC_STAT (kId: a full id, read permission), SHM_STAT (kIndex: an index, read
  // permission), SHM_STAT_ANY (kIndexAny: an index, no permission check, as
  // /proc/sysvipc/shm).
  enum class StatBy { kId, kIndex, kIndexAny };
  SysResult<ShmStatus> Stat(const Credentials& c, int32_t id, StatBy by) const;

  // IPC_SET: new owner and permission bits (owner, creator or CAP_SYS_ADMIN).
  SysStatus Set(const Credentials& c, int32_t id, uint32_t uid, uint32_t gid, uint32_t mode);
  // IPC_RMID: freed now if unattached, else marked SHM_DEST and its key made private.
  SysStatus Remove(const Credentials& c, int32_t id);
  // SHM_LOCK (lock) / SHM_UNLOCK: records SHM_LOCKED. Without CAP_IPC_LOCK only the
  // owner or creator may, locking needs RLIMIT_MEMLOCK (`memlock_limit` bytes) above 0
  // (EPERM) and room in it for the locked pages of all that user's segments (ENOMEM).
  SysStatus Lock(const Credentials& c, int32_t id, bool lock, uint64_t memlock_limit);

  // IPC_INFO / SHM_INFO.
  int MaxIndex() const { return ids_.MaxIndexForInfo(); }
  int used_ids() const { return ids_.in_use(); }
  uint64_t total_pages() const { return total_pages_; }

  // Every segment, by index (/proc/sysvipc/shm).
  std::vector<ShmStatus> List() const;

  // --- for ShmSegment ---
  int32_t CurrentPid() const { return current_pid_ ? current_pid_() : 0; }
  // Frees the segment: out of the table, its id and key released.
  void Destroy(ShmSegment& s);

 private:
  SysResult<int32_t> Create(const Credentials& c, int32_t pid, int32_t key, uint64_t size,
                            int flags, absl::FunctionRef<bool(uint64_t)> memory_fits);
  // The segment of a full id (its sequence must match) or EINVAL.
  SysResult<std::shared_ptr<ShmSegment>> FindById(int32_t id) const;
  SysResult<std::shared_ptr<ShmSegment>> FindByIndex(int32_t index) const;
  void Unlock(ShmSegment& s);

  mm::MemoryFile* mf_;
  std::function<int32_t()> current_pid_;
  IpcIds ids_;
  std::map<int, std::shared_ptr<ShmSegment>> by_index_;
  std::map<int32_t, int> by_key_;  // public keys of segments not marked for destruction
  uint64_t total_pages_ = 0;
  std::map<uint32_t, uint64_t> locked_pages_;  // SHM_LOCK charges by real uid
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_SHM_REGISTRY_H_
