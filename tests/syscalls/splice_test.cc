// File data movers: sendfile, copy_file_range, splice, tee, vmsplice; file-space calls:
// fallocate, readahead, sync_file_range.
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

// A file in `dir` holding `content`, opened with `flags`.
ScopedFd MakeFile(const TempDir& dir, const std::string& name, const std::string& content,
                  int flags = O_RDWR) {
  std::string path = dir.Child(name);
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) abort();
  if (write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size())) abort();
  close(fd);
  return ScopedFd(open(path.c_str(), flags));
}

std::string ReadAll(int fd, off_t off = 0) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    out.append(buf, n);
    off += n;
  }
  return out;
}

struct Pipe {
  Pipe(int flags = 0) {
    int fds[2];
    if (pipe2(fds, flags) != 0) abort();
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
  ScopedFd r, w;
};

off_t SizeOf(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) abort();
  return st.st_size;
}

TEST(Sendfile, CopiesFromTheFileOffsetAndAdvancesIt) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "0123456789", O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "");
  ASSERT_SYS_OK(lseek(in.get(), 2, SEEK_SET));
  EXPECT_EQ(sendfile(out.get(), in.get(), nullptr, 5), 5);
  EXPECT_EQ(lseek(in.get(), 0, SEEK_CUR), 7);
  EXPECT_EQ(lseek(out.get(), 0, SEEK_CUR), 5);
  EXPECT_EQ(ReadAll(out.get()), "23456");
}

TEST(Sendfile, OffsetPointerIsUpdatedAndTheFileOffsetIsNot) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "abcdefghij", O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "");
  off_t off = 4;
  EXPECT_EQ(sendfile(out.get(), in.get(), &off, 100), 6);  // short count at EOF
  EXPECT_EQ(off, 10);
  EXPECT_EQ(lseek(in.get(), 0, SEEK_CUR), 0);
  EXPECT_EQ(sendfile(out.get(), in.get(), &off, 100), 0);  // at EOF
  EXPECT_EQ(ReadAll(out.get()), "efghij");
}

TEST(Sendfile, LargeFileArrivesWhole) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 300000; ++i) big.push_back(static_cast<char>('a' + i % 23));
  ScopedFd in = MakeFile(dir, "in", big, O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "");
  EXPECT_EQ(sendfile(out.get(), in.get(), nullptr, big.size()), static_cast<ssize_t>(big.size()));
  EXPECT_EQ(ReadAll(out.get()), big);
}

TEST(Sendfile, IntoAPipe) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "hello pipe", O_RDONLY);
  Pipe p;
  EXPECT_EQ(sendfile(p.w.get(), in.get(), nullptr, 64), 10);
  char buf[16] = {};
  EXPECT_EQ(read(p.r.get(), buf, sizeof buf), 10);
  EXPECT_STREQ(buf, "hello pipe");
}

TEST(Sendfile, BadInputsHaveLinuxErrnos) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "data", O_RDONLY);
  ScopedFd wo = MakeFile(dir, "wo", "", O_WRONLY);
  ScopedFd app = MakeFile(dir, "app", "", O_WRONLY | O_APPEND);
  EXPECT_ERRNO(sendfile(wo.get(), -1, nullptr, 4), EBADF);
  EXPECT_ERRNO(sendfile(-1, in.get(), nullptr, 4), EBADF);
  EXPECT_ERRNO(sendfile(in.get(), wo.get(), nullptr, 4), EBADF);  // in not readable
  EXPECT_ERRNO(sendfile(in.get(), in.get(), nullptr, 4), EBADF);  // out not writable
  off_t neg = -1;
  EXPECT_ERRNO(sendfile(wo.get(), in.get(), &neg, 4), EINVAL);
  EXPECT_ERRNO(sendfile(app.get(), in.get(), nullptr, 4), EINVAL);
  EXPECT_ERRNO(sendfile(wo.get(), in.get(), reinterpret_cast<off_t*>(8), 4), EFAULT);
  Pipe p;
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  EXPECT_ERRNO(sendfile(wo.get(), p.r.get(), nullptr, 1), EINVAL);
}

