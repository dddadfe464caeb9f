// WaitQueue implementation.
#include "sentry/kernel/wait_queue.h"

#include <algorithm>

#include "sentry/kernel/task.h"

namespace usentry::sentry {

WaitQueue::~WaitQueue() = default;

void WaitQueue::Add(Waiter* w, EventMask mask) { entries_.push_back({w, mask}); }

void WaitQueue::Remove(Waiter* w) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [w](const Entry& e) { return e.waiter == w; }),
                 entries_.end());
}

void WaitQueue::Notify(EventMask events) {
  for (const Entry& e : entries_) {
    if ((e.mask & events) == 0) continue;
    e.waiter->set_notified();
    e.waiter->task()->cv.Signal();
  }
}

}  // namespace usentry::sentry
