// The Platform contract, on every platform: small machine-code programs run in stubs
// (syscalls, faults, protections, interrupts, FPU state) and what a stub can see and do
// (fds, seccomp). Platform-specific tests live next to each platform.
#include "platform/platform.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/cpu_pin.h"
#include "base/tick_clock.h"
#include "base/unique_fd.h"
#include "gtest/gtest.h"
#include "platform/ptrace/ptrace_platform.h"
#include "platform/stub_child_unsafe.h"
#include "platform/systrap/stub_code_unsafe.h"
#include "platform/systrap/systrap_platform.h"
#include "platform/test_machine.h"
#include "platform/xsave_layout.h"
#include "xbyak/xbyak.h"

namespace usentry::platform {
namespace {

using namespace Xbyak::util;  // NOLINT: register names

using namespace test_support;  // NOLINT: the test machine and its addresses

// The host pid of the stub process behind `as`, whatever the platform.
pid_t StubPidOf(AddressSpace& as) {
  if (auto* p = dynamic_cast<ptrace::PtraceAddressSpace*>(&as)) return p->stub_pid();
  if (auto* s = dynamic_cast<systrap::SystrapAddressSpace*>(&as)) return s->stub_pid();
  return -1;
}

class PlatformTest : public ::testing::TestWithParam<std::string>, public TestMachine {
 protected:
  void SetUp() override { Start(GetParam()); }
  pid_t StubPid() { return StubPidOf(*as_); }
  // Runs the syscall site at kCode (`mov; syscall`) again and again: the platform
  // reports it as unpatchable (SwitchResult::unpatchable_site) after a few traps, not at
  // the first.
  void ExpectReportedUnpatchableAfterSomeTraps() {
    int traps = 0;
    SwitchResult r;
    do {
      regs_.gp.rip = kCode;
      r = RunApp();
      ASSERT_EQ(r.kind, SwitchKind::kSyscall);
      ++traps;
    } while (r.unpatchable_site == 0 && traps < 100);
    EXPECT_EQ(r.unpatchable_site, kCode + 7);
    EXPECT_GT(traps, 2);
    EXPECT_LT(traps, 100);
  }
};

TEST(NewPlatformTest, UnknownNameIsInvalidArgument) {
  auto p = NewPlatform("systrap-typo", MemoryFileInfo{.fd = 0});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("unknown platform"), std::string::npos) << p.status();
}

TEST(NewPlatformTest, BadMemoryFdIsInvalidArgument) {
  auto p = NewPlatform("ptrace", MemoryFileInfo{.fd = -1});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(PlatformTest, NameAndMaxUserAddress) {
  EXPECT_EQ(platform_->Name(), GetParam());
  EXPECT_GE(as_->MaxUserAddress(), 0x7ff000000000u);
  EXPECT_LT(as_->MaxUserAddress(), 0x7ffffffff000u);
  EXPECT_EQ(as_->MaxUserAddress() % kPage, 0u);
}

TEST_P(PlatformTest, SyscallsTrapAndResumeAfterTheInstruction) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);  // 5 bytes
  g.syscall();             // 2 bytes
  g.mov(rdi, rax);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);

  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  EXPECT_EQ(static_cast<int64_t>(regs_.gp.rax), -ENOSYS);
  EXPECT_EQ(regs_.gp.rip, kCode + 7);  // after the syscall instruction
  EXPECT_EQ(regs_.gp.rcx, kCode + 7);  // as the syscall instruction left it

  regs_.gp.rax = 1234;  // the emulated result
  r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, 1234u);
}

TEST_P(PlatformTest, RestartBySteppingBack) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  regs_.gp.rip -= 2;
  regs_.gp.rax = regs_.gp.orig_rax;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  EXPECT_EQ(regs_.gp.rip, kCode + 7);
  // A -ERESTARTSYS-looking value in rax is not acted on by the host kernel.
  regs_.gp.rax = static_cast<uint64_t>(-512);
  ctx_->Interrupt();  // pass through the signal path, where the host restarts syscalls
  ASSERT_EQ(RunApp().kind, SwitchKind::kInterrupted);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
}

TEST_P(PlatformTest, LoadFromUnmappedAddressFaults) {
  auto g = Gen();
  g.mov(rcx, kUnmapped + 0x18);
  const size_t load_offset = g.getSize();
  g.mov(rax, g.ptr[rcx]);
  Load(g);
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kUnmapped + 0x18);
  EXPECT_EQ(r.info.si_signo, SIGSEGV);
  EXPECT_EQ(r.info.si_code, SEGV_MAPERR);
  EXPECT_FALSE(r.fault_exec);
  EXPECT_EQ(regs_.gp.rip, kCode + load_offset);  // the faulting instruction, not after it
}

TEST_P(PlatformTest, AccessBeyondTheMemoryFileIsBusFault) {
  auto g = Gen();
  g.mov(rcx, kData + 8);
  g.mov(rax, g.ptr[rcx]);
  Load(g);
  // Mapping past the file's end succeeds; touching it is SIGBUS, reported as a fault.
  ASSERT_TRUE(as_->MapFile(kData, kPage, 2 << 20, PROT_READ).ok());
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.info.si_signo, SIGBUS);
  EXPECT_EQ(r.fault_addr, kData + 8);
}

TEST_P(PlatformTest, RepeatedInterruptsNeverReachTheApp) {
  auto g = Gen();
  Xbyak::Label spin;
  g.L(spin);
  g.jmp(spin);
  Load(g);
  std::atomic<bool> stop{false};
  std::thread storm([&] {
    while (!stop.load()) {
      ctx_->Interrupt();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  for (int i = 0; i < 50; ++i) {
    SwitchResult r = RunApp();
    ASSERT_EQ(r.kind, SwitchKind::kInterrupted);
    ASSERT_EQ(regs_.gp.rip, kCode);
  }
  stop = true;
  storm.join();
  // Drain what the storm left queued, then the app still runs normally.
  regs_.gp.rip = kCode + g.getSize();  // zero bytes: `add [rax], al` with rax = 0 faults
  regs_.gp.rax = 0;
  SwitchResult r;
  for (int i = 0; i < 3; ++i) {
    r = RunApp();
    if (r.kind != SwitchKind::kInterrupted) break;
  }
  EXPECT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, 0u);
}

TEST_P(PlatformTest, JumpToUnmappedAddressIsExecFault) {
  auto g = Gen();
  g.mov(rcx, kUnmapped);
  g.jmp(rcx);
  Load(g);
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kUnmapped);
  EXPECT_TRUE(r.fault_exec);
}

TEST_P(PlatformTest, ProtectMakesWritesFaultUntilRestored) {
  auto g = Gen();
  g.mov(rbx, kData);  // not rcx: `syscall` overwrites rcx
  g.mov(g.byte[rbx], 1);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(g.byte[rbx], 2);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_TRUE(as_->MapFile(kData, kPage, kDataOff, PROT_READ | PROT_WRITE).ok());
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(MemByte(kDataOff), 1);

  ASSERT_TRUE(as_->Protect(kData, kPage, PROT_READ).ok());
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kData);
  EXPECT_EQ(r.info.si_code, SEGV_ACCERR);
  EXPECT_EQ(MemByte(kDataOff), 1);

  ASSERT_TRUE(as_->Protect(kData, kPage, PROT_READ | PROT_WRITE).ok());
  r = RunApp();  // retries the faulting store
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(MemByte(kDataOff), 2);
}

TEST_P(PlatformTest, UnmapRemovesTheMapping) {
  ASSERT_EQ(pwrite(memfd_.get(), "\x2a", 1, kDataOff), 1);
  auto g = Gen();
  g.mov(rbx, kData);
  g.movzx(edi, g.byte[rbx]);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.movzx(edi, g.byte[rbx]);
  Load(g);
  ASSERT_TRUE(as_->MapFile(kData, kPage, kDataOff, PROT_READ).ok());
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.rdi, 0x2au);  // the app sees the memory file's bytes
  ASSERT_TRUE(as_->Unmap(kData, kPage).ok());
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kData);
}