TEST(Sendfile, ToAPipeWithoutReaderIsEpipe) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "data", O_RDONLY);
  Pipe p;
  p.r.reset();
  signal(SIGPIPE, SIG_IGN);
  EXPECT_ERRNO(sendfile(p.w.get(), in.get(), nullptr, 4), EPIPE);
  signal(SIGPIPE, SIG_DFL);
}

TEST(CopyFileRange, CopiesAtGivenOffsetsLeavingFileOffsets) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "0123456789", O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "..........");
  loff_t oin = 3, oout = 5;
  EXPECT_EQ(copy_file_range(in.get(), &oin, out.get(), &oout, 4, 0), 4);
  EXPECT_EQ(oin, 7);
  EXPECT_EQ(oout, 9);
  EXPECT_EQ(lseek(in.get(), 0, SEEK_CUR), 0);
  EXPECT_EQ(lseek(out.get(), 0, SEEK_CUR), 0);
  EXPECT_EQ(ReadAll(out.get()), ".....3456.");
}

TEST(CopyFileRange, WithoutPointersUsesAndAdvancesBothOffsets) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "abcdef", O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "");
  ASSERT_SYS_OK(lseek(in.get(), 1, SEEK_SET));
  EXPECT_EQ(copy_file_range(in.get(), nullptr, out.get(), nullptr, 100, 0), 5);
  EXPECT_EQ(lseek(in.get(), 0, SEEK_CUR), 6);
  EXPECT_EQ(lseek(out.get(), 0, SEEK_CUR), 5);
  EXPECT_EQ(copy_file_range(in.get(), nullptr, out.get(), nullptr, 100, 0), 0);  // EOF
  EXPECT_EQ(ReadAll(out.get()), "bcdef");
}

TEST(CopyFileRange, BadInputsHaveLinuxErrnos) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "abcdef", O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "");
  ScopedFd app = MakeFile(dir, "app", "", O_WRONLY | O_APPEND);
  ScopedFd d(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  Pipe p;
  EXPECT_ERRNO(copy_file_range(in.get(), nullptr, out.get(), nullptr, 1, 1), EINVAL);
  EXPECT_ERRNO(copy_file_range(-1, nullptr, out.get(), nullptr, 1, 0), EBADF);
  EXPECT_ERRNO(copy_file_range(d.get(), nullptr, out.get(), nullptr, 1, 0), EISDIR);
  EXPECT_ERRNO(copy_file_range(p.r.get(), nullptr, out.get(), nullptr, 1, 0), EINVAL);
  EXPECT_ERRNO(copy_file_range(in.get(), nullptr, app.get(), nullptr, 1, 0), EBADF);
  EXPECT_ERRNO(copy_file_range(in.get(), nullptr, in.get(), nullptr, 1, 0), EBADF);
  ScopedFd same = MakeFile(dir, "same", "0123456789");
  loff_t a = 0, b = 2;
  EXPECT_ERRNO(copy_file_range(same.get(), &a, same.get(), &b, 4, 0), EINVAL);  // overlap
  b = 4;
  EXPECT_EQ(copy_file_range(same.get(), &a, same.get(), &b, 4, 0), 4);
  EXPECT_EQ(ReadAll(same.get()), "0123012389");
  loff_t neg = -1;
  EXPECT_ERRNO(copy_file_range(in.get(), &neg, out.get(), nullptr, 1, 0), EOVERFLOW);
}

