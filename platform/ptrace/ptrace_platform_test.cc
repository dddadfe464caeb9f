// Runs small machine-code programs in ptrace stubs: syscalls, faults, protections,
// interrupts, FPU state, and what a stub can see and do (fds, mappings, seccomp).
#include "platform/ptrace/ptrace_platform.h"

#include <dirent.h>
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
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/unique_fd.h"
#include "gtest/gtest.h"
#include "platform/platform.h"
#include "platform/ptrace/stub_code_unsafe.h"
#include "xbyak/xbyak.h"

namespace usentry::platform::ptrace {
namespace {

using namespace Xbyak::util;  // NOLINT: register names

constexpr uint64_t kPage = 4096;
constexpr uint64_t kCode = 0x400000;
constexpr uint64_t kData = 0x500000;
constexpr uint64_t kUnmapped = 0x600000;
constexpr uint64_t kStack = 0x7f0000000000;
// Memory-file offsets of the pages above.
constexpr uint64_t kCodeOff = 0;
constexpr uint64_t kDataOff = 0x10000;
constexpr uint64_t kStackOff = 0x20000;

class PtracePlatformTest : public ::testing::Test {
 public:
  static Xbyak::CodeGenerator Gen() {
    return Xbyak::CodeGenerator(kPage, Xbyak::DontSetProtectRWE);
  }

 protected:
  void SetUp() override {
    memfd_ = UniqueFd(memfd_create("usentry-test-memory", 0));
    ASSERT_TRUE(memfd_.valid());
    ASSERT_EQ(ftruncate(memfd_.get(), 1 << 20), 0);
    auto platform = NewPlatform("ptrace", MemoryFileInfo{.fd = memfd_.get()});
    ASSERT_TRUE(platform.ok()) << platform.status();
    platform_ = std::move(*platform);
    auto as = platform_->NewAddressSpace();
    ASSERT_TRUE(as.ok()) << as.status();
    as_ = std::move(*as);
    auto ctx = platform_->NewContext();
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
  }

  pid_t StubPid() { return static_cast<PtraceAddressSpace&>(*as_).stub_pid(); }

  // Puts `g`'s code at kCode (r-x) and maps a stack page at kStack (rw).
  void Load(const Xbyak::CodeGenerator& g) {
    ASSERT_EQ(pwrite(memfd_.get(), g.getCode(), g.getSize(), kCodeOff),
              static_cast<ssize_t>(g.getSize()));
    ASSERT_TRUE(as_->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
    ASSERT_TRUE(as_->MapFile(kStack, kPage, kStackOff, PROT_READ | PROT_WRITE).ok());
    regs_.gp.rip = kCode;
    regs_.gp.rsp = kStack + kPage;
    regs_.gp.eflags = 0x202;
  }

  SwitchResult Run() {
    absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : SwitchResult{};
  }

  uint8_t MemByte(uint64_t off) {
    uint8_t b = 0;
    EXPECT_EQ(pread(memfd_.get(), &b, 1, off), 1);
    return b;
  }

  UniqueFd memfd_;
  std::unique_ptr<Platform> platform_;
  std::unique_ptr<AddressSpace> as_;
  std::unique_ptr<Context> ctx_;
  Registers regs_;
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

TEST_F(PtracePlatformTest, NameAndMaxUserAddress) {
  EXPECT_EQ(platform_->Name(), "ptrace");
  EXPECT_GE(as_->MaxUserAddress(), 0x7ff000000000u);
  EXPECT_LT(as_->MaxUserAddress(), kTaskSize);
  EXPECT_EQ(as_->MaxUserAddress() % kPage, 0u);
}

TEST_F(PtracePlatformTest, SyscallsTrapAndResumeAfterTheInstruction) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);  // 5 bytes
  g.syscall();             // 2 bytes
  g.mov(rdi, rax);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);

  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  EXPECT_EQ(static_cast<int64_t>(regs_.gp.rax), -ENOSYS);
  EXPECT_EQ(regs_.gp.rip, kCode + 7);  // after the syscall instruction
  EXPECT_EQ(regs_.gp.rcx, kCode + 7);  // as the syscall instruction left it

  regs_.gp.rax = 1234;  // the emulated result
  r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, 1234u);
}

TEST_F(PtracePlatformTest, RestartBySteppingBack) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  regs_.gp.rip -= 2;
  regs_.gp.rax = regs_.gp.orig_rax;
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_getpid));
  EXPECT_EQ(regs_.gp.rip, kCode + 7);
  // A -ERESTARTSYS-looking value in rax is not acted on by the host kernel.
  regs_.gp.rax = static_cast<uint64_t>(-512);
  ctx_->Interrupt();  // pass through the signal path, where the host restarts syscalls
  ASSERT_EQ(Run().kind, SwitchKind::kInterrupted);
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
}

