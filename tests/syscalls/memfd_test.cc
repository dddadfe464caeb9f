// memfd_create: anonymous files, their mappings, /proc/self/fd names and seals.
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

TEST(MemfdCreate, IsAnEmptyReadWriteRegularFile) {
  ScopedFd fd(memfd_create("plain", 0));
  ASSERT_SYS_OK(fd.get());
  struct stat st;
  ASSERT_SYS_OK(fstat(fd.get(), &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & O_ACCMODE, O_RDWR);
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), 0);
  ScopedFd ce(memfd_create("cloexec", MFD_CLOEXEC));
  ASSERT_SYS_OK(ce.get());
  EXPECT_EQ(fcntl(ce.get(), F_GETFD), FD_CLOEXEC);
}

TEST(MemfdCreate, ReadWriteSeekTruncate) {
  ScopedFd fd(memfd_create("rw", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_EQ(write(fd.get(), "hello world", 11), 11);
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_CUR), 11);
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_END), 11);
  char buf[16] = {};
  EXPECT_EQ(pread(fd.get(), buf, sizeof buf, 6), 5);
  EXPECT_STREQ(buf, "world");
  ASSERT_SYS_OK(ftruncate(fd.get(), 5));
  memset(buf, 0, sizeof buf);
  EXPECT_EQ(pread(fd.get(), buf, sizeof buf, 0), 5);
  EXPECT_STREQ(buf, "hello");
  ASSERT_SYS_OK(ftruncate(fd.get(), 8));  // grows with zeros, old bytes do not come back
  EXPECT_EQ(pread(fd.get(), buf, sizeof buf, 0), 8);
  EXPECT_EQ(std::string(buf, 8), std::string("hello\0\0\0", 8));
  EXPECT_ERRNO(ftruncate(fd.get(), -1), EINVAL);
}

TEST(MemfdCreate, SparseWriteFarAwayReadsZerosBetween) {
  ScopedFd fd(memfd_create("sparse", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_EQ(pwrite(fd.get(), "x", 1, 1 << 20), 1);
  struct stat st;
  ASSERT_SYS_OK(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_size, (1 << 20) + 1);
  char c = 1;
  EXPECT_EQ(pread(fd.get(), &c, 1, 4096), 1);
  EXPECT_EQ(c, 0);
}

// Growing far past what was written keeps the data (the sandbox moves it to a larger
// page reservation) and the new space reads as zeros.
TEST(MemfdCreate, GrowingFarKeepsTheData) {
  ScopedFd fd(memfd_create("grow", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_EQ(pwrite(fd.get(), "start", 5, 0), 5);
  ASSERT_EQ(pwrite(fd.get(), "mid", 3, 40 << 20), 3);
  ASSERT_EQ(pwrite(fd.get(), "far", 3, 100 << 20), 3);
  ASSERT_SYS_OK(ftruncate(fd.get(), 300 << 20));
  char buf[8] = {};
  EXPECT_EQ(pread(fd.get(), buf, 5, 0), 5);
  EXPECT_EQ(std::string(buf, 5), "start");
  EXPECT_EQ(pread(fd.get(), buf, 3, 40 << 20), 3);
  EXPECT_EQ(std::string(buf, 3), "mid");
  EXPECT_EQ(pread(fd.get(), buf, 3, 100 << 20), 3);
  EXPECT_EQ(std::string(buf, 3), "far");
  EXPECT_EQ(pread(fd.get(), buf, 4, 200 << 20), 4);
  EXPECT_EQ(std::string(buf, 4), std::string(4, '\0'));
  // A shared mapping made after the growth sees the data.
  char* p = static_cast<char*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 100 << 20));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(std::string(p, 3), "far");
  munmap(p, 4096);
}

TEST(MemfdCreate, BadArgumentsAreRefused) {
  EXPECT_ERRNO(memfd_create("x", 0x1000), EINVAL);
  std::string long_name(250, 'n');
  EXPECT_ERRNO(memfd_create(long_name.c_str(), 0), EINVAL);
  std::string ok_name(249, 'n');
  ScopedFd fd(memfd_create(ok_name.c_str(), 0));
  EXPECT_NE(fd.get(), -1);
  EXPECT_ERRNO(memfd_create(reinterpret_cast<const char*>(8), 0), EFAULT);
}

TEST(MemfdCreate, ProcFdLinkNamesIt) {
  ScopedFd fd(memfd_create("shown", 0));
  ASSERT_SYS_OK(fd.get());
  char link[64], target[256] = {};
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd.get());
  ASSERT_SYS_OK(readlink(link, target, sizeof target - 1));
  EXPECT_STREQ(target, "/memfd:shown (deleted)");
}

TEST(MemfdCreate, ReopenThroughProcSharesTheData) {
  ScopedFd fd(memfd_create("reopen", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_EQ(write(fd.get(), "shared", 6), 6);
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd.get());
  ScopedFd again(open(link, O_RDONLY));
  ASSERT_SYS_OK(again.get());
  char buf[8] = {};
  EXPECT_EQ(read(again.get(), buf, sizeof buf), 6);
  EXPECT_STREQ(buf, "shared");
  EXPECT_ERRNO(write(again.get(), "x", 1), EBADF);
}

TEST(MemfdMmap, PrivateMappingSeesTheDataAndIsNotWrittenBack) {
  ScopedFd fd(memfd_create("priv", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), 4096));
  ASSERT_EQ(pwrite(fd.get(), "abc", 3, 0), 3);
  char* p =
      static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(std::string(p, 3), "abc");
  p[0] = 'Z';
  char c;
  ASSERT_EQ(pread(fd.get(), &c, 1, 0), 1);
  EXPECT_EQ(c, 'a');
  munmap(p, 4096);
}

TEST(MemfdMmap, SharedMappingIsCoherentWithReadAndWrite) {
  ScopedFd fd(memfd_create("shared", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), 8192));
  char* p =
      static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  memcpy(p + 4096, "via map", 7);
  char buf[8] = {};
  ASSERT_EQ(pread(fd.get(), buf, 7, 4096), 7);
  EXPECT_STREQ(buf, "via map");
  ASSERT_EQ(pwrite(fd.get(), "via fd", 6, 10), 6);
  EXPECT_EQ(std::string(p + 10, 6), "via fd");
  ASSERT_SYS_OK(ftruncate(fd.get(), 4096));  // shrink: the second page's bytes go away
  ASSERT_SYS_OK(ftruncate(fd.get(), 8192));
  memset(buf, 1, sizeof buf);
  ASSERT_EQ(pread(fd.get(), buf, 7, 4096), 7);
  EXPECT_EQ(std::string(buf, 7), std::string(7, '\0'));
  munmap(p, 8192);
}

