// fork and private memory: after fork each process sees its own copy of every private
// page (anonymous, heap, file MAP_PRIVATE, pages written by syscalls), shared mappings
// stay shared, and the copies behave under mprotect, madvise, mremap and brk.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr size_t kMiB = 1 << 20;

// Runs `child` in a forked child and returns its exit code (0 = its checks passed).
template <typename F>
int InChild(F child) {
  pid_t pid = fork();
  if (pid == 0) _exit(child());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

char* MapAnon(size_t len, int prot = PROT_READ | PROT_WRITE, int flags = MAP_PRIVATE) {
  void* p = mmap(nullptr, len, prot, flags | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

TEST(ForkMemory, WritesOnEitherSideStayOnThatSide) {
  constexpr size_t kLen = 64 * kMiB;
  char* p = MapAnon(kLen);
  ASSERT_NE(p, nullptr);
  for (size_t i = 0; i < kLen; i += 4096) p[i] = 'p';
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    char go;
    if (read(fds[0], &go, 1) != 1) _exit(10);
    // The parent has written every other MiB since the fork: still 'p' here.
    for (size_t i = 0; i < kLen; i += kMiB) {
      if (p[i] != 'p') _exit(11);
      p[i] = 'c';
    }
    for (size_t i = 0; i < kLen; i += kMiB) {
      if (p[i] != 'c') _exit(12);
    }
    _exit(0);
  }
  for (size_t i = 0; i < kLen; i += 2 * kMiB) p[i] = 'P';
  ASSERT_EQ(write(fds[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (size_t i = 0; i < kLen; i += kMiB) {
    ASSERT_EQ(p[i], (i / kMiB) % 2 == 0 ? 'P' : 'p') << i;
  }
  close(fds[0]);
  close(fds[1]);
  munmap(p, kLen);
}

TEST(ForkMemory, ASyscallWritingTheChildsBufferLeavesTheParentsAlone) {
  static char buf[4096] = "parent";
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ASSERT_EQ(write(fds[1], "child!", 7), 7);
  EXPECT_EQ(InChild([&] {
              if (read(fds[0], buf, 7) != 7) return 1;  // the sentry writes this copy
              return strcmp(buf, "child!") == 0 ? 0 : 2;
            }),
            0);
  EXPECT_STREQ(buf, "parent");
  close(fds[0]);
  close(fds[1]);
}

TEST(ForkMemory, SharedMappingsStayShared) {
  char* shared = MapAnon(4096, PROT_READ | PROT_WRITE, MAP_SHARED);
  char* priv = MapAnon(4096);
  ASSERT_NE(shared, nullptr);
  ASSERT_NE(priv, nullptr);
  EXPECT_EQ(InChild([&] {
              shared[0] = 's';
              priv[0] = 'x';
              return 0;
            }),
            0);
  EXPECT_EQ(shared[0], 's');
  EXPECT_EQ(priv[0], 0);
}

TEST(ForkMemory, ReadOnlyPagesMadeWritableInTheChildAreItsOwn) {
  char* p = MapAnon(3 * 4096);
  ASSERT_NE(p, nullptr);
  memset(p, 'r', 3 * 4096);
  ASSERT_SYS_OK(mprotect(p, 3 * 4096, PROT_READ));
  EXPECT_EQ(InChild([&] {
              if (mprotect(p + 4096, 4096, PROT_READ | PROT_WRITE) != 0) return 1;
              p[4096] = 'w';
              return p[4096] == 'w' && p[0] == 'r' ? 0 : 2;
            }),
            0);
  EXPECT_EQ(p[4096], 'r');
}

TEST(ForkMemory, WritingReadOnlyInheritedPagesStillFaults) {
  char* p = MapAnon(4096);
  ASSERT_NE(p, nullptr);
  p[0] = 'r';
  ASSERT_SYS_OK(mprotect(p, 4096, PROT_READ));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    *static_cast<volatile char*>(p) = 'w';
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(p[0], 'r');
}

TEST(ForkMemory, DontNeedInTheChildZeroesOnlyTheChilds) {
  char* p = MapAnon(2 * 4096);
  ASSERT_NE(p, nullptr);
  p[0] = 'a';
  p[4096] = 'b';
  EXPECT_EQ(InChild([&] {
              if (madvise(p, 4096, MADV_DONTNEED) != 0) return 1;
              return p[0] == 0 && p[4096] == 'b' ? 0 : 2;
            }),
            0);
  EXPECT_EQ(p[0], 'a');
}

TEST(ForkMemory, MremapAfterPartlyWritingMovesEverything) {
  constexpr size_t kLen = 1 * kMiB;
  char* p = MapAnon(kLen);
  ASSERT_NE(p, nullptr);
  for (size_t i = 0; i < kLen; i += 4096) p[i] = static_cast<char>(i / 4096);
  EXPECT_EQ(InChild([&] {
              p[kLen / 2] = 'c';  // a copy in the middle
              void* q = mremap(p, kLen, 4 * kLen, MREMAP_MAYMOVE);
              if (q == MAP_FAILED) return 1;
              char* n = static_cast<char*>(q);
              for (size_t i = 0; i < kLen; i += 4096) {
                const char want = i == kLen / 2 ? 'c' : static_cast<char>(i / 4096);
                if (n[i] != want) return 2;
              }
              n[3 * kLen] = 'x';
              return 0;
            }),
            0);
  EXPECT_EQ(p[kLen / 2], static_cast<char>(kLen / 2 / 4096));
}

TEST(ForkMemory, TheHeapGrowsSeparately) {
  char* top = static_cast<char*>(sbrk(0));
  ASSERT_NE(sbrk(64 * 4096), reinterpret_cast<void*>(-1));
  memset(top, 'h', 64 * 4096);
  EXPECT_EQ(InChild([&] {
              top[0] = 'c';
              char* more = static_cast<char*>(sbrk(1 * kMiB));
              if (more == reinterpret_cast<char*>(-1)) return 1;
              memset(more, 'C', kMiB);
              return top[4096] == 'h' ? 0 : 2;
            }),
            0);
  char* more = static_cast<char*>(sbrk(1 * kMiB));
  ASSERT_NE(more, reinterpret_cast<char*>(-1));
  EXPECT_EQ(more[0], 0);  // not the child's 'C'
  EXPECT_EQ(top[0], 'h');
}

TEST(ForkMemory, PrivateFileMappingsAreCopiedToo) {
  char path[] = "/tmp/fork_memory_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_SYS_OK(fd);
  unlink(path);
  ASSERT_EQ(pwrite(fd, "file", 4, 0), 4);
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  char* p = static_cast<char*>(m);
  p[0] = 'F';
  EXPECT_EQ(InChild([&] {
              if (p[0] != 'F') return 1;
              p[1] = 'C';
              return 0;
            }),
            0);
  EXPECT_EQ(std::string(p, 4), "File");
  char back[4];
  ASSERT_EQ(pread(fd, back, 4, 0), 4);
  EXPECT_EQ(std::string(back, 4), "file");
  close(fd);
}

TEST(ForkMemory, GrandchildrenSeeTheirParentsMemory) {
  char* p = MapAnon(4096);
  ASSERT_NE(p, nullptr);
  p[0] = '0';
  EXPECT_EQ(InChild([&] {
              p[0] = '1';
              int rc = InChild([&] {
                if (p[0] != '1') return 1;
                p[0] = '2';
                return 0;
              });
              return rc == 0 && p[0] == '1' ? 0 : 2;
            }),
            0);
  EXPECT_EQ(p[0], '0');
}

// Linux shows one VMA for a mapping whatever the child wrote of it.
TEST(ForkMemory, ProcMapsShowsOneLineForAPartlyCopiedMapping) {
  constexpr size_t kLen = 16 * 65536;
  char* p = MapAnon(kLen);
  ASSERT_NE(p, nullptr);
  memset(p, 1, kLen);
  EXPECT_EQ(InChild([&] {
              p[kLen / 2] = 2;
              std::ifstream maps("/proc/self/maps");
              std::string line;
              int lines = 0;
              const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
              while (std::getline(maps, line)) {
                const uintptr_t start = std::stoull(line, nullptr, 16);
                const uintptr_t end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
                if (start < lo + kLen && end > lo) lines++;
              }
              return lines;
            }),
            1);
  munmap(p, kLen);
}

}  // namespace
}  // namespace syscall_test
