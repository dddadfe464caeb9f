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
//  * call ptrace-backed methods from a thread other than the one that created the
//    AddressSpace: they return FailedPrecondition (Interrupt is the exception).
#ifndef USENTRY_PLATFORM_PTRACE_PTRACE_PLATFORM_H_
#define USENTRY_PLATFORM_PTRACE_PTRACE_PLATFORM_H_

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "platform/platform.h"
#include "platform/ptrace/subprocess.h"

namespace usentry::platform::ptrace {

// The host signal Interrupt() sends to a running stub. Its default action is "ignore",
// so even if it were ever delivered it would do nothing; it is suppressed at its
// signal-delivery-stop. Not SIGSTOP: no group-stop semantics to undo.
inline constexpr int kInterruptSignal = SIGCHLD;

class PtraceAddressSpace final : public AddressSpace {
 public:
  // Creates the stub; must run on the thread that will Switch into it.
  static absl::StatusOr<std::unique_ptr<PtraceAddressSpace>> Create(int memory_fd);

  absl::Status MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) override;
  absl::Status Unmap(uint64_t addr, uint64_t len) override;
  absl::Status Protect(uint64_t addr, uint64_t len, Prot prot) override;
  uint64_t MaxUserAddress() const override { return sp_->stub().addr; }

  // The stub's host pid (for tests and diagnostics).
  pid_t stub_pid() const { return sp_->pid(); }
  Subprocess& subprocess() { return *sp_; }

 private:
  explicit PtraceAddressSpace(std::unique_ptr<Subprocess> sp) : sp_(std::move(sp)) {}
  // Validates [addr, addr+len) is page aligned and below MaxUserAddress.
  absl::Status CheckRange(const char* call, uint64_t addr, uint64_t len) const;

  std::unique_ptr<Subprocess> sp_;
};

class PtraceContext final : public Context {
 public:
  absl::StatusOr<SwitchResult> Switch(AddressSpace& as, Registers& regs) override;
  absl::Status LoadFpState(AddressSpace& as, Registers& regs) override;
  void Interrupt() override;

 private:
  // Returns true if an interrupt is pending (and consumes it); otherwise publishes
  // `pid` as the running stub that Interrupt() signals.
  bool BeginRun(pid_t pid);
  void EndRun();
  absl::StatusOr<SwitchResult> Classify(Subprocess& sp, Registers& regs, int status);

  std::mutex mu_;
  // Guarded by mu_ so that Interrupt never signals a pid after Switch returned (the
  // stub could be reaped and its pid reused).
  pid_t running_pid_ ABSL_GUARDED_BY(mu_) = 0;
  bool interrupt_pending_ ABSL_GUARDED_BY(mu_) = false;
};

class PtracePlatform final : public Platform {
 public:
  explicit PtracePlatform(MemoryFileInfo memory_file) : memory_file_(memory_file) {}
  std::string Name() const override { return "ptrace"; }
  absl::StatusOr<std::unique_ptr<AddressSpace>> NewAddressSpace() override;
  absl::StatusOr<std::unique_ptr<Context>> NewContext() override;

 private:
  const MemoryFileInfo memory_file_;
};

}  // namespace usentry::platform::ptrace

#endif  // USENTRY_PLATFORM_PTRACE_PTRACE_PLATFORM_H_
