// dnotify (fcntl F_NOTIFY): which changes signal, one-shot vs DN_MULTISHOT, F_SETSIG's
// signal with si_fd and POLL_MSG vs plain SIGIO, F_GETOWN, argument errors.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

class Dnotify : public ::testing::Test {
 protected:
  void SetUp() override {
    sigemptyset(&set_);
    sigaddset(&set_, SIGIO);
    sigaddset(&set_, SIGRTMIN);
    ASSERT_EQ(sigprocmask(SIG_BLOCK, &set_, &old_), 0);
    dirfd_ = open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_SYS_OK(dirfd_);
  }
  void TearDown() override {
    close(dirfd_);
    // Nothing may stay pending for the next test.
    timespec zero{0, 0};
    while (sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  // The next pending SIGIO/SIGRTMIN, or 0 if none is pending.
  int Take(siginfo_t* info) {
    timespec zero{0, 0};
    int sig = sigtimedwait(&set_, info, &zero);
    return sig < 0 ? 0 : sig;
  }
  void Create(const std::string& name) {
    int fd = open(dir_.Child(name).c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_SYS_OK(fd);
    close(fd);
  }
  TempDir dir_;
  int dirfd_ = -1;
  sigset_t set_, old_;
};

TEST_F(Dnotify, ArgumentErrors) {
  Create("f");
  ScopedFd file(open(dir_.Child("f").c_str(), O_RDONLY));
  EXPECT_ERRNO(fcntl(file.get(), F_NOTIFY, DN_CREATE), ENOTDIR);
  EXPECT_EQ(fcntl(file.get(), F_NOTIFY, DN_MULTISHOT), 0);  // "nothing": accepted anywhere
  EXPECT_ERRNO(fcntl(dirfd_, F_SETSIG, 65), EINVAL);
  EXPECT_ERRNO(fcntl(dirfd_, F_SETSIG, -1), EINVAL);
  EXPECT_EQ(fcntl(dirfd_, F_GETSIG), 0);
  ASSERT_EQ(fcntl(dirfd_, F_SETSIG, SIGRTMIN), 0);
  EXPECT_EQ(fcntl(dirfd_, F_GETSIG), SIGRTMIN);
}

// CPython's test_fcntl_64_bit: DN_MULTISHOT does not fit in an int.
TEST_F(Dnotify, MultishotFlagAboveTwoToThe31) {
  EXPECT_EQ(fcntl(dirfd_, F_NOTIFY, static_cast<long>(DN_MULTISHOT) | DN_ATTRIB), 0);
}

TEST_F(Dnotify, OneShotSignalCarriesTheFd) {
  ASSERT_EQ(fcntl(dirfd_, F_SETSIG, SIGRTMIN), 0);
  ASSERT_EQ(fcntl(dirfd_, F_NOTIFY, DN_CREATE), 0);
  EXPECT_EQ(fcntl(dirfd_, F_GETOWN), getpid());
  Create("a");
  siginfo_t info{};
  ASSERT_EQ(Take(&info), SIGRTMIN);
  EXPECT_EQ(info.si_fd, dirfd_);
  EXPECT_EQ(info.si_code, POLL_MSG);
  Create("b");  // the notification ended with its first signal
  EXPECT_EQ(Take(&info), 0);
}

TEST_F(Dnotify, MultishotSignalsEveryMatchingChangeOnly) {
  ASSERT_EQ(fcntl(dirfd_, F_SETSIG, SIGRTMIN), 0);
  ASSERT_EQ(fcntl(dirfd_, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
  Create("a");
  Create("b");
  ASSERT_EQ(unlink(dir_.Child("a").c_str()), 0);  // DN_DELETE was not asked for
  siginfo_t info{};
  EXPECT_EQ(Take(&info), SIGRTMIN);
  EXPECT_EQ(Take(&info), SIGRTMIN);  // real-time signals queue: one per change
  EXPECT_EQ(Take(&info), 0);
  // Requests add up: now deletions signal too; 0 ends it all.
  ASSERT_EQ(fcntl(dirfd_, F_NOTIFY, DN_DELETE | DN_MULTISHOT), 0);
  ASSERT_EQ(unlink(dir_.Child("b").c_str()), 0);
  EXPECT_EQ(Take(&info), SIGRTMIN);
  ASSERT_EQ(fcntl(dirfd_, F_NOTIFY, 0), 0);
  Create("c");
  EXPECT_EQ(Take(&info), 0);
}

TEST_F(Dnotify, WithoutSetsigItIsAPlainSigio) {
  ASSERT_EQ(fcntl(dirfd_, F_NOTIFY, DN_MODIFY), 0);
  Create("f");
  EXPECT_EQ(Take(nullptr), 0);  // a creation is not a modification
  ScopedFd f(open(dir_.Child("f").c_str(), O_WRONLY));
  ASSERT_EQ(write(f.get(), "x", 1), 1);
  siginfo_t info{};
  ASSERT_EQ(Take(&info), SIGIO);
  EXPECT_EQ(info.si_code, SI_KERNEL);
}

TEST_F(Dnotify, RenameWithinTheDirectory) {
  Create("a");
  ASSERT_EQ(fcntl(dirfd_, F_SETSIG, SIGRTMIN), 0);
  ASSERT_EQ(fcntl(dirfd_, F_NOTIFY, DN_RENAME | DN_MULTISHOT), 0);
  ASSERT_EQ(rename(dir_.Child("a").c_str(), dir_.Child("b").c_str()), 0);
  siginfo_t info{};
  EXPECT_EQ(Take(&info), SIGRTMIN);
  EXPECT_EQ(Take(&info), 0);
  Create("c");  // not a rename
  EXPECT_EQ(Take(&info), 0);
}

}  // namespace
}  // namespace syscall_test
