#include "sentry/kernel/shm_registry.h"

#include <linux/capability.h>
#include <sys/resource.h>

#include <algorithm>

#include "abi/ipc.h"
#include "sentry/kernel/wall_seconds.h"
#include "sentry/mm/guest_addr.h"

namespace usentry::sentry {
namespace {

uint64_t PagesOf(uint64_t bytes) { return (bytes + mm::kPageSize - 1) / mm::kPageSize; }

}  // namespace

ShmRegistry::ShmRegistry(mm::MemoryFile* mf, std::function<int32_t()> current_pid)
    : mf_(mf), current_pid_(std::move(current_pid)) {}

ShmRegistry::~ShmRegistry() {
  // Attachments that outlive the registry keep their pages; they just stop reporting.
  for (auto& [index, s] : by_index_) s->Orphan();
}

SysResult<int32_t> ShmRegistry::Get(const Credentials& c, int32_t pid, int32_t key, uint64_t size,
                                    int flags, absl::FunctionRef<bool(uint64_t)> memory_fits) {
  if (key == abi::kIpcPrivate) return Create(c, pid, key, size, flags, memory_fits);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    if (!(flags & abi::kIpcCreat)) return Errno{ENOENT};
    return Create(c, pid, key, size, flags, memory_fits);
  }
  if ((flags & abi::kIpcCreat) && (flags & abi::kIpcExcl)) return Errno{EEXIST};
  const ShmSegment& s = *by_index_.at(it->second);
  if (size > s.size()) return Errno{EINVAL};
  // The mode bits of the call are the access asked for (0 asks for nothing).
  if (!IpcAccessAllowed(c, s.perm(), flags & 0777)) return Errno{EACCES};
  return s.id();
}

SysResult<int32_t> ShmRegistry::Create(const Credentials& c, int32_t pid, int32_t key,
                                       uint64_t size, int flags,
                                       absl::FunctionRef<bool(uint64_t)> memory_fits) {
  if (size < kShmMin || size > kShmMax) return Errno{EINVAL};
  const uint64_t pages = PagesOf(size);
  if (total_pages_ + pages < total_pages_ || total_pages_ + pages > kShmAll) {
    return Errno{ENOSPC};
  }
  // No huge pages here: what Linux answers when none are reserved.
  if (flags & abi::kShmHugetlb) return Errno{ENOMEM};
  const uint64_t bytes = pages * mm::kPageSize;
  if (!(flags & abi::kShmNoreserve) && !memory_fits(bytes)) return Errno{ENOMEM};
  if (ids_.in_use() >= kShmMni) return Errno{ENOSPC};
  // Sparse, zero pages: memory is used only as the segment is touched.
  std::shared_ptr<mm::MemoryRange> range = mf_->Allocate(bytes);
  if (!range) return Errno{ENOMEM};
  ASSIGN_OR_RETURN_ERRNO(IpcIds::Allocation a, ids_.Allocate(kShmMni));
  IpcPerm perm;
  perm.key = key;
  perm.uid = perm.cuid = c.euid;
  perm.gid = perm.cgid = c.egid;
  perm.mode = static_cast<uint32_t>(flags) & 0777;
  perm.seq = a.seq;
  by_index_[a.index] =
      std::make_shared<ShmSegment>(this, a.id, perm, size, std::move(range), pid, WallSeconds());
  if (key != abi::kIpcPrivate) by_key_[key] = a.index;
  total_pages_ += pages;
  return a.id;
}

SysResult<std::shared_ptr<ShmSegment>> ShmRegistry::FindById(int32_t id) const {
  if (id < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<ShmSegment> s, FindByIndex(IpcIds::IndexOf(id)));
  // An id of a segment that is gone must not name the one now at its index.
  if (IpcIds::SeqOf(id) != s->perm().seq) return Errno{EINVAL};
  return s;
}

SysResult<std::shared_ptr<ShmSegment>> ShmRegistry::FindByIndex(int32_t index) const {
  auto it = by_index_.find(index);
  if (it == by_index_.end()) return Errno{EINVAL};
  return it->second;
}

SysResult<std::shared_ptr<ShmSegment>> ShmRegistry::ForAttach(const Credentials& c, int32_t id,
                                                              uint32_t access) {
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<ShmSegment> s, FindById(id));
  if (!IpcAccessAllowed(c, s->perm(), access)) return Errno{EACCES};
  return s;
}

