// Markdown rendering of the syscall table for docs/syscalls.md.
#include "sentry/syscalls/syscalls_doc.h"

#include "absl/strings/str_cat.h"

namespace usentry::sentry {
namespace {

constexpr Support kLevels[] = {Support::kFull, Support::kPartial, Support::kError,
                               Support::kUnimplemented};

// A note is free text; keep it inside its table cell.
std::string Cell(const char* text) {
  std::string out;
  for (const char* p = text != nullptr ? text : ""; *p != '\0'; ++p) {
    if (*p == '|') {
      out += "\\|";
    } else if (*p == '\n' || *p == '\r') {
      out += ' ';
    } else {
      out += *p;
    }
  }
  return out;
}

}  // namespace

const char* SupportName(Support support) {
  switch (support) {
    case Support::kFull:
      return "full";
    case Support::kPartial:
      return "partial";
    case Support::kError:
      return "error";
    case Support::kUnimplemented:
      return "unimplemented";
  }
  return "unknown";
}

std::string SyscallsMarkdown(absl::Span<const SyscallInfo> table) {
  std::string out =
      "# Syscall support\n\n"
      "Generated from `sentry/syscalls/table.cc` by `usentry syscalls --markdown`; do not "
      "edit by hand.\n\n"
      "- **full**: behaves as Linux does for everything the sandbox can express.\n"
      "- **partial**: works for common uses; the note says what is missing.\n"
      "- **error**: deliberately fails with a fixed errno (policy); the note says which.\n"
      "- **unimplemented**: returns ENOSYS; reported by name on stderr (once per run) with "
      "`--strace` or `--report-unsupported`.\n\n"
      "| Support | Syscalls |\n|---|---:|\n";
  for (Support level : kLevels) {
    size_t n = 0;
    for (const SyscallInfo& row : table) n += row.support == level;
    absl::StrAppend(&out, "| ", SupportName(level), " | ", n, " |\n");
  }
  absl::StrAppend(&out, "| **total** | ", table.size(), " |\n\n");

  out += "| # | Name | Support | Note |\n|---:|---|---|---|\n";
  for (const SyscallInfo& row : table) {
    absl::StrAppend(&out, "| ", row.nr, " | `", row.name, "` | ", SupportName(row.support), " | ",
                    Cell(row.note), " |\n");
  }
  return out;
}

std::string SyscallsMarkdown() { return SyscallsMarkdown(SyscallTable()); }

}  // namespace usentry::sentry
