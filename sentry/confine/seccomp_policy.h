// The host-syscall allowlists of the sentry and its helpers (libseccomp), built
// separately from installing them so that the build can compile them to BPF ahead
// (bpf_programs.h) and tests can export the BPF and evaluate it in-process.
#ifndef USENTRY_SENTRY_CONFINE_SECCOMP_POLICY_H_
#define USENTRY_SENTRY_CONFINE_SECCOMP_POLICY_H_

#include <linux/filter.h>
#include <seccomp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace usentry::sentry::confine {

struct ScmpFilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
// Owns a libseccomp filter context (scmp_filter_ctx is a void*).
using ScmpFilter = std::unique_ptr<void, ScmpFilterDeleter>;

// Builds the sentry's allowlist. `default_action` is what happens to every syscall not
// on the list: SCMP_ACT_KILL_PROCESS in production, SCMP_ACT_TRAP when debugging
// (USENTRY_DEBUG_SECCOMP=1). Syscalls from another ABI (i386 int 0x80, x32) get the
// default action too. The list and the reason for each entry are in docs/security.md;
// keep both in sync. `allow_ptrace`: the ptrace platform's requests (only it needs them).
absl::StatusOr<ScmpFilter> BuildSentryFilter(uint32_t default_action = SCMP_ACT_KILL_PROCESS,
                                             bool allow_ptrace = true);

// What any of our single-purpose helper processes (gofer, netgate) needs just to live:
// its heap, locks, signal returns, time, its own ids, exit. Each adds its own job's
// syscalls to these.
inline constexpr int kHelperRuntimeSyscalls[] = {
    SCMP_SYS(mmap),           SCMP_SYS(munmap),
    SCMP_SYS(mremap),         SCMP_SYS(madvise),
    SCMP_SYS(mprotect),       SCMP_SYS(brk),
    SCMP_SYS(futex),          SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigprocmask), SCMP_SYS(restart_syscall),
    SCMP_SYS(clock_gettime),  SCMP_SYS(getpid),
    SCMP_SYS(gettid),         SCMP_SYS(exit),
    SCMP_SYS(exit_group),
};

// The helpers' allowlists (gofer_filter.cc, netgate_filter.cc): their jobs' syscalls on
// top of kHelperRuntimeSyscalls; other ABIs get the default action too.
absl::StatusOr<ScmpFilter> BuildGoferFilter(uint32_t default_action = SCMP_ACT_KILL_PROCESS);
absl::StatusOr<ScmpFilter> BuildNetgateFilter(uint32_t default_action = SCMP_ACT_KILL_PROCESS);

// The sentry's calibration thread's filter (confine.h, ConfineCalibrationThread):
// read-only openat, read, close, sleeping, clock reads, futex, signal masks, madvise and
// exit; EPERM for anything else, other ABIs killed.
absl::StatusOr<ScmpFilter> BuildCalibrationFilter();

// Compiles `filter` to classic BPF (seccomp_export_bpf through a memfd).
absl::StatusOr<std::vector<sock_filter>> ExportBpf(const ScmpFilter& filter);

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_SECCOMP_POLICY_H_
