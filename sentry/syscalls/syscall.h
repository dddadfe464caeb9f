// What a syscall handler is: a free function (Task&, const SyscallArgs&) -> SyscallResult.
// Steps every handler follows: validate scalars, copy in, act, copy out, return a value
// or an errno. The table (table.cc) maps numbers to handlers.
#ifndef USENTRY_SENTRY_SYSCALLS_SYSCALL_H_
#define USENTRY_SENTRY_SYSCALLS_SYSCALL_H_

#include <cstdint>

#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/guest_addr.h"

namespace usentry::sentry {

struct SyscallArgs {
  int nr = 0;
  uint64_t a[6] = {};

  uint64_t u64(int i) const { return a[i]; }
  int64_t i64(int i) const { return static_cast<int64_t>(a[i]); }
  uint32_t u32(int i) const { return static_cast<uint32_t>(a[i]); }
  int32_t i32(int i) const { return static_cast<int32_t>(a[i]); }
  mm::GuestAddr ptr(int i) const { return mm::GuestAddr(a[i]); }
};

// The value placed in rax: a non-negative result, or an errno (returned as -errno).
using SyscallResult = SysResult<uint64_t>;
using SyscallHandler = SyscallResult (*)(Task&, const SyscallArgs&);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYSCALL_H_
