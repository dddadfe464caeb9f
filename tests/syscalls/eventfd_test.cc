// eventfd: counter semantics, semaphore mode, flags, 8-byte rules, overflow, poll
// readiness, blocking reads/writes woken by a forked child sharing the description.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr uint64_t kMax = 0xfffffffffffffffeull;

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void Reap(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

short Revents(int fd, short events) {
  pollfd p{fd, events, 0};
  if (poll(&p, 1, 0) < 0) return -1;
  return p.revents;
}

TEST(Eventfd, ReadTakesTheWholeCounter) {
  ScopedFd fd(eventfd(5, EFD_NONBLOCK));
  ASSERT_SYS_OK(fd.get());
  uint64_t v = 0;
  ASSERT_EQ(read(fd.get(), &v, 8), 8);
  EXPECT_EQ(v, 5u);
  EXPECT_ERRNO(read(fd.get(), &v, 8), EAGAIN);
  v = 3;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  v = 4;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  ASSERT_EQ(read(fd.get(), &v, 8), 8);
  EXPECT_EQ(v, 7u);
}

TEST(Eventfd, SemaphoreModeCountsDownByOne) {
  ScopedFd fd(eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK));
  ASSERT_SYS_OK(fd.get());
  uint64_t v = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(read(fd.get(), &v, 8), 8);
    EXPECT_EQ(v, 1u);
  }
  EXPECT_ERRNO(read(fd.get(), &v, 8), EAGAIN);
  v = 2;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  ASSERT_EQ(read(fd.get(), &v, 8), 8);
  EXPECT_EQ(v, 1u);
  EXPECT_EQ(Revents(fd.get(), POLLIN), POLLIN);
}

TEST(Eventfd, FlagsCloexecNonblockAndBadFlags) {
  ScopedFd fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_SYS_OK(fd.get());
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDWR | O_NONBLOCK);
  ScopedFd plain(eventfd(0, 0));
  EXPECT_EQ(fcntl(plain.get(), F_GETFD), 0);
  EXPECT_EQ(fcntl(plain.get(), F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDWR);
  EXPECT_ERRNO(eventfd(0, O_APPEND), EINVAL);
  EXPECT_ERRNO(eventfd(0, 2), EINVAL);
}

TEST(Eventfd, OldSyscallTakesNoFlags) {
  ScopedFd fd(static_cast<int>(syscall(SYS_eventfd, 9)));
  ASSERT_SYS_OK(fd.get());
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), 0);
  uint64_t v = 0;
  ASSERT_EQ(read(fd.get(), &v, 8), 8);
  EXPECT_EQ(v, 9u);
}

TEST(Eventfd, ShortBuffersAreEinval) {
  ScopedFd fd(eventfd(1, EFD_NONBLOCK));
  uint64_t v = 1;
  EXPECT_ERRNO(read(fd.get(), &v, 4), EINVAL);
  EXPECT_ERRNO(read(fd.get(), &v, 0), EINVAL);
  EXPECT_ERRNO(write(fd.get(), &v, 7), EINVAL);
  // Longer buffers are fine: 8 bytes move.
  uint64_t big[2] = {0, 0xdead};
  ASSERT_EQ(read(fd.get(), big, 16), 8);
  EXPECT_EQ(big[0], 1u);
  EXPECT_EQ(big[1], 0xdeadu);
}

TEST(Eventfd, ReadvGathersTheValueAcrossIovecs) {
  ScopedFd fd(eventfd(0, EFD_NONBLOCK));
  uint64_t in = 0x0102030405060708ull;
  ASSERT_EQ(write(fd.get(), &in, 8), 8);
  uint32_t lo = 0, hi = 0;
  iovec rv[2] = {{&lo, 4}, {&hi, 4}};
  ASSERT_EQ(readv(fd.get(), rv, 2), 8);
  EXPECT_EQ((uint64_t{hi} << 32) | lo, in);
}

TEST(Eventfd, WritingAllOnesIsEinval) {
  ScopedFd fd(eventfd(0, EFD_NONBLOCK));
  uint64_t v = ~0ull;
  EXPECT_ERRNO(write(fd.get(), &v, 8), EINVAL);
  // A zero write succeeds and changes nothing.
  v = 0;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  EXPECT_EQ(Revents(fd.get(), POLLIN | POLLOUT), POLLOUT);
}

TEST(Eventfd, OverflowBlocksAtTheMaximum) {
  ScopedFd fd(eventfd(0, EFD_NONBLOCK));
  uint64_t v = kMax;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  // Full: not writable, any non-zero write would exceed the maximum.
  EXPECT_EQ(Revents(fd.get(), POLLIN | POLLOUT), POLLIN);
  v = 1;
  EXPECT_ERRNO(write(fd.get(), &v, 8), EAGAIN);
  v = 0;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  ASSERT_EQ(read(fd.get(), &v, 8), 8);
  EXPECT_EQ(v, kMax);
  // Partially full: a write that would pass the maximum is EAGAIN, a smaller one fits.
  v = kMax - 10;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  v = 11;
  EXPECT_ERRNO(write(fd.get(), &v, 8), EAGAIN);
  v = 10;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
}

