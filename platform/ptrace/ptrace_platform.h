// The PTRACE_SYSEMU platform: each AddressSpace is a stub process traced by the sentry
// thread that created it; Context::Switch runs app code with PTRACE_SYSEMU.
//
// Switch semantics (what the sentry relies on):
//  * kSyscall: the app executed `syscall`. gp.orig_rax is the number, gp.rax is
//    -ENOSYS, and gp.rip already points *after* the 2-byte syscall instruction (the
//    CPU advanced it; rcx/r11 hold rip/rflags as the instruction left them). The
//    syscall was skipped by the host. Write the result into gp.rax and Switch again:
//    the app continues after the instruction. To restart the syscall instead, set
//    gp.rip -= 2 and gp.rax = gp.orig_rax.
//  * Switch writes orig_rax = -1 to the host, so the host kernel never applies its own
//    syscall-restart logic (rewinding rip for -ERESTART* values in rax) to app state.
//  * kFault: SIGSEGV/SIGBUS from a memory access. fault_addr = si_addr. ptrace does not
//    expose the page-fault error code: fault_exec is set when the fault address is the
//    instruction being fetched (si_addr == rip, or the next page when the instruction
//    straddles a page end); fault_write is never set, so the sentry must decide
//    between read and write from the VMA (a fault on a page mapped readable is a write).
//  * kSignal: another synchronous host signal (SIGFPE, SIGILL, SIGTRAP from int3 or a
//    trap flag, SIGSEGV without an address such as a general protection fault, SIGSYS).
//  * kInterrupted: Interrupt() was called, or an asynchronous host signal arrived.
//    Host signals are never delivered into the stub; the sentry emulates signals.
//  * A non-OK status: the stub died or ptrace failed; the AddressSpace is unusable.
//  * gp.cs and gp.ss are always set to the 64-bit user selectors (0x33, 0x2b), as
//    gVisor does: app code that far-jumps into a 32-bit segment is put back into
//    64-bit mode at its next trap. If both were 0 (a fresh Registers), ds/es/fs/gs
//    are zeroed too; otherwise they are kept (the app may load them).
//  * int 0x80 / compat-mode syscalls are reported as kSignal SIGSYS with si_arch =
//    AUDIT_ARCH_I386, si_syscall = the number (checked with PTRACE_GET_SYSCALL_INFO).
//    On hosts without IA-32 emulation int 0x80 is a #GP: kSignal SIGSEGV (SI_KERNEL).
//
// What the rest of the sentry process must not do (it would break the tracer):
//  * set SIGCHLD to SIG_IGN or SA_NOCLDWAIT (stubs would be auto-reaped), or wait for
//    "any child" (waitpid(-1)/P_ALL) on any thread: that steals the stubs' ptrace
//    stops. Wait for specific pids only.
//  * create the memory file noexec (vm.memfd_noexec / MFD_NOEXEC_SEAL): MapFile with
//    PROT_EXEC then fails with the mmap errno.
//  * call ptrace-backed methods from a thread that traces no thread of the stub: they
//    return FailedPrecondition (Interrupt is the exception).
//
// Threads: the thread that creates an AddressSpace traces the stub's first thread.
// NewThreadContext, on a thread whose stub thread is stopped, injects a clone there;
// the new thread spins in the stub page until the new Context's host thread seizes it
// (PTRACE_SEIZE + PTRACE_INTERRUPT) at its first Switch. MapFile/Unmap/Protect inject
// into the calling host thread's own stub thread. A Context destroyed on its host
// thread ends its stub thread with exit(2) after PTRACE_DETACH (EXITKILL would kill the
// whole process when the tracer thread exits), except the process's last thread.
#ifndef USENTRY_PLATFORM_PTRACE_PTRACE_PLATFORM_H_
#define USENTRY_PLATFORM_PTRACE_PTRACE_PLATFORM_H_

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "platform/platform.h"
#include "platform/ptrace/subprocess.h"
#include "platform/stub_process.h"

namespace usentry::platform::ptrace {

// The host signal Interrupt() sends to a running stub. Its default action is "ignore",
// so even if it were ever delivered it would do nothing; it is suppressed at its
// signal-delivery-stop. Not SIGSTOP: no group-stop semantics to undo.
inline constexpr int kInterruptSignal = SIGCHLD;

// Which stub thread each tracer (sentry host thread) drives in one stub process.
// Shared by the AddressSpace and the Contexts running in it, which may outlive it.
struct StubThreads {
  std::mutex mu;
  std::map<pid_t, Subprocess*> by_tracer ABSL_GUARDED_BY(mu);  // tracer tid -> its thread
  int pending ABSL_GUARDED_BY(mu) = 0;                         // threads cloned and not adopted yet
  bool dead ABSL_GUARDED_BY(mu) = false;  // the AddressSpace (and process) is gone
};

class PtraceAddressSpace final : public AddressSpace {
 public:
  // Creates the stub; the calling thread is the tracer of its first thread.
  static absl::StatusOr<std::unique_ptr<PtraceAddressSpace>> Create(int memory_fd);
  ~PtraceAddressSpace() override;

