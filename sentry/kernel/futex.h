// FutexTable: futex wait queues keyed by (address space, address). Waking is counted
// (FUTEX_WAKE wakes at most n waiters) and waiters can be moved between queues
// (FUTEX_REQUEUE), which a plain WaitQueue cannot do. Guarded by Kernel::mu.
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
#include "sentry/mm/guest_addr.h"

namespace usentry::sentry {

class Task;
namespace mm {
class MemoryManager;
}

// The key of the futex word at `addr` of `m`. A private futex (FUTEX_PRIVATE_FLAG), or a
// shared one in private memory, is keyed by (address space, address), so the threads
// of a process meet. A shared futex in a MAP_SHARED mapping is keyed by the page behind
// it (its place in the memory file), so processes sharing the mapping meet, as on
// Linux. EFAULT if `addr` is not mapped.
SysResult<std::pair<const void*, uint64_t>> FutexKeyFor(const mm::MemoryManager& m,
                                                        mm::GuestAddr addr, bool private_op);

// The sentry's pointer to the aligned 32-bit futex word at `addr` (in the memory file
// mapping), for atomic operations that must not race with app threads running at the
// same time (FUTEX_WAKE_OP, robust-list cleanup). EFAULT if not accessible for writing.
SysResult<uint32_t*> FutexWordPtr(const mm::MemoryManager& m, mm::GuestAddr addr);

class FutexTable {
 public:
  // Key: the address space (threads share it, so private futexes of one process meet;
  // shared futexes between processes are not supported yet) and the futex address.
  using Key = std::pair<const void*, uint64_t>;

  // Sleeps until woken (OK), timed out (ETIMEDOUT) or interrupted (EINTR). The caller
  // has already compared the futex word under the kernel lock.
  SysStatus Wait(Task& t, Key key, uint32_t bitset, std::optional<absl::Time> deadline);
  // Wakes up to `n` waiters whose bitset intersects `bitset`; returns how many.
  int Wake(Key key, int n, uint32_t bitset);
  // Wakes up to `n_wake` waiters of `from` and moves up to `n_requeue` of the rest to
  // `to`. Returns woken + moved (FUTEX_CMP_REQUEUE's result).
  int Requeue(Key from, Key to, int n_wake, int n_requeue);

 private:
  struct Entry {
    Waiter* waiter;
    uint32_t bitset;
    Key* key;  // the queue the entry is on now (the waiter's, updated by Requeue)
  };
  std::map<Key, std::list<Entry>> queues_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_FUTEX_H_
