// systrap AddressSpace, Context and Platform (semantics in systrap_platform.h).
#include "platform/systrap/systrap_platform.h"

#include <fcntl.h>
#include <immintrin.h>
#include <linux/audit.h>
#include <linux/falloc.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "platform/stub_child_unsafe.h"
#include "platform/systrap/stub_filter.h"

namespace usentry::platform::systrap {
namespace {

// Context slices in the context memfd: the most stub processes alive at once.
constexpr int kMaxStubs = 4096;
constexpr uint64_t kCtxFileSize = uint64_t{kMaxStubs} * kCtxRegionSize;
// Spins before the sentry sleeps in FUTEX_WAIT for a stub (each a `pause`).
constexpr int kSentrySpins = 20000;
// How long one FUTEX_WAIT lasts before the sentry checks that the stub is alive.
constexpr long kTickNanos = 50 * 1000 * 1000;
// An app that ignores Interrupt() this many ticks (its stub thread blocked the host
// interrupt signal, which only hostile code does) gets its stub SIGKILLed.
constexpr int kInterruptTicksBeforeKill = 40;
// x86-64 user code and stack segment selectors.
constexpr uint64_t kUserCs = 0x33;
constexpr uint64_t kUserSs = 0x2b;
// Page-fault error code bits (the frame's REG_ERR when REG_TRAPNO is 14).
constexpr uint64_t kPfWrite = 1 << 1;
constexpr uint64_t kPfInstr = 1 << 4;
constexpr uint64_t kTrapPageFault = 14;
// XSAVE frame layout: software bytes in the legacy area, magic values.
constexpr size_t kFxswOffset = 464;
constexpr size_t kXsaveHeaderOffset = 512;
constexpr uint32_t kFpXstateMagic1 = 0x46505853;
constexpr size_t kLegacyFpSize = 512;

std::atomic_ref<uint32_t> Word(uint32_t& w) { return std::atomic_ref<uint32_t>(w); }

long Futex(uint32_t* word, int op, uint32_t val, const timespec* timeout = nullptr) {
  return syscall(SYS_futex, word, op, val, timeout, nullptr, 0);
}

bool IsLinuxErrno(int64_t rax) { return rax < 0 && rax >= -4095; }

// The stub process `pid` (our child) has exited; fills `status` (wait status form).
bool ChildDead(pid_t pid, int* status) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) {
    return errno == ECHILD;  // already reaped: certainly gone
  }
  if (info.si_pid != pid) return false;
  *status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0) : info.si_status & 0x7f;
  return true;
}

// ucontext_t field offsets (the kernel's struct ucontext and glibc's agree up to
// uc_sigmask, which is all we touch).
constexpr size_t kGregsOffset = offsetof(ucontext_t, uc_mcontext.gregs);
constexpr size_t kFpregsOffset = offsetof(ucontext_t, uc_mcontext.fpregs);
constexpr size_t kUcontextSize = offsetof(ucontext_t, uc_sigmask) + 8;

}  // namespace

// ---------------------------------------------------------------------------
// StubProcess

StubProcess::StubProcess(SystrapPlatform* platform, pid_t pid, int slice, uint8_t* local)
    : platform_(platform), pid_(pid), slice_(slice), local_(local) {}

StubProcess::~StubProcess() {
  ::kill(pid_, SIGKILL);
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(pid_, &st, __WALL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) break;
  }
  platform_->FreeSlice(slice_);
}

uint64_t StubProcess::StubSlotAddress(int i) const {
  return platform_->code().ctx_base + static_cast<uint64_t>(i) * kSlotSize;
}

const StubCode& StubProcess::code() const { return platform_->code(); }

uint8_t* StubProcess::SignalStackPtr(int i, uint64_t addr, uint64_t len) const {
  const uint64_t lo = StubSlotAddress(i) + kAltStackOffset;
  const uint64_t hi = StubSlotAddress(i) + kSlotSize;
  if (addr < lo || len > hi - lo || addr > hi - len) return nullptr;
  return local_ + static_cast<uint64_t>(i) * kSlotSize + (addr - StubSlotAddress(i));
}

