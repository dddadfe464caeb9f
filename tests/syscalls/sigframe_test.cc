// rt_sigreturn with an FP state the handler changed: what Linux restores and what it
// refuses with SIGSEGV (the cases the syscall fuzzer found to differ, docs/fuzzing.md).
// Each case runs in a child, whose death by signal is the result.
#include <signal.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"

namespace {

using Edit = void (*)(ucontext_t* uc);
Edit g_edit;

uint8_t* FpImage(ucontext_t* uc) { return reinterpret_cast<uint8_t*>(uc->uc_mcontext.fpregs); }

void EditFrame(int, siginfo_t*, void* ctx) { g_edit(static_cast<ucontext_t*>(ctx)); }

// Runs `edit` on the frame of a SIGUSR1 handler in a child, then `after` there; returns
// the child's wait status. The child exits 0 when `after` returns true, 1 otherwise.
int RunEdited(
    Edit edit, bool (*after)() = [] { return true; }) {
  pid_t pid = fork();
  if (pid == 0) {
    g_edit = edit;
    struct sigaction sa = {};
    sa.sa_sigaction = EditFrame;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, nullptr);
    raise(SIGUSR1);
    _exit(after() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

bool KilledBySegv(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV; }
bool ExitedZero(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

uint64_t Header(ucontext_t* uc, int word) {
  uint64_t v;
  memcpy(&v, FpImage(uc) + 512 + 8 * word, 8);
  return v;
}
void SetHeader(ucontext_t* uc, int word, uint64_t v) {
  memcpy(FpImage(uc) + 512 + 8 * word, &v, 8);
}

uint32_t Mxcsr() {
  uint32_t m;
  asm volatile("stmxcsr %0" : "=m"(m));
  return m;
}

uint32_t MxcsrMask() {
  alignas(16) uint8_t area[512] = {};
  asm volatile("fxsave64 %0" : "=m"(area));
  uint32_t m;
  memcpy(&m, area + 28, 4);
  return m != 0 ? m : 0xffbf;
}

TEST(SigframeTest, ReservedMxcsrBitIsSigsegv) {
  EXPECT_TRUE(
      KilledBySegv(RunEdited([](ucontext_t* uc) { uc->uc_mcontext.fpregs->mxcsr |= 1u << 31; })));
}

TEST(SigframeTest, AllowedMxcsrBitIsRestored) {
  // Flush-to-zero (bit 15) is valid everywhere; denormals-are-zero (bit 6) where the mask
  // has it. -ffast-math programs run with both set.
  static uint32_t want;
  want = 0x8000 | (MxcsrMask() & 0x40);
  const int status = RunEdited([](ucontext_t* uc) { uc->uc_mcontext.fpregs->mxcsr |= want; },
                               [] { return (Mxcsr() & want) == want; });
  EXPECT_TRUE(ExitedZero(status)) << status;
}

TEST(SigframeTest, XmmChangedInTheFrameIsRestored) {
  const int status = RunEdited(
      [](ucontext_t* uc) {
        const uint64_t v = 0x1122334455667788;
        memcpy(&uc->uc_mcontext.fpregs->_xmm[3], &v, 8);
      },
      [] {
        uint64_t got;
        asm volatile("movq %%xmm3, %0" : "=r"(got));
        return got == 0x1122334455667788;
      });
  EXPECT_TRUE(ExitedZero(status)) << status;
}

TEST(SigframeTest, XstateBvOutsideXcr0IsSigsegv) {
  EXPECT_TRUE(KilledBySegv(
      RunEdited([](ucontext_t* uc) { SetHeader(uc, 0, Header(uc, 0) | 1ull << 63); })));
}

TEST(SigframeTest, NonzeroXcompBvInStandardFormIsSigsegv) {
  EXPECT_TRUE(KilledBySegv(RunEdited([](ucontext_t* uc) { SetHeader(uc, 1, 1); })));
}

TEST(SigframeTest, ReservedHeaderWordAfterXcompBvIsSigsegv) {
  EXPECT_TRUE(KilledBySegv(RunEdited([](ucontext_t* uc) { SetHeader(uc, 2, 1); })));
}

TEST(SigframeTest, HeaderBytesXrstorIgnoresAreIgnored) {
  const int status = RunEdited([](ucontext_t* uc) {
    for (int w = 3; w < 8; ++w) SetHeader(uc, w, ~uint64_t{0});
  });
  EXPECT_TRUE(ExitedZero(status)) << status;
}

TEST(SigframeTest, MisalignedFpStateIsSigsegv) {
  EXPECT_TRUE(KilledBySegv(RunEdited([](ucontext_t* uc) {
    uc->uc_mcontext.fpregs = reinterpret_cast<fpregset_t>(FpImage(uc) + 1);
  })));
}

// The FPU state a handler starts with and what a frame without one restores: Linux gives
// both the initial state (x87 control word 0x37f, MXCSR 0x1f80, vector registers zero),
// not the interrupted code's. The interrupted code here runs with round-toward-zero,
// 53-bit x87 precision and xmm15 (and ymm15's upper half, with AVX) set.
struct FpState {
  uint32_t mxcsr;
  uint16_t fcw;
  uint64_t xmm15, ymm15_high;
};
FpState g_handler_fp;
bool g_clear_frame_fp;
constexpr uint32_t kRoundTowardZero = 0x6000;
constexpr uint16_t kDoublePrecisionCw = 0x27f;
constexpr uint64_t kXmmMagic = 0x0123456789abcdef;

FpState ReadFp() {
  FpState s{};
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(s.mxcsr), "=m"(s.fcw));
  asm volatile("movq %%xmm15, %0" : "=r"(s.xmm15));
  if (__builtin_cpu_supports("avx")) {
    asm volatile("vextractf128 $1, %%ymm15, %%xmm14\n\tmovq %%xmm14, %0"
                 : "=r"(s.ymm15_high)
                 :
                 : "xmm14");
  }
  return s;
}

void RecordFp(int, siginfo_t*, void* ctx) {
  g_handler_fp = ReadFp();
  if (g_clear_frame_fp) static_cast<ucontext_t*>(ctx)->uc_mcontext.fpregs = nullptr;
}

// Sets the interrupted code's state, raises SIGUSR1 with a `syscall` of its own (a libc
// call could use the vector registers), and returns the state after the handler.
FpState RaiseWithChangedFp(bool clear_frame_fp) {
  struct sigaction sa = {};
  sa.sa_sigaction = RecordFp;
  sa.sa_flags = SA_SIGINFO;
  EXPECT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
  g_clear_frame_fp = clear_frame_fp;
  g_handler_fp = {};
  const uint32_t mxcsr = Mxcsr() | kRoundTowardZero;
  const uint16_t fcw = kDoublePrecisionCw;
  const bool avx = __builtin_cpu_supports("avx");
  asm volatile("movq %0, %%xmm15" : : "r"(kXmmMagic) : "xmm15");
  if (avx) asm volatile("vinsertf128 $1, %%xmm15, %%ymm15, %%ymm15" : : : "xmm15");
  asm volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mxcsr), "m"(fcw));
  const uint64_t pid = static_cast<uint64_t>(getpid());
  uint64_t ret;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(uint64_t{62}), "D"(pid), "S"(uint64_t{SIGUSR1})
               : "rcx", "r11", "memory");
  const FpState after = ReadFp();
  const uint32_t default_mxcsr = 0x1f80;
  const uint16_t default_fcw = 0x37f;
  asm volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(default_mxcsr), "m"(default_fcw));
  EXPECT_EQ(ret, 0u);
  return after;
}