TEST(Splice, FileToPipeToFileWithOffsets) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "0123456789", O_RDONLY);
  ScopedFd out = MakeFile(dir, "out", "");
  Pipe p;
  loff_t off = 2;
  EXPECT_EQ(splice(in.get(), &off, p.w.get(), nullptr, 5, 0), 5);
  EXPECT_EQ(off, 7);
  EXPECT_EQ(lseek(in.get(), 0, SEEK_CUR), 0);
  loff_t oout = 3;
  EXPECT_EQ(splice(p.r.get(), nullptr, out.get(), &oout, 100, 0), 5);  // only what is there
  EXPECT_EQ(oout, 8);
  EXPECT_EQ(lseek(out.get(), 0, SEEK_CUR), 0);
  std::string got = ReadAll(out.get());
  EXPECT_EQ(got, std::string("\0\0\0"
                             "23456",
                             8));
}

TEST(Splice, WithoutOffsetsUsesTheFileOffset) {
  TempDir dir;
  ScopedFd in = MakeFile(dir, "in", "abcdefgh", O_RDONLY);
  Pipe p;
  ASSERT_SYS_OK(lseek(in.get(), 3, SEEK_SET));
  EXPECT_EQ(splice(in.get(), nullptr, p.w.get(), nullptr, 2, 0), 2);
  EXPECT_EQ(lseek(in.get(), 0, SEEK_CUR), 5);
  char buf[3] = {};
  EXPECT_EQ(read(p.r.get(), buf, 2), 2);
  EXPECT_STREQ(buf, "de");
}

TEST(Splice, PipeToPipeMovesTheBytes) {
  Pipe a, b;
  ASSERT_EQ(write(a.w.get(), "moved", 5), 5);
  EXPECT_EQ(splice(a.r.get(), nullptr, b.w.get(), nullptr, 3, 0), 3);
  char buf[8] = {};
  EXPECT_EQ(read(b.r.get(), buf, sizeof buf), 3);
  EXPECT_STREQ(buf, "mov");
  EXPECT_EQ(read(a.r.get(), buf, sizeof buf), 2);
}

TEST(Splice, BadInputsHaveLinuxErrnos) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc");
  ScopedFd g = MakeFile(dir, "g", "");
  ScopedFd app = MakeFile(dir, "app", "", O_WRONLY | O_APPEND);
  Pipe p;
  ASSERT_EQ(write(p.w.get(), "zz", 2), 2);
  loff_t off = 0;
  EXPECT_ERRNO(splice(f.get(), nullptr, g.get(), nullptr, 1, 0), EINVAL);      // no pipe
  EXPECT_ERRNO(splice(p.r.get(), nullptr, p.w.get(), nullptr, 1, 0), EINVAL);  // same pipe
  EXPECT_ERRNO(splice(p.r.get(), &off, g.get(), nullptr, 1, 0), ESPIPE);
  EXPECT_ERRNO(splice(f.get(), nullptr, p.w.get(), &off, 1, 0), ESPIPE);
  EXPECT_ERRNO(splice(p.r.get(), nullptr, g.get(), nullptr, 1, 0x100), EINVAL);
  EXPECT_ERRNO(splice(p.w.get(), nullptr, g.get(), nullptr, 1, 0), EBADF);  // write end as in
  EXPECT_ERRNO(splice(-1, nullptr, p.w.get(), nullptr, 1, 0), EBADF);
  EXPECT_ERRNO(splice(p.r.get(), nullptr, app.get(), nullptr, 1, 0), EINVAL);
  loff_t neg = -5;
  EXPECT_ERRNO(splice(f.get(), &neg, p.w.get(), nullptr, 1, 0), EINVAL);
}

TEST(Splice, EmptyPipeIsEagainWhenNonblockingAndEofWithoutWriters) {
  TempDir dir;
  ScopedFd g = MakeFile(dir, "g", "");
  Pipe p;
  EXPECT_ERRNO(splice(p.r.get(), nullptr, g.get(), nullptr, 10, SPLICE_F_NONBLOCK), EAGAIN);
  Pipe q(O_NONBLOCK);
  EXPECT_ERRNO(splice(q.r.get(), nullptr, g.get(), nullptr, 10, 0), EAGAIN);
  p.w.reset();
  EXPECT_EQ(splice(p.r.get(), nullptr, g.get(), nullptr, 10, 0), 0);
}