TEST_F(PtracePlatformTest, LoadFromUnmappedAddressFaults) {
  auto g = Gen();
  g.mov(rcx, kUnmapped + 0x18);
  const size_t load_offset = g.getSize();
  g.mov(rax, g.ptr[rcx]);
  Load(g);
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kUnmapped + 0x18);
  EXPECT_EQ(r.info.si_signo, SIGSEGV);
  EXPECT_EQ(r.info.si_code, SEGV_MAPERR);
  EXPECT_FALSE(r.fault_exec);
  EXPECT_EQ(regs_.gp.rip, kCode + load_offset);  // the faulting instruction, not after it
}

TEST_F(PtracePlatformTest, AccessBeyondTheMemoryFileIsBusFault) {
  auto g = Gen();
  g.mov(rcx, kData + 8);
  g.mov(rax, g.ptr[rcx]);
  Load(g);
  // Mapping past the file's end succeeds; touching it is SIGBUS, reported as a fault.
  ASSERT_TRUE(as_->MapFile(kData, kPage, 2 << 20, PROT_READ).ok());
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.info.si_signo, SIGBUS);
  EXPECT_EQ(r.fault_addr, kData + 8);
}

TEST_F(PtracePlatformTest, RepeatedInterruptsNeverReachTheApp) {
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
    SwitchResult r = Run();
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
    r = Run();
    if (r.kind != SwitchKind::kInterrupted) break;
  }
  EXPECT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, 0u);
}

TEST_F(PtracePlatformTest, JumpToUnmappedAddressIsExecFault) {
  auto g = Gen();
  g.mov(rcx, kUnmapped);
  g.jmp(rcx);
  Load(g);
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kUnmapped);
  EXPECT_TRUE(r.fault_exec);
}

TEST_F(PtracePlatformTest, ProtectMakesWritesFaultUntilRestored) {
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
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_EQ(MemByte(kDataOff), 1);

  ASSERT_TRUE(as_->Protect(kData, kPage, PROT_READ).ok());
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kData);
  EXPECT_EQ(r.info.si_code, SEGV_ACCERR);
  EXPECT_EQ(MemByte(kDataOff), 1);

  ASSERT_TRUE(as_->Protect(kData, kPage, PROT_READ | PROT_WRITE).ok());
  r = Run();  // retries the faulting store
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(MemByte(kDataOff), 2);
}

TEST_F(PtracePlatformTest, UnmapRemovesTheMapping) {
  ASSERT_EQ(pwrite(memfd_.get(), "\x2a", 1, kDataOff), 1);
  auto g = Gen();
  g.mov(rbx, kData);
  g.movzx(edi, g.byte[rbx]);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.movzx(edi, g.byte[rbx]);
  Load(g);
  ASSERT_TRUE(as_->MapFile(kData, kPage, kDataOff, PROT_READ).ok());
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_EQ(regs_.gp.rdi, 0x2au);  // the app sees the memory file's bytes
  ASSERT_TRUE(as_->Unmap(kData, kPage).ok());
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kFault);
  EXPECT_EQ(r.fault_addr, kData);
}

TEST_F(PtracePlatformTest, InjectionErrorsNameTheCall) {
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

TEST_F(PtracePlatformTest, InterruptFromAnotherThreadStopsASpinningApp) {
  auto g = Gen();
  Xbyak::Label spin;
  g.L(spin);
  g.jmp(spin);
  Load(g);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ctx_->Interrupt();
  });
  SwitchResult r = Run();
  t.join();
  EXPECT_EQ(r.kind, SwitchKind::kInterrupted);
  EXPECT_EQ(regs_.gp.rip, kCode);

  // Interrupt before Switch: returns at once, registers unchanged.
  ctx_->Interrupt();
  EXPECT_EQ(Run().kind, SwitchKind::kInterrupted);
  EXPECT_EQ(regs_.gp.rip, kCode);

  // The app never saw a signal and keeps running.
  std::thread t2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx_->Interrupt();
  });
  r = Run();
  t2.join();
  EXPECT_EQ(r.kind, SwitchKind::kInterrupted);
  EXPECT_EQ(regs_.gp.rip, kCode);
}

TEST_F(PtracePlatformTest, SynchronousSignalsAreReported) {
  auto g = Gen();
  g.int3();
  g.xor_(ecx, ecx);
  g.div(ecx);  // divide by zero
  g.ud2();
  Load(g);
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGTRAP);
  r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGFPE);
  EXPECT_EQ(r.info.si_code, FPE_INTDIV);
  regs_.gp.rip += 2;  // skip `div ecx`
  r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
}