void StubProcess::Post(int i, SlotOp op) {
  SlotHeader* h = slot(i);
  h->op = op;
  Word(h->state).store(kStateGo);  // seq_cst: ordered before the load below
  if (Word(h->stub_sleeping).load() != 0) Futex(&h->state, FUTEX_WAKE, 1);
}

bool StubProcess::CheckDead() {
  if (!dead_ && ChildDead(pid_, &wait_status_)) dead_ = true;
  return dead_;
}

absl::Status StubProcess::DiedError(const char* what) {
  return absl::UnavailableError(
      absl::StrFormat("systrap stub pid=%d %s %s", pid_, DescribeWaitStatus(wait_status_), what));
}

absl::Status StubProcess::Wait(int i, const char* what, bool (*on_tick)(void*), void* tick_arg) {
  SlotHeader* h = slot(i);
  auto state = Word(h->state);
  for (int n = 0; n < kSentrySpins; ++n) {
    if (state.load(std::memory_order_acquire) == kStateTrapped) return absl::OkStatus();
    _mm_pause();
  }
  Word(h->sentry_sleeping).store(1);  // seq_cst: ordered before the state load
  absl::Status result = absl::OkStatus();
  for (;;) {
    const uint32_t v = state.load();
    if (v == kStateTrapped) break;
    const timespec tick{.tv_sec = 0, .tv_nsec = kTickNanos};
    if (Futex(&h->state, FUTEX_WAIT, v, &tick) != 0 && errno == ETIMEDOUT) {
      if (CheckDead()) {
        result = DiedError(what);
        break;
      }
      if (on_tick != nullptr && on_tick(tick_arg)) ::kill(pid_, SIGKILL);
    }
  }
  Word(h->sentry_sleeping).store(0);
  return result;
}

absl::Status StubProcess::Call(int i, SlotOp op, const char* what, bool (*on_tick)(void*),
                               void* tick_arg) {
  if (dead_) return DiedError(what);
  Post(i, op);
  return Wait(i, what, on_tick, tick_arg);
}

absl::StatusOr<int64_t> StubProcess::ControlSyscall(int nr, std::array<uint64_t, 6> args) {
  std::lock_guard<std::mutex> lock(mu_);
  SlotHeader* h = slot(0);
  h->nr = static_cast<uint64_t>(nr);
  for (int k = 0; k < 6; ++k) h->args[k] = args[k];
  RETURN_IF_ERROR(Call(0, kOpSyscall, absl::StrFormat("during host syscall %d", nr).c_str()));
  return h->result;
}

absl::StatusOr<int> StubProcess::StartThread() {
  std::lock_guard<std::mutex> lock(mu_);
  int i = 1;
  // A released slot is reusable once its thread is gone: the kernel clears `tid`
  // (CLONE_CHILD_CLEARTID) when the thread exits.
  while (i < kMaxSlots && (used_[i] || std::atomic_ref<uint64_t>(slot(i)->tid).load() != 0)) ++i;
  if (i == kMaxSlots) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("systrap stub pid=%d: all %d thread slots in use", pid_, kMaxSlots - 1));
  }
  std::memset(slot(i), 0, sizeof(SlotHeader));
  SlotHeader* control = slot(0);
  control->args[0] = StubSlotAddress(i);
  RETURN_IF_ERROR(Call(0, kOpNewThread, "starting an app thread"));
  if (IsLinuxErrno(control->result)) {
    return ErrnoStatus(absl::StrFormat("clone(app thread) in systrap stub pid=%d", pid_),
                       static_cast<int>(-control->result));
  }
  RETURN_IF_ERROR(Wait(i, "while an app thread started", nullptr, nullptr));
  const uint64_t first = platform_->code().first_trap;
  uint8_t* uc = SignalStackPtr(i, slot(i)->ucontext, kUcontextSize);
  uint64_t rip = 0;
  if (uc != nullptr) std::memcpy(&rip, uc + kGregsOffset + REG_RIP * 8, 8);
  if (slot(i)->signo != SIGILL || rip != first) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: new thread trapped with signal %d at 0x%x, not its "
                        "first trap at 0x%x",
                        pid_, slot(i)->signo, rip, first));
  }
  used_[i] = true;
  return i;
}