TEST(Splice, BlocksUntilAWriterFillsThePipe) {
  TempDir dir;
  ScopedFd g = MakeFile(dir, "g", "");
  Pipe p;
  pid_t child = fork();
  ASSERT_SYS_OK(child);
  if (child == 0) {
    usleep(100 * 1000);
    _exit(write(p.w.get(), "late", 4) == 4 ? 0 : 1);
  }
  p.w.reset();
  EXPECT_EQ(splice(p.r.get(), nullptr, g.get(), nullptr, 10, 0), 4);
  EXPECT_EQ(ReadAll(g.get()), "late");
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);
}

TEST(Splice, FullPipeIsEagainWhenNonblocking) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", std::string(100, 'x'), O_RDONLY);
  Pipe p(O_NONBLOCK);
  ASSERT_SYS_OK(fcntl(p.w.get(), F_SETPIPE_SZ, 4096));
  std::string fill(4096, 'y');
  ASSERT_EQ(write(p.w.get(), fill.data(), fill.size()), 4096);
  EXPECT_ERRNO(splice(f.get(), nullptr, p.w.get(), nullptr, 10, SPLICE_F_NONBLOCK), EAGAIN);
  EXPECT_EQ(lseek(f.get(), 0, SEEK_CUR), 0);  // nothing was consumed
}

TEST(Tee, DuplicatesWithoutConsuming) {
  Pipe a, b;
  ASSERT_EQ(write(a.w.get(), "twice", 5), 5);
  EXPECT_EQ(tee(a.r.get(), b.w.get(), 100, 0), 5);
  char buf[8] = {};
  EXPECT_EQ(read(b.r.get(), buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "twice");
  memset(buf, 0, sizeof buf);
  EXPECT_EQ(read(a.r.get(), buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "twice");
}

TEST(Tee, BadInputsHaveLinuxErrnos) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc");
  Pipe a, b;
  EXPECT_ERRNO(tee(a.r.get(), a.w.get(), 1, 0), EINVAL);
  EXPECT_ERRNO(tee(f.get(), b.w.get(), 1, 0), EINVAL);
  EXPECT_ERRNO(tee(a.r.get(), f.get(), 1, 0), EINVAL);
  EXPECT_ERRNO(tee(a.r.get(), b.w.get(), 1, 0x40), EINVAL);
  EXPECT_ERRNO(tee(a.r.get(), b.w.get(), 1, SPLICE_F_NONBLOCK), EAGAIN);  // empty
  EXPECT_ERRNO(tee(-1, b.w.get(), 1, 0), EBADF);
  a.w.reset();
  EXPECT_EQ(tee(a.r.get(), b.w.get(), 1, 0), 0);  // empty, no writers
}

TEST(Vmsplice, CopiesUserMemoryIntoAPipe) {
  Pipe p;
  char part1[] = "vm", part2[] = "splice";
  iovec iov[2] = {{part1, 2}, {part2, 6}};
  EXPECT_EQ(vmsplice(p.w.get(), iov, 2, 0), 8);
  char buf[16] = {};
  EXPECT_EQ(read(p.r.get(), buf, sizeof buf), 8);
  EXPECT_STREQ(buf, "vmsplice");
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "");
  EXPECT_ERRNO(vmsplice(f.get(), iov, 2, 0), EBADF);
  EXPECT_ERRNO(vmsplice(p.w.get(), iov, 2, 0x100), EINVAL);
}