  absl::Status MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) override;
  absl::Status Unmap(uint64_t addr, uint64_t len) override;
  absl::Status Protect(uint64_t addr, uint64_t len, Prot prot) override;
  // ptrace never writes app memory itself.
  void SetPagesShared(uint64_t, uint64_t, bool) override {}
  std::optional<absl::Duration> CpuTime() const override { return ProcessCpuTime(sp_->pid()); }
  uint64_t MaxUserAddress() const override { return sp_->stub().addr; }

  // The stub's host pid (for tests and diagnostics).
  pid_t stub_pid() const { return sp_->pid(); }
  // The process's first thread (it owns the process).
  Subprocess& subprocess() { return *sp_; }
  const std::shared_ptr<StubThreads>& threads() const { return threads_; }
  // The stub thread the calling host thread traces: mm operations are injected there
  // (it is stopped, since its task is in the sentry). FailedPrecondition if none.
  absl::StatusOr<Subprocess*> Mine(const char* op);

 private:
  explicit PtraceAddressSpace(std::unique_ptr<Subprocess> sp);
  // Validates [addr, addr+len) is page aligned and below MaxUserAddress.
  absl::Status CheckRange(const char* call, uint64_t addr, uint64_t len) const;

  std::unique_ptr<Subprocess> sp_;
  std::shared_ptr<StubThreads> threads_ = std::make_shared<StubThreads>();
};

// One app thread. Its stub thread is the one its host thread traces in the address
// space it switches into: the process's first thread for the task that created the
// address space, or a thread cloned for it (Platform::NewThreadContext) and adopted at
// its first Switch. Destroying the Context (on its host thread) ends that stub thread
// alone, unless it is the last one of the process, which dies with its AddressSpace.
class PtraceContext final : public Context {
 public:
  PtraceContext() = default;
  // A context whose stub thread `tid` was cloned in the process of `threads`.
  PtraceContext(std::shared_ptr<StubThreads> threads, pid_t tid)
      : pending_threads_(std::move(threads)), pending_tid_(tid) {}
  ~PtraceContext() override;
  absl::StatusOr<SwitchResult> Switch(AddressSpace& as, Registers& regs) override;
  absl::Status LoadFpState(AddressSpace& as, Registers& regs) override;
  void Interrupt() override;

 private:
  // Returns true if an interrupt is pending (and consumes it); otherwise publishes
  // `tgid`/`tid` as the running stub thread that Interrupt() signals.
  bool BeginRun(pid_t tgid, pid_t tid);
  void EndRun();
  absl::StatusOr<SwitchResult> Classify(Subprocess& sp, Registers& regs, int status);
  // The stub thread this host thread runs in `as`, adopting the pending one if needed.
  absl::StatusOr<Subprocess*> Resolve(PtraceAddressSpace& as, const char* op);
  // Lets go of the stub thread of the address space bound last (see the class comment).
  void Release();
  void AbandonPending();

  std::shared_ptr<StubThreads> threads_;  // of the address space bound last
  Subprocess* thread_ = nullptr;          // its stub thread for this context
  std::unique_ptr<Subprocess> adopted_;   // thread_ when it was cloned for us
  std::shared_ptr<StubThreads> pending_threads_;
  pid_t pending_tid_ = 0;

  std::mutex mu_;
  // Guarded by mu_ so that Interrupt never signals a thread after Switch returned (the
  // stub could be reaped and its pid reused).
  pid_t running_tgid_ ABSL_GUARDED_BY(mu_) = 0;
  pid_t running_tid_ ABSL_GUARDED_BY(mu_) = 0;
  bool interrupt_pending_ ABSL_GUARDED_BY(mu_) = false;
};

class PtracePlatform final : public Platform {
 public:
  explicit PtracePlatform(MemoryFileInfo memory_file) : memory_file_(memory_file) {}
  std::string Name() const override { return "ptrace"; }
  absl::StatusOr<std::unique_ptr<AddressSpace>> NewAddressSpace() override;
  absl::StatusOr<std::unique_ptr<Context>> NewContext() override;
  // Threads: each task's host thread traces its own stub thread of the shared process,
  // and mm operations go to the caller's own stub thread.
  bool SharedAddressSpaces() const override { return true; }
  const HostVdso* Vdso() const override;
  absl::StatusOr<std::unique_ptr<Context>> NewThreadContext(AddressSpace& as,
                                                            Context& parent) override;

 private:
  const MemoryFileInfo memory_file_;
};

}  // namespace usentry::platform::ptrace

#endif  // USENTRY_PLATFORM_PTRACE_PTRACE_PLATFORM_H_
