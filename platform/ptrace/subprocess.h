// A ptrace stub process: creation (fork + filter + stub code), syscall injection,
// register/FPU access and reaping. Used by the ptrace AddressSpace and Context.
#ifndef USENTRY_PLATFORM_PTRACE_SUBPROCESS_H_
#define USENTRY_PLATFORM_PTRACE_SUBPROCESS_H_

#include <linux/filter.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/user.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "platform/ptrace/stub_code_unsafe.h"

// Host syscalls this platform makes, for the sentry's own seccomp allowlist:
//  * sentry thread: clone(SIGCHLD) (raw, no other flags), wait4, ptrace (TRACEME is in
//    the child; here GETREGS, SETREGS, GETREGSET/SETREGSET NT_X86_XSTATE, GETSIGINFO,
//    GET_SYSCALL_INFO, SETOPTIONS, CONT, SYSEMU), kill(SIGKILL), tgkill (Interrupt),
//    getpid, fcntl(F_GETFD) in NewPlatform; once per process mmap/mprotect of the stub
//    page.
//  * forked child before its own filter (still under the sentry's inherited filter):
//    prctl(PR_SET_PDEATHSIG, PR_SET_NAME, PR_SET_NO_NEW_PRIVS), getppid, rseq(UNREGISTER),
//    rt_sigaction, rt_sigprocmask, close_range, ptrace(PTRACE_TRACEME),
//    seccomp(SET_MODE_FILTER); then from the stub page munmap, getpid, kill(SIGSTOP),
//    exit_group, and the injected mmap/munmap/mprotect.
namespace usentry::platform::ptrace {

// One traced thread of a stub process: its first thread, which owns the process
// (Create), or an app thread added later (CloneThread + Adopt). Every method must be
// called on the host thread that traces it (ptrace's tracer is that thread), except
// pid() and tgid().
class Subprocess {
 public:
  // Forks a stub that keeps only `memory_fd` and waits until it stopped itself inside
  // the stub page with everything else unmapped, then checks it with an injected
  // getpid and resets its FPU state (inherited from the sentry) to the init state.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Create(int memory_fd);
  // Becomes the tracer (the calling thread) of thread `tid` of `process`'s stub, made by
  // CloneThread and waiting untraced in the stub page: PTRACE_SEIZE, PTRACE_INTERRUPT,
  // and waits for the stop. The result does not own the process.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Adopt(const Subprocess& process, pid_t tid);
  // The process owner kills (SIGKILL) and reaps the whole stub; a thread handle does
  // nothing (call ExitThread first).
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Injects clone(kStubThreadCloneFlags) (the thread must be stopped) and returns the
  // new thread's tid. The new thread spins in the stub page, untraced, until Adopt.
  absl::StatusOr<pid_t> CloneThread();
  // Ends this thread alone: points it at exit(0) in the stub page and detaches, so it
  // exits untraced while the process's other threads go on. No ptrace call is made on
  // this handle afterwards. If the thread is already dead, reaps it.
  absl::Status ExitThread();
  bool owns_process() const { return owns_process_; }

  pid_t pid() const { return pid_; }    // the traced thread's tid
  pid_t tgid() const { return tgid_; }  // the stub process
  int memory_fd() const { return memory_fd_; }
  const StubPage& stub() const { return stub_; }
  bool dead() const { return dead_; }
  // Registers the stub had when it stopped; a source of valid user segment selectors.
  const user_regs_struct& initial_regs() const { return initial_regs_; }
  // Bytes of the host's XSAVE area as PTRACE_GETREGSET NT_X86_XSTATE returns it.
  size_t xstate_size() const { return xstate_size_; }
  // Bytes of it a signal frame holds (xsave_layout.h): the size the app sees.
  size_t frame_xstate_size() const { return frame_xstate_size_; }

  // Runs syscall `nr` with `args` in the stub (which must be stopped) and returns the
  // raw rax (negative errno on failure). Clobbers the stub's registers.
  // Errors name the syscall number and arguments.
  // A -ERESTART* result (a signal interrupted the call) is retried here.
  absl::StatusOr<int64_t> Inject(int nr, const std::array<uint64_t, 6>& args, int restarts = 0) {
    return InjectAt(stub_.syscall_site, stub_.trap_rip, nr, args, restarts);
  }

  // FailedPrecondition naming `op` unless called on the tracer thread (the one that
  // created the stub); ptrace requests from any other thread fail with ESRCH.
  absl::Status CheckTracer(const char* op) const;

  // waitpid(pid, __WALL) with EINTR retry. Marks the stub dead if it exited.
  absl::StatusOr<int> Wait();
  // Marks the stub dead (it was reaped by Wait or died); the destructor then skips it.
  void MarkDead() { dead_ = true; }

  absl::Status GetRegs(user_regs_struct& regs);
  absl::Status SetRegs(const user_regs_struct& regs);
  absl::Status GetSiginfo(siginfo_t& info);
  // The FPU/vector state as a signal frame holds it: frame_xstate_size() bytes of
  // standard-format XSAVE image with dynamically enabled components (AMX tile data)
  // left out. Set writes those back and leaves the rest in its initial state.
  absl::Status GetFrameXstate(uint8_t* buf);
  absl::Status SetFrameXstate(const uint8_t* buf);
  // Resumes the stub with `request` (PTRACE_CONT, PTRACE_SYSEMU), never delivering a
  // signal: host signals are the sentry's to emulate.
  absl::Status Resume(int request, const char* request_name);

  // If `st` failed because the stub is gone (ESRCH: killed from outside, e.g. OOM or a
  // SIGKILL), reaps it and returns the death as the error; otherwise returns `st`.
  absl::Status ExplainFailure(absl::Status st, const std::string& during);

  // "stub pid=123 <status>" for a non-OK Status after the stub died.
  absl::Status DiedError(const std::string& during, int status);

 private:
  Subprocess(pid_t pid, pid_t tgid, int memory_fd, StubPage stub, pid_t tracer_tid,
             bool owns_process)
      : pid_(pid),
        tgid_(tgid),
        memory_fd_(memory_fd),
        stub_(stub),
        tracer_tid_(tracer_tid),
        owns_process_(owns_process) {}
  absl::Status FinishSetup();
  // Inject at a given site: `trap_rip` is where the site's int3 reports back.
  absl::StatusOr<int64_t> InjectAt(uint64_t site, uint64_t trap_rip, int nr,
                                   const std::array<uint64_t, 6>& args, int restarts);

  const pid_t pid_;
  const pid_t tgid_;
  const int memory_fd_;
  const StubPage stub_;
  const pid_t tracer_tid_;
  const bool owns_process_;
  bool dead_ = false;
  bool detached_ = false;  // ExitThread let it go
  user_regs_struct initial_regs_{};
  absl::Status GetXstate(void* buf, size_t& len);
  absl::Status SetXstate(const void* buf, size_t len);

  size_t xstate_size_ = 0;
  size_t frame_xstate_size_ = 0;
  uint64_t frame_xstate_features_ = 0;
  // The whole host image when it is larger than the frame's; empty otherwise.
  std::vector<uint8_t> xstate_scratch_;
};

}  // namespace usentry::platform::ptrace

#endif  // USENTRY_PLATFORM_PTRACE_SUBPROCESS_H_
