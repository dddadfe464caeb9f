// futex(2): WAIT/WAKE with bitsets and timeouts, REQUEUE/CMP_REQUEUE and WAKE_OP.
// Keys (FutexKeyFor): private futexes by (address space, address), so the threads of a
// process meet; shared ones in MAP_SHARED memory by the page, so processes meet. PI
// operations return ENOSYS.
#include <linux/futex.h>

#include <atomic>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_info.h"

namespace usentry::sentry {

namespace {

SysResult<std::optional<absl::Time>> Deadline(Task& t, mm::GuestAddr ts_addr, bool relative,
                                              bool realtime) {
  if (ts_addr.IsNull()) return std::optional<absl::Time>();
  ASSIGN_OR_RETURN_ERRNO(timespec ts, t.mm().CopyInObj<timespec>(ts_addr));
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return Errno{EINVAL};
  absl::Duration d = absl::DurationFromTimespec(ts);
  if (relative) return std::optional<absl::Time>(absl::Now() + d);  // on CLOCK_MONOTONIC
  if (realtime) return std::optional<absl::Time>(absl::UnixEpoch() + d);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::optional<absl::Time>(absl::Now() + (d - absl::DurationFromTimespec(now)));
}

// FUTEX_WAKE_OP: *uaddr2 = oldval OP oparg atomically; returns oldval.
SysResult<uint32_t> ApplyWakeOp(Task& t, mm::GuestAddr addr2, uint32_t encoded) {
  int op = (encoded >> 28) & 7;
  bool shift = (encoded >> 28) & 8;
  // oparg and cmparg are 12-bit signed fields.
  int32_t oparg = static_cast<int32_t>(encoded << 8) >> 20;
  if (shift) oparg = static_cast<int32_t>(1u << (oparg & 31));  // Linux masks a bad shift
  if (op > FUTEX_OP_XOR) return Errno{ENOSYS};
  ASSIGN_OR_RETURN_ERRNO(uint32_t * word, FutexWordPtr(t.mm(), addr2));
  std::atomic_ref<uint32_t> ref(*word);
  uint32_t arg = static_cast<uint32_t>(oparg);
  uint32_t old = ref.load();
  while (true) {
    uint32_t next = 0;
    switch (op) {
      case FUTEX_OP_SET:
        next = arg;
        break;
      case FUTEX_OP_ADD:
        next = old + arg;
        break;
      case FUTEX_OP_OR:
        next = old | arg;
        break;
      case FUTEX_OP_ANDN:
        next = old & ~arg;
        break;
      case FUTEX_OP_XOR:
        next = old ^ arg;
        break;
    }
    if (ref.compare_exchange_weak(old, next)) return old;
  }
}

SysResult<bool> WakeOpCompare(uint32_t old, uint32_t encoded) {
  int cmp = (encoded >> 24) & 15;
  int32_t cmparg = static_cast<int32_t>(encoded << 20) >> 20;
  int32_t o = static_cast<int32_t>(old);
  switch (cmp) {
    case FUTEX_OP_CMP_EQ:
      return o == cmparg;
    case FUTEX_OP_CMP_NE:
      return o != cmparg;
    case FUTEX_OP_CMP_LT:
      return o < cmparg;
    case FUTEX_OP_CMP_LE:
      return o <= cmparg;
    case FUTEX_OP_CMP_GT:
      return o > cmparg;
    case FUTEX_OP_CMP_GE:
      return o >= cmparg;
    default:
      return Errno{ENOSYS};
  }
}

int Count(uint32_t v) { return static_cast<int>(std::min<uint32_t>(v, INT32_MAX)); }

}  // namespace

SyscallResult SysFutex(Task& t, const SyscallArgs& a) {
  mm::GuestAddr addr = a.ptr(0);
  int op = a.i32(1) & FUTEX_CMD_MASK;
  bool realtime = a.i32(1) & FUTEX_CLOCK_REALTIME;
  uint32_t val = a.u32(2);
  if (addr.value() % 4 != 0) return Errno{EINVAL};
  if (realtime && op != FUTEX_WAIT_BITSET && op != FUTEX_WAIT_REQUEUE_PI && op != FUTEX_LOCK_PI2) {
    return Errno{ENOSYS};
  }
  const bool private_op = a.i32(1) & FUTEX_PRIVATE_FLAG;
  auto key_of = [&](mm::GuestAddr at) { return FutexKeyFor(t.mm(), at, private_op); };
  ASSIGN_OR_RETURN_ERRNO(FutexTable::Key key, key_of(addr));
  FutexTable& table = t.kernel().futexes();
  switch (op) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET: {
      uint32_t bitset = op == FUTEX_WAIT ? FUTEX_BITSET_MATCH_ANY : a.u32(5);
      if (bitset == 0) return Errno{EINVAL};
      ASSIGN_OR_RETURN_ERRNO(std::optional<absl::Time> deadline,
                             Deadline(t, a.ptr(3), op == FUTEX_WAIT, realtime));
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
      return static_cast<uint64_t>(table.Wake(key, Count(val), bitset));
    }
    case FUTEX_REQUEUE:
    case FUTEX_CMP_REQUEUE: {
      // val: waiters to wake; the timeout argument holds how many to requeue.
      mm::GuestAddr addr2 = a.ptr(4);
      if (addr2.value() % 4 != 0) return Errno{EINVAL};
      if (static_cast<int32_t>(val) < 0 || a.i32(3) < 0) return Errno{EINVAL};
      if (op == FUTEX_CMP_REQUEUE) {
        ASSIGN_OR_RETURN_ERRNO(uint32_t cur, t.mm().CopyInObj<uint32_t>(addr));
        if (cur != a.u32(5)) return Errno{EAGAIN};
      }
      ASSIGN_OR_RETURN_ERRNO(FutexTable::Key key2, key_of(addr2));
      return static_cast<uint64_t>(table.Requeue(key, key2, Count(val), a.i32(3)));
    }
    case FUTEX_WAKE_OP: {
      mm::GuestAddr addr2 = a.ptr(4);
      if (addr2.value() % 4 != 0) return Errno{EINVAL};
      uint32_t encoded = a.u32(5);
      ASSIGN_OR_RETURN_ERRNO(uint32_t old, ApplyWakeOp(t, addr2, encoded));
      int woken = table.Wake(key, Count(val), FUTEX_BITSET_MATCH_ANY);
      ASSIGN_OR_RETURN_ERRNO(bool cond, WakeOpCompare(old, encoded));
      if (cond) {
        ASSIGN_OR_RETURN_ERRNO(FutexTable::Key key2, key_of(addr2));
        woken += table.Wake(key2, Count(a.u32(3)), FUTEX_BITSET_MATCH_ANY);
      }
      return static_cast<uint64_t>(woken);
    }
    default:
      // FUTEX_LOCK_PI, UNLOCK_PI, TRYLOCK_PI, WAIT_REQUEUE_PI, CMP_REQUEUE_PI, LOCK_PI2.
      return Errno{ENOSYS};
  }
}

}  // namespace usentry::sentry