TEST_F(PtracePlatformTest, FpStateLoadsAndWritesBack) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.movq(rdi, xmm0);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_FALSE(regs_.fp_valid);
  ASSERT_TRUE(ctx_->LoadFpState(*as_, regs_).ok());
  EXPECT_TRUE(regs_.fp_valid);
  // Legacy FXSAVE area (512) + XSAVE header (64) at least; fits the fixed buffer.
  EXPECT_GE(regs_.fp_size, 576u);
  EXPECT_LE(regs_.fp_size, kFpStateSize);
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
  ASSERT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_FALSE(regs_.fp_dirty);
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_exit));
  EXPECT_EQ(regs_.gp.rdi, v);
}

TEST_F(PtracePlatformTest, StubStartsWithCleanFpState) {
  // Fresh stubs must not carry the sentry thread's vector registers.
  Registers regs;
  ASSERT_TRUE(ctx_->LoadFpState(*as_, regs).ok());
  for (size_t i = 32; i < 416; ++i) {  // x87 st0-7 and xmm0-15 in the legacy region
    ASSERT_EQ(regs.fp[i], 0) << "byte " << i;
  }
  uint64_t xstate_bv;
  std::memcpy(&xstate_bv, regs.fp + 512, 8);
  EXPECT_EQ(xstate_bv & ~uint64_t{1 << 9}, 0u);  // nothing but maybe PKRU in use
}

TEST_F(PtracePlatformTest, StubKeepsOnlyTheMemoryFile) {
  const std::string dir = absl::StrCat("/proc/", StubPid(), "/fd");
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  std::vector<std::string> fds;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') fds.push_back(e->d_name);
  }
  closedir(d);
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_EQ(fds[0], std::to_string(memfd_.get()));
}

TEST_F(PtracePlatformTest, StubHasOnlyStubPageAndAppMappings) {
  auto g = Gen();
  g.ud2();
  Load(g);
  std::ifstream maps(absl::StrCat("/proc/", StubPid(), "/maps"));
  ASSERT_TRUE(maps.is_open());
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) {
    ++n;
    if (line.find("[vsyscall]") != std::string::npos) continue;  // cannot be unmapped
    const uint64_t start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    EXPECT_TRUE(start == kCode || start == kStack || start == as_->MaxUserAddress()) << line;
    if (start == as_->MaxUserAddress()) {
      EXPECT_NE(line.find("r-xp"), std::string::npos) << line;
    }
    if (start == kCode) {
      EXPECT_NE(line.find("r-xs"), std::string::npos) << line;
    }
  }
  EXPECT_GE(n, 3);
}

TEST_F(PtracePlatformTest, StubRunsUnderSeccompWithNoNewPrivs) {
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

// The second layer, live: if the platform ever ran app code without SYSEMU, the stub
// filter kills the stub at the app's first syscall.
TEST_F(PtracePlatformTest, AppSyscallWithoutSysemuKillsTheStub) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  Load(g);
  Subprocess& sp = static_cast<PtraceAddressSpace&>(*as_).subprocess();
  user_regs_struct gp = sp.initial_regs();
  gp.rip = kCode;
  gp.rsp = kStack + kPage;
  gp.orig_rax = ~uint64_t{0};
  ASSERT_TRUE(sp.SetRegs(gp).ok());
  ASSERT_TRUE(sp.Resume(PTRACE_CONT, "PTRACE_CONT").ok());  // the bug being simulated
  absl::StatusOr<int> st = sp.Wait();
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE(WIFSIGNALED(*st)) << DescribeWaitStatus(*st);
  EXPECT_EQ(WTERMSIG(*st), SIGSYS);
}

// Even from the stub page, only the stub's own syscalls pass.
TEST_F(PtracePlatformTest, InjectedSyscallOutsideTheAllowlistKillsTheStub) {
  Subprocess& sp = static_cast<PtraceAddressSpace&>(*as_).subprocess();
  absl::StatusOr<int64_t> r = sp.Inject(SYS_getppid, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SIGSYS"), std::string::npos) << r.status();
  EXPECT_TRUE(sp.dead());
}

TEST_F(PtracePlatformTest, JumpingIntoTheStubSyscallSiteIsStillEmulated) {
  absl::StatusOr<StubPage> stub = GetStubPage();
  ASSERT_TRUE(stub.ok());
  auto g = Gen();
  g.mov(eax, SYS_mmap);
  g.mov(rcx, stub->syscall_site);
  g.jmp(rcx);
  Load(g);
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);  // SYSEMU caught it; the host never ran it
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_mmap));
  EXPECT_EQ(regs_.gp.rip, stub->syscall_site + 2);
}

