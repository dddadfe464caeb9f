// PTRACE_SYSEMU AddressSpace, Context and Platform (semantics in ptrace_platform.h).
#include "platform/ptrace/ptrace_platform.h"

#include <linux/audit.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace usentry::platform::ptrace {
namespace {

constexpr uint64_t kPageMask = kStubPageSize - 1;
// x86-64 user code and stack segment selectors (__USER_CS, __USER_DS).
constexpr uint64_t kUserCs = 0x33;
constexpr uint64_t kUserSs = 0x2b;
// Stop signal of a syscall stop with PTRACE_O_TRACESYSGOOD.
constexpr int kSyscallStop = SIGTRAP | 0x80;

bool IsLinuxErrno(int64_t rax) { return rax < 0 && rax >= -4095; }

std::string ProtString(int prot) {
  if (prot == PROT_NONE) return "PROT_NONE";
  std::string s;
  for (auto [bit, name] : {std::pair{PROT_READ, "PROT_READ"}, std::pair{PROT_WRITE, "PROT_WRITE"},
                           std::pair{PROT_EXEC, "PROT_EXEC"}}) {
    if (prot & bit) absl::StrAppend(&s, s.empty() ? "" : "|", name);
  }
  if (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) absl::StrAppendFormat(&s, "|0x%x", prot);
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// AddressSpace

absl::StatusOr<std::unique_ptr<PtraceAddressSpace>> PtraceAddressSpace::Create(int memory_fd) {
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> sp, Subprocess::Create(memory_fd));
  return std::unique_ptr<PtraceAddressSpace>(new PtraceAddressSpace(std::move(sp)));
}

absl::Status PtraceAddressSpace::CheckRange(const char* call, uint64_t addr, uint64_t len) const {
  if ((addr & kPageMask) != 0 || (len & kPageMask) != 0 || len == 0 || addr + len < addr ||
      addr + len > MaxUserAddress()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s(addr=0x%x, len=0x%x): not a page-aligned range below MaxUserAddress 0x%x", call, addr,
        len, MaxUserAddress()));
  }
  return absl::OkStatus();
}

absl::Status PtraceAddressSpace::MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) {
  RETURN_IF_ERROR(CheckRange("MapFile", addr, len));
  const auto describe = [&] {
    return absl::StrFormat(
        "mmap(addr=0x%x, len=0x%x, prot=%s, MAP_SHARED|MAP_FIXED, fd=%d, offset=0x%x) in stub "
        "pid=%d",
        addr, len, ProtString(prot), sp_->memory_fd(), offset, sp_->pid());
  };
  if ((offset & kPageMask) != 0) {
    return absl::InvalidArgumentError(describe() + ": offset not page aligned");
  }
  ASSIGN_OR_RETURN(
      const int64_t rax,
      sp_->Inject(SYS_mmap, {addr, len, static_cast<uint64_t>(prot), MAP_SHARED | MAP_FIXED,
                             static_cast<uint64_t>(sp_->memory_fd()), offset}));
  if (IsLinuxErrno(rax)) return ErrnoStatus(describe(), static_cast<int>(-rax));
  if (static_cast<uint64_t>(rax) != addr) {
    return absl::InternalError(absl::StrFormat("%s returned 0x%x", describe(), rax));
  }
  return absl::OkStatus();
}

absl::Status PtraceAddressSpace::Unmap(uint64_t addr, uint64_t len) {
  RETURN_IF_ERROR(CheckRange("Unmap", addr, len));
  ASSIGN_OR_RETURN(const int64_t rax, sp_->Inject(SYS_munmap, {addr, len}));
  if (IsLinuxErrno(rax)) {
    return ErrnoStatus(
        absl::StrFormat("munmap(addr=0x%x, len=0x%x) in stub pid=%d", addr, len, sp_->pid()),
        static_cast<int>(-rax));
  }
  return absl::OkStatus();
}

