// The systrap stub's seccomp filter (policy and rationale in stub_filter.h).
#include "platform/systrap/stub_filter.h"

#include <asm/prctl.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/bpf/seccomp_bpf.h"
#include "platform/systrap/layout.h"
#include "platform/systrap/stub_code_unsafe.h"

namespace usentry::platform::systrap {

absl::StatusOr<std::vector<sock_filter>> BuildStubFilter(uint64_t code_page) {
  if (code_page % kPageSize != 0 || code_page == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("BuildStubFilter(code_page=0x%x): not a page address", code_page));
  }
  using bpf::Cond;
  using bpf::Half;
  using bpf::SeccompProgramBuilder;
  const bpf::Label next = SeccompProgramBuilder::kNext;
  SeccompProgramBuilder b;
  const bpf::Label trap = b.NewLabel();
  const bpf::Label kill = b.NewLabel();
  const bpf::Label allow = b.NewLabel();

  // The region is page aligned and 16 KiB: it never straddles a 4 GiB boundary.
  b.JumpUnlessIpIn(code_page, kCodeSize, trap);

  // From the stub page: only the stub's own calls, 64-bit ABI.
  b.LoadArch();
  b.JumpIf(Cond::kEq, AUDIT_ARCH_X86_64, next, kill);
  b.LoadNr();
  for (uint32_t nr :
       {SYS_munmap, SYS_mmap, SYS_mprotect, SYS_close, SYS_recvmsg, SYS_gettid, SYS_sigaltstack,
        SYS_rt_sigreturn, SYS_exit, SYS_exit_group, SYS_sched_yield}) {
    b.JumpIf(Cond::kEq, nr, allow, next);
  }
  // One 32-bit argument (its upper half must be 0) taking one of `values`.
  const auto arg_in = [&](uint32_t nr, int arg, std::initializer_list<uint32_t> values) {
    const bpf::Label other = b.NewLabel();
    const bpf::Label check_low = b.NewLabel();
    b.JumpIf(Cond::kEq, nr, next, other);
    b.LoadArg(arg, Half::kHigh);
    b.JumpIf(Cond::kEq, 0, check_low, kill);
    b.Bind(check_low);
    b.LoadArg(arg, Half::kLow);
    for (uint32_t v : values) b.JumpIf(Cond::kEq, v, allow, next);
    b.Goto(kill);
    b.Bind(other);
  };
  arg_in(SYS_futex, 1, {FUTEX_WAIT, FUTEX_WAKE});
  b.LoadNr();
  arg_in(SYS_clone, 0, {CLONE_PARENT, static_cast<uint32_t>(kThreadCloneFlags)});
  b.LoadNr();
  arg_in(SYS_prctl, 0, {PR_SET_PDEATHSIG});
  b.LoadNr();
  arg_in(SYS_arch_prctl, 0, {ARCH_SET_FS, ARCH_SET_GS});
  b.Goto(kill);

  b.Bind(trap);
  b.Return(SECCOMP_RET_TRAP);
  b.Bind(kill);
  b.Return(SECCOMP_RET_KILL_PROCESS);
  b.Bind(allow);
  b.Return(SECCOMP_RET_ALLOW);
  return b.Build();
}

}  // namespace usentry::platform::systrap
