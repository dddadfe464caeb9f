// Tests of strace-style formatting against a fake app memory.
#include "sentry/syscalls/strace.h"

#include <cerrno>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace usentry::sentry {
namespace {

// App memory as a few disjoint regions; reading stops at a region's end.
class FakeMemory {
 public:
  void Put(uint64_t addr, std::string bytes) { regions_[addr] = std::move(bytes); }

  ReadAppMemory Reader() {
    return [this](uint64_t addr, size_t max) -> std::optional<std::string> {
      ++reads_;
      auto it = regions_.upper_bound(addr);
      if (it == regions_.begin()) return std::nullopt;
      --it;
      const uint64_t off = addr - it->first;
      if (off >= it->second.size()) return std::nullopt;
      return it->second.substr(off, max);
    };
  }
  int reads() const { return reads_; }

 private:
  std::map<uint64_t, std::string> regions_;
  int reads_ = 0;
};

// Rows with the same shape as table.cc's (the formatter is independent of the table).
constexpr SyscallInfo kRead{0, "read", nullptr, Support::kFull, "", "fbu"};
constexpr SyscallInfo kWrite{1, "write", nullptr, Support::kFull, "", "fbu"};
constexpr SyscallInfo kOpen{2, "open", nullptr, Support::kFull, "", "som"};
constexpr SyscallInfo kMmap{9, "mmap", nullptr, Support::kFull, "", "xuPMfx"};
constexpr SyscallInfo kBrk{12, "brk", nullptr, Support::kFull, "", "x"};
constexpr SyscallInfo kSigaction{13, "rt_sigaction", nullptr, Support::kFull, "", "Sppu"};
constexpr SyscallInfo kAccess{21, "access", nullptr, Support::kFull, "", "so"};
constexpr SyscallInfo kGetpid{39, "getpid", nullptr, Support::kFull, "", ""};
constexpr SyscallInfo kKill{62, "kill", nullptr, Support::kFull, "", "dS"};
constexpr SyscallInfo kUmask{95, "umask", nullptr, Support::kFull, "", "m"};
constexpr SyscallInfo kOpenat{257, "openat", nullptr, Support::kFull, "", "fsom"};
constexpr SyscallInfo kDup3{292, "dup3", nullptr, Support::kFull, "", "ffo"};
constexpr SyscallInfo kUnused{999, "odd", nullptr, Support::kFull, "", "d-d"};

constexpr uint64_t kPath = 0x10000;
constexpr uint64_t kBuf = 0x20000;

TEST(Strace, OpenatWithNamedFlags) {
  FakeMemory mem;
  mem.Put(kPath, std::string("/etc/passwd\0junk", 16));
  SyscallArgValues args = {static_cast<uint64_t>(-100), kPath, 02000000, 0, 0, 0};
  EXPECT_EQ(FormatSyscallEntry(kOpenat, args, mem.Reader()),
            "openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC)");
  EXPECT_EQ(FormatSyscallExit(kOpenat, args, 3, mem.Reader()),
            "openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC) = 3");
  EXPECT_EQ(FormatSyscallExit(kOpenat, args, -ENOENT, mem.Reader()),
            "openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file "
            "or directory)");
}

TEST(Strace, OpenShowsModeOnlyWhenCreating) {
  FakeMemory mem;
  mem.Put(kPath, std::string("out.txt\0", 8));
  SyscallArgValues create = {kPath, 01 | 0100 | 01000, 0644, 0, 0, 0};
  EXPECT_EQ(FormatSyscallEntry(kOpen, create, mem.Reader()),
            "open(\"out.txt\", O_WRONLY|O_CREAT|O_TRUNC, 0644)");
  SyscallArgValues plain = {kPath, 02 | 04000 | 0200000, 0, 0, 0, 0};
  EXPECT_EQ(FormatSyscallEntry(kOpen, plain, mem.Reader()),
            "open(\"out.txt\", O_RDWR|O_NONBLOCK|O_DIRECTORY)");
  SyscallArgValues odd = {kPath, 04010000 | 0x80000000, 0, 0, 0, 0};
  EXPECT_EQ(FormatSyscallEntry(kOpen, odd, mem.Reader()),
            "open(\"out.txt\", O_RDONLY|O_SYNC|0x80000000)");
}

TEST(Strace, FlagArgumentsOfOtherCalls) {
  FakeMemory mem;
  mem.Put(kPath, std::string("/bin\0", 5));
  EXPECT_EQ(FormatSyscallEntry(kDup3, {3, 4, 02000000, 0, 0, 0}, mem.Reader()),
            "dup3(3, 4, O_CLOEXEC)");
  EXPECT_EQ(FormatSyscallEntry(kDup3, {3, 4, 0, 0, 0, 0}, mem.Reader()), "dup3(3, 4, 0)");
  EXPECT_EQ(FormatSyscallEntry(kAccess, {kPath, 4 | 1, 0, 0, 0, 0}, mem.Reader()),
            "access(\"/bin\", R_OK|X_OK)");
  EXPECT_EQ(FormatSyscallEntry(kAccess, {kPath, 0, 0, 0, 0, 0}, mem.Reader()),
            "access(\"/bin\", F_OK)");
  EXPECT_EQ(FormatSyscallEntry(kUmask, {022, 0, 0, 0, 0, 0}, mem.Reader()), "umask(022)");
}

TEST(Strace, ReadBufferOnlyAfterTheCall) {
  FakeMemory mem;
  mem.Put(kBuf, "abc");
  SyscallArgValues args = {3, kBuf, 4096, 0, 0, 0};
  EXPECT_TRUE(SyscallHasOutputBuffer(kRead));
  EXPECT_EQ(FormatSyscallEntry(kRead, args, mem.Reader()), "read(3, 0x20000, 4096)");
  EXPECT_EQ(FormatSyscallExit(kRead, args, 3, mem.Reader()), "read(3, \"abc\", 4096) = 3");
  EXPECT_EQ(FormatSyscallExit(kRead, args, -EAGAIN, mem.Reader()),
            "read(3, 0x20000, 4096) = -1 EAGAIN (Resource temporarily unavailable)");
  EXPECT_EQ(FormatSyscallExit(kRead, args, 0, mem.Reader()), "read(3, \"\", 4096) = 0");
}

TEST(Strace, WriteBufferEscapedAndTruncated) {
  FakeMemory mem;
  mem.Put(kBuf, std::string("hi\n\t\"\\\x7f\x01"
                            "2",
                            9));
  EXPECT_FALSE(SyscallHasOutputBuffer(kWrite));
  SyscallArgValues args = {1, kBuf, 9, 0, 0, 0};
  EXPECT_EQ(FormatSyscallExit(kWrite, args, 9, mem.Reader()),
            "write(1, \"hi\\n\\t\\\"\\\\\\177\\0012\", 9) = 9");

  std::string long_text(100, 'x');
  mem.Put(kBuf, long_text);
  SyscallArgValues big = {1, kBuf, 100, 0, 0, 0};
  EXPECT_EQ(FormatSyscallEntry(kWrite, big, mem.Reader()),
            "write(1, \"" + std::string(32, 'x') + "\"..., 100)");
}

TEST(Strace, Strings) {
  FakeMemory mem;
  std::string exact(32, 'a');
  mem.Put(kPath, exact + '\0');
  EXPECT_EQ(FormatSyscallEntry(kAccess, {kPath, 0, 0, 0, 0, 0}, mem.Reader()),
            "access(\"" + exact + "\", F_OK)");
  mem.Put(kPath, exact + "b");  // 33 bytes, no NUL
  EXPECT_EQ(FormatSyscallEntry(kAccess, {kPath, 0, 0, 0, 0, 0}, mem.Reader()),
            "access(\"" + exact + "\"..., F_OK)");
  // NULL and unreadable pointers.
  EXPECT_EQ(FormatSyscallEntry(kAccess, {0, 0, 0, 0, 0, 0}, mem.Reader()), "access(NULL, F_OK)");
  EXPECT_EQ(FormatSyscallEntry(kAccess, {0xdead0000, 0, 0, 0, 0, 0}, mem.Reader()),
            "access(0xdead0000, F_OK)");
}

TEST(Strace, ReaderThatStopsAtNul) {
  // A reader returning only the string, without its NUL: no "..." for short strings.
  ReadAppMemory reader = [](uint64_t addr, size_t max) -> std::optional<std::string> {
    if (addr == kPath) return std::string("/etc/hosts").substr(0, max);
    if (addr == kBuf) return std::string(40, 'y').substr(0, max);
    return std::nullopt;
  };
  EXPECT_EQ(FormatSyscallEntry(kAccess, {kPath, 0, 0, 0, 0, 0}, reader),
            "access(\"/etc/hosts\", F_OK)");
  EXPECT_EQ(FormatSyscallEntry(kAccess, {kBuf, 0, 0, 0, 0, 0}, reader),
            "access(\"" + std::string(32, 'y') + "\"..., F_OK)");
}

TEST(Strace, MmapAndAddressResults) {
  FakeMemory mem;
  SyscallArgValues anon = {0, 8192, 0x1 | 0x2, 0x2 | 0x20, static_cast<uint64_t>(-1), 0};
  EXPECT_EQ(FormatSyscallExit(kMmap, anon, 0x7f0000001000, mem.Reader()),
            "mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = "
            "0x7f0000001000");
  SyscallArgValues none = {0x400000, 4096, 0, 0x1 | 0x10, 3, 0x1000};
  EXPECT_EQ(FormatSyscallEntry(kMmap, none, mem.Reader()),
            "mmap(0x400000, 4096, PROT_NONE, MAP_SHARED|MAP_FIXED, 3, 0x1000)");
  EXPECT_EQ(FormatSyscallExit(kMmap, anon, -ENOMEM, mem.Reader()),
            "mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = -1 ENOMEM "
            "(Cannot allocate memory)");
  EXPECT_EQ(FormatSyscallExit(kBrk, {0, 0, 0, 0, 0, 0}, 0x555555559000, mem.Reader()),
            "brk(NULL) = 0x555555559000");
}

TEST(Strace, SignalsPointersAndOthers) {
  FakeMemory mem;
  EXPECT_EQ(FormatSyscallExit(kKill, {42, 15, 0, 0, 0, 0}, 0, mem.Reader()),
            "kill(42, SIGTERM) = 0");
  EXPECT_EQ(FormatSyscallEntry(kKill, {42, 0, 0, 0, 0, 0}, mem.Reader()), "kill(42, 0)");
  EXPECT_EQ(FormatSyscallEntry(kKill, {42, 34, 0, 0, 0, 0}, mem.Reader()), "kill(42, SIGRTMIN+2)");
  EXPECT_EQ(FormatSyscallEntry(kSigaction, {2, 0x7ffc0010, 0, 8, 0, 0}, mem.Reader()),
            "rt_sigaction(SIGINT, 0x7ffc0010, NULL, 8)");
  EXPECT_EQ(FormatSyscallExit(kGetpid, {}, 7, mem.Reader()), "getpid() = 7");
  EXPECT_EQ(FormatSyscallEntry(kUnused, {static_cast<uint64_t>(-5), 9, 1, 0, 0, 0}, mem.Reader()),
            "odd(-5, 1)");
}

TEST(Strace, Results) {
  EXPECT_EQ(FormatSyscallResult(kRead, 0), "= 0");
  EXPECT_EQ(FormatSyscallResult(kRead, -EBADF), "= -1 EBADF (Bad file descriptor)");
  EXPECT_EQ(FormatSyscallResult(kRead, -512),
            "= ? ERESTARTSYS (To be restarted if SA_RESTART is set)");
  EXPECT_EQ(FormatSyscallResult(kRead, -4000), "= -1 E4000 (Unknown error)");
  EXPECT_EQ(FormatSyscallResult(kRead, -5000), "= -5000");  // not an errno
}

TEST(Strace, QuoteString) {
  EXPECT_EQ(QuoteString(std::string("\177ELF\2\1\1\0\0", 9)), "\"\\177ELF\\2\\1\\1\\0\\0\"");
  EXPECT_EQ(QuoteString("abcdef", 3), "\"abc\"...");
  EXPECT_EQ(QuoteString("ab", 3, true), "\"ab\"...");
}

}  // namespace
}  // namespace usentry::sentry