SysResult<ShmStatus> ShmRegistry::Stat(const Credentials& c, int32_t id, StatBy by) const {
  std::shared_ptr<ShmSegment> s;
  if (by == StatBy::kId) {
    ASSIGN_OR_RETURN_ERRNO(s, FindById(id));
  } else {
    if (id < 0) return Errno{EINVAL};
    ASSIGN_OR_RETURN_ERRNO(s, FindByIndex(IpcIds::IndexOf(id)));
  }
  if (by != StatBy::kIndexAny && !IpcAccessAllowed(c, s->perm(), 0444)) return Errno{EACCES};
  return s->Status();
}

SysStatus ShmRegistry::Set(const Credentials& c, int32_t id, uint32_t uid, uint32_t gid,
                           uint32_t mode) {
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<ShmSegment> s, FindById(id));
  RETURN_IF_ERRNO(IpcMayChange(c, s->perm()));
  RETURN_IF_ERRNO(IpcSetOwnerAndMode(s->perm(), uid, gid, mode));
  s->set_ctime(WallSeconds());
  return SysOk();
}

SysStatus ShmRegistry::Remove(const Credentials& c, int32_t id) {
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<ShmSegment> s, FindById(id));
  RETURN_IF_ERRNO(IpcMayChange(c, s->perm()));
  if (s->nattch() == 0) {
    Destroy(*s);
    return SysOk();
  }
  // Attached: the memory lives on until the last detach, but no shmget finds it.
  s->perm().mode |= abi::kShmDest;
  if (s->perm().key != abi::kIpcPrivate) {
    by_key_.erase(s->perm().key);
    s->perm().key = abi::kIpcPrivate;
  }
  return SysOk();
}

SysStatus ShmRegistry::Lock(const Credentials& c, int32_t id, bool lock, uint64_t memlock_limit) {
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<ShmSegment> s, FindById(id));
  const bool privileged = c.HasCapability(CAP_IPC_LOCK);
  if (!privileged) {
    if (!IpcIsOwnerOrCreator(c, s->perm())) return Errno{EPERM};
    if (lock && memlock_limit == 0) return Errno{EPERM};
  }
  if (!lock) {
    Unlock(*s);
    return SysOk();
  }
  if (s->lock_charged_to) return SysOk();  // already locked
  // Charged to the locking user, against RLIMIT_MEMLOCK, like Linux's user_shm_lock.
  const uint64_t pages = PagesOf(s->size());
  const uint64_t limit_pages =
      memlock_limit == RLIM_INFINITY ? UINT64_MAX : memlock_limit / mm::kPageSize;
  auto it = locked_pages_.find(c.ruid);
  const uint64_t charged = it == locked_pages_.end() ? 0 : it->second;
  if (!privileged && (charged + pages < charged || charged + pages > limit_pages)) {
    return Errno{ENOMEM};
  }
  locked_pages_[c.ruid] = charged + pages;
  s->lock_charged_to = c.ruid;
  s->perm().mode |= abi::kShmLocked;
  return SysOk();
}

void ShmRegistry::Unlock(ShmSegment& s) {
  if (!s.lock_charged_to) return;
  auto it = locked_pages_.find(*s.lock_charged_to);
  if (it != locked_pages_.end()) {
    it->second -= std::min(it->second, PagesOf(s.size()));
    if (it->second == 0) locked_pages_.erase(it);
  }
  s.lock_charged_to.reset();
  s.perm().mode &= ~abi::kShmLocked;
}

void ShmRegistry::Destroy(ShmSegment& s) {
  const int index = IpcIds::IndexOf(s.id());
  auto it = by_index_.find(index);
  if (it == by_index_.end() || it->second.get() != &s) return;
  // Keeps the segment alive until its bookkeeping is undone.
  std::shared_ptr<ShmSegment> keep = std::move(it->second);
  by_index_.erase(it);
  if (s.perm().key != abi::kIpcPrivate) by_key_.erase(s.perm().key);
  ids_.Release(index);
  total_pages_ -= s.pages_count();
  Unlock(s);
  s.Orphan();
}

std::vector<ShmStatus> ShmRegistry::List() const {
  std::vector<ShmStatus> out;
  out.reserve(by_index_.size());
  for (const auto& [index, s] : by_index_) out.push_back(s->Status());
  return out;
}

}  // namespace usentry::sentry
