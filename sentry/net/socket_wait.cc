// The socket blocking loop.
#include "sentry/net/socket_wait.h"

#include <poll.h>

#include <memory>
#include <optional>
#include <vector>

#include "absl/time/clock.h"
#include "sentry/kernel/task.h"

namespace usentry::sentry::net {

SysStatus WaitLoop(Task* task, bool nonblocking, absl::Duration timeout,
                   std::initializer_list<WaitQueue*> queues, EventMask events,
                   absl::FunctionRef<SysStatus()> attempt) {
  SysStatus r = attempt();
  if (r.ok() || r.error() != EAGAIN || nonblocking || task == nullptr) return r;
  std::optional<absl::Time> deadline;
  if (timeout > absl::ZeroDuration()) deadline = absl::Now() + timeout;
  // Declaration order: the registrations go before the waiter they point to.
  Waiter w(task);
  std::vector<std::unique_ptr<ScopedWait>> waits;
  for (WaitQueue* q : queues) {
    if (q != nullptr)
      waits.push_back(std::make_unique<ScopedWait>(*q, w, events | POLLERR | POLLHUP));
  }
  while (true) {
    // Registered before this re-check: a change after it must Notify, which needs the
    // kernel lock we hold until Block releases it.
    r = attempt();
    if (r.ok() || r.error() != EAGAIN) return r;
    SysStatus st = task->Block(w, deadline);
    if (!st.ok()) {
      if (st.error() == ETIMEDOUT) return Errno{EAGAIN};
      return Errno{deadline ? EINTR : kERestartSys};
    }
    w.clear();
  }
}

}  // namespace usentry::sentry::net