void StubProcess::ReleaseThread(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_ || i <= 0 || i >= kMaxSlots || !used_[i]) return;
  Post(i, kOpExitThread);
  used_[i] = false;
}

// ---------------------------------------------------------------------------
// AddressSpace

absl::Status SystrapAddressSpace::CheckRange(const char* call, uint64_t addr, uint64_t len) const {
  if ((addr % kPageSize) != 0 || (len % kPageSize) != 0 || len == 0 || addr + len < addr ||
      addr + len > MaxUserAddress()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s(addr=0x%x, len=0x%x): not a page-aligned range below MaxUserAddress 0x%x", call, addr,
        len, MaxUserAddress()));
  }
  return absl::OkStatus();
}

absl::Status SystrapAddressSpace::Run(const std::string& what, int nr,
                                      std::array<uint64_t, 6> args) {
  ASSIGN_OR_RETURN(const int64_t rax, stub_->ControlSyscall(nr, args));
  if (IsLinuxErrno(rax)) {
    return ErrnoStatus(absl::StrFormat("%s in systrap stub pid=%d", what, stub_->pid()),
                       static_cast<int>(-rax));
  }
  if (nr == SYS_mmap && static_cast<uint64_t>(rax) != args[0]) {
    return absl::InternalError(absl::StrFormat("%s returned 0x%x", what, rax));
  }
  return absl::OkStatus();
}

absl::Status SystrapAddressSpace::MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) {
  RETURN_IF_ERROR(CheckRange("MapFile", addr, len));
  if (offset % kPageSize != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MapFile(offset=0x%x): offset not page aligned", offset));
  }
  return Run(absl::StrFormat("mmap(addr=0x%x, len=0x%x, prot=0x%x, MAP_SHARED|MAP_FIXED, "
                             "memory file, offset=0x%x)",
                             addr, len, prot, offset),
             SYS_mmap,
             {addr, len, static_cast<uint64_t>(prot), MAP_SHARED | MAP_FIXED,
              static_cast<uint64_t>(memory_fd_), offset});
}

absl::Status SystrapAddressSpace::Unmap(uint64_t addr, uint64_t len) {
  RETURN_IF_ERROR(CheckRange("Unmap", addr, len));
  return Run(absl::StrFormat("munmap(addr=0x%x, len=0x%x)", addr, len), SYS_munmap, {addr, len});
}

absl::Status SystrapAddressSpace::Protect(uint64_t addr, uint64_t len, Prot prot) {
  RETURN_IF_ERROR(CheckRange("Protect", addr, len));
  return Run(absl::StrFormat("mprotect(addr=0x%x, len=0x%x, prot=0x%x)", addr, len, prot),
             SYS_mprotect, {addr, len, static_cast<uint64_t>(prot)});
}

// ---------------------------------------------------------------------------
// Context

SystrapContext::~SystrapContext() { Unbind(); }

void SystrapContext::Unbind() {
  if (stub_ && slot_ > 0) stub_->ReleaseThread(slot_);
  std::lock_guard<std::mutex> lock(mu_);
  stub_.reset();
  slot_ = -1;
  pid_ = tid_ = 0;
}

absl::Status SystrapContext::Bind(const std::shared_ptr<StubProcess>& stub) {
  Unbind();
  ASSIGN_OR_RETURN(const int slot, stub->StartThread());
  std::lock_guard<std::mutex> lock(mu_);
  stub_ = stub;
  slot_ = slot;
  pid_ = stub->pid();
  tid_ = static_cast<pid_t>(stub->slot(slot)->tid);
  fs_known_ = false;
  return absl::OkStatus();
}

absl::StatusOr<uint8_t*> SystrapContext::Ucontext() {
  uint8_t* uc = stub_->SignalStackPtr(slot_, stub_->slot(slot_)->ucontext, kUcontextSize);
  if (uc == nullptr) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: the signal frame pointer 0x%x is outside its slot",
                        stub_->pid(), stub_->slot(slot_)->ucontext));
  }
  return uc;
}