TEST_P(PlatformTest, HostMappingErrorsNameTheCall) {
  absl::Status s = as_->Protect(kUnmapped, kPage, PROT_READ);  // nothing mapped: ENOMEM
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mprotect(addr=0x600000"), std::string::npos) << s;
  s = as_->MapFile(as_->MaxUserAddress(), kPage, 0, PROT_READ);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = as_->MapFile(as_->MaxUserAddress() - kPage, 2 * kPage, 0, PROT_READ);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = as_->Unmap(kData + 1, kPage);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST_P(PlatformTest, InterruptFromAnotherThreadStopsASpinningApp) {
  auto g = Gen();
  Xbyak::Label spin;
  g.L(spin);
  g.jmp(spin);
  Load(g);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ctx_->Interrupt();
  });
  SwitchResult r = RunApp();
  t.join();
  EXPECT_EQ(r.kind, SwitchKind::kInterrupted);
  EXPECT_EQ(regs_.gp.rip, kCode);

  // Interrupt before Switch: returns at once, registers unchanged.
  ctx_->Interrupt();
  EXPECT_EQ(RunApp().kind, SwitchKind::kInterrupted);
  EXPECT_EQ(regs_.gp.rip, kCode);

  // The app never saw a signal and keeps running.
  std::thread t2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx_->Interrupt();
  });
  r = RunApp();
  t2.join();
  EXPECT_EQ(r.kind, SwitchKind::kInterrupted);
  EXPECT_EQ(regs_.gp.rip, kCode);
}

// An app thread (NewThreadContext, made on the thread whose context is stopped in the
// address space) runs in the same address space from another host thread, which may
// also make mm operations; both threads' writes land in the same memory, and ending
// the second thread leaves the first running.
TEST_P(PlatformTest, ThreadContextRunsFromAnotherHostThread) {
  ASSERT_TRUE(platform_->SharedAddressSpaces());
  auto g = Gen();
  g.mov(ptr[rsi], rdi);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.ud2();
  Load(g);
  regs_.gp.rsi = kStack;
  regs_.gp.rdi = 0x11;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  absl::StatusOr<std::unique_ptr<Context>> child = platform_->NewThreadContext(*as_, *ctx_);
  ASSERT_TRUE(child.ok()) << child.status();
  Registers child_regs = regs_;
  std::thread t([&] {
    child_regs.gp.rip = kCode;
    child_regs.gp.rsi = kStack + 8;
    child_regs.gp.rdi = 0x22;
    absl::StatusOr<SwitchResult> r = (*child)->Switch(*as_, child_regs);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->kind, SwitchKind::kSyscall);
    EXPECT_EQ(child_regs.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
    EXPECT_TRUE(as_->Protect(kStack, kPage, PROT_READ | PROT_WRITE).ok());
    child->reset();  // on its own host thread, as the sentry does
  });
  t.join();
  EXPECT_EQ(MemByte(kStackOff), 0x11);
  EXPECT_EQ(MemByte(kStackOff + 8), 0x22);
  SwitchResult r = RunApp();  // the first thread goes on to its ud2
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
}

TEST_P(PlatformTest, SynchronousSignalsAreReported) {
  auto g = Gen();
  g.int3();
  g.xor_(ecx, ecx);
  g.div(ecx);  // divide by zero
  g.ud2();
  Load(g);
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGTRAP);
  r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGFPE);
  EXPECT_EQ(r.info.si_code, FPE_INTDIV);
  regs_.gp.rip += 2;  // skip `div ecx`
  r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
}

TEST_P(PlatformTest, FpStateLoadsAndWritesBack) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.movq(rdi, xmm0);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_FALSE(regs_.fp_valid);
  ASSERT_TRUE(ctx_->LoadFpState(*as_, regs_).ok());
  EXPECT_TRUE(regs_.fp_valid);
  // Legacy FXSAVE area (512) + XSAVE header (64) at least; fits the fixed buffer.
  EXPECT_GE(regs_.fp_size, 576u);
  EXPECT_LE(regs_.fp_size, kFpStateSize);
  // Both platforms show what a host signal frame holds, even where ptrace's register
  // set is larger (AMX tile data).
  EXPECT_EQ(regs_.fp_size, HostSignalFrameXsave().size);
  uint32_t mxcsr;
  std::memcpy(&mxcsr, regs_.fp + 24, 4);
  EXPECT_EQ(mxcsr & 0xffc0, 0x1f80u);  // exceptions masked, round to nearest

  const uint64_t v = 0x1122334455667788;
  std::memcpy(regs_.fp + 160, &v, 8);  // xmm0 low quadword
  uint64_t xstate_bv;
  std::memcpy(&xstate_bv, regs_.fp + 512, 8);
  xstate_bv |= 2;  // SSE state present in the buffer
  std::memcpy(regs_.fp + 512, &xstate_bv, 8);
  regs_.fp_dirty = true;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_FALSE(regs_.fp_dirty);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, v);
}

// App code that puts a known value in every register a trap must keep (the general
// ones but rax/rcx/r11/rsp, rflags' DF and CF, x87 st0, MXCSR, xmm0/xmm15 and, where
// the host has AVX2, ymm1's upper half), traps through `trap`, then pushes them all onto
// its stack (TrapKeeps reads them back) and stops with ud2.
constexpr uint64_t kKeep[] = {0x1111111111111111, 0x2222222222222222, 0x3333333333333333,
                              0x4444444444444444, 0x5555555555555555, 0x6666666666666666,
                              0x7777777777777777, 0x8888888888888888, 0x9999999999999999,
                              0xaaaaaaaaaaaaaaaa, 0xbbbbbbbbbbbbbbbb, 0xcccccccccccccccc};
constexpr uint32_t kKeepMxcsr = 0x7f80;  // exceptions masked, round toward zero
const bool kHostHasAvx2 = __builtin_cpu_supports("avx2");

template <typename Trap>
void KeepEverythingAcross(Xbyak::CodeGenerator& g, Trap trap) {
  const Xbyak::Reg64 keep[] = {rbx, rdx, rsi, rdi, rbp, r8, r9, r10, r12, r13, r14, r15};
  g.mov(dword[rsp - 8], kKeepMxcsr);
  g.ldmxcsr(ptr[rsp - 8]);
  g.fldpi();
  g.mov(rax, 0x0123456789abcdef);
  g.movq(xmm0, rax);
  g.not_(rax);
  g.movq(xmm15, rax);
  if (kHostHasAvx2) g.vpcmpeqb(ymm1, ymm1, ymm1);  // all ones
  for (size_t i = 0; i < std::size(keep); ++i) g.mov(keep[i], kKeep[i]);
  g.std();
  g.stc();
  trap(g);
  g.pushfq();
  g.cld();
  for (const Xbyak::Reg64& r : keep) g.push(r);
  g.push(rax);
  g.movq(rax, xmm0);
  g.push(rax);
  g.movq(rax, xmm15);
  g.push(rax);
  g.sub(rsp, 8);
  g.fstp(qword[rsp]);
  g.sub(rsp, 8);
  g.stmxcsr(ptr[rsp]);
  if (kHostHasAvx2) {
    g.vextracti128(xmm2, ymm1, 1);
    g.movq(rax, xmm2);
    g.push(rax);
  }
  g.ud2();
}