absl::Status PtraceAddressSpace::Protect(uint64_t addr, uint64_t len, Prot prot) {
  RETURN_IF_ERROR(CheckRange("Protect", addr, len));
  ASSIGN_OR_RETURN(const int64_t rax,
                   sp_->Inject(SYS_mprotect, {addr, len, static_cast<uint64_t>(prot)}));
  if (IsLinuxErrno(rax)) {
    return ErrnoStatus(absl::StrFormat("mprotect(addr=0x%x, len=0x%x, prot=%s) in stub pid=%d",
                                       addr, len, ProtString(prot), sp_->pid()),
                       static_cast<int>(-rax));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Context

bool PtraceContext::BeginRun(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (interrupt_pending_) {
    interrupt_pending_ = false;
    return true;
  }
  running_pid_ = pid;
  return false;
}

void PtraceContext::EndRun() {
  std::lock_guard<std::mutex> lock(mu_);
  running_pid_ = 0;
}

void PtraceContext::Interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupt_pending_ = true;
  // While running_pid_ is set the stub is alive and ours (Switch clears it under mu_
  // before it can be reaped), so the tgkill cannot hit a reused pid. A signal that
  // lands after the stub already stopped for another reason stays queued and makes the
  // next Switch return kInterrupted (a spurious one, which the contract allows).
  if (running_pid_ != 0) syscall(SYS_tgkill, running_pid_, running_pid_, kInterruptSignal);
}

absl::StatusOr<SwitchResult> PtraceContext::Switch(AddressSpace& as, Registers& regs) {
  auto* pas = dynamic_cast<PtraceAddressSpace*>(&as);
  if (pas == nullptr) {
    return absl::InvalidArgumentError("ptrace Context::Switch: AddressSpace is not a ptrace one");
  }
  Subprocess& sp = pas->subprocess();
  RETURN_IF_ERROR(sp.CheckTracer("Context::Switch"));
  if (sp.dead()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("ptrace Context::Switch: stub pid=%d is dead", sp.pid()));
  }

  user_regs_struct gp = regs.gp;
  if (gp.cs == 0 && gp.ss == 0) gp.ds = gp.es = gp.fs = gp.gs = 0;  // fresh Registers
  // Always 64-bit user mode: a far jump into a compat code segment does not survive
  // a trap (the sandbox runs x86-64 code only).
  gp.cs = kUserCs;
  gp.ss = kUserSs;
  // See ptrace_platform.h: no host syscall restart on the app's registers.
  gp.orig_rax = ~uint64_t{0};
  RETURN_IF_ERROR(sp.ExplainFailure(sp.SetRegs(gp), "before running app code"));
  if (regs.fp_dirty) {
    if (regs.fp_size != 0 && regs.fp_size != sp.xstate_size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("ptrace Context::Switch: regs.fp_size=%d but the host XSAVE size is %d",
                          regs.fp_size, sp.xstate_size()));
    }
    if (sp.xstate_size() > kFpStateSize) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "host XSAVE size %d exceeds kFpStateSize %d", sp.xstate_size(), kFpStateSize));
    }
    RETURN_IF_ERROR(sp.SetXstate(regs.fp, sp.xstate_size()));
    regs.fp_dirty = false;
  }
  regs.fp_valid = false;

  if (BeginRun(sp.pid())) {
    // Interrupted before running: registers are as given (already set on the host).
    return SwitchResult{.kind = SwitchKind::kInterrupted};
  }
  absl::Status resumed = sp.Resume(PTRACE_SYSEMU, "PTRACE_SYSEMU");
  absl::StatusOr<int> status = resumed.ok() ? sp.Wait() : absl::StatusOr<int>(resumed);
  EndRun();
  if (!status.ok()) return status.status();
  return Classify(sp, regs, *status);
}

