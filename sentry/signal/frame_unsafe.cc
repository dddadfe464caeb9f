// x86-64 signal frames: the rt_sigframe the kernel pushes on the app stack before
// running a handler, and rt_sigreturn, which restores the interrupted context from it.
// Layout follows arch/x86/include/asm/sigframe.h and uapi asm/sigcontext.h:
//   [rsp]      pretcode (sa_restorer; the handler's `ret` jumps there)
//   [rsp+8]    ucontext (flags, link, stack_t, sigcontext, sigmask)
//   [rsp+312]  siginfo
// and, above the frame, 64-byte aligned, the XSAVE image that sigcontext.fpstate points to.
#include <signal.h>

#include <cstring>

#include "abi/signal.h"
#include "platform/xsave_layout.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/signal/signal.h"

namespace usentry::sentry {

namespace {

using abi::FpxSwBytes;
using abi::kFpXstateMagic1;
using abi::kFpXstateMagic2;
using abi::RtSigframe;
using abi::SigContext;

constexpr size_t kSwReservedOffset = offsetof(abi::FxsaveArea, sw_reserved);
// EFLAGS bits a signal handler may change through the frame (Linux FIX_EFLAGS).
constexpr uint64_t kFixEflags =
    0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;

// Whether the host's XRSTOR (FXRSTOR for a legacy-only image of 512 bytes) would take
// `img`, the FP state an app's handler left at `addr`; Linux turns a fault there into
// SIGSEGV at rt_sigreturn. Checked here because the platforms would not fault alike:
// ptrace's SETREGSET masks MXCSR and refuses a bad header (the task dies), systrap's
// stub restores the image with its own sigreturn.
bool FpImageRestorable(const uint8_t* img, size_t size, uint64_t addr) {
  const bool xsave = size > sizeof(abi::FxsaveArea);
  if (addr % (xsave ? 64 : 16) != 0) return false;
  uint32_t mxcsr;
  memcpy(&mxcsr, img + offsetof(abi::FxsaveArea, mxcsr), sizeof(mxcsr));
  if ((mxcsr & ~platform::HostMxcsrMask()) != 0) return false;
  if (!xsave) return true;
  // The XSAVE header: XSTATE_BV within XCR0, and in the standard form XCOMP_BV and the
  // 8 bytes after it zero (the rest of the header XRSTOR ignores).
  static const uint64_t xcr0 = platform::HostXsaveFeatures();
  uint64_t header[3];
  memcpy(header, img + sizeof(abi::FxsaveArea), sizeof(header));
  return (header[0] & ~xcr0) == 0 && header[1] == 0 && header[2] == 0;
}

// What rt_sigreturn restores from the FP state at `fpstate` (Linux's
// check_xstate_in_sigframe): an XSAVE image when the software bytes say so, with the
// host's size here, and FP_XSTATE_MAGIC2 follows it; otherwise the legacy 512 bytes.
struct FrameXsave {
  bool xsave = false;
  uint64_t xfeatures = 0;  // the components to restore (the others become initial)
};
SysResult<FrameXsave> FrameXsaveOf(mm::MemoryManager& mm, uint64_t fpstate, size_t fp_size) {
  FpxSwBytes sw;
  RETURN_IF_ERRNO(mm.CopyIn(mm::GuestAddr(fpstate + kSwReservedOffset), &sw, sizeof(sw)));
  if (sw.magic1 != kFpXstateMagic1 || sw.xstate_size != fp_size ||
      sw.extended_size < sw.xstate_size) {
    return FrameXsave{};
  }
  uint32_t magic2;
  RETURN_IF_ERRNO(mm.CopyIn(mm::GuestAddr(fpstate + sw.xstate_size), &magic2, sizeof(magic2)));
  if (magic2 != kFpXstateMagic2) return FrameXsave{};
  return FrameXsave{.xsave = true, .xfeatures = sw.xfeatures};
}

bool OnAltStack(const stack_t& ss, uint64_t sp) {
  auto base = reinterpret_cast<uint64_t>(ss.ss_sp);
  return !(ss.ss_flags & SS_DISABLE) && sp > base && sp <= base + ss.ss_size;
}

}  // namespace

SysStatus SetupSignalFrame(Task& t, int sig, const siginfo_t& info, uint64_t saved_mask) {
  platform::Registers& regs = t.regs();
  user_regs_struct& gp = regs.gp;
  const KSigAction& act = t.thread_group().handlers->actions[sig];
  const stack_t& ss = t.sig->altstack;
  mm::MemoryManager& mm = t.mm();

  uint64_t sp = gp.rsp;
  const bool on_alt = OnAltStack(ss, sp);
  if ((act.flags & SA_ONSTACK) && !(ss.ss_flags & SS_DISABLE) && !on_alt) {
    sp = reinterpret_cast<uint64_t>(ss.ss_sp) + ss.ss_size;
  } else {
    sp -= 128;  // the red zone belongs to the interrupted code
  }

  // The FPU/AVX state of the interrupted code, saved above the frame.
  if (!regs.fp_valid) {
    platform::AddressSpace* as = mm.address_space();
    if (!as || !t.ctx || !t.ctx->LoadFpState(*as, regs).ok()) return Errno{EFAULT};
  }
  const size_t fp_size = regs.fp_size;
  sp -= fp_size + sizeof(uint32_t);
  sp &= ~uint64_t{63};
  const uint64_t fpstate = sp;
  FpxSwBytes sw;
  memcpy(&sw, regs.fp + kSwReservedOffset, sizeof(sw));
  if (sw.magic1 != kFpXstateMagic1) {
    uint64_t xstate_bv;
    memcpy(&xstate_bv, regs.fp + 512, sizeof(xstate_bv));
    sw = FpxSwBytes{kFpXstateMagic1,
                    static_cast<uint32_t>(fp_size + 4),
                    xstate_bv | 3,
                    static_cast<uint32_t>(fp_size),
                    {}};
  }
  uint8_t fpbuf[platform::kFpStateSize + 4];
  memcpy(fpbuf, regs.fp, fp_size);
  memcpy(fpbuf + kSwReservedOffset, &sw, sizeof(sw));
  if (fp_size > sizeof(abi::FxsaveArea)) {
    // Linux's frames always say that the legacy area holds x87 and SSE state (XSTATE_BV),
    // in use or not, so that a handler that edits it there is heard at rt_sigreturn;
    // ptrace's XSAVE image leaves out a component in its initial state.
    platform::SetXstateBv(fpbuf, platform::XstateBv(fpbuf) | abi::kXfeatureFp | abi::kXfeatureSse);
  }
  memcpy(fpbuf + fp_size, &kFpXstateMagic2, sizeof(uint32_t));
  RETURN_IF_ERRNO(mm.CopyOut(mm::GuestAddr(fpstate), fpbuf, fp_size + 4));
  // The handler itself starts from the initial FPU state, as on Linux: a handler compiled
  // for the default rounding and exception masks must not inherit the app's.
  platform::ResetToInitialFpState(regs.fp, fp_size);
  regs.fp_dirty = true;
  regs.fp_initial = true;

  sp -= sizeof(RtSigframe);
  sp = (sp & ~uint64_t{15}) - 8;  // as after a `call`: (rsp + 8) % 16 == 0
  RtSigframe f{};
  f.pretcode = act.restorer;
  f.uc.flags = abi::kUcFpXstate | abi::kUcSigcontextSs | abi::kUcStrictRestoreSs;
  f.uc.stack.sp = reinterpret_cast<uint64_t>(ss.ss_sp);
  f.uc.stack.flags = on_alt ? SS_ONSTACK : ss.ss_flags;
  f.uc.stack.size = ss.ss_size;
  SigContext& sc = f.uc.mcontext;
  sc.r8 = gp.r8, sc.r9 = gp.r9, sc.r10 = gp.r10, sc.r11 = gp.r11;
  sc.r12 = gp.r12, sc.r13 = gp.r13, sc.r14 = gp.r14, sc.r15 = gp.r15;
  sc.rdi = gp.rdi, sc.rsi = gp.rsi, sc.rbp = gp.rbp, sc.rbx = gp.rbx;
  sc.rdx = gp.rdx, sc.rax = gp.rax, sc.rcx = gp.rcx, sc.rsp = gp.rsp, sc.rip = gp.rip;
  sc.eflags = gp.eflags;
  // What the app runs with on every platform (they force these), whatever the saved
  // registers say: SignalReturn checks them.
  sc.cs = abi::kUserCs;
  sc.ss = abi::kUserDs;
  sc.oldmask = saved_mask;
  if (sig == SIGSEGV || sig == SIGBUS) {
    sc.cr2 = reinterpret_cast<uint64_t>(info.si_addr);
    sc.trapno = 14;
  }
  sc.fpstate = fpstate;
  f.uc.sigmask = saved_mask;
  static_assert(sizeof(f.info) == sizeof(info));
  memcpy(&f.info, &info, sizeof(info));
  RETURN_IF_ERRNO(mm.CopyOut(mm::GuestAddr(sp), &f, sizeof(f)));

  gp.rdi = static_cast<uint64_t>(sig);
  gp.rsi = sp + offsetof(RtSigframe, info);
  gp.rdx = sp + offsetof(RtSigframe, uc);
  gp.rax = 0;
  gp.rsp = sp;
  gp.rip = act.handler;
  gp.eflags &= ~uint64_t{0x400 | 0x100};  // DF and TF are clear in a handler
  return SysOk();
}

SysStatus SignalReturn(Task& t) {
  platform::Registers& regs = t.regs();
  user_regs_struct& gp = regs.gp;
  mm::MemoryManager& mm = t.mm();
  const uint64_t frame = gp.rsp - 8;  // the handler's `ret` popped pretcode
  RtSigframe f;
  RETURN_IF_ERRNO(mm.CopyIn(mm::GuestAddr(frame), &f, sizeof(f)));
  const SigContext& sc = f.uc.mcontext;

  // Linux restores cs and, with kUcStrictRestoreSs (its frames carry it), ss with RPL 3,
  // and the return to user mode faults on any but user segments; without the flag a
  // bad ss is replaced. gs and fs are ignored. A 32-bit cs is accepted but, as
  // everywhere here, the app goes on in 64-bit mode.
  const uint16_t cs = sc.cs | 3;
  if (cs != abi::kUserCs && cs != abi::kUser32Cs) return Errno{EFAULT};
  if ((f.uc.flags & abi::kUcStrictRestoreSs) != 0 && (sc.ss | 3) != abi::kUserDs) {
    return Errno{EFAULT};
  }

  if (!regs.fp_valid) {
    platform::AddressSpace* as = mm.address_space();
    if (!as || !t.ctx || !t.ctx->LoadFpState(*as, regs).ok()) return Errno{EFAULT};
  }
  if (sc.fpstate == 0) {
    // A frame without FP state leaves the thread with the initial one (Linux's
    // restore_sigcontext), not with whatever the handler left.
    platform::ResetToInitialFpState(regs.fp, regs.fp_size);
    regs.fp_dirty = true;
    regs.fp_initial = true;
  } else {
    ASSIGN_OR_RETURN_ERRNO(const FrameXsave x, FrameXsaveOf(mm, sc.fpstate, regs.fp_size));
    const size_t size = x.xsave ? regs.fp_size : sizeof(abi::FxsaveArea);
    uint8_t buf[platform::kFpStateSize];
    RETURN_IF_ERRNO(mm.CopyIn(mm::GuestAddr(sc.fpstate), buf, size));
    if (!FpImageRestorable(buf, size, sc.fpstate)) return Errno{EFAULT};
    if (x.xsave) {
      // Header bytes XRSTOR ignores; ptrace's SETREGSET insists they are zero.
      memset(buf + sizeof(abi::FxsaveArea) + 24, 0, 64 - 24);
      // Linux restores only the components the software bytes name and initializes
      // the rest: a clear XSTATE_BV bit does that here. x87 and SSE come from the legacy
      // area either way, and PKRU stays (protection keys are not emulated).
      platform::SetXstateBv(buf, platform::XstateBv(buf) & (x.xfeatures | abi::kXfeaturePkru |
                                                            abi::kXfeatureFp | abi::kXfeatureSse));
    }
    memcpy(regs.fp, buf, size);
    // Linux restores a legacy-only frame with FXRSTOR and initializes the rest.
    if (size < regs.fp_size) platform::ResetExtendedFpState(regs.fp, regs.fp_size);
    regs.fp_dirty = true;
    regs.fp_initial = false;
  }

  gp.r8 = sc.r8, gp.r9 = sc.r9, gp.r10 = sc.r10, gp.r11 = sc.r11;
  gp.r12 = sc.r12, gp.r13 = sc.r13, gp.r14 = sc.r14, gp.r15 = sc.r15;
  gp.rdi = sc.rdi, gp.rsi = sc.rsi, gp.rbp = sc.rbp, gp.rbx = sc.rbx;
  gp.rdx = sc.rdx, gp.rax = sc.rax, gp.rcx = sc.rcx, gp.rsp = sc.rsp, gp.rip = sc.rip;
  gp.eflags = (gp.eflags & ~kFixEflags) | (sc.eflags & kFixEflags);
  gp.orig_rax = static_cast<uint64_t>(-1);  // not in a syscall: never restarted

  t.sig->mask = f.uc.sigmask & ~kUnblockable;
  // Restoring the alternate stack settings is best effort, as in Linux (errors ignored),
  // and refused while running on it.
  if (!OnAltStack(t.sig->altstack, gp.rsp) && !(f.uc.stack.flags & ~SS_DISABLE)) {
    t.sig->altstack.ss_sp = reinterpret_cast<void*>(f.uc.stack.sp);
    t.sig->altstack.ss_size = f.uc.stack.size;
    t.sig->altstack.ss_flags = f.uc.stack.flags;
  }
  t.regs_replaced = true;
  return SysOk();
}

}  // namespace usentry::sentry