TEST(SigframeTest, HandlerStartsWithTheInitialFpState) {
  const FpState after = RaiseWithChangedFp(false);
  EXPECT_EQ(g_handler_fp.mxcsr & 0xffc0, 0x1f80u);  // the low six are sticky flags
  EXPECT_EQ(g_handler_fp.fcw, 0x37f);
  EXPECT_EQ(g_handler_fp.xmm15, 0u);
  EXPECT_EQ(g_handler_fp.ymm15_high, 0u);
  // ...and the interrupted code gets its own back.
  EXPECT_EQ(after.mxcsr & 0xffc0, 0x1f80u | kRoundTowardZero);
  EXPECT_EQ(after.fcw, kDoublePrecisionCw);
  EXPECT_EQ(after.xmm15, kXmmMagic);
  if (__builtin_cpu_supports("avx")) EXPECT_EQ(after.ymm15_high, kXmmMagic);
}

TEST(SigframeTest, FrameWithoutFpStateRestoresTheInitialOne) {
  const FpState after = RaiseWithChangedFp(true);
  EXPECT_EQ(after.mxcsr & 0xffc0, 0x1f80u);
  EXPECT_EQ(after.fcw, 0x37f);
  EXPECT_EQ(after.xmm15, 0u);
  EXPECT_EQ(after.ymm15_high, 0u);
}