absl::StatusOr<std::pair<uint8_t*, size_t>> SystrapContext::FpState(uint8_t* uc) {
  uint64_t addr;
  std::memcpy(&addr, uc + kFpregsOffset, 8);
  uint8_t* fp = stub_->SignalStackPtr(slot_, addr, kLegacyFpSize);
  if (fp == nullptr) {
    return absl::InternalError(absl::StrFormat(
        "systrap stub pid=%d: the frame's FPU state pointer 0x%x is outside its slot", stub_->pid(),
        addr));
  }
  uint32_t magic1, xstate_size;
  std::memcpy(&magic1, fp + kFxswOffset, 4);
  std::memcpy(&xstate_size, fp + kFxswOffset + 16, 4);
  if (magic1 != kFpXstateMagic1) return std::pair{fp, kLegacyFpSize};
  if (xstate_size < kXsaveHeaderOffset + 64 || xstate_size > kFpStateSize ||
      stub_->SignalStackPtr(slot_, addr, xstate_size) == nullptr) {
    return absl::InternalError(absl::StrFormat(
        "systrap stub pid=%d: bad XSAVE size %d in the signal frame", stub_->pid(), xstate_size));
  }
  return std::pair{fp, static_cast<size_t>(xstate_size)};
}

absl::Status SystrapContext::WriteFrame(const Registers& regs) {
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  const user_regs_struct& g = regs.gp;
  uint64_t gregs[NGREG];
  std::memcpy(gregs, uc + kGregsOffset, sizeof(gregs));
  gregs[REG_R8] = g.r8;
  gregs[REG_R9] = g.r9;
  gregs[REG_R10] = g.r10;
  gregs[REG_R11] = g.r11;
  gregs[REG_R12] = g.r12;
  gregs[REG_R13] = g.r13;
  gregs[REG_R14] = g.r14;
  gregs[REG_R15] = g.r15;
  gregs[REG_RDI] = g.rdi;
  gregs[REG_RSI] = g.rsi;
  gregs[REG_RBP] = g.rbp;
  gregs[REG_RBX] = g.rbx;
  gregs[REG_RDX] = g.rdx;
  gregs[REG_RAX] = g.rax;
  gregs[REG_RCX] = g.rcx;
  gregs[REG_RSP] = g.rsp;
  gregs[REG_RIP] = g.rip;
  gregs[REG_EFL] = g.eflags;
  // cs/gs/fs/ss stay as the kernel wrote them: 64-bit user mode.
  std::memcpy(uc + kGregsOffset, gregs, sizeof(gregs));
  if (regs.fp_dirty) {
    ASSIGN_OR_RETURN(auto fp, FpState(uc));
    auto [ptr, size] = fp;
    if (regs.fp_size != 0 && regs.fp_size != size) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "systrap Context::Switch: regs.fp_size=%d but the frame's XSAVE size is %d", regs.fp_size,
          size));
    }
    // Everything but the kernel's software bytes (it checks them in rt_sigreturn).
    std::memcpy(ptr, regs.fp, std::min(size, kFxswOffset));
    if (size > kXsaveHeaderOffset) {
      uint64_t frame_features;
      std::memcpy(&frame_features, ptr + kFxswOffset + 8, 8);
      std::memcpy(ptr + kXsaveHeaderOffset, regs.fp + kXsaveHeaderOffset,
                  size - kXsaveHeaderOffset);
      // The header must be one the kernel accepts: known features, standard format.
      uint64_t bv;
      std::memcpy(&bv, ptr + kXsaveHeaderOffset, 8);
      bv &= frame_features;
      std::memcpy(ptr + kXsaveHeaderOffset, &bv, 8);
      std::memset(ptr + kXsaveHeaderOffset + 8, 0, 56);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SwitchResult> SystrapContext::ReadFrame(Registers& regs) {
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  SlotHeader* h = stub_->slot(slot_);
  uint8_t* si = stub_->SignalStackPtr(slot_, h->siginfo, sizeof(siginfo_t));
  if (si == nullptr) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: the siginfo pointer 0x%x is outside its slot",
                        stub_->pid(), h->siginfo));
  }
  uint64_t gregs[NGREG];
  std::memcpy(gregs, uc + kGregsOffset, sizeof(gregs));
  user_regs_struct& g = regs.gp;
  g.r8 = gregs[REG_R8];
  g.r9 = gregs[REG_R9];
  g.r10 = gregs[REG_R10];
  g.r11 = gregs[REG_R11];
  g.r12 = gregs[REG_R12];
  g.r13 = gregs[REG_R13];
  g.r14 = gregs[REG_R14];
  g.r15 = gregs[REG_R15];
  g.rdi = gregs[REG_RDI];
  g.rsi = gregs[REG_RSI];
  g.rbp = gregs[REG_RBP];
  g.rbx = gregs[REG_RBX];
  g.rdx = gregs[REG_RDX];
  g.rax = gregs[REG_RAX];
  g.rcx = gregs[REG_RCX];
  g.rsp = gregs[REG_RSP];
  g.rip = gregs[REG_RIP];
  g.eflags = gregs[REG_EFL];
  g.cs = kUserCs;
  g.ss = kUserSs;
  g.ds = g.es = g.fs = g.gs = 0;
  g.orig_rax = ~uint64_t{0};
  regs.fp_valid = false;

  SwitchResult result;
  siginfo_t info;
  std::memcpy(&info, si, sizeof(info));
  const StubCode& code = stub_->code();
  if (g.rip >= code.ctx_base && g.rip < code.code_page + kPageSize) {
    // App code jumped into the stub's memory and trapped there: it is hostile or broken
    // beyond emulation (its registers may be anything).
    return absl::PermissionDeniedError(absl::StrFormat(
        "systrap stub pid=%d: app code trapped inside the stub region at rip=0x%x (signal %d)",
        stub_->pid(), g.rip, info.si_signo));
  }
  if (info.si_signo == kInterruptSignal) {
    std::lock_guard<std::mutex> lock(mu_);
    interrupt_pending_ = false;
    return SwitchResult{.kind = SwitchKind::kInterrupted};
  }
  if (info.si_signo == SIGSYS && info.si_code == 1 /*SYS_SECCOMP*/) {
    if (info.si_arch == AUDIT_ARCH_X86_64) {
      result.kind = SwitchKind::kSyscall;
      g.orig_rax = static_cast<uint64_t>(static_cast<int64_t>(info.si_syscall));
      g.rax = static_cast<uint64_t>(-ENOSYS);
      return result;
    }
    result.kind = SwitchKind::kSignal;
    result.info = info;
    return result;
  }
  if (!IsSynchronousSignal(info)) return SwitchResult{.kind = SwitchKind::kInterrupted};
  result.info = info;
  if ((info.si_signo == SIGSEGV || info.si_signo == SIGBUS) && info.si_code != SI_KERNEL) {
    result.kind = SwitchKind::kFault;
    result.fault_addr = reinterpret_cast<uint64_t>(info.si_addr);
    if (gregs[REG_TRAPNO] == kTrapPageFault) {
      result.fault_write = (gregs[REG_ERR] & kPfWrite) != 0;
      result.fault_exec = (gregs[REG_ERR] & kPfInstr) != 0;
    }
    return result;
  }
  result.kind = SwitchKind::kSignal;
  return result;
}

