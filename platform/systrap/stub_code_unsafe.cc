// Generates and maps the systrap stub code page (see stub_code_unsafe.h).
//
// Register conventions in the generated code: r12 = the current slot's base (sentry
// and stub agree on slot addresses; a thread finds its slot from rsp because its
// stacks live inside it), r15 = the zygote page, r13d = the last zygote request seen.
// The code uses no stack of its own: the handler leaves rsp at the signal frame so
// that `add rsp, 8; rt_sigreturn` returns through it.
#include "platform/systrap/stub_code_unsafe.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "platform/stub_child_unsafe.h"
#include "platform/stub_process.h"
#include "platform/systrap/layout.h"
#include "platform/systrap/spin_budget.h"
#include "xbyak/xbyak.h"

namespace usentry::platform::systrap {
namespace {

constexpr uint64_t kTaskSize = 0x7ffffffff000;
// Code page candidates, highest first; each leaves kZygotePages and the context region
// below it and above 0x7ff000000000.
constexpr uint64_t kCandidates[] = {0x7ffe00000000, 0x7ff800000000, 0x7ff400000000, 0x7ff100000000};
// The FPU init image for xrstor/fxrstor: FCW 0x37f, MXCSR 0x1f80, XSTATE_BV 0 (every
// component in its init state).
constexpr size_t kInitImageSize = 576;

bool HostHasXsave() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_OSXSAVE) != 0;
}

// Where the interrupted rip is in a signal handler's ucontext (rdx).
constexpr size_t kGregsRipOffset = offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RIP;

#define OFF(field) static_cast<uint32_t>(offsetof(SlotHeader, field))
#define ZOFF(field) static_cast<uint32_t>(offsetof(ZygotePage, field))

class Generator : public Xbyak::CodeGenerator {
 public:
  Generator(uint64_t code_page, uint64_t ctx_base, const HostVdso* vdso)
      : Xbyak::CodeGenerator(kCodeSize, Xbyak::DontSetProtectRWE),
        code_page_(code_page),
        ctx_base_(ctx_base),
        vdso_(vdso),
        spins_(PausesFor(kStubSpinBudget)),
        spins_before_hint_(std::min(spins_, PausesFor(kStubSpinBudgetBeforeHint))),
        long_yield_ticks_(YieldLostASliceTicks()) {}

