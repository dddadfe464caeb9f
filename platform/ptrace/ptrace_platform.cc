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
#include <utility>

#include "abi/signal.h"
#include "absl/strings/str_format.h"
#include "base/cpu_pin.h"
#include "base/status_macros.h"
#include "base/tick_clock.h"

namespace usentry::platform::ptrace {
namespace {

constexpr uint64_t kPageMask = kStubPageSize - 1;
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

// Registers::fp is fixed-size; a signal-frame XSAVE image larger than it (none yet:
// AVX-512 with AMX's TILECFG is 2816 bytes) cannot be shown to the app.
absl::Status CheckFpStateFits(const Subprocess& sp) {
  if (sp.frame_xstate_size() <= kFpStateSize) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrFormat("host signal-frame XSAVE size %d exceeds kFpStateSize %d",
                      sp.frame_xstate_size(), kFpStateSize));
}

}  // namespace

// ---------------------------------------------------------------------------
// AddressSpace

absl::StatusOr<std::unique_ptr<PtraceAddressSpace>> PtraceAddressSpace::Create(int memory_fd) {
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> sp, Subprocess::Create(memory_fd));
  return std::unique_ptr<PtraceAddressSpace>(new PtraceAddressSpace(std::move(sp)));
}

PtraceAddressSpace::PtraceAddressSpace(std::unique_ptr<Subprocess> sp) : sp_(std::move(sp)) {
  std::lock_guard<std::mutex> lock(threads_->mu);
  threads_->by_tracer[static_cast<pid_t>(gettid())] = sp_.get();
}

PtraceAddressSpace::~PtraceAddressSpace() {
  // Contexts may outlive us: they must not touch the handles any more.
  std::lock_guard<std::mutex> lock(threads_->mu);
  threads_->dead = true;
  threads_->by_tracer.clear();
}

absl::StatusOr<Subprocess*> PtraceAddressSpace::Mine(const char* op) {
  const pid_t self = static_cast<pid_t>(gettid());
  {
    std::lock_guard<std::mutex> lock(threads_->mu);
    auto it = threads_->by_tracer.find(self);
    if (it != threads_->by_tracer.end()) return it->second;
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "ptrace %s for stub pid=%d called on thread %d, which traces none of its threads (see "
      "the threading contract in platform.h)",
      op, sp_->tgid(), self));
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
  ASSIGN_OR_RETURN(Subprocess * sp, Mine("MapFile"));
  const auto describe = [&] {
    return absl::StrFormat(
        "mmap(addr=0x%x, len=0x%x, prot=%s, MAP_SHARED|MAP_FIXED, fd=%d, offset=0x%x) in stub "
        "pid=%d",
        addr, len, ProtString(prot), sp->memory_fd(), offset, sp->pid());
  };
  if ((offset & kPageMask) != 0) {
    return absl::InvalidArgumentError(describe() + ": offset not page aligned");
  }
  ASSIGN_OR_RETURN(
      const int64_t rax,
      sp->Inject(SYS_mmap, {addr, len, static_cast<uint64_t>(prot), MAP_SHARED | MAP_FIXED,
                            static_cast<uint64_t>(sp->memory_fd()), offset}));
  if (IsLinuxErrno(rax)) return ErrnoStatus(describe(), static_cast<int>(-rax));
  if (static_cast<uint64_t>(rax) != addr) {
    return absl::InternalError(absl::StrFormat("%s returned 0x%x", describe(), rax));
  }
  return absl::OkStatus();
}

absl::Status PtraceAddressSpace::Unmap(uint64_t addr, uint64_t len) {
  RETURN_IF_ERROR(CheckRange("Unmap", addr, len));
  ASSIGN_OR_RETURN(Subprocess * sp, Mine("Unmap"));
  ASSIGN_OR_RETURN(const int64_t rax, sp->Inject(SYS_munmap, {addr, len}));
  if (IsLinuxErrno(rax)) {
    return ErrnoStatus(
        absl::StrFormat("munmap(addr=0x%x, len=0x%x) in stub pid=%d", addr, len, sp->pid()),
        static_cast<int>(-rax));
  }
  return absl::OkStatus();
}