bool SystrapContext::OnTick(void* self) {
  auto* c = static_cast<SystrapContext*>(self);
  std::lock_guard<std::mutex> lock(c->mu_);
  return c->interrupt_pending_ && ++c->interrupt_ticks_ > kInterruptTicksBeforeKill;
}

absl::StatusOr<SwitchResult> SystrapContext::Switch(AddressSpace& as, Registers& regs) {
  auto* sas = dynamic_cast<SystrapAddressSpace*>(&as);
  if (sas == nullptr) {
    return absl::InvalidArgumentError("systrap Context::Switch: AddressSpace is not a systrap one");
  }
  if (stub_ != sas->stub()) RETURN_IF_ERROR(Bind(sas->stub()));
  RETURN_IF_ERROR(WriteFrame(regs));
  regs.fp_dirty = false;
  regs.fp_valid = false;
  SlotHeader* h = stub_->slot(slot_);
  h->set_fs = 0;
  if (!fs_known_ || applied_fs_ != regs.gp.fs_base) {
    h->fs_base = regs.gp.fs_base;
    h->set_fs = 1;
    applied_fs_ = regs.gp.fs_base;
    fs_known_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (interrupt_pending_) {
      interrupt_pending_ = false;
      fs_known_ = false;  // set_fs was not consumed
      return SwitchResult{.kind = SwitchKind::kInterrupted};
    }
    running_ = true;
    interrupt_ticks_ = 0;
  }
  absl::Status st = stub_->Call(slot_, kOpResume, "while running app code", &OnTick, this);
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }
  if (!st.ok()) return st;
  return ReadFrame(regs);
}