// The three tests below write a word into xmm15 in the frame's legacy area, which every
// restore takes, and expect ymm15's upper half to be initial after rt_sigreturn.
constexpr uint32_t kFrameXmm15 = 0x11111111;
void SetFrameXmm15(ucontext_t* uc) { uc->uc_mcontext.fpregs->_xmm[15].element[0] = kFrameXmm15; }
// ymm15's upper half in the image, marked present in XSTATE_BV (the standard XSAVE layout
// keeps AVX state at 576).
void SetFrameYmm15High(ucontext_t* uc) {
  memset(FpImage(uc) + 576 + 16 * 15, 0x44, 16);
  SetHeader(uc, 0, Header(uc, 0) | 4);
}
bool Xmm15FromTheFrameAndYmm15HighInitial() {
  const FpState s = ReadFp();
  return static_cast<uint32_t>(s.xmm15) == kFrameXmm15 && s.ymm15_high == 0;
}

// A frame whose software bytes do not announce XSAVE state is legacy-only: Linux restores
// its 512 bytes and leaves every other component initial, whatever the handler left.
// (The skips: without AVX there is no upper half to check.)
TEST(SigframeTest, LegacyOnlyFrameLeavesTheUpperHalvesInitial) {
  if (!__builtin_cpu_supports("avx")) GTEST_SKIP() << "no AVX";
  const int status = RunEdited(
      [](ucontext_t* uc) {
        SetFrameXmm15(uc);
        memset(FpImage(uc) + 464, 0, 4);                                   // FP_XSTATE_MAGIC1
        asm volatile("vpcmpeqd %%ymm15, %%ymm15, %%ymm15" : : : "xmm15");  // all ones
      },
      Xmm15FromTheFrameAndYmm15HighInitial);
  EXPECT_TRUE(ExitedZero(status)) << status;
}

// A frame whose FP_XSTATE_MAGIC2 is missing after the XSAVE image is legacy-only too
// (the image's upper halves are not restored but initialized).
TEST(SigframeTest, FrameWithoutMagic2IsLegacyOnly) {
  if (!__builtin_cpu_supports("avx")) GTEST_SKIP() << "no AVX";
  const int status = RunEdited(
      [](ucontext_t* uc) {
        SetFrameXmm15(uc);
        SetFrameYmm15High(uc);
        uint32_t xstate_size;
        memcpy(&xstate_size, FpImage(uc) + 464 + 16, 4);
        memset(FpImage(uc) + xstate_size, 0, 4);
      },
      Xmm15FromTheFrameAndYmm15HighInitial);
  EXPECT_TRUE(ExitedZero(status)) << status;
}

// Only the components the software bytes' xfeatures name are restored; the others
// become initial even where the image holds them. XSTATE_BV names SSE in Linux's frames
// whether it is in use or not, so the legacy area's xmm15 is heard.
TEST(SigframeTest, ComponentsLeftOutOfXfeaturesBecomeInitial) {
  if (!__builtin_cpu_supports("avx")) GTEST_SKIP() << "no AVX";
  const int status = RunEdited(
      [](ucontext_t* uc) {
        SetFrameXmm15(uc);
        SetFrameYmm15High(uc);
        uint64_t xfeatures;
        memcpy(&xfeatures, FpImage(uc) + 464 + 8, 8);
        xfeatures &= ~uint64_t{4};  // AVX not among the components to restore
        memcpy(FpImage(uc) + 464 + 8, &xfeatures, 8);
      },
      Xmm15FromTheFrameAndYmm15HighInitial);
  EXPECT_TRUE(ExitedZero(status)) << status;
}

// CSGSFS: cs, gs, fs and ss, 16 bits each. Linux restores cs and (with
// UC_STRICT_RESTORE_SS, which its frames carry) ss, forcing RPL 3; returning to user
// mode through a selector that is not a user segment faults. gs and fs are ignored.
uint16_t Selector(ucontext_t* uc, int i) {
  return static_cast<uint16_t>(uc->uc_mcontext.gregs[REG_CSGSFS] >> (16 * i));
}
void SetSelector(ucontext_t* uc, int i, uint16_t v) {
  auto& r = uc->uc_mcontext.gregs[REG_CSGSFS];
  r = static_cast<greg_t>((static_cast<uint64_t>(r) & ~(uint64_t{0xffff} << (16 * i))) |
                          uint64_t{v} << (16 * i));
}
constexpr int kCs = 0, kGs = 1, kFs = 2, kSs = 3;

TEST(SigframeTest, AllOnesCsgsfsIsSigsegv) {
  EXPECT_TRUE(KilledBySegv(
      RunEdited([](ucontext_t* uc) { uc->uc_mcontext.gregs[REG_CSGSFS] = ~greg_t{0}; })));
}

TEST(SigframeTest, DataSegmentAsCsIsSigsegv) {
  EXPECT_TRUE(
      KilledBySegv(RunEdited([](ucontext_t* uc) { SetSelector(uc, kCs, Selector(uc, kSs)); })));
}

