// Renders the syscall table as Markdown: the generator of docs/syscalls.md
// (`usentry syscalls --markdown`).
#ifndef USENTRY_SENTRY_SYSCALLS_SYSCALLS_DOC_H_
#define USENTRY_SENTRY_SYSCALLS_SYSCALLS_DOC_H_

#include <string>

#include "absl/types/span.h"
#include "sentry/syscalls/table.h"

namespace usentry::sentry {

// "full", "partial", "error", "unimplemented".
const char* SupportName(Support support);

// A Markdown document: a title, a count of syscalls per support level, then one table
// row per syscall (number, name, support level, note), in the order of `table`.
std::string SyscallsMarkdown(absl::Span<const SyscallInfo> table);

// The same for the sentry's own table (SyscallTable()), for docs/syscalls.md.
std::string SyscallsMarkdown();

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYSCALLS_DOC_H_
