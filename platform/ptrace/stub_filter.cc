// The ptrace stub's seccomp filter (policy and rationale in stub_filter.h).
#include "platform/ptrace/stub_filter.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/bpf/seccomp_bpf.h"

namespace usentry::platform::ptrace {

namespace {
// __X32_SYSCALL_BIT: x32 ABI syscalls are x86-64 arch with this bit set in nr.
constexpr uint32_t kX32SyscallBit = 0x40000000;
constexpr uint64_t kPageSize = 4096;
}  // namespace

absl::StatusOr<std::vector<sock_filter>> BuildStubFilter(uint64_t stub_page) {
  if (stub_page % kPageSize != 0 || stub_page == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("BuildStubFilter(stub_page=0x%x): not a page address", stub_page));
  }
  using bpf::Cond;
  using bpf::SeccompProgramBuilder;
  const bpf::Label next = SeccompProgramBuilder::kNext;
  SeccompProgramBuilder b;
  const bpf::Label kill = b.NewLabel();
  const bpf::Label allow = b.NewLabel();

  b.LoadArch();
  b.JumpIf(Cond::kEq, AUDIT_ARCH_X86_64, next, kill);
  b.LoadNr();
  b.JumpIf(Cond::kSet, kX32SyscallBit, kill, next);

  b.JumpUnlessIpIn(stub_page, kPageSize, kill);  // a page never straddles 4 GiB

  b.LoadNr();
  for (uint32_t nr :
       {SYS_mmap, SYS_munmap, SYS_mprotect, SYS_exit, SYS_exit_group, SYS_getpid, SYS_kill}) {
    b.JumpIf(Cond::kEq, nr, allow, next);
  }
  // clone only as the platform makes app threads: exactly kStubThreadCloneFlags.
  const bpf::Label not_clone = b.NewLabel();
  b.JumpIf(Cond::kEq, SYS_clone, next, not_clone);
  b.LoadArg(0, bpf::Half::kHigh);
  b.JumpIf(Cond::kEq, 0, next, kill);
  b.LoadArg(0, bpf::Half::kLow);
  b.JumpIf(Cond::kEq, kStubThreadCloneFlags, allow, kill);
  b.Bind(not_clone);
  b.Bind(kill);
  b.Return(SECCOMP_RET_KILL_PROCESS);
  b.Bind(allow);
  b.Return(SECCOMP_RET_ALLOW);
  return b.Build();
}

}  // namespace usentry::platform::ptrace
