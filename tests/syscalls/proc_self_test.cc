// /proc/self/limits and /proc/self/smaps_rollup: what programs read from them (psutil,
// JVMs, test runners checking memory) follows the process's own rlimits and memory.
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

std::string ReadProc(const char* path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The line of /proc/self/limits that starts with `name`.
std::string LimitLine(const std::string& name) {
  std::istringstream in(ReadProc("/proc/self/limits"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size(), name) == 0) return line;
  }
  return "";
}

// A "Field:   N kB" value of smaps_rollup, in kB (-1 if absent).
long RollupKb(const std::string& field) {
  std::istringstream in(ReadProc("/proc/self/smaps_rollup"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      return std::stol(line.substr(field.size() + 1));
    }
  }
  return -1;
}

TEST(ProcSelf, LimitsHasTheHeaderAndEveryLimit) {
  const std::string text = ReadProc("/proc/self/limits");
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "Limit                     Soft Limit           Hard Limit           Units     ");
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 17);
  EXPECT_NE(LimitLine("Max realtime timeout"), "");
}

TEST(ProcSelf, LimitsFollowSetrlimit) {
  rlimit old;
  ASSERT_SYS_OK(getrlimit(RLIMIT_NOFILE, &old));
  rlimit lower{64, old.rlim_max};
  ASSERT_SYS_OK(setrlimit(RLIMIT_NOFILE, &lower));
  const std::string hard =
      old.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(old.rlim_max);
  char want[128];
  snprintf(want, sizeof(want), "%-25s %-20s %-20s %-10s", "Max open files", "64", hard.c_str(),
           "files");
  EXPECT_EQ(LimitLine("Max open files"), want);
  ASSERT_SYS_OK(setrlimit(RLIMIT_NOFILE, &old));
  rlimit core{0, 0};
  ASSERT_SYS_OK(setrlimit(RLIMIT_CORE, &core));
  snprintf(want, sizeof(want), "%-25s %-20s %-20s %-10s", "Max core file size", "0", "0", "bytes");
  EXPECT_EQ(LimitLine("Max core file size"), want);
}

TEST(ProcSelf, SmapsRollupCountsTouchedMemory) {
  const std::string text = ReadProc("/proc/self/smaps_rollup");
  const std::string head = text.substr(0, text.find('\n'));
  EXPECT_EQ(head.substr(head.size() - 8), "[rollup]");
  EXPECT_EQ(head.size(), 73u + 8u);
  const long rss = RollupKb("Rss"), anon = RollupKb("Anonymous");
  ASSERT_GT(rss, 0);
  ASSERT_GE(anon, 0);
  constexpr size_t kLen = 16 << 20;
  void* p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  memset(p, 1, kLen);
  EXPECT_GE(RollupKb("Rss") - rss, 15 * 1024);
  EXPECT_GE(RollupKb("Anonymous") - anon, 15 * 1024);
  EXPECT_GE(RollupKb("Private_Dirty"), 15 * 1024);
  EXPECT_LE(RollupKb("Pss"), RollupKb("Rss"));
  munmap(p, kLen);
  EXPECT_LT(RollupKb("Rss") - rss, 8 * 1024);
}

}  // namespace
}  // namespace syscall_test
