// FutexTable: futex wait queues keyed by (address space, address). Waking is counted
// (FUTEX_WAKE wakes at most n waiters), which a plain WaitQueue cannot do.
#ifndef USENTRY_SENTRY_KERNEL_FUTEX_H_
#define USENTRY_SENTRY_KERNEL_FUTEX_H_

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"

namespace usentry::sentry {

class Task;

class FutexTable {
 public:
  // Key: the address space (private futexes; shared ones between processes are not
  // supported yet) and the futex address.
  using Key = std::pair<const void*, uint64_t>;

  // Sleeps until woken (OK), timed out (ETIMEDOUT) or interrupted (EINTR). The caller
  // has already compared the futex word under the kernel lock.
  SysStatus Wait(Task& t, Key key, uint32_t bitset, std::optional<absl::Time> deadline);
  // Wakes up to `n` waiters whose bitset intersects `bitset`; returns how many.
  int Wake(Key key, int n, uint32_t bitset);

 private:
  struct Entry {
    Waiter* waiter;
    uint32_t bitset;
  };
  std::map<Key, std::list<Entry>> queues_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_FUTEX_H_
