// FutexTable implementation.
#include "sentry/kernel/futex.h"

#include "sentry/kernel/task.h"

namespace usentry::sentry {

SysStatus FutexTable::Wait(Task& t, Key key, uint32_t bitset, std::optional<absl::Time> deadline) {
  Waiter w(&t);
  auto& q = queues_[key];
  auto it = q.insert(q.end(), Entry{&w, bitset});
  SysStatus s = t.Block(w, deadline);
  // Wake() removes the entries it wakes; remove ours if we left for another reason.
  if (!w.notified()) {
    auto qit = queues_.find(key);
    if (qit != queues_.end()) {
      qit->second.erase(it);
      if (qit->second.empty()) queues_.erase(qit);
    }
  }
  if (w.notified()) return SysOk();
  return s;
}

int FutexTable::Wake(Key key, int n, uint32_t bitset) {
  auto qit = queues_.find(key);
  if (qit == queues_.end()) return 0;
  int woken = 0;
  auto& q = qit->second;
  for (auto it = q.begin(); it != q.end() && woken < n;) {
    if (!(it->bitset & bitset)) {
      ++it;
      continue;
    }
    it->waiter->set_notified();
    it->waiter->task()->cv.Signal();
    it = q.erase(it);
    woken++;
  }
  if (q.empty()) queues_.erase(qit);
  return woken;
}

}  // namespace usentry::sentry
