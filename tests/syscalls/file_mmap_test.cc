// Private mappings of host files (the program's own executable, the libraries in the
// default view): the bytes are the file's wherever the sandbox maps them from (systrap
// maps unfilled read-only chunks from the host's page cache), writes after mprotect stay
// private, syscalls and forked children see the same bytes, and partial unmaps and
// remaps behave as on Linux.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr size_t kPage = 4096;

class FileMmapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd_, 0) << strerror(errno);
    struct stat st;
    ASSERT_EQ(fstat(fd_, &st), 0);
    size_ = static_cast<size_t>(st.st_size);
    ASSERT_GE(size_, 16 * kPage);
    bytes_.resize(size_);
    ASSERT_EQ(pread(fd_, bytes_.data(), size_, 0), static_cast<ssize_t>(size_));
  }
  void TearDown() override { close(fd_); }

  uint8_t* Map(size_t len, int prot, off_t off, void* at = nullptr, int extra = 0) {
    void* p = mmap(at, len, prot, MAP_PRIVATE | extra, fd_, off);
    EXPECT_NE(p, MAP_FAILED) << strerror(errno);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  bool SameAsFile(const uint8_t* p, size_t off, size_t len) const {
    return std::memcmp(p, bytes_.data() + off, len) == 0;
  }

  int fd_ = -1;
  size_t size_ = 0;
  std::vector<uint8_t> bytes_;
};

TEST_F(FileMmapTest, ReadOnlyMappingHoldsTheFilesBytes) {
  uint8_t* p = Map(size_, PROT_READ, 0);
  ASSERT_NE(p, nullptr);
  // Last page first: nothing depends on the order chunks are first touched in.
  for (size_t off = (size_ - 1) / kPage * kPage;; off -= kPage) {
    ASSERT_TRUE(SameAsFile(p + off, off, std::min(kPage, size_ - off))) << "offset " << off;
    if (off == 0) break;
  }
  EXPECT_EQ(munmap(p, size_), 0);
}

TEST_F(FileMmapTest, ExecutableMappingAtAnOffsetHoldsTheFilesBytes) {
  uint8_t* p = Map(3 * kPage, PROT_READ | PROT_EXEC, 5 * kPage);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(SameAsFile(p, 5 * kPage, 3 * kPage));
  EXPECT_EQ(munmap(p, 3 * kPage), 0);
}

TEST_F(FileMmapTest, WritesAfterMprotectStayPrivate) {
  uint8_t* p = Map(4 * kPage, PROT_READ, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p[kPage + 1], bytes_[kPage + 1]);  // read before it becomes writable
  ASSERT_EQ(mprotect(p, 4 * kPage, PROT_READ | PROT_WRITE), 0);
  for (size_t i = 0; i < 4; ++i) p[i * kPage + 7] = static_cast<uint8_t>(0xa0 + i);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p[i * kPage + 7], 0xa0 + i);
    EXPECT_EQ(p[i * kPage + 8], bytes_[i * kPage + 8]);
  }
  // The file and a second mapping of it still hold the original bytes.
  uint8_t b = 0;
  ASSERT_EQ(pread(fd_, &b, 1, kPage + 7), 1);
  EXPECT_EQ(b, bytes_[kPage + 7]);
  uint8_t* q = Map(4 * kPage, PROT_READ, 0);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(SameAsFile(q, 0, 4 * kPage));
  // Back to read-only: written pages keep the writes, the others show the file.
  ASSERT_EQ(mprotect(p, 4 * kPage, PROT_READ), 0);
  EXPECT_EQ(p[2 * kPage + 7], 0xa2);
  EXPECT_EQ(p[3 * kPage + 100], bytes_[3 * kPage + 100]);
  EXPECT_EQ(munmap(p, 4 * kPage), 0);
  EXPECT_EQ(munmap(q, 4 * kPage), 0);
}

