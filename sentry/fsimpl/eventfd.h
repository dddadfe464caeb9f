// eventfd(2): a 64-bit counter as an open file. read takes the counter (or 1 in
// semaphore mode) and blocks at 0; write adds and blocks when the sum would exceed
// 0xfffffffffffffffe. All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_EVENTFD_H_
#define USENTRY_SENTRY_FSIMPL_EVENTFD_H_

#include <cstdint>
#include <string>

#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

// Largest counter value a write can reach.
inline constexpr uint64_t kEventfdMax = ~uint64_t{0} - 1;

class EventfdDescription : public vfs::FileDescription {
 public:
  // `flags`: O_NONBLOCK as a status flag; `semaphore`: EFD_SEMAPHORE.
  EventfdDescription(uint64_t initial, int flags, bool semaphore);

  // Buffers shorter than 8 bytes: EINVAL. Would block: EAGAIN (the syscall layer
  // waits). Offsets (pread/pwrite): ESPIPE. The 8 bytes may span several iovecs (an app
  // buffer can be split at page boundaries).
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  // Writing ~0: EINVAL.
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  // Linux's noop_llseek: the position stays 0.
  SysResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &wq_; }
  std::string AnonName() const override { return "anon_inode:[eventfd]"; }
  std::string FdInfo() override;

  uint64_t count() const { return count_; }

 private:
  uint64_t count_;
  bool semaphore_;
  uint32_t id_;  // eventfd-id in fdinfo
  WaitQueue wq_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_EVENTFD_H_
