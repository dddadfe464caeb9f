// Tests of the abi/ name tables against the host C library's numbering.
#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>
#include <string>

#include "abi/errno.h"
#include "abi/signal.h"
#include "abi/stat.h"
#include "gtest/gtest.h"

namespace usentry::abi {

bool AbiMatchesKernelHeaders();  // abi_kernel_headers_test.cc

namespace {

TEST(AbiLayouts, MatchHostKernelHeaders) {
  // The checks are static_asserts; this records that they were compiled in.
  EXPECT_TRUE(AbiMatchesKernelHeaders());
}

TEST(ErrnoName, MatchesHostNumbering) {
#define CHECK_ERRNO(e) EXPECT_STREQ(ErrnoName(e), #e) << e;
  CHECK_ERRNO(EPERM)
  CHECK_ERRNO(ENOENT)
  CHECK_ERRNO(ESRCH)
  CHECK_ERRNO(EINTR)
  CHECK_ERRNO(EIO) CHECK_ERRNO(E2BIG) CHECK_ERRNO(ENOEXEC) CHECK_ERRNO(EBADF) CHECK_ERRNO(EAGAIN)
      CHECK_ERRNO(ENOMEM) CHECK_ERRNO(EACCES) CHECK_ERRNO(EFAULT) CHECK_ERRNO(EEXIST) CHECK_ERRNO(
          ENOTDIR) CHECK_ERRNO(EISDIR) CHECK_ERRNO(EINVAL) CHECK_ERRNO(EMFILE) CHECK_ERRNO(ENOTTY)
          CHECK_ERRNO(ESPIPE) CHECK_ERRNO(EROFS) CHECK_ERRNO(EPIPE) CHECK_ERRNO(ERANGE) CHECK_ERRNO(
              EDEADLK) CHECK_ERRNO(ENAMETOOLONG) CHECK_ERRNO(ENOSYS) CHECK_ERRNO(ENOTEMPTY)
              CHECK_ERRNO(ELOOP) CHECK_ERRNO(ENOMSG) CHECK_ERRNO(EBADSLT) CHECK_ERRNO(EBFONT)
                  CHECK_ERRNO(ENODATA) CHECK_ERRNO(ETIME) CHECK_ERRNO(EPROTO) CHECK_ERRNO(
                      EBADMSG) CHECK_ERRNO(EOVERFLOW) CHECK_ERRNO(EBADFD) CHECK_ERRNO(EILSEQ)
                      CHECK_ERRNO(ERESTART) CHECK_ERRNO(EUSERS) CHECK_ERRNO(ENOTSOCK) CHECK_ERRNO(
                          EPROTONOSUPPORT) CHECK_ERRNO(EOPNOTSUPP) CHECK_ERRNO(EAFNOSUPPORT)
                          CHECK_ERRNO(EADDRINUSE) CHECK_ERRNO(ENETUNREACH) CHECK_ERRNO(ECONNRESET)
                              CHECK_ERRNO(ENOBUFS) CHECK_ERRNO(ENOTCONN) CHECK_ERRNO(ETIMEDOUT)
                                  CHECK_ERRNO(ECONNREFUSED) CHECK_ERRNO(EHOSTUNREACH)
                                      CHECK_ERRNO(EALREADY) CHECK_ERRNO(EINPROGRESS)
                                          CHECK_ERRNO(ESTALE) CHECK_ERRNO(EREMOTEIO)
                                              CHECK_ERRNO(EDQUOT) CHECK_ERRNO(ECANCELED)
                                                  CHECK_ERRNO(ENOKEY) CHECK_ERRNO(EOWNERDEAD)
                                                      CHECK_ERRNO(ENOTRECOVERABLE)
                                                          CHECK_ERRNO(ERFKILL)
                                                              CHECK_ERRNO(EHWPOISON)
#undef CHECK_ERRNO
                                                                  EXPECT_EQ(ErrnoName(0), nullptr);
  EXPECT_EQ(ErrnoName(41), nullptr);
  EXPECT_EQ(ErrnoName(58), nullptr);
  EXPECT_EQ(ErrnoName(134), nullptr);
  EXPECT_EQ(ErrnoName(-1), nullptr);
  EXPECT_STREQ(ErrnoName(512), "ERESTARTSYS");
  EXPECT_STREQ(ErrnoName(516), "ERESTART_RESTARTBLOCK");
  EXPECT_EQ(ErrnoName(517), nullptr);
}

TEST(ErrnoName, EveryKnownNumberHasAUniqueName) {
  std::set<std::string> seen;
  for (int e = 1; e <= kMaxErrno; ++e) {
    const char* name = ErrnoName(e);
    if (e == 41 || e == 58) continue;
    ASSERT_NE(name, nullptr) << e;
    EXPECT_EQ(name[0], 'E') << e;
    EXPECT_TRUE(seen.insert(name).second) << name;
    // glibc's strerror knows every one of them (not "Unknown error N").
    EXPECT_EQ(std::string(strerror(e)).find("Unknown error"), std::string::npos) << name;
  }
}

TEST(SignalName, MatchesHostNumbering) {
  EXPECT_STREQ(SignalName(SIGHUP), "SIGHUP");
  EXPECT_STREQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_STREQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_STREQ(SignalName(SIGCHLD), "SIGCHLD");
  EXPECT_STREQ(SignalName(SIGSTKFLT), "SIGSTKFLT");
  EXPECT_STREQ(SignalName(SIGWINCH), "SIGWINCH");
  EXPECT_STREQ(SignalName(SIGPWR), "SIGPWR");
  EXPECT_STREQ(SignalName(SIGSYS), "SIGSYS");
  EXPECT_STREQ(SignalName(32), "SIGRTMIN");
  EXPECT_STREQ(SignalName(33), "SIGRTMIN+1");
  EXPECT_STREQ(SignalName(63), "SIGRTMIN+31");
  EXPECT_STREQ(SignalName(64), "SIGRTMAX");
  EXPECT_EQ(SignalName(0), nullptr);
  EXPECT_EQ(SignalName(65), nullptr);
  for (int s = 1; s <= kNumSignals; ++s) {
    // glibc's abbreviations agree for the classic signals.
    if (s < 32 && s != SIGIO) {  // glibc abbreviates SIGIO as its alias "POLL"
      EXPECT_STREQ(SignalName(s) + 3, sigabbrev_np(s)) << s;
    }
  }
}

TEST(SignalDefaults, FollowSignal7) {
  EXPECT_EQ(kSignalDefaults[kSigChld], SignalDefault::kIgnore);
  EXPECT_EQ(kSignalDefaults[kSigWinch], SignalDefault::kIgnore);
  EXPECT_EQ(kSignalDefaults[kSigUrg], SignalDefault::kIgnore);
  EXPECT_EQ(kSignalDefaults[kSigSegv], SignalDefault::kCore);
  EXPECT_EQ(kSignalDefaults[kSigSys], SignalDefault::kCore);
  EXPECT_EQ(kSignalDefaults[kSigTstp], SignalDefault::kStop);
  EXPECT_EQ(kSignalDefaults[kSigCont], SignalDefault::kContinue);
  EXPECT_EQ(kSignalDefaults[kSigPipe], SignalDefault::kTerminate);
  EXPECT_EQ(kSignalDefaults[kSigRtMax], SignalDefault::kTerminate);
  EXPECT_EQ(SigMask(kSigHup), 1u);
  EXPECT_EQ(SigMask(kSigRtMax), uint64_t{1} << 63);
}

TEST(Dirent64, RecordLengthIsPaddedToEight) {
  EXPECT_EQ(Dirent64RecLen(1), 24u);  // 19 + "a" + NUL = 21 -> 24
  EXPECT_EQ(Dirent64RecLen(4), 24u);  // 19 + 5 = 24
  EXPECT_EQ(Dirent64RecLen(5), 32u);
}

}  // namespace
}  // namespace usentry::abi
