// What a freshly forked stub process does before it runs stub code: the part both
// platforms share (fd, signal, rseq, privilege and seccomp setup), as raw syscalls.
#ifndef USENTRY_PLATFORM_STUB_CHILD_UNSAFE_H_
#define USENTRY_PLATFORM_STUB_CHILD_UNSAFE_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace usentry::platform {

// True for a signal the CPU raised for the instruction that just ran (a fault, trap,
// illegal instruction...): a synchronous signal number with a kernel si_code (> 0).
// Anything else (kill, tgkill, sigqueue, timers) is asynchronous.
bool IsSynchronousSignal(const siginfo_t& info);

// Describes a stub's wait status for messages ("exited with status 110 (prctl(...)
// failed)", "killed by signal 31 (SIGSYS), a syscall denied by the stub seccomp filter").
std::string DescribeWaitStatus(int status);

// Exit status of a stub whose own startup code (in the stub page) failed.
inline constexpr int kStubStartupFailedExit = 120;

// What the forked child needs; prepared by the parent before the fork because the child
// may not allocate (another sentry thread may hold the malloc lock at fork time).
struct StubChildArgs {
  int keep_fds[3] = {-1, -1, -1};  // the only fds the stub keeps (-1: unused)
  pid_t parent_pid = 0;            // to detect that the parent died before PDEATHSIG was set
  const void* filter = nullptr;    // struct sock_fprog* of the stub seccomp filter
  uint64_t entry = 0;              // where the child jumps; it never returns
  uint64_t entry_arg = 0;          // in rdi at entry
  bool trace_me = false;           // PTRACE_TRACEME (the ptrace platform)
  // PR_SET_PDEATHSIG(SIGKILL): die with the forking thread. The ptrace platform turns
  // it off: a stub outlives the thread that made it when that app thread exits before
  // the process's other threads; PTRACE_O_EXITKILL on every stub thread ties the stub
  // to its tracers instead.
  bool death_signal = true;
  bool drop_caps = false;  // capset to nothing (a stub that may make syscalls)
  // Signal handler in stub code for every signal in handled_mask (bit sig-1), with
  // SA_SIGINFO|SA_ONSTACK|SA_RESTORER|SA_NODEFER and nothing more blocked while it runs:
  // the handler runs with the interrupted code's signal mask, so that it may return
  // without rt_sigreturn (systrap's kOpReturn), and a signal that lands in it nests
  // (the stub code drops such interrupts; a fault there is fatal to the stub).
  // 0: every signal keeps its default action.
  uint64_t handler = 0;
  uint64_t restorer = 0;
  uint64_t handled_mask = 0;
  // The signals whose action the child sets back to the default (bit sig-1); the others
  // are left as inherited. All by default. A parent that can still read /proc passes
  // NonDefaultSignalsOfThisProcess(): 62 rt_sigaction calls took 0.4-0.6 ms on the way
  // to the systrap zygote's first report, which every run waits for; about 10 remain.
  uint64_t reset_mask = ~uint64_t{0};
};

// Exit statuses of a child that failed before reaching the stub code (for messages).
enum StubChildExit : int {
  kChildPdeathsig = 110,
  kChildParentGone,
  kChildRseq,
  kChildSigaction,
  kChildSigmask,
  kChildCloseRange,
  kChildTraceme,
  kChildNoNewPrivs,
  kChildSeccomp,
  kChildCapset,
};
const char* StubChildExitName(int code);

// The signals whose action is not the default in a /proc/PID/status text: its SigIgn
// and SigCgt masks (bit sig-1), or nullopt when either line is missing or malformed.
std::optional<uint64_t> NonDefaultSignals(std::string_view status);
// The same for this process (signal actions are per process), from /proc/self/status;
// nullopt without /proc (a confined sentry).
std::optional<uint64_t> NonDefaultSignalsOfThisProcess();

// Body of the freshly forked (raw clone, no atfork handlers) stub child: only raw
// syscalls, no allocation. PDEATHSIG, resets signal dispositions (or installs the stub
// handler) and the mask, closes every fd but keep_fds, unregisters glibc's rseq area,
// optionally PTRACE_TRACEME and drops capabilities, NO_NEW_PRIVS, installs the filter,
// then jumps to entry. Exits with a StubChildExit code on failure.
[[noreturn]] void StubChildMain(const StubChildArgs& args);

// Jumps to `entry` with `arg` in rdi and never returns. For the forked child only: the stub code
// unmaps everything this function's caller had.
[[noreturn]] void JumpToStub(uint64_t entry, uint64_t arg);

}  // namespace usentry::platform

#endif  // USENTRY_PLATFORM_STUB_CHILD_UNSAFE_H_