class TrapKeeps : public PlatformTest {
 protected:
  uint64_t Pushed(int i) {  // the i-th quadword pushed by KeepEverythingAcross
    uint64_t v = 0;
    EXPECT_EQ(pread(memfd_.get(), &v, 8, kStackOff + kPage - 8 * (i + 1)), 8);
    return v;
  }
  // After the ud2: everything kept, but r15 (`r15` now) and rax (`rax`, if given).
  void ExpectKept(uint64_t r15, std::optional<uint64_t> rax) {
    constexpr uint64_t kDf = 0x400, kCf = 0x1;
    EXPECT_EQ(Pushed(0) & (kDf | kCf), kDf | kCf);
    for (int i = 0; i < 11; ++i) EXPECT_EQ(Pushed(1 + i), kKeep[i]) << "register " << i;
    EXPECT_EQ(Pushed(12), r15);
    if (rax) EXPECT_EQ(Pushed(13), *rax);
    EXPECT_EQ(Pushed(14), 0x0123456789abcdefu);
    EXPECT_EQ(Pushed(15), ~0x0123456789abcdefu);
    EXPECT_EQ(Pushed(16), 0x400921fb54442d18u);  // st0 = pi, stored as a double
    EXPECT_EQ(Pushed(17) & 0xffffffff, kKeepMxcsr);
    if (kHostHasAvx2) EXPECT_EQ(Pushed(18), ~uint64_t{0});
  }
};

// What a trap hands back must be the app's state exactly, whichever way the platform
// returns into the app (systrap's stub returns through the frame itself): every register
// the sentry did not change, and those it did as it set them.
TEST_P(TrapKeeps, AcrossASyscall) {
  auto g = Gen();
  KeepEverythingAcross(g, [](Xbyak::CodeGenerator& g) {
    g.mov(eax, SYS_getppid);
    g.syscall();
  });
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.rbx, kKeep[0]);
  EXPECT_EQ(regs_.gp.r15, kKeep[11]);
  regs_.gp.rax = 77;
  regs_.gp.r15 = 0x5eed;
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
  ExpectKept(0x5eed, 77);
}

TEST_P(TrapKeeps, AcrossAFault) {
  auto g = Gen();
  KeepEverythingAcross(g, [](Xbyak::CodeGenerator& g) {
    g.mov(rcx, kUnmapped);
    g.mov(rax, g.ptr[rcx]);
  });
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kFault);
  ASSERT_TRUE(as_->MapFile(kUnmapped, kPage, kDataOff, PROT_READ).ok());
  const uint64_t v = 0xfeedface;
  ASSERT_EQ(pwrite(memfd_.get(), &v, 8, kDataOff), 8);
  SwitchResult r = RunApp();  // the load again, now mapped
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
  ExpectKept(kKeep[11], v);
}

TEST_P(TrapKeeps, AcrossAnInterrupt) {
  auto g = Gen();
  KeepEverythingAcross(g, [](Xbyak::CodeGenerator& g) {
    Xbyak::Label spin;
    g.mov(rcx, kData);
    g.L(spin);
    g.cmp(qword[rcx], 0);  // until the test writes the word
    g.je(spin);
    g.stc();  // the test's flags again
  });
  Load(g);
  ASSERT_TRUE(as_->MapFile(kData, kPage, kDataOff, PROT_READ).ok());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ctx_->Interrupt();
  });
  SwitchResult r = RunApp();
  t.join();
  ASSERT_EQ(r.kind, SwitchKind::kInterrupted);
  const uint64_t go = 1;
  ASSERT_EQ(pwrite(memfd_.get(), &go, 8, kDataOff), 8);
  r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
  ExpectKept(kKeep[11], std::nullopt);
}

// What the sentry answers each call of EmitCheckedCalls with.
constexpr uint64_t kAnswer = 42;

// App code that puts kKeep values in registers (and xmm3), then `calls` times makes the
// call `site` emits and checks the answer (kAnswer) and those registers: int3 when done,
// ud2 at the first loss.
template <typename Site>
void EmitCheckedCalls(Xbyak::CodeGenerator& g, int calls, Site site) {
  Xbyak::Label loop, bad;
  const Xbyak::Reg64 keep[] = {rdx, rsi, rdi, rbp, r8, r9, r10, r12, r13, r14, r15};
  for (size_t i = 0; i < std::size(keep); ++i) g.mov(keep[i], kKeep[i]);
  g.mov(rax, 0x0123456789abcdef);
  g.movq(xmm3, rax);
  g.mov(ebx, calls);
  g.L(loop);
  site(g);
  g.cmp(rax, kAnswer);
  g.jne(bad, Xbyak::CodeGenerator::T_NEAR);
  for (size_t i = 0; i < std::size(keep); ++i) {
    g.mov(rax, kKeep[i]);
    g.cmp(keep[i], rax);
    g.jne(bad, Xbyak::CodeGenerator::T_NEAR);
  }
  g.movq(rax, xmm3);
  g.mov(rcx, 0x0123456789abcdef);
  g.cmp(rax, rcx);
  g.jne(bad, Xbyak::CodeGenerator::T_NEAR);
  g.dec(ebx);
  g.jnz(loop, Xbyak::CodeGenerator::T_NEAR);
  g.int3();
  g.L(bad);
  g.ud2();
}

// Switches `ctx` until app code stops for anything but a syscall (answered with
// kAnswer, counted in *calls) or an interrupt.
SwitchResult RunAnsweringCalls(Context& ctx, AddressSpace& as, Registers& regs, int* calls) {
  for (;;) {
    absl::StatusOr<SwitchResult> r = ctx.Switch(as, regs);
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return SwitchResult{};
    }
    if (r->kind == SwitchKind::kSyscall) {
      ++*calls;
      regs.gp.rax = kAnswer;
    } else if (r->kind != SwitchKind::kInterrupted) {
      return *r;
    }
  }
}

// Many trap-and-return cycles while interrupts land anywhere, in the stub's code too:
// each iteration checks that its registers survived (a loss ends in ud2).
TEST_P(TrapKeeps, ManySyscallsUnderAnInterruptStorm) {
  constexpr int kIterations = 3000;
  auto g = Gen();
  EmitCheckedCalls(g, kIterations, [](Xbyak::CodeGenerator& g) {
    g.xor_(eax, eax);  // not a patchable site: each call traps
    g.add(eax, SYS_getppid);
    g.syscall();
  });
  Load(g);
  std::atomic<bool> stop{false};
  std::thread storm([&] {
    while (!stop.load()) {
      ctx_->Interrupt();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  int syscalls = 0;
  SwitchResult r = RunAnsweringCalls(*ctx_, *as_, regs_, &syscalls);
  stop = true;
  storm.join();
  EXPECT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGTRAP) << "a register was lost (ud2)";
  EXPECT_EQ(syscalls, kIterations);
}

// A rip the sentry sets that the CPU cannot jump to is the app's fault, as natively.
TEST_P(TrapKeeps, ANonCanonicalRipIsTheAppsFault) {
  auto g = Gen();
  g.mov(eax, SYS_getppid);
  g.syscall();
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  regs_.gp.rip = 0x8000000000001000;
  absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.si_signo, SIGSEGV);
}

INSTANTIATE_TEST_SUITE_P(Platforms, TrapKeeps, ::testing::Values("ptrace", "systrap"),
                         [](const auto& info) { return info.param; });

TEST_P(PlatformTest, StubStartsWithCleanFpState) {
  // Fresh stubs must not carry the sentry thread's vector registers.
  Registers regs;
  ASSERT_TRUE(ctx_->LoadFpState(*as_, regs).ok());
  for (size_t i = 32; i < 416; ++i) {  // x87 st0-7 and xmm0-15 in the legacy region
    ASSERT_EQ(regs.fp[i], 0) << "byte " << i;
  }
  uint64_t xstate_bv;
  std::memcpy(&xstate_bv, regs.fp + 512, 8);
  // Nothing in use beyond maybe PKRU, and x87/SSE (bits 0-1), which the kernel always
  // marks present in a signal frame (systrap reads the state from one); their bytes
  // were checked above.
  EXPECT_EQ(xstate_bv & ~uint64_t{(1 << 9) | 3}, 0u);
}

// The memory file, and under systrap the stub's own socket (MapHostFile's files arrive
// on it): nothing of the sentry's, and not the zygote's socket.
TEST_P(PlatformTest, StubKeepsOnlyTheMemoryFileAndItsSocket) {
  const std::string dir = absl::StrCat("/proc/", StubPid(), "/fd");
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  std::vector<std::string> others;
  bool memfd = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (std::string(e->d_name) == std::to_string(memfd_.get())) {
      memfd = true;
      continue;
    }
    char target[256] = {};
    (void)!readlink(absl::StrCat(dir, "/", e->d_name).c_str(), target, sizeof(target) - 1);
    others.push_back(target);
  }
  closedir(d);
  EXPECT_TRUE(memfd);
  if (GetParam() == "systrap") {
    ASSERT_EQ(others.size(), 1u);
    EXPECT_EQ(others[0].rfind("socket:", 0), 0u) << others[0];
  } else {
    EXPECT_TRUE(others.empty()) << others[0];
  }
}