TEST(MemfdMmap, SharedMappingIsSharedWithAForkedChild) {
  ScopedFd fd(memfd_create("fork", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), 4096));
  volatile char* p =
      static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) {
    p[0] = 'C';
    _exit(0);
  }
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(p[0], 'C');
  char c;
  ASSERT_EQ(pread(fd.get(), &c, 1, 0), 1);
  EXPECT_EQ(c, 'C');
  munmap(const_cast<char*>(p), 4096);
}

TEST(MemfdMmap, MremapKeepsTheSharedMappingCoherent) {
  ScopedFd fd(memfd_create("mremap", 0));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), 3 * 4096));
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  char* q = static_cast<char*>(mremap(p, 4096, 3 * 4096, MREMAP_MAYMOVE));
  ASSERT_NE(q, MAP_FAILED);
  ASSERT_EQ(pwrite(fd.get(), "tail", 4, 2 * 4096), 4);
  EXPECT_EQ(std::string(q + 2 * 4096, 4), "tail");
  memcpy(q + 5, "head", 4);
  char buf[4];
  ASSERT_EQ(pread(fd.get(), buf, 4, 5), 4);
  EXPECT_EQ(std::string(buf, 4), "head");
  // Moved elsewhere without growing.
  void* far = mmap(nullptr, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(far, MAP_FAILED);
  char* r = static_cast<char*>(mremap(q, 3 * 4096, 3 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, far));
  ASSERT_EQ(r, far);
  ASSERT_EQ(pwrite(fd.get(), "moved", 5, 4096), 5);
  EXPECT_EQ(std::string(r + 4096, 5), "moved");
  munmap(r, 3 * 4096);
}

TEST(MemfdSeals, WithoutAllowSealingOnlySealSealIsSet) {
  ScopedFd fd(memfd_create("nosealing", 0));
  ASSERT_SYS_OK(fd.get());
  EXPECT_EQ(fcntl(fd.get(), F_GET_SEALS), F_SEAL_SEAL);
  EXPECT_ERRNO(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE), EPERM);
}

TEST(MemfdSeals, ShrinkAndGrowSealsRefuseSizeChanges) {
  ScopedFd fd(memfd_create("sizes", MFD_ALLOW_SEALING));
  ASSERT_SYS_OK(fd.get());
  EXPECT_EQ(fcntl(fd.get(), F_GET_SEALS), 0);
  ASSERT_SYS_OK(ftruncate(fd.get(), 100));
  ASSERT_SYS_OK(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
  EXPECT_EQ(fcntl(fd.get(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW);
  EXPECT_ERRNO(ftruncate(fd.get(), 50), EPERM);
  EXPECT_ERRNO(ftruncate(fd.get(), 200), EPERM);
  EXPECT_ERRNO(pwrite(fd.get(), "x", 1, 100), EPERM);  // would grow
  EXPECT_EQ(pwrite(fd.get(), "x", 1, 99), 1);          // inside: fine
  ASSERT_SYS_OK(ftruncate(fd.get(), 100));
}

TEST(MemfdSeals, WriteSealRefusesWritesAndWritableSharedMappings) {
  ScopedFd fd(memfd_create("write", MFD_ALLOW_SEALING));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), 4096));
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_ERRNO(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
  munmap(p, 4096);
  ASSERT_SYS_OK(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE));
  EXPECT_ERRNO(write(fd.get(), "x", 1), EPERM);
  EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0), MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  void* ro = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(ro, MAP_FAILED);
  EXPECT_ERRNO(mprotect(ro, 4096, PROT_READ | PROT_WRITE), EACCES);
  munmap(ro, 4096);
  void* priv = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
  EXPECT_NE(priv, MAP_FAILED);  // private copies may still be written
  if (priv != MAP_FAILED) munmap(priv, 4096);
}

TEST(MemfdSeals, SealSealFreezesTheSetAndBadBitsAreEinval) {
  ScopedFd fd(memfd_create("sealseal", MFD_ALLOW_SEALING));
  ASSERT_SYS_OK(fd.get());
  EXPECT_ERRNO(fcntl(fd.get(), F_ADD_SEALS, 0x4000), EINVAL);
  ASSERT_SYS_OK(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL));
  EXPECT_ERRNO(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
}

TEST(MemfdSeals, OtherFilesHaveNoSeals) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  EXPECT_ERRNO(fcntl(r.get(), F_GET_SEALS), EINVAL);
  EXPECT_ERRNO(fcntl(w.get(), F_ADD_SEALS, F_SEAL_SEAL), EINVAL);
}

}  // namespace
}  // namespace syscall_test