absl::Status PtraceAddressSpace::Protect(uint64_t addr, uint64_t len, Prot prot) {
  RETURN_IF_ERROR(CheckRange("Protect", addr, len));
  ASSIGN_OR_RETURN(Subprocess * sp, Mine("Protect"));
  ASSIGN_OR_RETURN(const int64_t rax,
                   sp->Inject(SYS_mprotect, {addr, len, static_cast<uint64_t>(prot)}));
  if (IsLinuxErrno(rax)) {
    return ErrnoStatus(absl::StrFormat("mprotect(addr=0x%x, len=0x%x, prot=%s) in stub pid=%d",
                                       addr, len, ProtString(prot), sp->pid()),
                       static_cast<int>(-rax));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Context

bool PtraceContext::BeginRun(pid_t tgid, pid_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (interrupt_pending_) {
    interrupt_pending_ = false;
    return true;
  }
  running_tgid_ = tgid;
  running_tid_ = tid;
  return false;
}

void PtraceContext::EndRun() {
  std::lock_guard<std::mutex> lock(mu_);
  running_tgid_ = running_tid_ = 0;
}

PtraceContext::~PtraceContext() {
  Release();
  AbandonPending();
}

void PtraceContext::Release() {
  if (!threads_) return;
  bool dead, last;
  {
    std::lock_guard<std::mutex> lock(threads_->mu);
    dead = threads_->dead;
    if (!dead) threads_->by_tracer.erase(static_cast<pid_t>(gettid()));
    last = threads_->by_tracer.empty() && threads_->pending == 0;
  }
  if (adopted_) {
    // Ours alone: it exits (or, if the process died meanwhile, is reaped).
    (void)adopted_->ExitThread();
    adopted_.reset();
  } else if (!dead && !last && thread_ != nullptr) {
    // The process's first thread, while others still run: it exits by itself. When it
    // is the last one it stays stopped and dies with the AddressSpace.
    (void)thread_->ExitThread();
  }
  threads_.reset();
  thread_ = nullptr;
}

void PtraceContext::AbandonPending() {
  if (!pending_threads_) return;
  std::shared_ptr<StubThreads> threads = std::move(pending_threads_);
  const pid_t tid = std::exchange(pending_tid_, 0);
  Subprocess* any = nullptr;
  {
    std::lock_guard<std::mutex> lock(threads->mu);
    threads->pending--;
    if (threads->dead || threads->by_tracer.empty()) return;  // it died with the process
    any = threads->by_tracer.begin()->second;
  }
  // Never adopted (the clone failed later on): take it over here only to end it.
  auto sp = Subprocess::Adopt(*any, tid);
  if (sp.ok()) (void)(*sp)->ExitThread();
}

absl::StatusOr<Subprocess*> PtraceContext::Resolve(PtraceAddressSpace& as, const char* op) {
  if (threads_ == as.threads() && thread_ != nullptr) return thread_;
  Release();  // bound to another address space before (exec, vfork child)
  const pid_t self = static_cast<pid_t>(gettid());
  std::shared_ptr<StubThreads> threads = as.threads();
  {
    std::lock_guard<std::mutex> lock(threads->mu);
    auto it = threads->by_tracer.find(self);
    if (it != threads->by_tracer.end()) {
      threads_ = threads;
      thread_ = it->second;
      return thread_;
    }
  }
  if (pending_threads_ != threads) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ptrace %s for stub pid=%d called on thread %d, which traces none of its threads (see "
        "the threading contract in platform.h)",
        op, as.subprocess().tgid(), self));
  }
  absl::StatusOr<std::unique_ptr<Subprocess>> sp = Subprocess::Adopt(as.subprocess(), pending_tid_);
  {
    std::lock_guard<std::mutex> lock(threads->mu);
    threads->pending--;
    if (sp.ok()) threads->by_tracer[self] = sp->get();
  }
  pending_threads_.reset();
  pending_tid_ = 0;
  if (!sp.ok()) return sp.status();
  adopted_ = std::move(sp).value();
  threads_ = threads;
  thread_ = adopted_.get();
  return thread_;
}

void PtraceContext::Interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupt_pending_ = true;
  // While running_pid_ is set the stub is alive and ours (Switch clears it under mu_
  // before it can be reaped), so the tgkill cannot hit a reused pid. A signal that
  // lands after the stub already stopped for another reason stays queued and makes the
  // next Switch return kInterrupted (a spurious one, which the contract allows).
  if (running_tid_ != 0) syscall(SYS_tgkill, running_tgid_, running_tid_, kInterruptSignal);
}

