// File descriptor table: dup family, fcntl descriptor flags, close_range, pipes.
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

TEST(Dup, ReturnsLowestFreeNumberSharingTheOffset) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  ASSERT_SYS_OK(fd.get());
  ASSERT_EQ(write(fd.get(), "abcdef", 6), 6);
  ASSERT_SYS_OK(lseek(fd.get(), 2, SEEK_SET));
  ScopedFd copy(dup(fd.get()));
  ASSERT_SYS_OK(copy.get());
  EXPECT_GT(copy.get(), fd.get());
  char c;
  ASSERT_EQ(read(copy.get(), &c, 1), 1);
  EXPECT_EQ(c, 'c');
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_CUR), 3);
}

TEST(Dup, BadFdIsEbadf) { EXPECT_ERRNO(dup(-1), EBADF); }

TEST(Dup2, SameFdReturnsItWithoutClosing) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  EXPECT_EQ(dup2(r.get(), r.get()), r.get());
  EXPECT_NE(fcntl(r.get(), F_GETFD), -1);
  EXPECT_ERRNO(dup2(-1, 5), EBADF);
}

TEST(Dup3, SameFdIsEinvalAndBadFlagsAreEinval) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  EXPECT_ERRNO(dup3(r.get(), r.get(), 0), EINVAL);
  EXPECT_ERRNO(dup3(r.get(), 100, O_NONBLOCK), EINVAL);
  ASSERT_EQ(dup3(r.get(), 100, O_CLOEXEC), 100);
  EXPECT_EQ(fcntl(100, F_GETFD), FD_CLOEXEC);
  close(100);
}

TEST(Fcntl, DupfdCloexecHonoursTheMinimum) {
  int fd = fcntl(0, F_DUPFD_CLOEXEC, 50);
  ASSERT_GE(fd, 50);
  EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
  close(fd);
  EXPECT_ERRNO(fcntl(0, F_DUPFD, -1), EINVAL);
}

TEST(Fcntl, SetflChangesOnlyStatusFlags) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  ASSERT_SYS_OK(fcntl(r.get(), F_SETFL, O_NONBLOCK | O_WRONLY));
  int fl = fcntl(r.get(), F_GETFL);
  EXPECT_EQ(fl & O_ACCMODE, O_RDONLY);
  EXPECT_TRUE(fl & O_NONBLOCK);
  char c;
  EXPECT_ERRNO(read(r.get(), &c, 1), EAGAIN);
}

TEST(CloseRange, ClosesAndCloexecs) {
  ASSERT_EQ(dup2(0, 60), 60);
  ASSERT_EQ(dup2(0, 61), 61);
  ASSERT_EQ(dup2(0, 62), 62);
  ASSERT_SYS_OK(syscall(SYS_close_range, 61, 62, CLOSE_RANGE_CLOEXEC));
  EXPECT_EQ(fcntl(61, F_GETFD), FD_CLOEXEC);
  ASSERT_SYS_OK(syscall(SYS_close_range, 60, ~0u, 0));
  EXPECT_ERRNO(fcntl(60, F_GETFD), EBADF);
  EXPECT_ERRNO(fcntl(62, F_GETFD), EBADF);
  EXPECT_ERRNO(syscall(SYS_close_range, 5, 4, 0), EINVAL);
}

TEST(Pipe, EndsHaveTheirAccessModes) {
  int fds[2];
  ASSERT_SYS_OK(pipe2(fds, O_CLOEXEC));
  ScopedFd r(fds[0]), w(fds[1]);
  EXPECT_EQ(fcntl(r.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(fcntl(w.get(), F_GETFL) & O_ACCMODE, O_WRONLY);
  EXPECT_EQ(fcntl(r.get(), F_GETFD), FD_CLOEXEC);
  char c = 'x';
  EXPECT_ERRNO(write(r.get(), &c, 1), EBADF);
  EXPECT_ERRNO(read(w.get(), &c, 1), EBADF);
}

TEST(Pipe, ReadAfterWriterClosesIsEof) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  ASSERT_EQ(write(w.get(), "hi", 2), 2);
  w.reset();
  char buf[8];
  EXPECT_EQ(read(r.get(), buf, sizeof buf), 2);
  EXPECT_EQ(read(r.get(), buf, sizeof buf), 0);
}

TEST(Pipe, WriteWithNoReaderIsEpipe) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  r.reset();
  signal(SIGPIPE, SIG_IGN);
  EXPECT_ERRNO(write(w.get(), "x", 1), EPIPE);
  signal(SIGPIPE, SIG_DFL);
}

TEST(Pipe, Pipe2RejectsUnknownFlags) {
  int fds[2];
  EXPECT_ERRNO(pipe2(fds, O_RDWR | 0x40000000), EINVAL);
}

}  // namespace
}  // namespace syscall_test
