// FutexTable implementation.
#include "sentry/kernel/futex.h"

#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry {

namespace {
// The "address space" of keys of futexes in shared memory (see FutexKeyFor).
constexpr char kSharedMemoryKeySpace = 0;
}  // namespace

SysResult<std::pair<const void*, uint64_t>> FutexKeyFor(const mm::MemoryManager& m,
                                                        mm::GuestAddr addr, bool private_op) {
  if (!private_op) {
    const auto& vmas = m.vmas();
    auto it = vmas.upper_bound(addr.value());
    if (it != vmas.begin()) {
      --it;
      if (it->second.end > addr.value() && it->second.shared) {
        ASSIGN_OR_RETURN_ERRNO(std::vector<iovec> spans, m.Translate(addr, 4, mm::Access::kRead));
        if (spans.empty()) return Errno{EFAULT};
        return std::pair<const void*, uint64_t>(&kSharedMemoryKeySpace,
                                                reinterpret_cast<uint64_t>(spans[0].iov_base));
      }
    }
  }
  return std::pair<const void*, uint64_t>(&m, addr.value());
}

SysResult<uint32_t*> FutexWordPtr(const mm::MemoryManager& m, mm::GuestAddr addr) {
  if (addr.value() % 4 != 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(std::vector<iovec> spans, m.Translate(addr, 4, mm::Access::kWrite));
  if (spans.size() != 1 || spans[0].iov_len < 4) return Errno{EFAULT};
  return static_cast<uint32_t*>(spans[0].iov_base);
}

SysStatus FutexTable::Wait(Task& t, Key key, uint32_t bitset, std::optional<absl::Time> deadline) {
  Waiter w(&t);
  Key current = key;  // Requeue may move the entry; it updates this
  auto& q = queues_[key];
  auto it = q.insert(q.end(), Entry{&w, bitset, &current});
  SysStatus s = t.Block(w, deadline);
  // Wake() removes the entries it wakes; remove ours if we left for another reason.
  // std::list::splice keeps `it` valid across a requeue.
  if (!w.notified()) {
    auto qit = queues_.find(current);
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

int FutexTable::Requeue(Key from, Key to, int n_wake, int n_requeue) {
  int woken = Wake(from, n_wake, ~uint32_t{0});
  if (from == to || n_requeue <= 0) return woken;
  auto qit = queues_.find(from);
  if (qit == queues_.end()) return woken;
  auto& src = qit->second;
  auto& dst = queues_[to];  // map insertion keeps qit valid
  int moved = 0;
  while (!src.empty() && moved < n_requeue) {
    *src.front().key = to;
    dst.splice(dst.end(), src, src.begin());
    moved++;
  }
  if (src.empty()) queues_.erase(qit);
  if (dst.empty()) queues_.erase(to);
  return woken + moved;
}

}  // namespace usentry::sentry
