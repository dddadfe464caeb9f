// Tests of the Markdown rendering of a syscall table.
#include "sentry/syscalls/syscalls_doc.h"

#include "gtest/gtest.h"

namespace usentry::sentry {

// Stands in for table.cc, whose rows name every handler of the sentry.
constexpr SyscallInfo kFakeTable[] = {
    {39, "getpid", nullptr, Support::kFull, "", ""},
    {435, "clone3", nullptr, Support::kUnimplemented, "", "pu"},
};
absl::Span<const SyscallInfo> SyscallTable() { return kFakeTable; }

namespace {

TEST(SyscallsMarkdown, RendersTheSentryTable) {
  const std::string md = SyscallsMarkdown();
  EXPECT_NE(md.find("| 39 | `getpid` | full |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **total** | 2 |"), std::string::npos);
}

TEST(SyscallsMarkdown, CountsAndRows) {
  const SyscallInfo table[] = {
      {0, "read", nullptr, Support::kFull, "", "fbu"},
      {1, "write", nullptr, Support::kPartial, "no O_DIRECT | no splice", "fbu"},
      {2, "open", nullptr, Support::kUnimplemented, "", "som"},
      {101, "ptrace", nullptr, Support::kError, "EPERM: not in a sandbox", ""},
  };
  const std::string md = SyscallsMarkdown(table);
  EXPECT_NE(md.find("| full | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| partial | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| error | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| unimplemented | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| **total** | 4 |"), std::string::npos);
  EXPECT_NE(md.find("| 0 | `read` | full |  |\n"), std::string::npos);
  EXPECT_NE(md.find("| 1 | `write` | partial | no O_DIRECT \\| no splice |\n"), std::string::npos);
  EXPECT_NE(md.find("| 101 | `ptrace` | error | EPERM: not in a sandbox |\n"), std::string::npos);
  // Summary comes before the rows.
  EXPECT_LT(md.find("**total**"), md.find("`read`"));
}

}  // namespace
}  // namespace usentry::sentry
