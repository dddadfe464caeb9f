// signalfd (signalfd(2)): a file that dequeues the reading thread's pending signals in
// its mask (the thread's own, then its process's) as 128-byte signalfd_siginfo records.
// Readiness is that of the task polling it, as in Linux; it waits on the kernel-wide
// SignalEnqueueQueue, which every enqueued signal notifies. Runs under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_SIGNALFD_H_
#define USENTRY_SENTRY_FSIMPL_SIGNALFD_H_

#include <cstdint>
#include <memory>

#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

class SignalfdDescription : public vfs::FileDescription {
 public:
  // `mask` without SIGKILL/SIGSTOP; `flags` O_NONBLOCK.
  SignalfdDescription(uint64_t mask, int flags);

  uint64_t mask() const { return mask_; }
  void set_mask(uint64_t mask);

  // Fewer than 128 bytes: EINVAL; no matching signal: EAGAIN. Several records at once
  // when the buffer has room.
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override;
  std::string AnonName() const override { return "anon_inode:[signalfd]"; }

 private:
  uint64_t mask_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_SIGNALFD_H_