// A host file with page i holding bytes 0x10 + i, `pages` long (unlinked).
std::shared_ptr<const UniqueFd> HostFile(int pages) {
  char path[] = "/tmp/usentry-platform-test-XXXXXX";
  auto fd = std::make_shared<UniqueFd>(mkstemp(path));
  EXPECT_TRUE(fd->valid());
  unlink(path);
  for (int i = 0; i < pages; ++i) {
    std::vector<uint8_t> page(kPage, static_cast<uint8_t>(0x10 + i));
    EXPECT_EQ(pwrite(fd->get(), page.data(), kPage, i * kPage), static_cast<ssize_t>(kPage));
  }
  // What the sentry passes: a read-only descriptor.
  auto ro = std::make_shared<UniqueFd>(
      open(absl::StrCat("/proc/self/fd/", fd->get()).c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(ro->valid());
  return ro;
}

TEST_P(PlatformTest, MapHostFileServesTheFilesBytesReadOnly) {
  auto g = Gen();
  g.mov(rbx, kData);
  g.movzx(edi, g.byte[rbx]);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(g.byte[rbx], 1);
  Load(g);
  std::shared_ptr<const UniqueFd> file = HostFile(3);
  absl::Status st = as_->MapHostFile(kData, kPage, file, kPage, PROT_READ);
  if (GetParam() == "ptrace") {
    EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
    return;
  }
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.rdi, 0x11u);  // page 1 of the file
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kFault);  // never writable
  EXPECT_EQ(r.fault_addr, kData);
  // Memory-file pages mapped over it replace it.
  ASSERT_EQ(pwrite(memfd_.get(), "\x2a", 1, kDataOff), 1);
  ASSERT_TRUE(as_->MapFile(kData, kPage, kDataOff, PROT_READ | PROT_WRITE).ok());
  regs_.gp.rip = kCode;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.rdi, 0x2au);
  EXPECT_FALSE(as_->MapHostFile(kData, kPage, file, 0, PROT_READ | PROT_WRITE).ok());
}

// More files than a stub keeps descriptors for: the oldest are closed, their mappings
// stay.
TEST_P(PlatformTest, MapHostFileMappingsOutliveTheStubsDescriptors) {
  // ptrace has no MapHostFile (its faults are stops, so it fills file mappings whole at
  // mmap; MapHostFileServesTheFilesBytesReadOnly checks it says Unimplemented).
  if (GetParam() == "ptrace") GTEST_SKIP() << "no MapHostFile on ptrace";
  constexpr int kFiles = systrap::StubProcess::kMaxHostFds + 6;
  std::vector<std::shared_ptr<const UniqueFd>> files;
  for (int i = 0; i < kFiles; ++i) {
    files.push_back(HostFile(i % 7 + 1));
    ASSERT_TRUE(
        as_->MapHostFile(kData + i * kPage, kPage, files.back(), (i % 7) * kPage, PROT_READ).ok());
  }
  auto g = Gen();
  g.mov(rbx, kData);
  g.xor_(edi, edi);
  for (int i = 0; i < kFiles; ++i) {  // rdi = sum of the first byte of every page
    g.movzx(eax, g.byte[rbx + i * kPage]);
    g.add(edi, eax);
  }
  g.mov(eax, SYS_getpid);
  g.syscall();
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  uint64_t want = 0;
  for (int i = 0; i < kFiles; ++i) want += 0x10 + i % 7;
  EXPECT_EQ(regs_.gp.rdi, want);
}

// Code in a host file's pages cannot be patched; the platform says where it ran so the
// sentry can give that code memory-file pages.
TEST_P(PlatformTest, SyscallFromHostFileCodeIsReportedUnpatchable) {
  // ptrace has no MapHostFile (its faults are stops, so it fills file mappings whole at
  // mmap; MapHostFileServesTheFilesBytesReadOnly checks it says Unimplemented).
  if (GetParam() == "ptrace") GTEST_SKIP() << "no MapHostFile on ptrace";
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(eax, SYS_getpid);
  g.syscall();
  char path[] = "/tmp/usentry-platform-test-XXXXXX";
  UniqueFd rw(mkstemp(path));
  ASSERT_TRUE(rw.valid());
  unlink(path);
  ASSERT_EQ(pwrite(rw.get(), g.getCode(), g.getSize(), 0), static_cast<ssize_t>(g.getSize()));
  ASSERT_EQ(ftruncate(rw.get(), kPage), 0);
  auto file = std::make_shared<UniqueFd>(
      open(absl::StrCat("/proc/self/fd/", rw.get()).c_str(), O_RDONLY | O_CLOEXEC));
  Load(Gen());  // the stack
  ASSERT_TRUE(as_->MapHostFile(kCode, kPage, file, 0, PROT_READ | PROT_EXEC).ok());
  // A site that traps once or twice is not worth 64 KiB of copying: it is reported
  // only after it kept trapping.
  ExpectReportedUnpatchableAfterSomeTraps();
  // The same code in memory-file pages is not reported (and is patched).
  ASSERT_EQ(pwrite(memfd_.get(), g.getCode(), g.getSize(), kCodeOff),
            static_cast<ssize_t>(g.getSize()));
  ASSERT_TRUE(as_->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(r.unpatchable_site, 0u);
}

// Code in pages shared with another address space (copy-on-write since a fork) cannot be
// rewritten either: a site there that keeps trapping is reported, and once the pages are
// this address space's alone it is patched.
TEST_P(PlatformTest, SyscallFromSharedPagesIsReportedUnpatchable) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(eax, SYS_getpid);
  g.syscall();
  Load(g);
  as_->SetPagesShared(kCode, kPage, true);
  ExpectReportedUnpatchableAfterSomeTraps();
  EXPECT_EQ(MemByte(kCodeOff), 0xb8);  // not patched meanwhile
  as_->SetPagesShared(kCode, kPage, false);
  regs_.gp.rip = kCode;
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(r.unpatchable_site, 0u);
  EXPECT_EQ(MemByte(kCodeOff), 0xff);
}

TEST_P(PlatformTest, StubRunsUnderSeccompWithNoNewPrivs) {
  std::ifstream status(absl::StrCat("/proc/", StubPid(), "/status"));
  std::string line;
  bool seccomp = false, nnp = false;
  while (std::getline(status, line)) {
    if (line.rfind("Seccomp:", 0) == 0) seccomp = line.find('2') != std::string::npos;
    if (line.rfind("NoNewPrivs:", 0) == 0) nnp = line.find('1') != std::string::npos;
  }
  EXPECT_TRUE(seccomp);
  EXPECT_TRUE(nnp);
  std::ifstream comm(absl::StrCat("/proc/", StubPid(), "/comm"));
  std::getline(comm, line);
  EXPECT_EQ(line, "usentry-stub");
}

