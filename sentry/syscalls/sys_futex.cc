// futex(2): wait/wake with bitsets and timeouts. Requeue and PI operations return
// ENOSYS (reported) until threads land with the compatibility work.
#include <linux/futex.h>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_info.h"

namespace usentry::sentry {

SyscallResult SysFutex(Task& t, const SyscallArgs& a) {
  mm::GuestAddr addr = a.ptr(0);
  int op = a.i32(1) & FUTEX_CMD_MASK;
  bool realtime = a.i32(1) & FUTEX_CLOCK_REALTIME;
  uint32_t val = a.u32(2);
  if (addr.value() % 4 != 0) return Errno{EINVAL};
  FutexTable::Key key{&t.mm(), addr.value()};
  FutexTable& table = t.kernel().futexes();
  switch (op) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET: {
      uint32_t bitset = op == FUTEX_WAIT ? FUTEX_BITSET_MATCH_ANY : a.u32(5);
      if (bitset == 0) return Errno{EINVAL};
      std::optional<absl::Time> deadline;
      if (!a.ptr(3).IsNull()) {
        ASSIGN_OR_RETURN_ERRNO(timespec ts, t.mm().CopyInObj<timespec>(a.ptr(3)));
        if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return Errno{EINVAL};
        absl::Duration d = absl::DurationFromTimespec(ts);
        if (op == FUTEX_WAIT) {
          deadline = absl::Now() + d;  // relative, on CLOCK_MONOTONIC
        } else if (realtime) {
          deadline = absl::UnixEpoch() + d;
        } else {
          timespec now{};
          clock_gettime(CLOCK_MONOTONIC, &now);
          deadline = absl::Now() + (d - absl::DurationFromTimespec(now));
        }
      }
      ASSIGN_OR_RETURN_ERRNO(uint32_t cur, t.mm().CopyInObj<uint32_t>(addr));
      if (cur != val) return Errno{EAGAIN};
      SysStatus s = table.Wait(t, key, bitset, deadline);
      if (!s.ok()) return Errno{s.error() == EINTR ? kERestartSys : s.error()};
      return 0;
    }
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET: {
      uint32_t bitset = op == FUTEX_WAKE ? FUTEX_BITSET_MATCH_ANY : a.u32(5);
      if (bitset == 0) return Errno{EINVAL};
      int n = static_cast<int>(std::min<uint32_t>(val, INT32_MAX));
      return static_cast<uint64_t>(table.Wake(key, n, bitset));
    }
    default:
      return Errno{ENOSYS};
  }
}

}  // namespace usentry::sentry
