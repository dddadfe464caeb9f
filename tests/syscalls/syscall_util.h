// Helpers shared by the tests/syscalls programs. These programs run natively and in the
// sandbox, so they only use libc and GoogleTest.
#ifndef USENTRY_TESTS_SYSCALLS_SYSCALL_UTIL_H_
#define USENTRY_TESTS_SYSCALLS_SYSCALL_UTIL_H_

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace syscall_test {

// Runs `fn` in a forked child; its exit status (fn's result), or 128+N for signal N.
template <typename F>
int InChild(F fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Asserts that a libc call returning -1 on error succeeded; shows errno otherwise.
#define ASSERT_SYS_OK(expr)                                               \
  do {                                                                    \
    errno = 0;                                                            \
    auto syscall_test_ret_ = (expr);                                      \
    ASSERT_NE(syscall_test_ret_, -1) << #expr << ": " << strerror(errno); \
  } while (0)

// Expects a libc call to fail with -1 and the given errno.
#define EXPECT_ERRNO(expr, err)                                             \
  do {                                                                      \
    errno = 0;                                                              \
    auto syscall_test_ret_ = (expr);                                        \
    EXPECT_EQ(syscall_test_ret_, -1) << #expr;                              \
    EXPECT_EQ(errno, (err)) << #expr << ": got " << strerrorname_np(errno); \
  } while (0)

// A file descriptor closed when the scope ends.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() { reset(); }
  ScopedFd(ScopedFd&& o) noexcept : fd_(o.release()) {}
  ScopedFd& operator=(ScopedFd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// A fresh directory under /tmp, removed (with its contents) at the end of the scope.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/syscall-test-XXXXXX";
    char* p = mkdtemp(tmpl);
    if (p == nullptr) abort();
    path_ = p;
  }
  ~TempDir() {
    nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }
  std::string Child(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace syscall_test

#endif  // USENTRY_TESTS_SYSCALLS_SYSCALL_UTIL_H_
