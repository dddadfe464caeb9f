// The gofer's host-syscall allowlist. Every entry is justified in docs/security.md
// ("Gofer"). Part of the policy library: the build compiles it to BPF ahead
// (bpf_programs.h).
#include <seccomp.h>

#include "base/status_macros.h"
#include "sentry/confine/filter_rules.h"

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
  ASSIGN_OR_RETURN(ScmpFilter filter, NewFilter(default_action, default_action));
  for (int nr : kGoferSyscalls) RETURN_IF_ERROR(AddRule(filter.get(), nr));
  for (int nr : kHelperRuntimeSyscalls) RETURN_IF_ERROR(AddRule(filter.get(), nr));
  // It moves itself to the CPU its client waits on (base/cpu_pin.h); never another task.
  RETURN_IF_ERROR(AddRule(filter.get(), SCMP_SYS(sched_setaffinity), {SCMP_A0(SCMP_CMP_EQ, 0)}));
  return filter;
}

}  // namespace usentry::sentry::confine
