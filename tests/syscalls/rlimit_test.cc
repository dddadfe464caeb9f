// Resource limits the kernel enforces: RLIMIT_FSIZE (EFBIG + SIGXFSZ, partial writes up
// to the limit) and RLIMIT_NOFILE (EMFILE), as the same program sees them natively and
// in the sandbox. Each case lowers a soft limit for itself and restores it.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr rlim_t kLimit = 8192;

// Lowers RLIMIT_FSIZE's soft limit to kLimit and blocks SIGXFSZ (so it stays pending
// for the case to see) for the scope.
class FsizeLimit {
 public:
  FsizeLimit() {
    getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit lim = {kLimit, saved_.rlim_max};
    ok_ = setrlimit(RLIMIT_FSIZE, &lim) == 0;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    sigprocmask(SIG_BLOCK, &s, &old_mask_);
  }
  ~FsizeLimit() {
    TakeSigxfsz();
    setrlimit(RLIMIT_FSIZE, &saved_);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  bool ok() const { return ok_; }
  // Whether SIGXFSZ was pending (and consumes it).
  static bool TakeSigxfsz() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    timespec zero = {0, 0};
    return sigtimedwait(&s, nullptr, &zero) == SIGXFSZ;
  }

 private:
  rlimit saved_{};
  sigset_t old_mask_;
  bool ok_ = false;
};

std::string Bytes(size_t n) { return std::string(n, 'z'); }

TEST(Fsize, WriteCrossingTheLimitIsCutShortWithoutSignal) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  ASSERT_SYS_OK(fd.get());
  FsizeLimit lim;
  ASSERT_TRUE(lim.ok());
  std::string data = Bytes(kLimit + 100);
  EXPECT_EQ(write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(kLimit));
  EXPECT_FALSE(FsizeLimit::TakeSigxfsz());
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_END), static_cast<off_t>(kLimit));
}

TEST(Fsize, WriteAtTheLimitIsEfbigAndSignals) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  ASSERT_SYS_OK(fd.get());
  FsizeLimit lim;
  ASSERT_SYS_OK(lseek(fd.get(), kLimit, SEEK_SET));
  EXPECT_ERRNO(write(fd.get(), "a", 1), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
}

TEST(Fsize, ZeroLengthWritePastTheLimitSucceeds) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  ASSERT_SYS_OK(lseek(fd.get(), kLimit * 2, SEEK_SET));
  EXPECT_EQ(write(fd.get(), "a", 0), 0);
  EXPECT_FALSE(FsizeLimit::TakeSigxfsz());
}

TEST(Fsize, PwritePastTheLimitIsEfbig) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  EXPECT_ERRNO(pwrite(fd.get(), "abc", 3, kLimit + 10), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
  EXPECT_EQ(pwrite(fd.get(), "abc", 3, kLimit - 1), 1);
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_END), static_cast<off_t>(kLimit));
}

TEST(Fsize, WritevIsCutShortAcrossBuffers) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  std::string a = Bytes(kLimit - 10), b = Bytes(100);
  iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
  EXPECT_EQ(writev(fd.get(), iov, 2), static_cast<ssize_t>(kLimit));
  EXPECT_ERRNO(writev(fd.get(), iov, 2), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
}