  StubCode Generate() {
    using namespace Xbyak::util;  // NOLINT: register names
    Xbyak::Label init_image, die, zygote_entry, handler, restorer, first_trap;
    Xbyak::Label control_report, thread_start;

    // --- zygote -----------------------------------------------------------------
    L(zygote_entry);
    mov(r15, rdi);
    ResetFpu(init_image);
    // munmap [0, zygote page), [zygote page + 4096, code page), [code page + 4096, top),
    // all but the host vDSO block if it is kept (below ctx_base, so below the zygote page)
    if (vdso_ != nullptr) {
      xor_(edi, edi);
      mov(rsi, vdso_->start);
      Syscall(SYS_munmap);
      CheckZero(die);
      mov(rdi, vdso_->end);
      mov(rsi, r15);
      sub(rsi, rdi);
    } else {
      xor_(edi, edi);
      mov(rsi, r15);
    }
    Syscall(SYS_munmap);
    CheckZero(die);
    lea(rdi, ptr[r15 + kPageSize]);
    mov(rsi, code_page_);
    sub(rsi, rdi);
    Xbyak::Label skip_mid;
    jz(skip_mid, T_NEAR);
    Syscall(SYS_munmap);
    CheckZero(die);
    L(skip_mid);
    if (code_page_ + kCodeSize < kTaskSize) {
      mov(rdi, code_page_ + kCodeSize);
      mov(rsi, kTaskSize - (code_page_ + kCodeSize));
      Syscall(SYS_munmap);
      CheckZero(die);
    }
    // Tell the sentry the zygote made it (so a host that refuses any of it is found at
    // platform creation, where "auto" can still fall back to ptrace).
    mov(dword[r15 + ZOFF(ready)], 1);
    lea(rdi, ptr[r15 + ZOFF(ready)]);
    mov(esi, FUTEX_WAKE);
    mov(edx, 1);
    Syscall(SYS_futex);
    xor_(r13d, r13d);
    Xbyak::Label zloop, zrequest, zchild;
    L(zloop);
    mov(eax, dword[r15 + ZOFF(seq)]);
    cmp(eax, r13d);
    jne(zrequest, T_NEAR);
    lea(rdi, ptr[r15 + ZOFF(seq)]);
    mov(esi, FUTEX_WAIT);
    mov(edx, r13d);
    xor_(r10d, r10d);
    Syscall(SYS_futex);
    jmp(zloop, T_NEAR);
    L(zrequest);
    mov(r13d, eax);
    mov(r12, qword[r15 + ZOFF(slice_offset)]);  // the child reads it from r12, not memory
    mov(r14, qword[r15 + ZOFF(ctx_fd)]);
    mov(rbx, qword[r15 + ZOFF(sock_fd)]);
    mov(edi, CLONE_PARENT);
    xor_(esi, esi);
    xor_(edx, edx);
    xor_(r10d, r10d);
    xor_(r8d, r8d);
    Syscall(SYS_clone);
    test(rax, rax);
    jz(zchild, T_NEAR);
    mov(qword[r15 + ZOFF(result)], rax);
    xchg(dword[r15 + ZOFF(done)], r13d);  // a locked store: ordered after result
    mov(r13d, dword[r15 + ZOFF(done)]);
    lea(rdi, ptr[r15 + ZOFF(done)]);
    mov(esi, FUTEX_WAKE);
    mov(edx, 1);
    Syscall(SYS_futex);
    jmp(zloop, T_NEAR);

    // --- a new stub process (child of the sentry) ----------------------------------
    L(zchild);
    mov(edi, PR_SET_PDEATHSIG);
    mov(esi, SIGKILL);
    Syscall(SYS_prctl);
    CheckZero(die);
    mov(rdi, ctx_base_);
    mov(esi, static_cast<uint32_t>(kCtxRegionSize));
    mov(edx, PROT_READ | PROT_WRITE);
    mov(r10d, MAP_SHARED | MAP_FIXED);
    mov(r8, r14);
    mov(r9, r12);
    Syscall(SYS_mmap);
    mov(rcx, ctx_base_);
    cmp(rax, rcx);
    jne(die, T_NEAR);
    // The shared patch area, read-only and executable, at its fixed low address.
    mov(edi, static_cast<uint32_t>(kPatchBase));
    mov(esi, static_cast<uint32_t>(kPatchSize));
    mov(edx, PROT_READ | PROT_EXEC);
    mov(r10d, MAP_SHARED | MAP_FIXED);
    mov(r8, r14);
    mov(r9, kPatchFileOffset);
    Syscall(SYS_mmap);
    cmp(rax, static_cast<uint32_t>(kPatchBase));
    jne(die, T_NEAR);
    // This stub's own socket, queued on the zygote socket, then the zygote socket goes.
    mov(rdi, rbx);
    mov(rsi, ctx_base_ + kFdMessageOffset + offsetof(StubFdMessage, msg));
    xor_(edx, edx);
    Syscall(SYS_recvmsg);
    cmp(rax, 1);
    jne(die, T_NEAR);
    mov(rdi, rbx);
    Syscall(SYS_close);
    CheckZero(die);
    mov(rdi, r14);
    Syscall(SYS_close);
    mov(rdi, r15);
    mov(esi, static_cast<uint32_t>(kPageSize));
    Syscall(SYS_munmap);
    CheckZero(die);
    mov(r12, ctx_base_);  // slot 0
    Syscall(SYS_gettid);
    mov(qword[r12 + OFF(tid)], rax);

    // --- control thread: ops from the sentry -----------------------------------
    L(control_report);
    Xbyak::Label control_go;
    ReportAndWait(control_go);
    L(control_go);
    Xbyak::Label not_syscall, not_new_thread;
    mov(eax, dword[r12 + OFF(op)]);
    cmp(eax, kOpSyscall);
    jne(not_syscall, T_NEAR);
    RunRequestedSyscall();
    jmp(control_report, T_NEAR);
    L(not_syscall);
    cmp(eax, kOpNewThread);
    jne(not_new_thread, T_NEAR);
    mov(rsi, qword[r12 + OFF(args)]);  // the new thread's slot
    lea(r10, ptr[rsi + OFF(tid)]);     // CHILD_SETTID / CHILD_CLEARTID word
    add(rsi, kThreadStackTop);
    mov(edi, static_cast<uint32_t>(kThreadCloneFlags));
    xor_(edx, edx);
    xor_(r8d, r8d);
    Syscall(SYS_clone);
    test(rax, rax);
    jz(thread_start, T_NEAR);
    mov(qword[r12 + OFF(result)], rax);
    jmp(control_report, T_NEAR);
    L(not_new_thread);
    mov(qword[r12 + OFF(result)], -EINVAL);
    jmp(control_report, T_NEAR);

    // --- a new app thread ----------------------------------------------------------
    L(thread_start);
    mov(r12, rsp);
    and_(r12, -static_cast<int>(kSlotSize));
    lea(rax, ptr[r12 + kAltStackOffset]);
    mov(qword[r12 + OFF(altstack)], rax);    // ss_sp
    mov(qword[r12 + OFF(altstack) + 8], 0);  // ss_flags
    mov(eax, static_cast<uint32_t>(kAltStackSize));
    mov(qword[r12 + OFF(altstack) + 16], rax);  // ss_size
    lea(rdi, ptr[r12 + OFF(altstack)]);
    xor_(esi, esi);
    Syscall(SYS_sigaltstack);
    CheckZero(die);
    // %gs points at the slot: the fast entry has no free register to find it otherwise.
    mov(edi, ARCH_SET_GS);
    mov(rsi, r12);
    Syscall(SYS_arch_prctl);
    CheckZero(die);
    mov(qword[r12 + OFF(self)], r12);
    lea(rax, ptr[r12 + kThreadStackTop]);
    mov(qword[r12 + OFF(fast_stack)], rax);
    ResetFpu(init_image);
    // The stub's own traps are int3, not ud2: under KVM a #UD exits to the hypervisor
    // (11.6 us per ud2 + SIGILL on the 2026-12-06 VM, against 1.5 us for int3 + SIGTRAP),
    // and every fork, exec and new thread takes one. int3 reports the rip after it.
    int3();
    L(first_trap);
    ud2();  // never reached: the sentry resumes the frame with the app's registers

    // --- fast entry: a patched syscall site ---------------------------------------
    Xbyak::Label fast_entry, fast_report, fast_go, not_fast, not_slow, not_syscall3, slow_trap;
    L(fast_entry);
    // mov r11, gs:[self] (hand-encoded: 65 4c 8b 1c 25 disp32); r11 is the syscall's
    // to clobber (it returns rflags there).
    db(0x65);
    db(0x4c);
    db(0x8b);
    db(0x1c);
    db(0x25);
    dd(OFF(self));
    mov(qword[r11 + OFF(fast_rsp)], rsp);
    mov(rsp, qword[r11 + OFF(fast_stack)]);
    pushfq();
    pop(qword[r11 + OFF(fast_rflags)]);
    // The lines the sentry rarely reads first, line 0 last, right before the report.
    ForEachFastReg([&](const Xbyak::Reg64& r, uint32_t off) { mov(qword[r11 + off], r); });
    mov(r12, r11);
    Xbyak::Label kind_set;
    cmp(qword[r12 + OFF(kind)], kTrapFast);  // line 1 is written only when it changes
    je(kind_set);
    mov(qword[r12 + OFF(kind)], kTrapFast);
    L(kind_set);
    ForEachFastArg([&](const Xbyak::Reg64& r, uint32_t off) { mov(qword[r12 + off], r); });
    L(fast_report);
    ReportAndWait(fast_go);
    L(fast_go);
    mov(eax, dword[r12 + OFF(op)]);
    cmp(eax, kOpFastResume);
    jne(not_fast, T_NEAR);
    SetFsIfAsked();
    RestoreFastRegs();
    mov(r11, qword[r12 + OFF(fast_rflags)]);  // a syscall returns rflags in r11
    mov(rsp, qword[r12 + OFF(fast_rsp)]);
    mov(r12, qword[r12 + FastOff(kFastR12)]);
    jmp(rcx);  // rcx = the return address, as a syscall leaves it
    L(not_fast);
    cmp(eax, kOpSlow);
    jne(not_slow, T_NEAR);
    // The frame this trap makes gets every register the sentry reads from the fast save;
    // r11 (which the syscall clobbers) it sets to rflags, as the syscall would.
    RestoreFastRegs();
    mov(r11, qword[r12 + OFF(fast_rflags)]);
    mov(rsp, qword[r12 + OFF(fast_rsp)]);
    mov(r12, qword[r12 + FastOff(kFastR12)]);
    int3();  // like first_trap
    L(slow_trap);
    ud2();  // never reached: the sentry rewrites the frame's registers before resuming
    L(not_slow);
    cmp(eax, kOpSyscall);
    jne(not_syscall3, T_NEAR);
    RunRequestedSyscall();
    jmp(fast_report, T_NEAR);
    L(not_syscall3);
    cmp(eax, kOpExitThread);
    jne(fast_report, T_NEAR);
    xor_(edi, edi);
    Syscall(SYS_exit);
    ud2();

    // --- signal handler: every trap of app code ---------------------------------
    L(handler);
    // An interrupt that lands while the thread runs stub code (fast entry, thread start)
    // is dropped: that code reports to the sentry by itself soon, and the sentry keeps
    // the interrupt pending (and re-sends it if the app keeps running).
    Xbyak::Label not_early;
    cmp(edi, kInterruptSignal);
    jne(not_early, T_NEAR);
    mov(rax, qword[rdx + static_cast<uint32_t>(kGregsRipOffset)]);
    mov(rcx, code_page_);
    cmp(rax, rcx);
    jb(not_early, T_NEAR);
    add(rcx, static_cast<uint32_t>(kCodeSize));
    cmp(rax, rcx);
    jae(not_early, T_NEAR);
    add(rsp, 8);
    Syscall(SYS_rt_sigreturn);
    L(not_early);
    mov(r12, rsp);
    and_(r12, -static_cast<int>(kSlotSize));
    mov(qword[r12 + OFF(kind)], kTrapFrame);
    mov(qword[r12 + OFF(signo)], rdi);
    mov(qword[r12 + OFF(siginfo)], rsi);
    mov(qword[r12 + OFF(ucontext)], rdx);
    Xbyak::Label handler_report, handler_go, not_resume, not_syscall2, no_fs;
    L(handler_report);
    ReportAndWait(handler_go);
    L(handler_go);
    Xbyak::Label not_return;
    mov(eax, dword[r12 + OFF(op)]);
    cmp(eax, kOpReturn);
    jne(not_return, T_NEAR);
    SetFsIfAsked();
    ReturnThroughFrame();
    L(not_return);
    cmp(eax, kOpResume);
    jne(not_resume, T_NEAR);
    SetFsIfAsked();
    L(no_fs);
    add(rsp, 8);  // as if `ret` had popped the frame's return address
    Syscall(SYS_rt_sigreturn);
    ud2();
    L(not_resume);
    cmp(eax, kOpSyscall);
    jne(not_syscall2, T_NEAR);
    RunRequestedSyscall();
    jmp(handler_report, T_NEAR);
    L(not_syscall2);
    cmp(eax, kOpExitThread);
    jne(handler_report, T_NEAR);  // unknown op: report again, frame unchanged
    xor_(edi, edi);
    Syscall(SYS_exit);
    ud2();

    L(restorer);
    Syscall(SYS_rt_sigreturn);
    ud2();

    L(die);
    mov(edi, kStubStartupFailedExit);
    Syscall(SYS_exit_group);
    ud2();

    // The image starts on the second page; the rest of the region stays zero.
    while (getSize() < kPageSize) db(0xcc);
    align(64);
    L(init_image);
    for (size_t i = 0; i < kInitImageSize; ++i) {
      uint8_t b = 0;
      if (i == 0) b = 0x7f;  // FCW = 0x037f
      if (i == 1) b = 0x03;
      if (i == 24) b = 0x80;  // MXCSR = 0x1f80
      if (i == 25) b = 0x1f;
      db(b);
    }

    const auto at = [&](const Xbyak::Label& l) {
      return code_page_ + static_cast<uint64_t>(l.getAddress() - getCode());
    };
    return StubCode{.code_page = code_page_,
                    .ctx_base = ctx_base_,
                    .zygote_entry = at(zygote_entry),
                    .handler = at(handler),
                    .restorer = at(restorer),
                    .first_trap = at(first_trap),
                    .fast_entry = at(fast_entry),
                    .slow_trap = at(slow_trap)};
  }

