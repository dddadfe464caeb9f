// The gofer's host-syscall allowlist. Every entry is justified in docs/security.md
// ("Gofer"). Part of the policy library: the build compiles it to BPF ahead
// (bpf_programs.h).
#include <seccomp.h>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "sentry/confine/seccomp_policy.h"

namespace usentry::sentry::confine {
namespace {

constexpr int kGoferSyscalls[] = {
    // The protocol: requests in, answers and donated FDs out.
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmsg),
    // Resolving and opening one component at a time beneath FDs it holds, and reopening
    // an O_PATH FD through its own /proc/self/fd (see gofer/host_fs.h).
    SCMP_SYS(openat),
    SCMP_SYS(openat2),
    SCMP_SYS(close),
    SCMP_SYS(newfstatat),
    SCMP_SYS(fstat),
    SCMP_SYS(statx),
    SCMP_SYS(readlinkat),
    SCMP_SYS(getdents64),
    SCMP_SYS(lseek),
    SCMP_SYS(read),
    SCMP_SYS(write),  // its diagnostics on stderr
    SCMP_SYS(fcntl),
    SCMP_SYS(fstatfs),
    // Changes in read-write trees (the server refuses them for read-only ones).
    SCMP_SYS(mkdirat),
    SCMP_SYS(mknodat),
    SCMP_SYS(unlinkat),
    SCMP_SYS(renameat),
    SCMP_SYS(renameat2),
    SCMP_SYS(linkat),
    SCMP_SYS(symlinkat),
    SCMP_SYS(fchmodat),
    SCMP_SYS(chmod),  // glibc chmod() of a /proc/self/fd path (mode of a directory)
    SCMP_SYS(fchmod),
    SCMP_SYS(fchownat),
    SCMP_SYS(fchown),
    SCMP_SYS(utimensat),
    SCMP_SYS(truncate),
    SCMP_SYS(ftruncate),
    SCMP_SYS(umask),
};

}  // namespace

absl::StatusOr<ScmpFilter> BuildGoferFilter(uint32_t default_action) {
  ScmpFilter filter(seccomp_init(default_action));
  if (!filter) return absl::InternalError("seccomp_init failed");
  int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, default_action);
  if (rc < 0) return ErrnoStatus("seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH)", -rc);
  for (absl::Span<const int> list :
       {absl::Span<const int>(kGoferSyscalls), absl::Span<const int>(kHelperRuntimeSyscalls)}) {
    for (int nr : list) {
      rc = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, nr, 0);
      if (rc < 0) return ErrnoStatus(absl::StrCat("seccomp_rule_add(gofer, nr=", nr, ")"), -rc);
    }
  }
  return filter;
}

}  // namespace usentry::sentry::confine
