// pidfd descriptions.
#include "sentry/fsimpl/pidfd.h"

#include <poll.h>

#include "sentry/kernel/thread_group.h"

namespace usentry::sentry::fsimpl {

PidfdDescription::PidfdDescription(std::shared_ptr<ThreadGroup> tg, int flags)
    : FileDescription(vfs::Path(), O_RDWR | (flags & O_NONBLOCK)), tg_(std::move(tg)) {}

bool PidfdDescription::exited() const { return tg_->zombie || tg_->reaped; }

EventMask PidfdDescription::Readiness(EventMask mask) {
  return exited() ? (mask & (POLLIN | POLLRDNORM)) : 0;
}

WaitQueue* PidfdDescription::wait_queue() { return &tg_->exit_wq; }

}  // namespace usentry::sentry::fsimpl