 private:
  static uint32_t FastOff(int reg) { return OFF(fast_regs) + 8 * static_cast<uint32_t>(reg); }
  static uint32_t ArgOff(int arg) { return OFF(fast_args) + 8 * static_cast<uint32_t>(arg); }
  // Calls f(register, slot offset) for every register the fast entry saves in fast_regs
  // (layout.h, FastReg), then in fast_args (FastArg).
  template <typename F>
  void ForEachFastReg(F f) {
    using namespace Xbyak::util;  // NOLINT
    const Xbyak::Reg64 regs[kFastRegCount] = {rbx, rcx, rbp, r12, r13, r14, r15};
    for (int i = 0; i < kFastRegCount; ++i) f(regs[i], FastOff(i));
  }
  template <typename F>
  void ForEachFastArg(F f) {
    using namespace Xbyak::util;  // NOLINT
    const Xbyak::Reg64 regs[kFastArgCount] = {rax, rdi, rsi, rdx, r10, r8, r9};
    for (int i = 0; i < kFastArgCount; ++i) f(regs[i], ArgOff(i));
  }
  // r12 = slot: every saved register but r12 back (r11 and rsp are the caller's to
  // set); rflags too (through the slot's stack, which rsp still points into).
  void RestoreFastRegs() {
    using namespace Xbyak::util;  // NOLINT
    push(qword[r12 + OFF(fast_rflags)]);
    popfq();
    ForEachFastArg([&](const Xbyak::Reg64& r, uint32_t off) { mov(r, qword[r12 + off]); });
    ForEachFastReg([&](const Xbyak::Reg64& r, uint32_t off) {
      if (r.getIdx() != r12.getIdx()) mov(r, qword[r12 + off]);
    });
  }
  // r12 = slot, rsp = the handler's frame (kOpReturn): what rt_sigreturn would do for a
  // frame whose signal mask and stack are the current ones, in user space. The frame's
  // FPU state (the kernel's own XSAVE) is loaded back, then rflags and every register;
  // rsp and rip come last, from the slot through %gs, since once rsp is the app's a
  // signal that lands here (an interrupt, which the handler drops) writes its frame
  // over this one at the top of the signal stack.
  void ReturnThroughFrame() {
    using namespace Xbyak::util;  // NOLINT
    const auto greg = [](int r) {
      return static_cast<uint32_t>(offsetof(ucontext_t, uc_mcontext.gregs) + 8 * r);
    };
    lea(rbx, ptr[rsp + 8]);  // the ucontext, after the frame's return address
    mov(rsi, qword[rbx + static_cast<uint32_t>(offsetof(ucontext_t, uc_mcontext.fpregs))]);
    if (HostHasXsave()) {
      mov(eax, -1);
      mov(edx, -1);
      db(0x48);  // xrstor64 [rsi], as the kernel's own restore
      db(0x0f);
      db(0xae);
      db(0x2e);
    } else {
      db(0x48);  // fxrstor64 [rsi]
      db(0x0f);
      db(0xae);
      db(0x0e);
    }
    mov(rax, qword[rbx + greg(REG_RSP)]);
    mov(qword[r12 + OFF(return_rsp)], rax);
    mov(rax, qword[rbx + greg(REG_RIP)]);
    mov(qword[r12 + OFF(return_rip)], rax);
    push(qword[rbx + greg(REG_EFL)]);
    popfq();
    const std::pair<Xbyak::Reg64, int> regs[] = {
        {r8, REG_R8},   {r9, REG_R9},   {r10, REG_R10}, {r11, REG_R11}, {r12, REG_R12},
        {r13, REG_R13}, {r14, REG_R14}, {r15, REG_R15}, {rdi, REG_RDI}, {rsi, REG_RSI},
        {rbp, REG_RBP}, {rdx, REG_RDX}, {rax, REG_RAX}, {rcx, REG_RCX}, {rbx, REG_RBX}};
    for (const auto& [reg, index] : regs) mov(reg, qword[rbx + greg(index)]);  // rbx last
    // mov rsp, gs:[return_rsp]; jmp gs:[return_rip] (hand-encoded, as the fast entry's).
    for (uint8_t b : {0x65, 0x48, 0x8b, 0x24, 0x25}) db(b);
    dd(OFF(return_rsp));
    for (uint8_t b : {0x65, 0xff, 0x24, 0x25}) db(b);
    dd(OFF(return_rip));
  }
  // r12 = slot: arch_prctl(ARCH_SET_FS, fs_base) if the sentry asked for it.
  void SetFsIfAsked() {
    using namespace Xbyak::util;  // NOLINT
    Xbyak::Label done;
    cmp(qword[r12 + OFF(set_fs)], 0);
    je(done, T_NEAR);
    mov(edi, ARCH_SET_FS);
    mov(rsi, qword[r12 + OFF(fs_base)]);
    Syscall(SYS_arch_prctl);
    mov(qword[r12 + OFF(set_fs)], 0);
    L(done);
  }
  void Syscall(int nr) {
    mov(eax, nr);
    syscall();
  }
  void CheckZero(const Xbyak::Label& fail) {
    using namespace Xbyak::util;  // NOLINT
    test(rax, rax);
    jnz(fail, T_NEAR);
  }
  void ResetFpu(const Xbyak::Label& image) {
    using namespace Xbyak::util;  // NOLINT
    lea(rbx, ptr[rip + image]);
    if (HostHasXsave()) {
      mov(eax, -1);
      mov(edx, -1);
      db(0x0f);  // xrstor [rbx] (this xbyak has no mnemonic for it)
      db(0xae);
      db(0x2b);
    } else {
      fxrstor(ptr[rbx]);
    }
  }
  // r12 = slot. state = trapped (waking a sleeping sentry), then wait until the sentry
  // posts kStateGo: spin first, then FUTEX_WAIT. Jumps to `go`.
  void ReportAndWait(const Xbyak::Label& go) {
    using namespace Xbyak::util;  // NOLINT
    Xbyak::Label wait, spin, sleep, woke;
    mov(eax, kStateTrapped);
    xchg(dword[r12 + OFF(state)], eax);  // locked: ordered before the load below
    cmp(dword[r12 + OFF(sentry_sleeping)], 0);
    je(wait, T_NEAR);
    lea(rdi, ptr[r12 + OFF(state)]);
    mov(esi, FUTEX_WAKE);
    mov(edx, 1);
    Syscall(SYS_futex);
    L(wait);
    mov(ecx, spins_);
    L(spin);
    cmp(dword[r12 + OFF(state)], kStateGo);
    je(go, T_NEAR);
    // The sentry's hints (layout.h, StopSpinning): kStopNow at once, "about to block"
    // after a first short spin.
    cmp(qword[r12 + OFF(stop_spinning)], kStopNow);
    je(sleep, T_NEAR);
    Xbyak::Label no_hint;
    cmp(ecx, spins_ - spins_before_hint_);
    ja(no_hint, T_NEAR);
    cmp(qword[r12 + OFF(stop_spinning)], kKeepSpinning);
    jne(sleep, T_NEAR);
    L(no_hint);
    pause();
    Xbyak::Label no_yield;
    test(ecx, kSpinsPerYield - 1);  // layout.h
    jnz(no_yield, T_NEAR);
    // The syscall clobbers rcx; r8, r9, rax and rdx are free here on every path (the
    // control loop sets them before use, the app paths restore them from the frame or
    // the fast-entry save). A yield that lost the CPU for a slice means more runnable
    // threads than CPUs: sleep rather than spin and yield on (spin_budget.h).
    mov(r9d, ecx);
    rdtsc();
    shl(rdx, 32);
    or_(rax, rdx);
    mov(r8, rax);
    Syscall(SYS_sched_yield);
    rdtsc();
    shl(rdx, 32);
    or_(rax, rdx);
    sub(rax, r8);
    mov(ecx, r9d);
    cmp(rax, static_cast<uint32_t>(long_yield_ticks_));
    ja(sleep, T_NEAR);
    L(no_yield);
    dec(ecx);
    jnz(spin, T_NEAR);
    L(sleep);
    mov(eax, 1);
    xchg(dword[r12 + OFF(stub_sleeping)], eax);
    cmp(dword[r12 + OFF(state)], kStateGo);
    je(woke, T_NEAR);
    lea(rdi, ptr[r12 + OFF(state)]);
    mov(esi, FUTEX_WAIT);
    mov(edx, kStateTrapped);
    xor_(r10d, r10d);
    Syscall(SYS_futex);
    jmp(sleep, T_NEAR);
    L(woke);
    mov(dword[r12 + OFF(stub_sleeping)], 0);
    jmp(go, T_NEAR);
  }
  // r12 = slot: result = syscall(nr, args...).
  void RunRequestedSyscall() {
    using namespace Xbyak::util;  // NOLINT
    mov(rdi, qword[r12 + OFF(args)]);
    mov(rsi, qword[r12 + OFF(args) + 8]);
    mov(rdx, qword[r12 + OFF(args) + 16]);
    mov(r10, qword[r12 + OFF(args) + 24]);
    mov(r8, qword[r12 + OFF(args) + 32]);
    mov(r9, qword[r12 + OFF(args) + 40]);
    mov(rax, qword[r12 + OFF(nr)]);
    syscall();
    mov(qword[r12 + OFF(result)], rax);
  }