absl::StatusOr<SwitchResult> PtraceContext::Switch(AddressSpace& as, Registers& regs) {
  auto* pas = dynamic_cast<PtraceAddressSpace*>(&as);
  if (pas == nullptr) {
    return absl::InvalidArgumentError("ptrace Context::Switch: AddressSpace is not a ptrace one");
  }
  ASSIGN_OR_RETURN(Subprocess * thread, Resolve(*pas, "Context::Switch"));
  Subprocess& sp = *thread;
  RETURN_IF_ERROR(sp.CheckTracer("Context::Switch"));
  if (sp.dead()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("ptrace Context::Switch: stub pid=%d is dead", sp.pid()));
  }

  user_regs_struct gp = regs.gp;
  if (gp.cs == 0 && gp.ss == 0) gp.ds = gp.es = gp.fs = gp.gs = 0;  // fresh Registers
  // Always 64-bit user mode: a far jump into a compat code segment does not survive
  // a trap (the sandbox runs x86-64 code only).
  gp.cs = abi::kUserCs;
  gp.ss = abi::kUserDs;
  // See ptrace_platform.h: no host syscall restart on the app's registers.
  gp.orig_rax = ~uint64_t{0};
  RETURN_IF_ERROR(sp.ExplainFailure(sp.SetRegs(gp), "before running app code"));
  if (regs.fp_dirty) {
    if (regs.fp_size != 0 && regs.fp_size != sp.frame_xstate_size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ptrace Context::Switch: regs.fp_size=%d but the signal-frame XSAVE size is %d",
          regs.fp_size, sp.frame_xstate_size()));
    }
    RETURN_IF_ERROR(CheckFpStateFits(sp));
    RETURN_IF_ERROR(sp.SetFrameXstate(regs.fp));
    regs.fp_dirty = false;
    regs.fp_initial = false;
  }
  regs.fp_valid = false;

  if (BeginRun(sp.tgid(), sp.pid())) {
    // Interrupted before running: registers are as given (already set on the host).
    return SwitchResult{.kind = SwitchKind::kInterrupted};
  }
  // The thread sleeps in waitpid until the app's next stop: a hold for its gofer calls
  // (base/cpu_pin.h) must not decide where it wakes.
  ReleaseThreadCpu();
  const int64_t since = TickNow();
  running_since_.store(since, std::memory_order_relaxed);
  absl::Status resumed = sp.Resume(PTRACE_SYSEMU, "PTRACE_SYSEMU");
  absl::StatusOr<int> status = resumed.ok() ? sp.Wait() : absl::StatusOr<int>(resumed);
  const int64_t ran_ticks = TickNow() - since;
  running_since_.store(0, std::memory_order_relaxed);
  EndRun();
  if (!status.ok()) return status.status();
  absl::StatusOr<SwitchResult> result = Classify(sp, regs, *status);
  if (result.ok()) result->ran_ticks = ran_ticks;
  return result;
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
  ASSIGN_OR_RETURN(Subprocess * thread, Resolve(*pas, "Context::LoadFpState"));
  Subprocess& sp = *thread;
  RETURN_IF_ERROR(sp.CheckTracer("Context::LoadFpState"));
  RETURN_IF_ERROR(CheckFpStateFits(sp));
  RETURN_IF_ERROR(sp.GetFrameXstate(regs.fp));
  regs.fp_size = sp.frame_xstate_size();
  regs.fp_valid = true;
  regs.fp_dirty = false;
  regs.fp_initial = false;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Platform

const HostVdso* PtracePlatform::Vdso() const {
  absl::StatusOr<StubPage> stub = GetStubPage();  // mapped by now: stubs exist
  return stub.ok() ? stub->vdso : nullptr;
}

absl::StatusOr<std::unique_ptr<AddressSpace>> PtracePlatform::NewAddressSpace() {
  ASSIGN_OR_RETURN(std::unique_ptr<PtraceAddressSpace> as,
                   PtraceAddressSpace::Create(memory_file_.fd));
  return std::unique_ptr<AddressSpace>(std::move(as));
}

absl::StatusOr<std::unique_ptr<Context>> PtracePlatform::NewContext() {
  return std::unique_ptr<Context>(new PtraceContext());
}

absl::StatusOr<std::unique_ptr<Context>> PtracePlatform::NewThreadContext(AddressSpace& as,
                                                                          Context& parent) {
  (void)parent;
  auto* pas = dynamic_cast<PtraceAddressSpace*>(&as);
  if (pas == nullptr) {
    return absl::InvalidArgumentError("ptrace NewThreadContext: AddressSpace is not a ptrace one");
  }
  // The caller's own stub thread is stopped (its task is in a syscall): it makes the
  // clone, and the new task's host thread seizes the result at its first Switch.
  ASSIGN_OR_RETURN(Subprocess * mine, pas->Mine("NewThreadContext"));
  ASSIGN_OR_RETURN(const pid_t tid, mine->CloneThread());
  {
    std::lock_guard<std::mutex> lock(pas->threads()->mu);
    pas->threads()->pending++;
  }
  return std::unique_ptr<Context>(new PtraceContext(pas->threads(), tid));
}

}  // namespace usentry::platform::ptrace
