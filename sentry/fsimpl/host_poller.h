// HostPoller: one host thread per kernel that turns host-FD readiness (epoll) into
// WaitQueue notifications, so that descriptions wrapping host FDs never block the
// sentry while it holds the kernel lock.
//
// Protocol: a description Subscribe()s its host fd with a callback once; whenever it has
// to answer EAGAIN (or "not ready") it Arm()s the events it is missing. Arming is
// one-shot (EPOLLONESHOT): when the fd becomes ready the poller thread takes the kernel
// lock, forgets the arming and calls every subscriber's callback with the ready events.
// A waiter that is still not satisfied re-arms on its next check. Spurious wake-ups are
// harmless; lost ones are impossible because arming and the callback both happen under
// the kernel lock.
//
// Locking: Subscribe/Unsubscribe/Arm require `*mu` (Kernel::mu); callbacks run with it
// held. Stop() and the destructor must be called without it. After Stop() the object
// stays usable (descriptions may still unsubscribe) but notifies nobody.
#ifndef USENTRY_SENTRY_FSIMPL_HOST_POLLER_H_
#define USENTRY_SENTRY_FSIMPL_HOST_POLLER_H_

#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"

namespace usentry::sentry::fsimpl {

class HostPoller {
 public:
  using Callback = std::function<void(EventMask)>;

  explicit HostPoller(absl::Mutex* mu);
  ~HostPoller();
  HostPoller(const HostPoller&) = delete;
  HostPoller& operator=(const HostPoller&) = delete;

  // Creates the epoll set and starts the thread.
  absl::Status Start();
  // Stops and joins the thread (idempotent).
  void Stop();

  // `key` identifies the subscription (the description); several may share one fd.
  void Subscribe(int fd, const void* key, Callback cb) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);
  void Unsubscribe(int fd, const void* key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);
  // Requests one notification when any of `events` (POLLIN/POLLOUT/POLLPRI) holds on
  // `fd`; HUP and ERR are always reported. EPERM: the fd cannot be polled (regular
  // files, /dev/null): treat it as always ready.
  SysStatus Arm(int fd, EventMask events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);

 private:
  struct Entry {
    bool added = false;  // in the epoll set
    uint32_t armed = 0;  // events armed and not yet fired
    std::vector<std::pair<const void*, Callback>> subs;
  };
  void Run();
  void Dispatch(int fd, uint32_t epoll_events);

  absl::Mutex* mu_;
  int epfd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes the thread for shutdown
  std::thread thread_;
  std::map<int, Entry> fds_ ABSL_GUARDED_BY(*mu_);
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_HOST_POLLER_H_
