// WaitLoop: how a socket operation blocks. The operation is retried until it stops
// returning EAGAIN, sleeping between attempts on the wait queues that announce progress.
#ifndef USENTRY_SENTRY_NET_SOCKET_WAIT_H_
#define USENTRY_SENTRY_NET_SOCKET_WAIT_H_

#include <initializer_list>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::net {

// Runs `attempt`; while it returns EAGAIN and the caller may block (task non-null and not
// `nonblocking`), registers on `queues` (null entries skipped) for `events` plus
// POLLERR|POLLHUP, sleeps and retries. EAGAIN is returned when the call must not block
// or `timeout` (zero = forever) expires. A signal gives kERestartSys without a timeout
// and EINTR with one, as Linux's sock_intr_errno. Progress made by earlier attempts is
// the caller's to report (it lives in what `attempt` captures).
SysStatus WaitLoop(Task* task, bool nonblocking, absl::Duration timeout,
                   std::initializer_list<WaitQueue*> queues, EventMask events,
                   absl::FunctionRef<SysStatus()> attempt);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_SOCKET_WAIT_H_
