// strace-style rendering of one syscall (`--strace`): "openat(AT_FDCWD, "/etc/passwd",
// O_RDONLY|O_CLOEXEC) = 3". Pure formatting; app memory is read through a callback.
#ifndef USENTRY_SENTRY_SYSCALLS_STRACE_H_
#define USENTRY_SENTRY_SYSCALLS_STRACE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sentry/syscalls/table.h"

namespace usentry::sentry {

// Reads up to `max` bytes of app memory at `addr`; nullopt if `addr` itself is not
// readable. Returns fewer bytes only if the memory after them is not readable. For
// string arguments the formatter also accepts a reader that stops at the NUL, but
// buffer arguments ('b': write's data) may contain NULs, so a reader that stops at the
// first NUL shows binary data cut short.
using ReadAppMemory = std::function<std::optional<std::string>(uint64_t addr, size_t max)>;

// Raw register values of the six syscall arguments (SyscallArgs::a).
using SyscallArgValues = uint64_t[6];

// Strings and buffers longer than this are cut and followed by "..." (strace's -s 32).
inline constexpr size_t kStraceMaxString = 32;

// "name(arg, ...)" as it can be shown before the call runs: buffers the call fills in
// (read's) are shown as their address. Arguments are formatted by the letters of
// info.args (legend in table.h); a row with no letters prints "name()".
std::string FormatSyscallEntry(const SyscallInfo& info, const SyscallArgValues& args,
                               const ReadAppMemory& read_mem);

// The full line after the call: "read(3, "abc", 4096) = 3". `result` is the value
// placed in rax (a negative errno on failure). Input strings are read again, so for a
// call that replaces the address space (a successful execve) print
// FormatSyscallEntry(...) + " " + FormatSyscallResult(...) with the entry text kept;
// for calls that never return (exit, exit_group) print the entry followed by " = ?".
std::string FormatSyscallExit(const SyscallInfo& info, const SyscallArgValues& args, int64_t result,
                              const ReadAppMemory& read_mem);

// "= 3", "= 0x7f12a000" (address results: mmap, brk, ...), "= -1 ENOENT (No such file
// or directory)", "= ? ERESTARTSYS (To be restarted if SA_RESTART is set)".
std::string FormatSyscallResult(const SyscallInfo& info, int64_t result);

// True if the call writes into one of its buffer arguments, so its line is only
// complete after the call (callers can print entries of the others right away).
bool SyscallHasOutputBuffer(const SyscallInfo& info);

// strace's quoting: "..." with C escapes, non-printable bytes as octal; at most
// `max` bytes of `data`, then "..." after the closing quote if `truncated` or longer.
std::string QuoteString(std::string_view data, size_t max = kStraceMaxString,
                        bool truncated = false);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_STRACE_H_