absl::Status SystrapContext::LoadFpState(AddressSpace& as, Registers& regs) {
  auto* sas = dynamic_cast<SystrapAddressSpace*>(&as);
  if (sas == nullptr) {
    return absl::InvalidArgumentError("systrap LoadFpState: AddressSpace is not a systrap one");
  }
  // Never switched into `as`: its thread's state is the clean one a new thread has.
  if (stub_ != sas->stub()) RETURN_IF_ERROR(Bind(sas->stub()));
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  ASSIGN_OR_RETURN(auto fp, FpState(uc));
  std::memcpy(regs.fp, fp.first, fp.second);
  regs.fp_size = fp.second;
  regs.fp_valid = true;
  regs.fp_dirty = false;
  return absl::OkStatus();
}

void SystrapContext::Interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupt_pending_ = true;
  // While running_ the stub is alive (Switch holds a reference and clears running_
  // before it can be destroyed), so the tgkill cannot hit a reused pid.
  if (running_) syscall(SYS_tgkill, pid_, tid_, kInterruptSignal);
}

// ---------------------------------------------------------------------------
// Platform

absl::StatusOr<std::unique_ptr<SystrapPlatform>> SystrapPlatform::Create(
    MemoryFileInfo memory_file) {
  ASSIGN_OR_RETURN(const StubCode code, GetStubCode());
  std::unique_ptr<SystrapPlatform> p(new SystrapPlatform(memory_file, code));
  RETURN_IF_ERROR(p->Start());
  return p;
}

absl::Status SystrapPlatform::Start() {
  ctx_fd_ = UniqueFd(memfd_create("usentry-systrap-contexts", MFD_CLOEXEC));
  if (!ctx_fd_.valid()) return ErrnoStatus("memfd_create(usentry-systrap-contexts)");
  if (ftruncate(ctx_fd_.get(), static_cast<off_t>(kCtxFileSize)) != 0) {
    return ErrnoStatus("ftruncate(systrap context memfd)");
  }
  void* map = mmap(nullptr, kCtxFileSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                   ctx_fd_.get(), 0);
  if (map == MAP_FAILED) return ErrnoStatus("mmap(systrap context memfd)");
  ctx_map_ = static_cast<uint8_t*>(map);

  // The zygote's request page: one of the pages reserved below the code page, so the
  // zygote can unmap everything else around it.
  for (int k = 1; k <= kZygotePages && zygote_ == nullptr; ++k) {
    void* want = reinterpret_cast<void*>(code_.code_page - k * kPageSize);
    void* got = mmap(want, kPageSize, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) {
      zygote_ = static_cast<ZygotePage*>(got);
    } else if (got != MAP_FAILED) {
      munmap(got, kPageSize);
    }
  }
  if (zygote_ == nullptr) {
    return absl::ResourceExhaustedError("systrap: no free zygote page below the stub code page");
  }
  zygote_->ctx_fd = static_cast<uint64_t>(ctx_fd_.get());

  ASSIGN_OR_RETURN(const std::vector<sock_filter> filter, BuildStubFilter(code_.code_page));
  const sock_fprog prog{.len = static_cast<unsigned short>(filter.size()),
                        .filter = const_cast<sock_filter*>(filter.data())};
  const StubChildArgs args{.keep_fds = {memory_file_.fd, ctx_fd_.get()},
                           .parent_pid = getpid(),
                           .filter = &prog,
                           .entry = code_.zygote_entry,
                           .entry_arg = reinterpret_cast<uint64_t>(zygote_),
                           .drop_caps = true,
                           .handler = code_.handler,
                           .restorer = code_.restorer,
                           .handled_mask = kHandledSignals};
  // A raw clone rather than fork(): no atfork handlers run in this multi-threaded
  // process, and the child only makes raw syscalls before leaving sentry code.
  const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) return ErrnoStatus("clone(SIGCHLD) for the systrap zygote");
  if (pid == 0) StubChildMain(args);
  zygote_pid_ = static_cast<pid_t>(pid);
  return absl::OkStatus();
}

