// The syscall table: number -> name, handler, support level, note, strace argument
// formats. The data lives in table.cc (one row per x86-64 syscall); docs/syscalls.md is
// generated from it by `usentry syscalls --markdown`.
#ifndef USENTRY_SENTRY_SYSCALLS_TABLE_H_
#define USENTRY_SENTRY_SYSCALLS_TABLE_H_

#include "absl/types/span.h"
#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

enum class Support {
  kFull,           // behaves as Linux does for everything the sandbox can express
  kPartial,        // works for common uses; the note says what is missing
  kError,          // deliberately fails with a fixed errno (policy), the note says which
  kUnimplemented,  // returns ENOSYS and is reported by name
};

// Argument formats for --strace, one letter per argument:
//   d signed int    u unsigned     x hex         p pointer      s path/string (copied in)
//   f fd (AT_FDCWD shown by name)  o open flags  m mode (octal)  b buffer (length = next)
//   S signal number                P mmap prot   M mmap flags    - unused
struct SyscallInfo {
  int nr;
  const char* name;
  SyscallHandler handler;  // nullptr => ENOSYS
  Support support;
  const char* note;
  const char* args;
};

// Row for `nr`, or nullptr if the number is outside the table.
const SyscallInfo* LookupSyscall(int nr);
absl::Span<const SyscallInfo> SyscallTable();

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_TABLE_H_