// A stub starts with every host signal at its default action but the ones stub code
// handles, whatever the sentry had caught or ignored (a stub that inherited a sentry
// handler would jump into code it no longer maps).
TEST_P(PlatformTest, StubSignalActionsAreDefaultButTheStubsOwn) {
  struct sigaction caught = {};
  struct sigaction old_usr2 = {};
  caught.sa_handler = [](int) {};
  ASSERT_EQ(sigaction(SIGUSR2, &caught, &old_usr2), 0);
  void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
  void (*old_hup)(int) = signal(SIGHUP, SIG_IGN);
  absl::StatusOr<std::unique_ptr<Platform>> platform =
      NewPlatform(GetParam(), MemoryFileInfo{.fd = memfd_.get()});
  ASSERT_TRUE(platform.ok()) << platform.status();
  absl::StatusOr<std::unique_ptr<AddressSpace>> as = (*platform)->NewAddressSpace();
  ASSERT_TRUE(as.ok()) << as.status();
  sigaction(SIGUSR2, &old_usr2, nullptr);
  signal(SIGPIPE, old_pipe);
  signal(SIGHUP, old_hup);

  std::ifstream status(absl::StrCat("/proc/", StubPidOf(**as), "/status"));
  std::string line, ign, cgt;
  while (std::getline(status, line)) {
    if (line.rfind("SigIgn:\t", 0) == 0) ign = line.substr(8);
    if (line.rfind("SigCgt:\t", 0) == 0) cgt = line.substr(8);
  }
  EXPECT_EQ(ign, "0000000000000000");
  const uint64_t handled = GetParam() == "systrap" ? systrap::kHandledSignals : 0;
  EXPECT_EQ(cgt, absl::StrFormat("%016x", handled));
}

TEST(NonDefaultSignalsTest, ReadsBothMasksOfAStatusText) {
  EXPECT_EQ(NonDefaultSignals("Name:\tx\nSigIgn:\t0000000000001000\nSigCgt:\t0000000180000002\n"),
            0x0000000180001002u);
  // This process: SIGUSR1 caught shows up.
  struct sigaction caught = {};
  struct sigaction old = {};
  caught.sa_handler = [](int) {};
  ASSERT_EQ(sigaction(SIGUSR1, &caught, &old), 0);
  std::ifstream in("/proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  sigaction(SIGUSR1, &old, nullptr);
  std::optional<uint64_t> mine = NonDefaultSignals(text.str());
  ASSERT_TRUE(mine.has_value());
  EXPECT_NE(*mine & (uint64_t{1} << (SIGUSR1 - 1)), 0u);
  // Anything else: unknown (the stub then resets all 64).
  EXPECT_FALSE(NonDefaultSignals("").has_value());
  EXPECT_FALSE(NonDefaultSignals("\nSigIgn:\t0000000000000000\n").has_value());
  EXPECT_FALSE(
      NonDefaultSignals("\nSigIgn:\t00000000000000\nSigCgt:\t0000000000000000").has_value());
  EXPECT_FALSE(
      NonDefaultSignals("\nSigIgn:\t000000000000000g\nSigCgt:\t0000000000000000").has_value());
}

// int 0x80 must never be taken for a 64-bit syscall: with IA-32 emulation it is a
// SIGSYS with the i386 arch; without it (ia32_emulation=0) the CPU raises #GP.
TEST_P(PlatformTest, Int80IsNeverASyscall) {
  auto g = Gen();
  g.mov(eax, 20);  // i386 getpid
  g.db(0xcd);
  g.db(0x80);  // int 0x80
  Load(g);
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  if (r.info.si_signo == SIGSEGV) GTEST_SKIP() << "host has no IA-32 syscall emulation";
  EXPECT_EQ(r.info.si_signo, SIGSYS);
  EXPECT_EQ(r.info.si_arch, AUDIT_ARCH_I386);
  EXPECT_EQ(r.info.si_syscall, 20);
}

TEST_P(PlatformTest, VsyscallIsKilledOrFaults) {
  auto g = Gen();
  g.mov(rax, 0xffffffffff600000);  // legacy vsyscall gettimeofday
  g.xor_(edi, edi);
  g.xor_(esi, esi);
  g.call(rax);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
  if (r.ok() && r->kind == SwitchKind::kSyscall) {
    // systrap: the kernel's vsyscall emulation asked seccomp, which trapped it as an
    // ordinary gettimeofday for the sentry to emulate, returning to the caller.
    EXPECT_EQ(GetParam(), "systrap");
    EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_gettimeofday));
  } else if (r.ok()) {
    // vsyscall=none: a plain fault in the vsyscall page.
    EXPECT_EQ(r->kind, SwitchKind::kFault);
  } else {
    // vsyscall emulation goes through seccomp with ip in the vsyscall page.
    EXPECT_NE(r.status().message().find("SIGSYS"), std::string::npos) << r.status();
  }
}

// Emits app code that makes syscall `nr` forever and sums its results into rbx; with
// `busy`, it first counts that many iterations down before each call (~30 million: some
// milliseconds).
void EmitSyscallLoop(Xbyak::CodeGenerator& g, int nr, uint64_t busy = 0) {
  Xbyak::Label again, count;
  g.xor_(ebx, ebx);
  g.L(again);
  if (busy != 0) {
    g.mov(rcx, busy);
    g.L(count);
    g.dec(rcx);
    g.jnz(count);
  }
  g.mov(eax, nr);
  g.syscall();
  g.add(rbx, rax);
  g.jmp(again);
}

// The sentry's "about to block" hint changes only how the stub waits, never what the
// app sees, on every platform.
TEST_P(PlatformTest, WillBlockIsOnlyAHint) {
  auto g = Gen();
  EmitSyscallLoop(g, SYS_getppid);
  Load(g);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall) << i;
    EXPECT_EQ(regs_.gp.rbx, static_cast<uint64_t>(10 * i)) << i;
    ctx_->WillBlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(i));  // the "blocking" call
    regs_.gp.rax = 10;
  }
}

// Idle work gets the time the platform would spin waiting for app code (systrap), only
// on the thread in Switch and only while it has some, and changes nothing the app sees;
// ptrace waits in the kernel and never calls it.
TEST_P(PlatformTest, IdleWorkRunsOnlyWhileAppCodeRuns) {
  struct Work : IdleWork {
    bool Pending() const override { return pending; }
    bool Step() override {
      ++steps;
      thread = std::this_thread::get_id();
      return true;
    }
    bool pending = true;
    int steps = 0;
    std::thread::id thread;
  } work;
  auto g = Gen();
  EmitSyscallLoop(g, SYS_getpid, /*busy=*/30000000);
  Load(g);
  ctx_->SetIdleWork(&work);
  uint64_t sum = 0;
  auto run_once = [&] {
    ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
    EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
    EXPECT_EQ(regs_.gp.rbx, sum);
    regs_.gp.rax = 7;
    sum += 7;
  };
  // On a busy host the wait may give every look to other processes (sched_yield) until
  // its spin budget ends: the steps come in most switches, not necessarily in each.
  for (int i = 0; i < 40 && (i < 3 || (GetParam() == "systrap" && work.steps == 0)); ++i) {
    run_once();
  }
  if (GetParam() == "systrap") {
    EXPECT_GT(work.steps, 0);
    EXPECT_EQ(work.thread, std::this_thread::get_id());
  } else {
    EXPECT_EQ(work.steps, 0);
  }
  work.pending = false;
  work.steps = 0;
  for (int i = 0; i < 3; ++i) run_once();
  EXPECT_EQ(work.steps, 0);
  ctx_->SetIdleWork(nullptr);
}