TEST(Eventfd, PollBitsArePlainInAndOut) {
  ScopedFd fd(eventfd(0, EFD_NONBLOCK));
  const short all = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM | POLLPRI;
  EXPECT_EQ(Revents(fd.get(), all), POLLOUT);
  uint64_t v = 2;
  ASSERT_EQ(write(fd.get(), &v, 8), 8);
  EXPECT_EQ(Revents(fd.get(), all), POLLIN | POLLOUT);
  EXPECT_EQ(Revents(fd.get(), POLLRDNORM), 0);
}

TEST(Eventfd, SeekIsANoOpAndPositionalIoIsEspipe) {
  ScopedFd fd(eventfd(1, EFD_NONBLOCK));
  uint64_t v = 1;
  // Linux's noop_llseek: the position stays 0 whatever is asked.
  EXPECT_EQ(lseek(fd.get(), 100, SEEK_SET), 0);
  EXPECT_EQ(lseek(fd.get(), 5, SEEK_CUR), 0);
  EXPECT_ERRNO(pread(fd.get(), &v, 8, 0), ESPIPE);
  EXPECT_ERRNO(pwrite(fd.get(), &v, 8, 0), ESPIPE);
  ASSERT_EQ(read(fd.get(), &v, 8), 8);
  EXPECT_EQ(v, 1u);
}

TEST(Eventfd, ProcFdNameAndStat) {
  ScopedFd fd(eventfd(0, 0));
  char buf[64] = {};
  std::string link = "/proc/self/fd/" + std::to_string(fd.get());
  ASSERT_SYS_OK(readlink(link.c_str(), buf, sizeof(buf) - 1));
  EXPECT_STREQ(buf, "anon_inode:[eventfd]");
  struct stat st;
  ASSERT_SYS_OK(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

std::string ReadFdinfo(int fd) {
  std::string path = "/proc/self/fdinfo/" + std::to_string(fd);
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return "";
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof(buf), f)) out += buf;
  fclose(f);
  return out;
}

TEST(Eventfd, FdinfoShowsCountAndMode) {
  ScopedFd fd(eventfd(0x2a, EFD_SEMAPHORE));
  std::string info = ReadFdinfo(fd.get());
  EXPECT_NE(info.find("\neventfd-count:               2a\n"), std::string::npos) << info;
  EXPECT_NE(info.find("\neventfd-id: "), std::string::npos) << info;
  EXPECT_NE(info.find("\neventfd-semaphore: 1\n"), std::string::npos) << info;
  EXPECT_NE(info.find("flags:\t02\n"), std::string::npos) << info;
}

TEST(Eventfd, BlockingReadWokenByForkedChildWrite) {
  ScopedFd fd(eventfd(0, 0));
  int efd = fd.get();
  int64_t t0 = NowMs();
  pid_t pid = fork();
  if (pid == 0) {
    usleep(100 * 1000);
    uint64_t v = 42;
    _exit(write(efd, &v, 8) == 8 ? 0 : 1);
  }
  uint64_t v = 0;
  ASSERT_EQ(read(efd, &v, 8), 8);
  EXPECT_EQ(v, 42u);
  EXPECT_GE(NowMs() - t0, 80);
  Reap(pid);
}

TEST(Eventfd, BlockingWriteWokenByForkedChildRead) {
  ScopedFd fd(eventfd(0, 0));
  int efd = fd.get();
  uint64_t v = kMax;
  ASSERT_EQ(write(efd, &v, 8), 8);
  pid_t pid = fork();
  if (pid == 0) {
    usleep(100 * 1000);
    uint64_t got = 0;
    _exit(read(efd, &got, 8) == 8 && got == kMax ? 0 : 1);
  }
  v = 5;
  ASSERT_EQ(write(efd, &v, 8), 8);  // blocks until the child empties the counter
  Reap(pid);
  ASSERT_SYS_OK(fcntl(efd, F_SETFL, O_NONBLOCK));
  ASSERT_EQ(read(efd, &v, 8), 8);
  EXPECT_EQ(v, 5u);
}

TEST(Eventfd, PollWaitsForAWrite) {
  ScopedFd fd(eventfd(0, 0));
  int efd = fd.get();
  pid_t pid = fork();
  if (pid == 0) {
    usleep(50 * 1000);
    uint64_t v = 1;
    _exit(write(efd, &v, 8) == 8 ? 0 : 1);
  }
  pollfd p{efd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  EXPECT_EQ(p.revents, POLLIN);
  Reap(pid);
}

}  // namespace
}  // namespace syscall_test