absl::StatusOr<SwitchResult> PtraceContext::Classify(Subprocess& sp, Registers& regs, int status) {
  if (sp.dead()) return sp.DiedError("while running app code", status);
  if (!WIFSTOPPED(status)) {
    return absl::InternalError(absl::StrFormat("ptrace stub pid=%d: unexpected wait status %s",
                                               sp.pid(), DescribeWaitStatus(status)));
  }
  RETURN_IF_ERROR(sp.GetRegs(regs.gp));
  SwitchResult result;
  const int sig = WSTOPSIG(status);

  if (sig == kSyscallStop) {
    // int 0x80 (or a syscall from compat mode) also stops here, with 32-bit numbers:
    // the kernel's arch for the stop tells them apart.
    __ptrace_syscall_info info{};
    if (::ptrace(PTRACE_GET_SYSCALL_INFO, sp.pid(), sizeof(info), &info) <= 0) {
      return ErrnoStatus(absl::StrFormat("ptrace(PTRACE_GET_SYSCALL_INFO, pid=%d)", sp.pid()));
    }
    if (info.arch == AUDIT_ARCH_X86_64) {
      result.kind = SwitchKind::kSyscall;
      return result;
    }
    result.kind = SwitchKind::kSignal;
    result.info.si_signo = SIGSYS;
    result.info.si_code = 1;  // SYS_SECCOMP: "a syscall this system does not allow"
    result.info.si_call_addr = reinterpret_cast<void*>(regs.gp.rip);
    result.info.si_syscall = static_cast<int>(regs.gp.orig_rax);
    result.info.si_arch = info.arch;
    return result;
  }

  siginfo_t info{};
  absl::Status got = sp.GetSiginfo(info);
  if (!got.ok()) {
    // EINVAL: a group-stop rather than a signal-delivery-stop (someone outside sent a
    // stop signal). Nothing to report; the next resume ends it.
    if (absl::IsInvalidArgument(got)) return SwitchResult{.kind = SwitchKind::kInterrupted};
    return got;
  }
  if (!IsSynchronousSignal(info)) {
    // Interrupt()'s signal, or another asynchronous one: suppressed (the next resume
    // passes signal 0). The pending flag is consumed with it.
    std::lock_guard<std::mutex> lock(mu_);
    interrupt_pending_ = false;
    return SwitchResult{.kind = SwitchKind::kInterrupted};
  }
  result.info = info;
  const uint64_t addr = reinterpret_cast<uint64_t>(info.si_addr);
  if ((info.si_signo == SIGSEGV || info.si_signo == SIGBUS) && info.si_code != SI_KERNEL) {
    result.kind = SwitchKind::kFault;
    result.fault_addr = addr;
    const uint64_t rip = regs.gp.rip;
    // An instruction that straddles into an unmapped page faults on the next page's
    // start; x86 instructions are at most 15 bytes.
    const uint64_t next_page = (rip + kStubPageSize) & ~kPageMask;
    result.fault_exec = addr == rip || (addr == next_page && next_page - rip < 15);
    return result;
  }
  result.kind = SwitchKind::kSignal;
  return result;
}

absl::Status PtraceContext::LoadFpState(AddressSpace& as, Registers& regs) {
  auto* pas = dynamic_cast<PtraceAddressSpace*>(&as);
  if (pas == nullptr) {
    return absl::InvalidArgumentError("ptrace LoadFpState: AddressSpace is not a ptrace one");
  }
  Subprocess& sp = pas->subprocess();
  RETURN_IF_ERROR(sp.CheckTracer("Context::LoadFpState"));
  if (sp.xstate_size() > kFpStateSize) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "host XSAVE size %d exceeds kFpStateSize %d", sp.xstate_size(), kFpStateSize));
  }
  size_t len = kFpStateSize;
  RETURN_IF_ERROR(sp.GetXstate(regs.fp, len));
  regs.fp_size = len;
  regs.fp_valid = true;
  regs.fp_dirty = false;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Platform

absl::StatusOr<std::unique_ptr<AddressSpace>> PtracePlatform::NewAddressSpace() {
  ASSIGN_OR_RETURN(std::unique_ptr<PtraceAddressSpace> as,
                   PtraceAddressSpace::Create(memory_file_.fd));
  return std::unique_ptr<AddressSpace>(std::move(as));
}

absl::StatusOr<std::unique_ptr<Context>> PtracePlatform::NewContext() {
  return std::unique_ptr<Context>(new PtraceContext());
}

}  // namespace usentry::platform::ptrace