SystrapPlatform::~SystrapPlatform() {
  if (zygote_pid_ > 0) {
    ::kill(zygote_pid_, SIGKILL);
    while (waitpid(zygote_pid_, nullptr, __WALL) < 0 && errno == EINTR) {
    }
  }
  if (zygote_ != nullptr) munmap(zygote_, kPageSize);
  if (ctx_map_ != nullptr) munmap(ctx_map_, kCtxFileSize);
}

absl::StatusOr<pid_t> SystrapPlatform::ForkStub(int slice) {
  std::lock_guard<std::mutex> lock(zygote_mu_);
  zygote_->slice_offset = static_cast<uint64_t>(slice) * kCtxRegionSize;
  const uint32_t seq = Word(zygote_->seq).load() + 1;
  Word(zygote_->seq).store(seq);
  Futex(&zygote_->seq, FUTEX_WAKE, 1);
  for (;;) {
    const uint32_t done = Word(zygote_->done).load();
    if (done == seq) break;
    const timespec tick{.tv_sec = 0, .tv_nsec = kTickNanos};
    if (Futex(&zygote_->done, FUTEX_WAIT, done, &tick) != 0 && errno == ETIMEDOUT) {
      int status = 0;
      if (ChildDead(zygote_pid_, &status)) {
        return absl::UnavailableError(
            absl::StrFormat("systrap zygote pid=%d %s", zygote_pid_, DescribeWaitStatus(status)));
      }
    }
  }
  const int64_t r = zygote_->result;
  if (r <= 0) {
    return ErrnoStatus("clone(CLONE_PARENT) of a systrap stub", static_cast<int>(r < 0 ? -r : EIO));
  }
  return static_cast<pid_t>(r);
}

void SystrapPlatform::FreeSlice(int slice) {
  // Zero it for the next stub (and give the pages back).
  fallocate(ctx_fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
            static_cast<off_t>(slice) * static_cast<off_t>(kCtxRegionSize),
            static_cast<off_t>(kCtxRegionSize));
  std::lock_guard<std::mutex> lock(mu_);
  free_slices_.push_back(slice);
}

absl::StatusOr<std::unique_ptr<AddressSpace>> SystrapPlatform::NewAddressSpace() {
  int slice;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_slices_.empty()) {
      slice = free_slices_.back();
      free_slices_.pop_back();
    } else if (next_slice_ < kMaxStubs) {
      slice = next_slice_++;
    } else {
      return absl::ResourceExhaustedError(
          absl::StrFormat("systrap: %d stub processes alive, the most supported", kMaxStubs));
    }
  }
  absl::StatusOr<pid_t> pid = ForkStub(slice);
  if (!pid.ok()) {
    FreeSlice(slice);
    return pid.status();
  }
  auto stub = std::make_shared<StubProcess>(
      this, *pid, slice, ctx_map_ + static_cast<uint64_t>(slice) * kCtxRegionSize);
  // The control thread reports once it is set up.
  RETURN_IF_ERROR(stub->Wait(0, "during startup", nullptr, nullptr));
  return std::unique_ptr<AddressSpace>(
      new SystrapAddressSpace(std::move(stub), code_.ctx_base, memory_file_.fd));
}

absl::StatusOr<std::unique_ptr<Context>> SystrapPlatform::NewContext() {
  return std::unique_ptr<Context>(new SystrapContext());
}

}  // namespace usentry::platform::systrap
