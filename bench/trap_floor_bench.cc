// The floor under any seccomp-trap platform: one syscall trapped with SECCOMP_RET_TRAP
// and answered by an in-process SIGSYS handler (no sentry, no second process), next to
// the same syscall made natively. systrap's unpatched cost is this plus its handoff.
// Run natively only: `build-bench/bench/trap_floor_bench`.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <cstddef>
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

}  // namespace

BENCHMARK_MAIN();
