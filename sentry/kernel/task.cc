// Task: construction, blocking and interruption. The run loop is in task_run.cc.
#include "sentry/kernel/task.h"

#include "base/cpu_pin.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"

namespace usentry::sentry {

Task::Task(Kernel* kernel, std::shared_ptr<ThreadGroup> tg, int32_t tid)
    : sig(std::make_unique<SignalState>()), kernel_(kernel), tg_(std::move(tg)), tid_(tid) {}

Task::~Task() = default;

bool Task::InterruptPending() const {
  if (killed || exiting || tg_->exiting) return true;
  uint64_t pending = sig->pending.set() | tg_->pending.set();
  return (pending & ~sig->mask) != 0;
}

SysStatus Task::Block(Waiter& w, std::optional<absl::Time> deadline) {
  if (!w.notified()) WillSleep();
  while (!w.notified()) {
    if (InterruptPending()) return Errno{EINTR};
    if (deadline) {
      bool timed_out = cv.WaitWithDeadline(&kernel_->mu, *deadline);
      if (timed_out && !w.notified()) {
        if (InterruptPending()) return Errno{EINTR};
        return Errno{ETIMEDOUT};
      }
    } else {
      cv.Wait(&kernel_->mu);
    }
  }
  return SysOk();
}

void Task::WillSleep() {
  ReleaseThreadCpu();  // a thread held for its gofer calls wakes on any CPU (cpu_pin.h)
  if (ctx) ctx->WillBlock();
  kernel_->cpu_gate().Leave(*this);
}

SysStatus Task::Sleep(absl::Duration d) {
  Waiter w(this);
  SysStatus s = Block(w, absl::Now() + d);
  if (!s.ok() && s.error() == ETIMEDOUT) return SysOk();
  return s;
}

void Task::Interrupt() {
  cv.Signal();
  if (in_app.load() && ctx) ctx->Interrupt();
}

absl::Duration Task::CpuTime() const {
  return tg_->had_threads ? app_time + cpu_offset : tg_->CpuTime();
}

}  // namespace usentry::sentry
