// The floor under any seccomp-trap platform: one syscall trapped with SECCOMP_RET_TRAP
// and answered by an in-process SIGSYS handler (no sentry, no second process), next to
// the same syscall made natively. systrap's unpatched cost is this plus its handoff
// (with its stub's return without rt_sigreturn, the third row).
// Run natively only: `build-bench/bench/trap_floor_bench`.
#include <cpuid.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "benchmark/benchmark.h"

namespace {

void OnSigsys(int, siginfo_t*, void* uc) {
  static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RAX] = 42;  // the "emulated" result
}

// Traps getppid from now on (only getppid: the benchmark library keeps working).
bool TrapGetppid() {
  struct sigaction sa {};
  sa.sa_sigaction = OnSigsys;
  sa.sa_flags = SA_SIGINFO;
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return false;
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{.len = 4, .filter = filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

void BM_NativeGetppid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(syscall(SYS_getppid));
}
BENCHMARK(BM_NativeGetppid);

void BM_TrappedGetppidInProcess(benchmark::State& state) {
  static const bool installed = TrapGetppid();
  if (!installed) {
    state.SkipWithError("could not install the seccomp filter");
    return;
  }
  for (auto _ : state) {
    if (syscall(SYS_getppid) != 42) {
      state.SkipWithError("the SIGSYS handler did not answer");
      break;
    }
  }
}
// After the native one (registration order): the filter stays installed.
BENCHMARK(BM_TrappedGetppidInProcess);

// The same floor when the handler returns without rt_sigreturn, as systrap's stub does
// (kOpReturn, platform/systrap/layout.h): it loads the frame's FPU state and registers
// and jumps. SA_NODEFER and an empty sa_mask leave the signal mask as it was, so there
// is none to restore. ReturnThroughFrame(uc) never returns.
extern "C" void ReturnThroughFrame(ucontext_t* uc);
extern "C" uint64_t return_rip;
uint64_t return_rip;
constexpr size_t Greg(int r) { return offsetof(ucontext_t, uc_mcontext.gregs) + 8 * r; }
static_assert(offsetof(ucontext_t, uc_mcontext.fpregs) == 224 && Greg(REG_R8) == 40 &&
              Greg(REG_RDI) == 104 && Greg(REG_RSI) == 112 && Greg(REG_RBP) == 120 &&
              Greg(REG_RBX) == 128 && Greg(REG_RDX) == 136 && Greg(REG_RAX) == 144 &&
              Greg(REG_RCX) == 152 && Greg(REG_RSP) == 160 && Greg(REG_RIP) == 168 &&
              Greg(REG_EFL) == 176);
asm(R"(
  .text
  .globl ReturnThroughFrame
ReturnThroughFrame:
  mov 224(%rdi), %rsi
  mov $-1, %eax
  mov $-1, %edx
  xrstor64 (%rsi)
  mov 168(%rdi), %rax
  mov %rax, return_rip(%rip)
  push 176(%rdi)
  popfq
  mov 40(%rdi), %r8
  mov 48(%rdi), %r9
  mov 56(%rdi), %r10
  mov 64(%rdi), %r11
  mov 72(%rdi), %r12
  mov 80(%rdi), %r13
  mov 88(%rdi), %r14
  mov 96(%rdi), %r15
  mov 112(%rdi), %rsi
  mov 120(%rdi), %rbp
  mov 128(%rdi), %rbx
  mov 136(%rdi), %rdx
  mov 144(%rdi), %rax
  mov 152(%rdi), %rcx
  mov 160(%rdi), %rsp
  mov 104(%rdi), %rdi
  jmp *return_rip(%rip)
)");

void OnSigsysNoSigreturn(int, siginfo_t*, void* uc) {
  auto* u = static_cast<ucontext_t*>(uc);
  u->uc_mcontext.gregs[REG_RAX] = 42;
  ReturnThroughFrame(u);
}

bool HostHasXsave() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) != 0;
}

void BM_TrappedGetppidInProcessNoSigreturn(benchmark::State& state) {
  static const bool installed = TrapGetppid();
  if (!installed || !HostHasXsave()) {
    state.SkipWithError(installed ? "no XSAVE" : "could not install the seccomp filter");
    return;
  }
  struct sigaction sa {};
  sa.sa_sigaction = OnSigsysNoSigreturn;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  struct sigaction old {};
  if (sigaction(SIGSYS, &sa, &old) != 0) {
    state.SkipWithError("sigaction");
    return;
  }
  for (auto _ : state) {
    if (syscall(SYS_getppid) != 42) {
      state.SkipWithError("the SIGSYS handler did not answer");
      break;
    }
  }
  sigaction(SIGSYS, &old, nullptr);
}
BENCHMARK(BM_TrappedGetppidInProcessNoSigreturn);

}  // namespace

BENCHMARK_MAIN();
