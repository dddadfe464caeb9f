// WaitQueue / Waiter: how a task sleeps until something it waits for changes.
//
// Everything here runs under the kernel lock (Kernel::mu). A producer calls
// WaitQueue::Notify(events) after changing state; each registered Waiter whose mask
// intersects `events` is marked and its task woken. A blocking syscall registers a
// Waiter on every queue it cares about, re-checks readiness, then Task::Block()s.
//
// Callback waiters: a subclass may override Waiter::Notify to react to readiness
// changes without a task sleeping on the queue (epoll interest items). Producers must
// therefore Notify on every change a watcher may care about, including a new write to
// a file that was already readable (edge-triggered epoll counts those as new edges).
#ifndef USENTRY_SENTRY_KERNEL_WAIT_QUEUE_H_
#define USENTRY_SENTRY_KERNEL_WAIT_QUEUE_H_

#include <cstdint>
#include <vector>

namespace usentry::sentry {

class Task;

// Event bits: the poll(2) bits (POLLIN=1, POLLPRI=2, POLLOUT=4, POLLERR=8, POLLHUP=16...).
using EventMask = uint32_t;
inline constexpr EventMask kAllEvents = ~0u;

class WaitQueue;

class Waiter {
 public:
  // `task` may be null for a callback waiter that overrides Notify.
  explicit Waiter(Task* task) : task_(task) {}
  virtual ~Waiter() = default;
  Task* task() const { return task_; }
  bool notified() const { return notified_; }
  void set_notified() { notified_ = true; }
  void clear() { notified_ = false; }

  // Called by WaitQueue::Notify, kernel lock held, with the events that intersected this
  // waiter's mask. Default: mark notified and wake the task. An override must not block
  // and must not Add to or Remove from the notifying queue.
  virtual void Notify(EventMask events);
  // Called when a queue this waiter is still registered on is destroyed (its owner was
  // released first). The waiter must then forget the queue, not Remove from it.
  virtual void QueueDestroyed(WaitQueue* q) {}

 private:
  Task* task_;
  bool notified_ = false;
};

class WaitQueue {
 public:
  WaitQueue() = default;
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;
  ~WaitQueue();

  void Add(Waiter* w, EventMask mask);
  void Remove(Waiter* w);
  // Wakes waiters whose mask intersects `events`. Requires the kernel lock.
  void Notify(EventMask events);
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    Waiter* waiter;
    EventMask mask;
  };
  std::vector<Entry> entries_;
};

// Registers a waiter on a queue for the lifetime of the scope.
class ScopedWait {
 public:
  ScopedWait(WaitQueue& q, Waiter& w, EventMask mask) : q_(q), w_(w) { q_.Add(&w_, mask); }
  ~ScopedWait() { q_.Remove(&w_); }
  ScopedWait(const ScopedWait&) = delete;
  ScopedWait& operator=(const ScopedWait&) = delete;

 private:
  WaitQueue& q_;
  Waiter& w_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_WAIT_QUEUE_H_
