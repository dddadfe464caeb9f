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
  struct Named {
    int value;
    const char* name;
  };
  // clang-format off
  const Named kErrnos[] = {
      {EPERM, "EPERM"}, {ENOENT, "ENOENT"}, {ESRCH, "ESRCH"}, {EINTR, "EINTR"}, {EIO, "EIO"},
      {E2BIG, "E2BIG"}, {ENOEXEC, "ENOEXEC"}, {EBADF, "EBADF"}, {EAGAIN, "EAGAIN"},
      {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EFAULT, "EFAULT"}, {EEXIST, "EEXIST"},
      {ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"}, {EINVAL, "EINVAL"}, {EMFILE, "EMFILE"},
      {ENOTTY, "ENOTTY"}, {ESPIPE, "ESPIPE"}, {EROFS, "EROFS"}, {EPIPE, "EPIPE"},
      {ERANGE, "ERANGE"}, {EDEADLK, "EDEADLK"}, {ENAMETOOLONG, "ENAMETOOLONG"},
      {ENOSYS, "ENOSYS"}, {ENOTEMPTY, "ENOTEMPTY"}, {ELOOP, "ELOOP"}, {ENOMSG, "ENOMSG"},
      {EBADSLT, "EBADSLT"}, {EBFONT, "EBFONT"}, {ENODATA, "ENODATA"}, {ETIME, "ETIME"},
      {EPROTO, "EPROTO"}, {EBADMSG, "EBADMSG"}, {EOVERFLOW, "EOVERFLOW"}, {EBADFD, "EBADFD"},
      {EILSEQ, "EILSEQ"}, {ERESTART, "ERESTART"}, {EUSERS, "EUSERS"}, {ENOTSOCK, "ENOTSOCK"},
      {EPROTONOSUPPORT, "EPROTONOSUPPORT"}, {EOPNOTSUPP, "EOPNOTSUPP"},
      {EAFNOSUPPORT, "EAFNOSUPPORT"}, {EADDRINUSE, "EADDRINUSE"}, {ENETUNREACH, "ENETUNREACH"},
      {ECONNRESET, "ECONNRESET"}, {ENOBUFS, "ENOBUFS"}, {ENOTCONN, "ENOTCONN"},
      {ETIMEDOUT, "ETIMEDOUT"}, {ECONNREFUSED, "ECONNREFUSED"}, {EHOSTUNREACH, "EHOSTUNREACH"},
      {EALREADY, "EALREADY"}, {EINPROGRESS, "EINPROGRESS"}, {ESTALE, "ESTALE"},
      {EREMOTEIO, "EREMOTEIO"}, {EDQUOT, "EDQUOT"}, {ECANCELED, "ECANCELED"},
      {ENOKEY, "ENOKEY"}, {EOWNERDEAD, "EOWNERDEAD"}, {ENOTRECOVERABLE, "ENOTRECOVERABLE"},
      {ERFKILL, "ERFKILL"}, {EHWPOISON, "EHWPOISON"},
  };
  // clang-format on
  for (const Named& e : kErrnos) EXPECT_STREQ(ErrnoName(e.value), e.name) << e.value;
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
