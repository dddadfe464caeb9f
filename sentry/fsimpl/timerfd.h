// timerfd (timerfd_create(2)): a file whose read returns how many times its timer
// expired since the last read (8 bytes), readable (POLLIN) while that count is non-zero.
// All methods run under Kernel::mu; expiry arrives from the kernel's timer thread.
#ifndef USENTRY_SENTRY_FSIMPL_TIMERFD_H_
#define USENTRY_SENTRY_FSIMPL_TIMERFD_H_

#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "sentry/kernel/timers.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

class TimerfdDescription : public vfs::FileDescription {
 public:
  // `clock` is the app's clock id (kept for the caller's conversions); `flags` O_NONBLOCK.
  static std::shared_ptr<TimerfdDescription> New(TimerQueue& queue, int clock, int flags);
  TimerfdDescription(int clock, int flags);

  int clock() const { return clock_; }
  // Arms at `deadline` then every `interval`, or disarms when deadline is InfinitePast.
  // Expirations not yet read are discarded, as in Linux.
  void Set(absl::Time deadline, absl::Duration interval);
  absl::Duration Remaining() const { return timer_->Remaining(absl::Now()); }
  // As set, even while disarmed (as Linux reports it).
  absl::Duration interval() const { return interval_; }

  // Fewer than 8 bytes: EINVAL; no expiration yet: EAGAIN.
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &wq_; }
  std::string AnonName() const override { return "anon_inode:[timerfd]"; }

 private:
  int clock_;
  std::shared_ptr<Timer> timer_;
  uint64_t ticks_ = 0;
  absl::Duration interval_;
  WaitQueue wq_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_TIMERFD_H_