TEST(SigframeTest, CsRplIsForcedToThree) {
  const int status =
      RunEdited([](ucontext_t* uc) { SetSelector(uc, kCs, Selector(uc, kCs) & ~3); });
  EXPECT_TRUE(ExitedZero(status)) << status;
}

TEST(SigframeTest, GsAndFsFieldsAreIgnored) {
  const int status = RunEdited([](ucontext_t* uc) {
    SetSelector(uc, kGs, 0xffff);
    SetSelector(uc, kFs, 0xffff);
  });
  EXPECT_TRUE(ExitedZero(status)) << status;
}

TEST(SigframeTest, CodeSegmentAsSsIsSigsegvWithStrictRestore) {
  EXPECT_TRUE(
      KilledBySegv(RunEdited([](ucontext_t* uc) { SetSelector(uc, kSs, Selector(uc, kCs)); })));
}

TEST(SigframeTest, BadSsIsRepairedWithoutStrictRestore) {
  const int status = RunEdited([](ucontext_t* uc) {
    SetSelector(uc, kSs, Selector(uc, kCs));
    uc->uc_flags &= ~0x4UL;  // UC_STRICT_RESTORE_SS
  });
  EXPECT_TRUE(ExitedZero(status)) << status;
}

// A signal a syscall raises is delivered as that syscall returns, with a frame holding the
// registers of the call. Under systrap the site is patched after its first traps, and the
// sentry then loads the registers of a patched call only when it needs them (here: to
// build the frame), so the later rounds check that path.
struct Seen {
  uint64_t rip, rsp, rbx, r12, r13, r14, r15;
};
Seen g_seen;

void RecordFrame(int, siginfo_t*, void* ctx) {
  const greg_t* g = static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs;
  g_seen = {static_cast<uint64_t>(g[REG_RIP]), static_cast<uint64_t>(g[REG_RSP]),
            static_cast<uint64_t>(g[REG_RBX]), static_cast<uint64_t>(g[REG_R12]),
            static_cast<uint64_t>(g[REG_R13]), static_cast<uint64_t>(g[REG_R14]),
            static_cast<uint64_t>(g[REG_R15])};
}

TEST(SigframeTest, FrameOfASignalRaisedByASyscallHasTheCallsRegisters) {
  struct sigaction sa = {};
  sa.sa_sigaction = RecordFrame;
  sa.sa_flags = SA_SIGINFO;
  ASSERT_EQ(sigaction(SIGUSR2, &sa, nullptr), 0);
  const uint64_t pid = static_cast<uint64_t>(getpid());
  for (uint64_t i = 1; i <= 64; ++i) {
    const uint64_t magic = i << 20;
    uint64_t rsp = 0, after = 0, rbx = 0, r12 = 0, r15 = 0;
    g_seen = {};
    // kill(getpid(), SIGUSR2) through a `mov $62, %eax; syscall` site of its own.
    asm volatile(
        "mov %[m], %%rbx\n"
        "lea 1(%[m]), %%r12\n"
        "lea 2(%[m]), %%r13\n"
        "lea 3(%[m]), %%r14\n"
        "lea 4(%[m]), %%r15\n"
        "mov %%rsp, %[rsp]\n"
        "mov $62, %%eax\n"
        "syscall\n"
        "1: lea 1b(%%rip), %[after]\n"
        "mov %%rbx, %[rbx]\n"
        "mov %%r12, %[r12]\n"
        "mov %%r15, %[r15]\n"
        : [rsp] "=m"(rsp), [after] "=r"(after), [rbx] "=m"(rbx), [r12] "=m"(r12), [r15] "=m"(r15)
        : [m] "r"(magic), "D"(pid), "S"(static_cast<uint64_t>(SIGUSR2))
        : "rax", "rcx", "r11", "rbx", "r12", "r13", "r14", "r15", "memory");
    ASSERT_EQ(g_seen.rip, after) << "round " << i;
    EXPECT_EQ(g_seen.rsp, rsp) << "round " << i;
    EXPECT_EQ(g_seen.rbx, magic) << "round " << i;
    EXPECT_EQ(g_seen.r12, magic + 1) << "round " << i;
    EXPECT_EQ(g_seen.r13, magic + 2) << "round " << i;
    EXPECT_EQ(g_seen.r14, magic + 3) << "round " << i;
    EXPECT_EQ(g_seen.r15, magic + 4) << "round " << i;
    // ...and after the handler the call's registers are as it left them.
    EXPECT_EQ(rbx, magic) << "round " << i;
    EXPECT_EQ(r12, magic + 1) << "round " << i;
    EXPECT_EQ(r15, magic + 4) << "round " << i;
  }
}

}  // namespace