// A Switch says how long app code ran (the sentry's CPU accounting), and while it runs,
// any thread can read when it began; an interrupted Switch that ran nothing says 0.
TEST_P(PlatformTest, SwitchTimesTheAppCodeItRan) {
  // The app spins until the watcher has seen its run (a flag in the shared stack page),
  // then counts for some milliseconds and traps: the watcher's look falls inside the run
  // however late the host schedules either thread.
  auto g = Gen();
  Xbyak::Label wait, count;
  g.mov(rdx, kStack);
  g.L(wait);
  g.pause();
  g.cmp(g.qword[rdx], 0);
  g.je(wait);
  g.mov(rcx, 20000000);
  g.L(count);
  g.dec(rcx);
  g.jnz(count);
  g.mov(eax, SYS_getpid);
  g.syscall();
  Load(g);
  const uint64_t zero = 0;
  ASSERT_EQ(pwrite(memfd_.get(), &zero, sizeof zero, kStackOff), sizeof zero);
  EXPECT_EQ(ctx_->running_since(), 0);
  int64_t seen_since = 0, seen_at = 0;
  std::thread watcher([&] {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while ((seen_since = ctx_->running_since()) == 0 && absl::Now() < give_up) {
      std::this_thread::yield();
    }
    seen_at = TickNow();
    const uint64_t go = 1;
    EXPECT_EQ(pwrite(memfd_.get(), &go, sizeof go, kStackOff), sizeof go);
  });
  const absl::Time before = absl::Now();
  SwitchResult r = RunApp();
  const absl::Duration wall = absl::Now() - before;
  watcher.join();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  EXPECT_EQ(ctx_->running_since(), 0);
  EXPECT_NE(seen_since, 0);
  EXPECT_LE(seen_since, seen_at);
  const absl::Duration ran = TicksToDuration(r.ran_ticks);
  // The count takes milliseconds; on a busy host the wait may see the trap late (after
  // a yield), never early.
  EXPECT_GT(ran, absl::Milliseconds(1)) << wall;
  EXPECT_GE(ran, wall / 2) << wall;
  EXPECT_LE(ran, wall) << ran;

  ctx_->Interrupt();
  r = RunApp();
  EXPECT_EQ(r.kind, SwitchKind::kInterrupted);
  EXPECT_EQ(r.ran_ticks, 0);
}

// After ops on the control thread (mapping a fresh address space, starting its app
// thread), resuming app code tells that thread to sleep: it would otherwise spin (and
// yield) on the app's vCPU for its whole budget. Ops on the parked app thread leave it
// asleep. What the app sees is unchanged.
TEST_P(PlatformTest, ResumingAppCodeQuietsTheControlThread) {
  if (GetParam() != "systrap") GTEST_SKIP() << "the control thread is systrap's";
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(eax, SYS_getppid);
  g.syscall();
  Load(g);
  auto other = platform_->NewAddressSpace();
  ASSERT_TRUE(other.ok()) << other.status();
  auto* sas = dynamic_cast<systrap::SystrapAddressSpace*>(other->get());
  ASSERT_NE(sas, nullptr);
  const systrap::SlotHeader* control = sas->stub()->slot(0);
  // No app thread yet: the mapping runs on the control thread, which may spin after.
  ASSERT_TRUE((*other)->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
  EXPECT_EQ(std::atomic_ref<const uint64_t>(control->stop_spinning).load(), systrap::kKeepSpinning);
  Registers regs2 = regs_;
  auto r = ctx_->Switch(**other, regs2);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs2.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  EXPECT_EQ(std::atomic_ref<const uint64_t>(control->stop_spinning).load(), systrap::kStopNow);
  // A stack mapping for the second address space: with its app thread parked in the
  // trap, this op runs there, and the control thread is left asleep.
  ASSERT_TRUE((*other)->MapFile(kStack, kPage, kStackOff, PROT_READ | PROT_WRITE).ok());
  EXPECT_EQ(std::atomic_ref<const uint64_t>(control->stop_spinning).load(), systrap::kStopNow);
  regs2.gp.rax = 7;
  r = ctx_->Switch(**other, regs2);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs2.gp.orig_rax, static_cast<uint64_t>(SYS_getppid));
}

// The calling thread's CPU mask.
cpu_set_t MaskOfThisThread() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  return mask;
}

// The move that parts a sentry thread from its stub's vCPU leaves the thread's affinity
// as it was, and happens at most once per 2 ms on a thread.
TEST(SystrapMoveTest, MovingOffThisCpuKeepsTheAffinity) {
  const cpu_set_t before = MaskOfThisThread();
  if (CPU_COUNT(&before) < 2) GTEST_SKIP() << "one CPU: nowhere to move";
  std::thread([&] {
    const absl::Time start = absl::Now();
    EXPECT_TRUE(systrap::MoveOffThisCpu());
    const cpu_set_t after = MaskOfThisThread();
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
    const bool moved_again = systrap::MoveOffThisCpu();
    // Too soon, as long as the 2 ms had not passed: a busy VM once took longer than that
    // between the two calls (the move itself waits for the migration).
    if (absl::Now() - start < absl::Milliseconds(2)) {
      EXPECT_FALSE(moved_again);
    }
  }).join();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  std::thread([&] {
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_FALSE(systrap::MoveOffThisCpu());
    const cpu_set_t after = MaskOfThisThread();
    EXPECT_TRUE(CPU_EQUAL(&one, &after));
  }).join();
}

// A thread held on its CPU by its gofer calls (base/cpu_pin.h) lets go of it before
// MoveOffThisCpu reads the mask: it moves, and ends with the CPUs it had before the hold.
TEST(SystrapMoveTest, AThreadHeldOnItsCpuLetsGoAndMoves) {
  const cpu_set_t before = MaskOfThisThread();
  if (CPU_COUNT(&before) < 2) GTEST_SKIP() << "one CPU: nowhere to move";
  std::thread([&] {
    const uint32_t held = HoldThreadCpu();
    ASSERT_NE(held, kAnyCpu);
    EXPECT_TRUE(systrap::MoveOffThisCpu());
    EXPECT_NE(sched_getcpu(), static_cast<int>(held));
    const cpu_set_t after = MaskOfThisThread();
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
  }).join();
}

// A sentry thread held on its CPU by its gofer calls lets go of it before it sleeps
// while app code runs (systrap: once its spin ends; ptrace: always), so that it can be
// woken on whichever CPU is idle.
TEST_P(PlatformTest, ASentryThreadLetsGoOfItsCpuHoldWhileAppCodeRuns) {
  const cpu_set_t home = MaskOfThisThread();
  if (CPU_COUNT(&home) < 2) GTEST_SKIP() << "one CPU: a hold changes no mask";
  auto g = Gen();
  Xbyak::Label spin;
  g.L(spin);
  g.jmp(spin);
  Load(g);
  ASSERT_NE(HoldThreadCpu(), kAnyCpu);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx_->Interrupt();
  });
  SwitchResult r = RunApp();
  t.join();
  EXPECT_EQ(r.kind, SwitchKind::kInterrupted);
  const cpu_set_t after = MaskOfThisThread();
  ReleaseThreadCpu();  // this test thread's own mask, whatever happened above
  EXPECT_TRUE(CPU_EQUAL(&home, &after));
}

TEST_P(PlatformTest, StubDeathIsAnError) {
  auto g = Gen();
  Xbyak::Label spin;
  g.L(spin);
  g.jmp(spin);
  Load(g);
  ASSERT_EQ(kill(StubPid(), SIGKILL), 0);
  absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SIGKILL"), std::string::npos) << r.status();
  EXPECT_FALSE(ctx_->Switch(*as_, regs_).ok());
}