// int 0x80 must never be taken for a 64-bit syscall: with IA-32 emulation it is a
// SIGSYS with the i386 arch; without it (ia32_emulation=0) the CPU raises #GP.
TEST_F(PtracePlatformTest, Int80IsNeverASyscall) {
  auto g = Gen();
  g.mov(eax, 20);  // i386 getpid
  g.db(0xcd);
  g.db(0x80);  // int 0x80
  Load(g);
  SwitchResult r = Run();
  ASSERT_EQ(r.kind, SwitchKind::kSignal);
  if (r.info.si_signo == SIGSEGV) GTEST_SKIP() << "host has no IA-32 syscall emulation";
  EXPECT_EQ(r.info.si_signo, SIGSYS);
  EXPECT_EQ(r.info.si_arch, AUDIT_ARCH_I386);
  EXPECT_EQ(r.info.si_syscall, 20);
}

TEST_F(PtracePlatformTest, VsyscallIsKilledOrFaults) {
  auto g = Gen();
  g.mov(rax, 0xffffffffff600000);  // legacy vsyscall gettimeofday
  g.xor_(edi, edi);
  g.xor_(esi, esi);
  g.call(rax);
  g.mov(eax, SYS_exit);
  g.syscall();
  Load(g);
  absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
  if (r.ok()) {
    // vsyscall=none: a plain fault in the vsyscall page.
    EXPECT_EQ(r->kind, SwitchKind::kFault);
  } else {
    // vsyscall emulation goes through seccomp with ip in the vsyscall page.
    EXPECT_NE(r.status().message().find("SIGSYS"), std::string::npos) << r.status();
  }
}

TEST_F(PtracePlatformTest, StubDeathIsAnError) {
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

TEST_F(PtracePlatformTest, UseFromAnotherThreadIsAnErrorNotAHang) {
  auto g = Gen();
  g.ud2();
  Load(g);
  std::thread other([&] {
    absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_EQ(as_->Unmap(kCode, kPage).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(ctx_->LoadFpState(*as_, regs_).ok());
  });
  other.join();
  SwitchResult r = Run();  // still fine from the owner thread
  EXPECT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
}

TEST_F(PtracePlatformTest, DestroyingTheAddressSpaceReapsTheStub) {
  const pid_t pid = StubPid();
  as_.reset();
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

// Fields of /proc/<pid>/status, e.g. "SigBlk" -> "0000000000000000".
std::string StatusField(pid_t pid, const std::string& name) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      std::string v = line.substr(name.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "<missing>";
}

void Handler(int) {}

// The sentry is multi-threaded and its threads have handlers and blocked signals; a
// stub made from such a thread starts clean and is run from that same thread.
TEST(PtraceFromSentryThreadTest, StubStartsWithDefaultSignalStateAndRuns) {
  UniqueFd memfd(memfd_create("usentry-test-memory", 0));
  ASSERT_TRUE(memfd.valid());
  ASSERT_EQ(ftruncate(memfd.get(), 1 << 16), 0);
  auto g = PtracePlatformTest::Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  ASSERT_EQ(pwrite(memfd.get(), g.getCode(), g.getSize(), 0), static_cast<ssize_t>(g.getSize()));

  struct sigaction sa {};
  sa.sa_handler = Handler;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
  ASSERT_EQ(signal(SIGPIPE, SIG_IGN), SIG_DFL);
  std::thread busy([] {  // another sentry thread allocating while we fork
    for (int i = 0; i < 20000; ++i) std::vector<int> v(100);
  });
  std::thread sentry([&] {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGTERM);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, nullptr), 0);
    auto platform = NewPlatform("ptrace", MemoryFileInfo{.fd = memfd.get()});
    ASSERT_TRUE(platform.ok()) << platform.status();
    auto as = (*platform)->NewAddressSpace();
    ASSERT_TRUE(as.ok()) << as.status();
    const pid_t pid = static_cast<PtraceAddressSpace&>(**as).stub_pid();
    EXPECT_EQ(StatusField(pid, "SigBlk"), "0000000000000000");
    EXPECT_EQ(StatusField(pid, "SigIgn"), "0000000000000000");
    EXPECT_EQ(StatusField(pid, "SigCgt"), "0000000000000000");
    ASSERT_TRUE((*as)->MapFile(kCode, kPage, 0, PROT_READ | PROT_EXEC).ok());
    auto ctx = (*platform)->NewContext();
    ASSERT_TRUE(ctx.ok());
    Registers regs;
    regs.gp.rip = kCode;
    auto r = (*ctx)->Switch(**as, regs);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->kind, SwitchKind::kSyscall);
  });
  sentry.join();
  busy.join();
  signal(SIGUSR1, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
}

TEST_F(PtracePlatformTest, SeveralAddressSpacesAreIndependent) {
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
  EXPECT_EQ(Run().kind, SwitchKind::kSyscall);
  EXPECT_NE(static_cast<PtraceAddressSpace&>(**other).stub_pid(), StubPid());
}

}  // namespace
}  // namespace usentry::platform::ptrace