  const uint64_t code_page_;
  const uint64_t ctx_base_;
  const HostVdso* vdso_;  // kept in every stub when set
  // Pauses before the stub thread sleeps in FUTEX_WAIT, and before it heeds an
  // "about to block" hint (spin_budget.h).
  const uint32_t spins_;
  const uint32_t spins_before_hint_;
  // A sched_yield longer than this many counter ticks lost the CPU for a slice.
  const uint64_t long_yield_ticks_;
};

#undef OFF
#undef ZOFF

absl::StatusOr<StubCode> MapStubCode() {
  StubCode code;
  ASSIGN_OR_RETURN(const uint64_t addr,
                   MapCodeAtFirstFree(
                       kCandidates, kCodeSize,
                       [&](uint64_t at) {
                         const uint64_t ctx_base =
                             (at - kZygotePages * kPageSize - kCtxRegionSize) & ~(kSlotSize - 1);
                         // The lowest app address is kMinAddr in the sentry's mm
                         // (0x20000: the patch area sits below it).
                         const HostVdso* vdso = VdsoWithin(kPatchBase + kPatchSize, ctx_base);
                         Generator g(at, ctx_base, vdso);
                         code = g.Generate();
                         code.vdso = vdso;
                         return std::vector<uint8_t>(g.getCode(), g.getCode() + g.getSize());
                       },
                       "systrap stub code"));
  if (addr != code.code_page) return absl::InternalError("systrap stub code moved");
  return code;
}

}  // namespace

absl::StatusOr<StubCode> GetStubCode() {
  static std::once_flag once;
  static absl::StatusOr<StubCode>* code = nullptr;
  std::call_once(once, [] { code = new absl::StatusOr<StubCode>(MapStubCode()); });
  return *code;
}

}  // namespace usentry::platform::systrap
