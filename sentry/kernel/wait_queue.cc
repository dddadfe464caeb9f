// WaitQueue implementation.
#include "sentry/kernel/wait_queue.h"

#include <algorithm>

#include "sentry/kernel/task.h"

namespace usentry::sentry {

void Waiter::Notify(EventMask) {
  set_notified();
  task_->cv.Signal();
}

WaitQueue::~WaitQueue() {
  // Only callback waiters can outlive their queue (task waiters are scoped to a syscall
  // that holds a reference to the queue's owner).
  std::vector<Entry> left;
  left.swap(entries_);
  for (const Entry& e : left) e.waiter->QueueDestroyed(this);
}

void WaitQueue::Add(Waiter* w, EventMask mask) { entries_.push_back({w, mask}); }

void WaitQueue::Remove(Waiter* w) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [w](const Entry& e) { return e.waiter == w; }),
                 entries_.end());
}

void WaitQueue::Notify(EventMask events) {
  // By index: a callback may cause registrations on this queue elsewhere (push_back).
  for (size_t i = 0; i < entries_.size(); ++i) {
    EventMask hit = entries_[i].mask & events;
    if (hit != 0) entries_[i].waiter->Notify(hit);
  }
}

}  // namespace usentry::sentry
