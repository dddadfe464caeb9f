// timerfd descriptions.
#include "sentry/fsimpl/timerfd.h"

#include <poll.h>

#include <cstring>

namespace usentry::sentry::fsimpl {

std::shared_ptr<TimerfdDescription> TimerfdDescription::New(TimerQueue& queue, int clock,
                                                            int flags) {
  auto fd = std::make_shared<TimerfdDescription>(clock, flags);
  std::weak_ptr<TimerfdDescription> weak = fd;
  fd->timer_ = queue.NewTimer([weak](uint64_t n) {
    std::shared_ptr<TimerfdDescription> self = weak.lock();
    if (!self) return false;  // closed: nobody can read the count any more
    self->ticks_ += n;
    self->wq_.Notify(POLLIN);
    return true;
  });
  return fd;
}

TimerfdDescription::TimerfdDescription(int clock, int flags)
    : FileDescription(vfs::Path(), O_RDWR | (flags & O_NONBLOCK)), clock_(clock) {}

void TimerfdDescription::Set(absl::Time deadline, absl::Duration interval) {
  ticks_ = 0;
  interval_ = interval;
  if (deadline == absl::InfinitePast()) {
    timer_->Disarm();
  } else {
    timer_->Arm(deadline, interval);
  }
}

SysResult<size_t> TimerfdDescription::Read(Task*, absl::Span<const iovec> dst, int64_t) {
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(dst));
  if (len < sizeof(uint64_t)) return Errno{EINVAL};
  if (ticks_ == 0) return Errno{EAGAIN};
  uint64_t value = ticks_;
  ticks_ = 0;
  vfs::CopyToIovecs(dst, &value, sizeof(value));
  return sizeof(value);
}

EventMask TimerfdDescription::Readiness(EventMask mask) {
  return ticks_ > 0 ? (mask & (POLLIN | POLLRDNORM)) : 0;
}

}  // namespace usentry::sentry::fsimpl