// The stub is SIGKILLed at once; systrap reaps it on a thread of its own (the exiting
// task need not wait for the kernel's teardown), ptrace on the destroying thread.
TEST_P(PlatformTest, DestroyingTheAddressSpaceKillsAndReapsTheStub) {
  const pid_t pid = StubPid();
  as_.reset();
  for (int i = 0; i < 500 && kill(pid, 0) == 0; ++i) usleep(10000);
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_P(PlatformTest, SeveralAddressSpacesAreIndependent) {
  auto other = platform_->NewAddressSpace();
  ASSERT_TRUE(other.ok()) << other.status();
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  Load(g);
  // Same code page in the second address space, different stack.
  ASSERT_TRUE((*other)->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
  Registers regs2 = regs_;
  auto r2 = ctx_->Switch(**other, regs2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->kind, SwitchKind::kSyscall);
  EXPECT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_NE(StubPidOf(**other), StubPid());
}

// --- syscall patching (systrap) -------------------------------------------------

// A loop of `mov $getpid, %eax; syscall` whose results the app sums in rbx: the site is
// patched at its first trap and later calls come through the fast entry.
TEST_P(PlatformTest, PatchedSiteKeepsSemantics) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label loop;
  g.xor_(ebx, ebx);
  g.mov(r12d, 5);
  g.L(loop);
  const size_t site = g.getSize();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.add(rbx, rax);
  g.dec(r12d);
  g.jnz(loop);
  g.mov(rdi, rbx);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  for (int i = 0; i < 5; ++i) {
    SwitchResult r = RunApp();
    ASSERT_EQ(r.kind, SwitchKind::kSyscall) << i;
    EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid)) << i;
    EXPECT_EQ(regs_.gp.rip, kCode + site + 7) << i;  // as if the syscall had run
    EXPECT_EQ(regs_.gp.rcx, kCode + site + 7) << i;
    EXPECT_EQ(regs_.gp.r12, static_cast<uint64_t>(5 - i)) << i;  // other registers intact
    regs_.gp.rax = 100 + i;
  }
  // The site now jumps to a trampoline: ff 24 25 <table entry>.
  EXPECT_EQ(MemByte(kCodeOff + site), 0xff);
  EXPECT_EQ(MemByte(kCodeOff + site + 1), 0x24);
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, 100u + 101 + 102 + 103 + 104);
}

// With more than one thread in the process, a site is patched only while every other
// thread waits in the sentry's hands (a running one could execute it half-written).
TEST_P(PlatformTest, PatchesWhileTheOtherThreadsWaitAndNotWhileOneRuns) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label spin, site_label;
  g.xor_(eax, eax);  // a first trap at a site that is never patched
  g.add(eax, SYS_getppid);
  g.syscall();
  const size_t site = g.getSize();
  g.L(site_label);
  g.mov(eax, SYS_getppid);
  g.syscall();
  g.jmp(site_label);
  const size_t spin_at = g.getSize();
  g.L(spin);
  g.jmp(spin);  // the other thread runs app code here
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  absl::StatusOr<std::unique_ptr<Context>> other = platform_->NewThreadContext(*as_, *ctx_);
  ASSERT_TRUE(other.ok()) << other.status();
  Registers other_regs = regs_;
  other_regs.gp.rip = kCode + spin_at;
  std::atomic<bool> other_done{false};
  std::thread t([&] {
    absl::StatusOr<SwitchResult> r = (*other)->Switch(*as_, other_regs);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) EXPECT_EQ(r->kind, SwitchKind::kInterrupted);
    other_done = true;
  });
  // Give the other thread time to be in app code; a trap now leaves the site alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(other_done.load());
  for (int i = 0; i < 3; ++i) {
    regs_.gp.rax = 0;
    ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  }
  EXPECT_EQ(MemByte(kCodeOff + site), 0xb8) << "patched while another thread ran app code";
  (*other)->Interrupt();
  t.join();
  // Now the other thread waits in the sentry's hands: the next trap patches the site.
  regs_.gp.rax = 0;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(MemByte(kCodeOff + site), 0xff);
  EXPECT_EQ(MemByte(kCodeOff + site + 1), 0x24);
  regs_.gp.rax = 0;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);  // through the trampoline
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getppid));
  other->reset();
}

// A thread that trapped at a `syscall; cmp` site before another thread patched it goes
// on after the cmp, whose bytes are now inside the jump, through the trampoline's cmp.
TEST_P(PlatformTest, AThreadThatTrappedAtACmpSiteGoesOnAfterItIsPatched) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label spin;
  g.xor_(eax, eax);  // a first trap at a site that is never patched
  g.add(eax, SYS_getppid);
  g.syscall();
  g.L(spin);
  g.jmp(spin);
  for (int i = 0; i < 16; ++i) g.nop();
  const size_t site = g.getSize();
  g.syscall();
  g.cmp(rax, -4095);
  g.mov(rdi, rax);
  g.int3();
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  absl::StatusOr<std::unique_ptr<Context>> other = platform_->NewThreadContext(*as_, *ctx_);
  ASSERT_TRUE(other.ok()) << other.status();
  Registers other_regs = regs_;
  other_regs.gp.rip = kCode + site;
  other_regs.gp.rax = SYS_getppid;
  // While this thread spins in app code, the other traps at the site, which stays as
  // it is; the other thread stays in the sentry's hands.
  std::thread t([&] { EXPECT_EQ(RunApp().kind, SwitchKind::kInterrupted); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  absl::StatusOr<SwitchResult> r = (*other)->Switch(*as_, other_regs);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kind, SwitchKind::kSyscall);
  EXPECT_EQ(MemByte(kCodeOff + site), 0x0f);
  ctx_->Interrupt();
  t.join();
  // This thread traps there too, now with the other one parked: the site is patched.
  regs_.gp.rip = kCode + site;
  regs_.gp.rax = SYS_getppid;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  ASSERT_EQ(MemByte(kCodeOff + site), 0xff);
  regs_.gp.rax = 5;
  SwitchResult mine = RunApp();
  ASSERT_EQ(mine.kind, SwitchKind::kSignal);
  EXPECT_EQ(mine.info.si_signo, SIGTRAP);
  EXPECT_EQ(regs_.gp.rdi, 5u);
  // The other thread resumes where it trapped, which is inside the jump now.
  other_regs.gp.rax = 7;
  r = (*other)->Switch(*as_, other_regs);
  ASSERT_TRUE(r.ok()) << r.status();
  (*other)->CompleteRegisters(other_regs);
  EXPECT_EQ(r->kind, SwitchKind::kSignal);
  EXPECT_EQ(r->info.si_signo, SIGTRAP);
  EXPECT_EQ(other_regs.gp.rdi, 7u);
  other->reset();
}

// Two threads calling through the same site, each checking its registers after every
// call, while the site gets patched under them.
TEST_P(PlatformTest, TwoThreadsKeepCallingThroughASiteAsItIsPatched) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  constexpr int kCalls = 2000;
  auto g = Gen();
  size_t site = 0;
  EmitCheckedCalls(g, kCalls, [&](Xbyak::CodeGenerator& g) {
    site = g.getSize();
    g.mov(eax, SYS_getppid);
    g.syscall();
  });
  Load(g);
  absl::StatusOr<std::unique_ptr<Context>> other = platform_->NewThreadContext(*as_, *ctx_);
  ASSERT_TRUE(other.ok()) << other.status();
  Registers other_regs = regs_;
  int mine_calls = 0, other_calls = 0;
  SwitchResult other_result;
  std::thread t([&] { other_result = RunAnsweringCalls(**other, *as_, other_regs, &other_calls); });
  SwitchResult mine = RunAnsweringCalls(*ctx_, *as_, regs_, &mine_calls);
  t.join();
  EXPECT_EQ(mine.info.si_signo, SIGTRAP) << "a call lost its state (ud2) or crashed";
  EXPECT_EQ(other_result.info.si_signo, SIGTRAP) << "a call lost its state (ud2) or crashed";
  EXPECT_EQ(mine_calls, kCalls);
  EXPECT_EQ(other_calls, kCalls);
  EXPECT_EQ(MemByte(kCodeOff + site), 0xff) << "never patched";
  other->reset();
}