TEST(Fsize, AppendUsesTheFileSizeAsPosition) {
  TempDir dir;
  std::string path = dir.Child("f");
  {
    ScopedFd fd(open(path.c_str(), O_CREAT | O_RDWR, 0600));
    std::string data = Bytes(kLimit);
    ASSERT_EQ(write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(kLimit));
  }
  ScopedFd fd(open(path.c_str(), O_WRONLY | O_APPEND));
  FsizeLimit lim;
  EXPECT_ERRNO(write(fd.get(), "x", 1), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
}

TEST(Fsize, FtruncatePastTheLimitIsEfbigBelowIsFine) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  EXPECT_ERRNO(ftruncate(fd.get(), kLimit + 1), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
  EXPECT_NE(ftruncate(fd.get(), kLimit), -1);
  EXPECT_FALSE(FsizeLimit::TakeSigxfsz());
}

TEST(Fsize, TruncatePathPastTheLimitIsEfbig) {
  TempDir dir;
  std::string path = dir.Child("f");
  ScopedFd fd(open(path.c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  EXPECT_ERRNO(truncate(path.c_str(), kLimit * 4), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
  EXPECT_NE(truncate(path.c_str(), 100), -1);
}

TEST(Fsize, FallocateGrowingPastTheLimitIsEfbig) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  EXPECT_ERRNO(fallocate(fd.get(), 0, 0, kLimit * 2), EFBIG);
  EXPECT_TRUE(FsizeLimit::TakeSigxfsz());
  EXPECT_NE(fallocate(fd.get(), 0, 0, kLimit), -1);
}

TEST(Fsize, PipesAreNotLimited) {
  int p[2];
  ASSERT_SYS_OK(pipe(p));
  ScopedFd r(p[0]), w(p[1]);
  FsizeLimit lim;
  std::string data = Bytes(kLimit + 100);
  EXPECT_EQ(write(w.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  EXPECT_FALSE(FsizeLimit::TakeSigxfsz());
}

TEST(Fsize, SendfileIsCutShortAtTheLimit) {
  TempDir dir;
  ScopedFd in(open(dir.Child("in").c_str(), O_CREAT | O_RDWR, 0600));
  std::string data = Bytes(kLimit + 500);
  ASSERT_EQ(write(in.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ScopedFd out(open(dir.Child("out").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  off_t off = 0;
  EXPECT_EQ(sendfile(out.get(), in.get(), &off, data.size()), static_cast<ssize_t>(kLimit));
  EXPECT_EQ(lseek(out.get(), 0, SEEK_END), static_cast<off_t>(kLimit));
}

TEST(Fsize, CopyFileRangeIsCutShortAtTheLimit) {
  TempDir dir;
  ScopedFd in(open(dir.Child("in").c_str(), O_CREAT | O_RDWR, 0600));
  std::string data = Bytes(kLimit + 500);
  ASSERT_EQ(write(in.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ScopedFd out(open(dir.Child("out").c_str(), O_CREAT | O_RDWR, 0600));
  FsizeLimit lim;
  loff_t in_off = 0, out_off = 0;
  EXPECT_EQ(copy_file_range(in.get(), &in_off, out.get(), &out_off, data.size(), 0),
            static_cast<ssize_t>(kLimit));
  EXPECT_EQ(out_off, static_cast<loff_t>(kLimit));
  EXPECT_ERRNO(copy_file_range(in.get(), &in_off, out.get(), &out_off, 100, 0), EFBIG);
}

TEST(Fsize, ZeroLimitRefusesEveryWriteToAFile) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  pid_t p = fork();
  if (p == 0) {
    rlimit lim;
    getrlimit(RLIMIT_FSIZE, &lim);
    lim.rlim_cur = 0;
    setrlimit(RLIMIT_FSIZE, &lim);
    signal(SIGXFSZ, SIG_IGN);
    if (write(fd.get(), "a", 1) != -1 || errno != EFBIG) _exit(1);
    if (ftruncate(fd.get(), 1) != -1 || errno != EFBIG) _exit(2);
    if (ftruncate(fd.get(), 0) != 0) _exit(3);
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  EXPECT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Fsize, ExistingBytesPastTheLimitStayReadable) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  std::string data = Bytes(kLimit * 2);
  ASSERT_EQ(write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  FsizeLimit lim;
  char buf[16];
  EXPECT_EQ(pread(fd.get(), buf, sizeof(buf), kLimit + 100), static_cast<ssize_t>(sizeof(buf)));
  // Overwriting below the limit still works; at the old end it does not.
  EXPECT_EQ(pwrite(fd.get(), "q", 1, 10), 1);
  EXPECT_ERRNO(pwrite(fd.get(), "q", 1, kLimit + 100), EFBIG);
}

TEST(Fsize, DefaultActionOfSigxfszKillsTheWriter) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  pid_t p = fork();
  if (p == 0) {
    rlimit lim = {kLimit, RLIM_INFINITY};
    getrlimit(RLIMIT_FSIZE, &lim);
    lim.rlim_cur = kLimit;
    setrlimit(RLIMIT_FSIZE, &lim);
    signal(SIGXFSZ, SIG_DFL);
    pwrite(fd.get(), "a", 1, kLimit);
    _exit(0);
  }
  ASSERT_SYS_OK(p);
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  ASSERT_TRUE(WIFSIGNALED(st)) << st;
  EXPECT_EQ(WTERMSIG(st), SIGXFSZ);
}

TEST(Fsize, LimitIsInheritedByFork) {
  FsizeLimit lim;
  pid_t p = fork();
  if (p == 0) {
    rlimit r;
    getrlimit(RLIMIT_FSIZE, &r);
    _exit(r.rlim_cur == kLimit ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(Rlimit, SoftAboveHardIsEinval) {
  rlimit r;
  ASSERT_SYS_OK(getrlimit(RLIMIT_FSIZE, &r));
  if (r.rlim_max == RLIM_INFINITY) {
    rlimit bad = {RLIM_INFINITY, 1000};
    EXPECT_ERRNO(setrlimit(RLIMIT_FSIZE, &bad), EINVAL);
  } else {
    rlimit bad = {r.rlim_max + 1, r.rlim_max};
    EXPECT_ERRNO(setrlimit(RLIMIT_FSIZE, &bad), EINVAL);
  }
  EXPECT_ERRNO(getrlimit(RLIM_NLIMITS + 5, &r), EINVAL);
}

TEST(Nofile, OpenBeyondTheSoftLimitIsEmfile) {
  rlimit saved;
  ASSERT_SYS_OK(getrlimit(RLIMIT_NOFILE, &saved));
  int highest = -1;
  {
    int probe = open("/dev/null", O_RDONLY);
    ASSERT_SYS_OK(probe);
    close(probe);
  }
  rlimit lim = {64, saved.rlim_max};
  ASSERT_SYS_OK(setrlimit(RLIMIT_NOFILE, &lim));
  std::vector<int> opened;
  for (;;) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) {
      EXPECT_EQ(errno, EMFILE);
      break;
    }
    opened.push_back(fd);
    highest = fd;
    if (opened.size() > 200) break;
  }
  EXPECT_EQ(highest, 63);
  EXPECT_ERRNO(dup2(0, 64), EBADF);
  EXPECT_ERRNO(fcntl(0, F_DUPFD, 64), EINVAL);
  int p[2];
  EXPECT_ERRNO(pipe(p), EMFILE);
  for (int fd : opened) close(fd);
  ASSERT_SYS_OK(setrlimit(RLIMIT_NOFILE, &saved));
  int fd = open("/dev/null", O_RDONLY);
  EXPECT_NE(fd, -1);
  close(fd);
}

TEST(Nofile, HardLimitCanBeLoweredButSoftNotAboveIt) {
  pid_t p = fork();
  if (p == 0) {
    rlimit lim = {32, 48};
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(1);
    rlimit got;
    getrlimit(RLIMIT_NOFILE, &got);
    if (got.rlim_cur != 32 || got.rlim_max != 48) _exit(2);
    rlimit bad = {64, 48};
    if (setrlimit(RLIMIT_NOFILE, &bad) == 0 || errno != EINVAL) _exit(3);
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  EXPECT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Nproc, SoftLimitIsAtMostTheHardLimit) {
  rlimit r;
  ASSERT_SYS_OK(getrlimit(RLIMIT_NPROC, &r));
  EXPECT_LE(r.rlim_cur, r.rlim_max);
  EXPECT_GT(r.rlim_cur, 16u);
}

TEST(Prlimit, ReadsAndSetsTheCallersLimitAtOnce) {
  rlimit old, next = {kLimit, RLIM_INFINITY};
  ASSERT_SYS_OK(getrlimit(RLIMIT_FSIZE, &old));
  next.rlim_max = old.rlim_max;
  rlimit seen;
  ASSERT_SYS_OK(prlimit(0, RLIMIT_FSIZE, &next, &seen));
  EXPECT_EQ(seen.rlim_cur, old.rlim_cur);
  rlimit now;
  ASSERT_SYS_OK(getrlimit(RLIMIT_FSIZE, &now));
  EXPECT_EQ(now.rlim_cur, kLimit);
  ASSERT_SYS_OK(setrlimit(RLIMIT_FSIZE, &old));
}

}  // namespace
}  // namespace syscall_test