TEST_F(FileMmapTest, WritingToAReadOnlyMappingIsSigsegv) {
  uint8_t* p = Map(kPage, PROT_READ, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(InChild([p] {
              p[10] = 1;
              return 0;
            }),
            128 + SIGSEGV);
  EXPECT_EQ(munmap(p, kPage), 0);
}

TEST_F(FileMmapTest, SyscallsReadTheMappedBytes) {
  uint8_t* p = Map(8 * kPage, PROT_READ, 0);
  ASSERT_NE(p, nullptr);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const size_t off = 3 * kPage + 17, n = 3000;  // straddles a page boundary
  ASSERT_EQ(write(pipefd[1], p + off, n), static_cast<ssize_t>(n));
  std::vector<uint8_t> got(n);
  ASSERT_EQ(read(pipefd[0], got.data(), n), static_cast<ssize_t>(n));
  EXPECT_TRUE(SameAsFile(got.data(), off, n));
  close(pipefd[0]);
  close(pipefd[1]);
  EXPECT_EQ(munmap(p, 8 * kPage), 0);
}

TEST_F(FileMmapTest, ForkedChildSeesTheFilesBytes) {
  uint8_t* p = Map(size_, PROT_READ, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p[0], bytes_[0]);  // the parent touched the first page, not the rest
  EXPECT_EQ(InChild([&] { return SameAsFile(p, 0, size_) ? 0 : 1; }), 0);
  EXPECT_TRUE(SameAsFile(p, 0, size_));
  EXPECT_EQ(munmap(p, size_), 0);
}

TEST_F(FileMmapTest, PartialUnmapAndFixedRemapKeepTheRest) {
  uint8_t* p = Map(4 * kPage, PROT_READ, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(munmap(p + kPage, kPage), 0);
  void* anon = mmap(p + 2 * kPage, kPage, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(anon, p + 2 * kPage);
  EXPECT_TRUE(SameAsFile(p, 0, kPage));
  EXPECT_TRUE(SameAsFile(p + 3 * kPage, 3 * kPage, kPage));
  EXPECT_EQ(p[2 * kPage + 5], 0);
  EXPECT_EQ(InChild([p] { return p[kPage] == 0xfe ? 2 : 3; }), 128 + SIGSEGV);
  // A file page mapped again over the anonymous one.
  uint8_t* again = Map(kPage, PROT_READ, 9 * kPage, p + 2 * kPage, MAP_FIXED);
  ASSERT_EQ(again, p + 2 * kPage);
  EXPECT_TRUE(SameAsFile(again, 9 * kPage, kPage));
  EXPECT_EQ(munmap(p, 4 * kPage), 0);
}

TEST_F(FileMmapTest, BytesPastTheEndInTheLastPageAreZero) {
  // Only a partial last page has bytes past the end; a build whose test binary happens
  // to end on a page boundary has none to check (natively and in the sandbox alike).
  if (size_ % kPage == 0) GTEST_SKIP() << "the executable's size is a multiple of the page size";
  const size_t last = size_ / kPage * kPage;
  uint8_t* p = Map(kPage, PROT_READ, static_cast<off_t>(last));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(SameAsFile(p, last, size_ - last));
  for (size_t i = size_ - last; i < kPage; ++i) ASSERT_EQ(p[i], 0) << "byte " << i;
  EXPECT_EQ(munmap(p, kPage), 0);
}

// More distinct files than a systrap stub keeps descriptors for (it closes the oldest;
// their mappings must stay).
TEST(FileMmapManyFilesTest, EveryLibraryMapsItsOwnBytes) {
  const char* dir = "/usr/lib/x86_64-linux-gnu";
  DIR* d = opendir(dir);
  ASSERT_NE(d, nullptr);
  struct Mapped {
    std::string path;
    uint8_t* p;
    uint8_t first[64];
  };
  std::vector<Mapped> maps;
  while (dirent* e = readdir(d)) {
    if (maps.size() == 100) break;
    std::string name = e->d_name;
    if (name.find(".so") == std::string::npos || e->d_type != DT_REG) continue;
    std::string path = std::string(dir) + "/" + name;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Mapped m{path, nullptr, {}};
    if (pread(fd, m.first, sizeof(m.first), 0) == sizeof(m.first)) {
      void* p = mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        m.p = static_cast<uint8_t*>(p);
        maps.push_back(m);
      }
    }
    close(fd);
  }
  closedir(d);
  ASSERT_GE(maps.size(), 70u) << "too few libraries in " << dir;
  for (const Mapped& m : maps) {
    EXPECT_EQ(std::memcmp(m.p, m.first, sizeof(m.first)), 0) << m.path;
    EXPECT_EQ(munmap(m.p, kPage), 0);
  }
}

}  // namespace
}  // namespace syscall_test