// A patched call reports only its number and arguments (Registers::gp_partial); the
// app's other registers come back intact when the sentry never loads them, and are
// right when it does.
TEST_P(PlatformTest, PatchedCallReportsItsArgumentsAndLoadsTheRestOnRequest) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label loop, bad;
  g.mov(rbx, 0x1111);
  g.mov(rbp, 0x2222);
  g.mov(r13, 0x3333);
  g.mov(r15, 0x4444);
  g.mov(r12d, 4);
  g.L(loop);
  const size_t site = g.getSize();
  g.mov(eax, SYS_getppid);
  g.syscall();
  g.cmp(rax, r12);  // the sentry answers with the loop counter
  g.jne(bad);
  g.dec(r12d);
  g.jnz(loop);
  g.mov(rdi, rbx);
  g.add(rdi, rbp);
  g.add(rdi, r13);
  g.add(rdi, r15);
  g.mov(eax, SYS_exit);
  g.syscall();
  g.L(bad);
  g.mov(edi, 1);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_EQ(RunAppPartial().kind, SwitchKind::kSyscall);  // the trap that patches the site
  EXPECT_FALSE(regs_.gp_partial);
  regs_.gp.rax = 4;
  for (uint64_t i = 3; i >= 1; --i) {
    ASSERT_EQ(RunAppPartial().kind, SwitchKind::kSyscall) << i;
    ASSERT_TRUE(regs_.gp_partial) << i;
    EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getppid)) << i;
    if (i == 2) {
      ctx_->CompleteRegisters(regs_);
      EXPECT_FALSE(regs_.gp_partial);
      EXPECT_EQ(regs_.gp.rip, kCode + site + 7);
      EXPECT_EQ(regs_.gp.rsp, kStack + kPage);
      EXPECT_EQ(regs_.gp.rbx, 0x1111u);
      EXPECT_EQ(regs_.gp.r12, i);
    }
    regs_.gp.rax = i;
  }
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, 0x1111u + 0x2222 + 0x3333 + 0x4444);
}

// A restart (rip stepped back over the syscall, as for -ERESTARTSYS) of a patched site
// makes the same call again; a full register change after a fast call (here: a jump
// elsewhere, as signal delivery does) and an FPU read both work.
TEST_P(PlatformTest, PatchedSiteRestartsAndTakesFullRegisterChanges) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label loop, elsewhere;
  g.L(loop);
  g.mov(eax, SYS_getppid);
  g.syscall();
  g.jmp(loop);
  g.L(elsewhere);
  g.movq(rdi, xmm1);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);  // patched here
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);  // through the fast entry
  EXPECT_EQ(regs_.gp.rip, kCode + 7);
  regs_.gp.rip -= 2;
  regs_.gp.rax = regs_.gp.orig_rax;
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getppid));
  EXPECT_EQ(regs_.gp.rip, kCode + 7);
  // FPU state after a fast call, then a jump elsewhere with a changed xmm1.
  ASSERT_TRUE(ctx_->LoadFpState(*as_, regs_).ok());
  const uint64_t v = 0x0102030405060708;
  std::memcpy(regs_.fp + 160 + 16, &v, 8);  // xmm1 low quadword
  uint64_t xstate_bv;
  std::memcpy(&xstate_bv, regs_.fp + 512, 8);
  xstate_bv |= 2;
  std::memcpy(regs_.fp + 512, &xstate_bv, 8);
  regs_.fp_dirty = true;
  regs_.gp.rip = kCode + elsewhere.getAddress() - g.getCode();
  r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, v);
}

// `syscall; cmp $-4095, %rax` with the number already in eax (glibc's syscall()).
TEST_P(PlatformTest, PatchedCmpFormKeepsSemantics) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label loop, error;
  g.mov(r12d, 4);
  g.L(loop);
  g.mov(esi, SYS_getpid);
  g.mov(rax, rsi);  // not `mov $nr, %eax`, which would make it the other form
  const size_t site = g.getSize();
  g.syscall();
  g.cmp(rax, -4095);
  g.jae(error);
  g.dec(r12d);
  g.jnz(loop);
  g.mov(edi, 0);
  g.mov(eax, SYS_exit);
  g.syscall();
  g.L(error);
  g.mov(rdi, rax);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall) << i;
    EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid)) << i;
    regs_.gp.rax = 7;  // success: the cmp must see it and fall through
  }
  EXPECT_EQ(MemByte(kCodeOff + site), 0xff);
  // A restart of the patched call is the same call again.
  regs_.gp.rip -= 2;
  regs_.gp.rax = regs_.gp.orig_rax;
  ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  regs_.gp.rax = static_cast<uint64_t>(-EPERM);  // failure: the cmp sends it to `error`
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(static_cast<int64_t>(regs_.gp.rdi), -EPERM);
}

// exec: after a fast call, the context moves to a fresh address space (a fresh thread,
// which starts from a signal frame, not from the fast entry).
TEST_P(PlatformTest, AfterAFastCallTheContextMovesToANewAddressSpace) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto g = Gen();
  Xbyak::Label loop;
  g.L(loop);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.jmp(loop);
  Load(g);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(RunApp().kind, SwitchKind::kSyscall) << i;
  auto fresh = platform_->NewAddressSpace();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_TRUE((*fresh)->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
  Registers regs;
  regs.gp.rip = kCode;
  auto r = ctx_->Switch(**fresh, regs);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  ASSERT_TRUE(ctx_->LoadFpState(**fresh, regs).ok());
}

TEST_P(PlatformTest, PatchingCanBeTurnedOff) {
  if (GetParam() != "systrap") GTEST_SKIP() << "syscall patching is systrap's";
  auto platform = NewPlatform(GetParam(), MemoryFileInfo{.fd = memfd_.get()},
                              PlatformOptions{.syscall_patching = false});
  ASSERT_TRUE(platform.ok()) << platform.status();
  auto as = (*platform)->NewAddressSpace();
  ASSERT_TRUE(as.ok());
  auto ctx = (*platform)->NewContext();
  ASSERT_TRUE(ctx.ok());
  auto g = Gen();
  Xbyak::Label loop;
  g.L(loop);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.jmp(loop);
  ASSERT_EQ(pwrite(memfd_.get(), g.getCode(), g.getSize(), kCodeOff),
            static_cast<ssize_t>(g.getSize()));
  ASSERT_TRUE((*as)->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
  Registers regs;
  regs.gp.rip = kCode;
  for (int i = 0; i < 3; ++i) {
    auto r = (*ctx)->Switch(**as, regs);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->kind, SwitchKind::kSyscall);
  }
  EXPECT_EQ(MemByte(kCodeOff), 0xb8);  // still `mov $getpid, %eax`
}

// The host processes this process has as children (every thread's), from /proc.
std::set<pid_t> ChildPids() {
  std::set<pid_t> out;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return out;
  while (dirent* t = readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    std::ifstream in(absl::StrCat("/proc/self/task/", t->d_name, "/children"));
    for (pid_t pid; in >> pid;) out.insert(pid);
  }
  closedir(tasks);
  return out;
}

// systrap starts forking the first address space's stub when it is created; a platform
// that never makes one (the program did not load) must not leave that stub behind.
TEST_P(PlatformTest, APlatformThatMadeNoAddressSpaceLeavesNoProcess) {
  const std::set<pid_t> before = ChildPids();
  ASSERT_FALSE(before.empty());  // the fixture's own stub, at least
  auto platform = NewPlatform(GetParam(), MemoryFileInfo{.fd = memfd_.get()});
  ASSERT_TRUE(platform.ok()) << platform.status();
  platform->reset();
  EXPECT_EQ(ChildPids(), before);
}

INSTANTIATE_TEST_SUITE_P(Platforms, PlatformTest, ::testing::Values("ptrace", "systrap"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace usentry::platform
