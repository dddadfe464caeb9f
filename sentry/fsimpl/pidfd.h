// pidfd (pidfd_open(2)): a file referring to a process. It becomes readable (POLLIN)
// once the process has exited; pidfd_send_signal(2) signals through it. The process
// object is kept (not its PID) so a reused PID is never signalled by mistake.
// Runs under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_PIDFD_H_
#define USENTRY_SENTRY_FSIMPL_PIDFD_H_

#include <memory>

#include "sentry/vfs/file_description.h"

namespace usentry::sentry {
class ThreadGroup;
}

namespace usentry::sentry::fsimpl {

class PidfdDescription : public vfs::FileDescription {
 public:
  PidfdDescription(std::shared_ptr<ThreadGroup> tg, int flags);

  ThreadGroup& thread_group() const { return *tg_; }
  // Every thread gone: a zombie or already reaped.
  bool exited() const;

  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override;
  std::string AnonName() const override { return "anon_inode:[pidfd]"; }

 private:
  std::shared_ptr<ThreadGroup> tg_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PIDFD_H_