TEST(Fallocate, ModeZeroExtendsWithZerosAndNeverShrinks) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc");
  ASSERT_SYS_OK(fallocate(f.get(), 0, 0, 10));
  EXPECT_EQ(SizeOf(f.get()), 10);
  EXPECT_EQ(ReadAll(f.get()), std::string("abc\0\0\0\0\0\0\0", 10));
  ASSERT_SYS_OK(fallocate(f.get(), 0, 0, 2));
  EXPECT_EQ(SizeOf(f.get()), 10);
  EXPECT_EQ(lseek(f.get(), 0, SEEK_CUR), 0);
}

TEST(Fallocate, KeepSizeLeavesTheSize) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc");
  ASSERT_SYS_OK(fallocate(f.get(), FALLOC_FL_KEEP_SIZE, 0, 8192));
  EXPECT_EQ(SizeOf(f.get()), 3);
  EXPECT_EQ(ReadAll(f.get()), "abc");
}

TEST(Fallocate, PunchHoleAndZeroRangeZeroTheBytes) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abcdefgh");
  ASSERT_SYS_OK(fallocate(f.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2, 3));
  EXPECT_EQ(ReadAll(f.get()), std::string("ab\0\0\0fgh", 8));
  ASSERT_SYS_OK(fallocate(f.get(), FALLOC_FL_ZERO_RANGE, 6, 4));
  EXPECT_EQ(ReadAll(f.get()), std::string("ab\0\0\0f\0\0\0\0", 10));
  ASSERT_SYS_OK(posix_fallocate(f.get(), 0, 20) == 0 ? 0 : -1);
  EXPECT_EQ(SizeOf(f.get()), 20);
}

TEST(Fallocate, BadInputsHaveLinuxErrnos) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc");
  ScopedFd ro = MakeFile(dir, "ro", "abc", O_RDONLY);
  Pipe p;
  EXPECT_ERRNO(fallocate(f.get(), 0, 0, 0), EINVAL);
  EXPECT_ERRNO(fallocate(f.get(), 0, -1, 10), EINVAL);
  EXPECT_ERRNO(fallocate(ro.get(), 0, 0, 10), EBADF);
  EXPECT_ERRNO(fallocate(-1, 0, 0, 10), EBADF);
  EXPECT_ERRNO(fallocate(p.w.get(), 0, 0, 10), ESPIPE);
  EXPECT_ERRNO(fallocate(f.get(), FALLOC_FL_PUNCH_HOLE, 0, 1), EOPNOTSUPP);
  EXPECT_ERRNO(fallocate(f.get(), 0x1000, 0, 1), EOPNOTSUPP);
  EXPECT_ERRNO(fallocate(f.get(), 0, 1, INT64_MAX), EFBIG);
}

TEST(Readahead, ValidatesTheFile) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc", O_RDONLY);
  ScopedFd wo = MakeFile(dir, "wo", "abc", O_WRONLY);
  Pipe p;
  EXPECT_EQ(readahead(f.get(), 0, 4096), 0);
  EXPECT_ERRNO(readahead(-1, 0, 10), EBADF);
  EXPECT_ERRNO(readahead(wo.get(), 0, 10), EBADF);
  EXPECT_ERRNO(readahead(p.r.get(), 0, 10), EINVAL);
}

TEST(SyncFileRange, ValidatesThenSyncs) {
  TempDir dir;
  ScopedFd f = MakeFile(dir, "f", "abc");
  Pipe p;
  EXPECT_EQ(sync_file_range(f.get(), 0, 0, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER), 0);
  EXPECT_ERRNO(sync_file_range(f.get(), 0, 0, 8), EINVAL);
  EXPECT_ERRNO(sync_file_range(f.get(), -1, 0, 0), EINVAL);
  EXPECT_ERRNO(sync_file_range(f.get(), 0, -1, 0), EINVAL);
  EXPECT_ERRNO(sync_file_range(p.r.get(), 0, 0, 0), ESPIPE);
  EXPECT_ERRNO(sync_file_range(-1, 0, 0, 0), EBADF);
}

}  // namespace
}  // namespace syscall_test
