#include "sentry/kernel/shm_segment.h"

#include "abi/ipc.h"
#include "sentry/kernel/shm_registry.h"
#include "sentry/kernel/wall_seconds.h"

namespace usentry::sentry {

ShmSegment::ShmSegment(ShmRegistry* registry, int32_t id, IpcPerm perm, uint64_t size,
                       std::shared_ptr<mm::MemoryRange> pages, int32_t cpid, int64_t ctime)
    : registry_(registry),
      id_(id),
      creation_key_(perm.key),
      perm_(perm),
      size_(size),
      pages_(std::move(pages)),
      cpid_(cpid),
      ctime_(ctime) {}

bool ShmSegment::marked_for_destruction() const { return (perm_.mode & abi::kShmDest) != 0; }

ShmStatus ShmSegment::Status() const {
  ShmStatus s;
  s.id = id_;
  s.perm = perm_;
  s.size = size_;
  s.atime = atime_;
  s.dtime = dtime_;
  s.ctime = ctime_;
  s.cpid = cpid_;
  s.lpid = lpid_;
  s.nattch = nattch_;
  s.pages = pages_.get();
  return s;
}

void ShmSegment::VmaOpened() {
  nattch_++;
  atime_ = WallSeconds();
  if (registry_ != nullptr) {
    if (int32_t pid = registry_->CurrentPid(); pid != 0) lpid_ = pid;
  }
}

void ShmSegment::VmaClosed() {
  nattch_--;
  dtime_ = WallSeconds();
  if (registry_ != nullptr) {
    if (int32_t pid = registry_->CurrentPid(); pid != 0) lpid_ = pid;
  }
  DestroyIfUnused();
}

void ShmSegment::Unpin() {
  nattch_--;
  DestroyIfUnused();
}

void ShmSegment::DestroyIfUnused() {
  if (nattch_ == 0 && marked_for_destruction() && registry_ != nullptr) {
    registry_->Destroy(*this);
  }
}

}  // namespace usentry::sentry
