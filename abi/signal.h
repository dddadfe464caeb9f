// Linux x86-64 signal ABI as data: signal numbers and default actions, rt_sigaction's
// struct, siginfo, sigaltstack, the signal frame (sigcontext, ucontext, rt_sigframe)
// and the FXSAVE/XSAVE markers the kernel puts in the frame's FP state.
//
// Member names drop the sa_/si_/ss_/uc_ prefixes because glibc defines several of
// them as macros (sa_handler, si_pid, ...); constants use kName for the same reason.
#ifndef USENTRY_ABI_SIGNAL_H_
#define USENTRY_ABI_SIGNAL_H_

#include <cstddef>
#include <cstdint>

namespace usentry::abi {

// ---- Signal numbers --------------------------------------------------------------

inline constexpr int kSigHup = 1;
inline constexpr int kSigInt = 2;
inline constexpr int kSigQuit = 3;
inline constexpr int kSigIll = 4;
inline constexpr int kSigTrap = 5;
inline constexpr int kSigAbrt = 6;
inline constexpr int kSigBus = 7;
inline constexpr int kSigFpe = 8;
inline constexpr int kSigKill = 9;
inline constexpr int kSigUsr1 = 10;
inline constexpr int kSigSegv = 11;
inline constexpr int kSigUsr2 = 12;
inline constexpr int kSigPipe = 13;
inline constexpr int kSigAlrm = 14;
inline constexpr int kSigTerm = 15;
inline constexpr int kSigStkflt = 16;
inline constexpr int kSigChld = 17;
inline constexpr int kSigCont = 18;
inline constexpr int kSigStop = 19;
inline constexpr int kSigTstp = 20;
inline constexpr int kSigTtin = 21;
inline constexpr int kSigTtou = 22;
inline constexpr int kSigUrg = 23;
inline constexpr int kSigXcpu = 24;
inline constexpr int kSigXfsz = 25;
inline constexpr int kSigVtalrm = 26;
inline constexpr int kSigProf = 27;
inline constexpr int kSigWinch = 28;
inline constexpr int kSigIo = 29;  // also SIGPOLL
inline constexpr int kSigPwr = 30;
inline constexpr int kSigSys = 31;
// The kernel's real-time range. glibc reserves 32 and 33 for itself and reports
// SIGRTMIN as 34 to programs; the kernel makes no such distinction.
inline constexpr int kSigRtMin = 32;
inline constexpr int kSigRtMax = 64;
inline constexpr int kNumSignals = 64;

// "SIGHUP" ... "SIGSYS", "SIGRTMIN", "SIGRTMIN+1" ... "SIGRTMAX"; nullptr outside 1..64.
const char* SignalName(int sig);

// What happens when a signal with SIG_DFL disposition is delivered (signal(7)).
enum class SignalDefault : uint8_t {
  kTerminate,
  kCore,  // terminate and dump core (the exit status has the 0x80 bit)
  kIgnore,
  kStop,
  kContinue,
};

// Indexed by signal number; entry 0 is unused. Real-time signals terminate.
inline constexpr SignalDefault kSignalDefaults[kNumSignals + 1] = {
    SignalDefault::kIgnore,     // 0 (no signal)
    SignalDefault::kTerminate,  // SIGHUP
    SignalDefault::kTerminate,  // SIGINT
    SignalDefault::kCore,       // SIGQUIT
    SignalDefault::kCore,       // SIGILL
    SignalDefault::kCore,       // SIGTRAP
    SignalDefault::kCore,       // SIGABRT
    SignalDefault::kCore,       // SIGBUS
    SignalDefault::kCore,       // SIGFPE
    SignalDefault::kTerminate,  // SIGKILL
    SignalDefault::kTerminate,  // SIGUSR1
    SignalDefault::kCore,       // SIGSEGV
    SignalDefault::kTerminate,  // SIGUSR2
    SignalDefault::kTerminate,  // SIGPIPE
    SignalDefault::kTerminate,  // SIGALRM
    SignalDefault::kTerminate,  // SIGTERM
    SignalDefault::kTerminate,  // SIGSTKFLT
    SignalDefault::kIgnore,     // SIGCHLD
    SignalDefault::kContinue,   // SIGCONT
    SignalDefault::kStop,       // SIGSTOP
    SignalDefault::kStop,       // SIGTSTP
    SignalDefault::kStop,       // SIGTTIN
    SignalDefault::kStop,       // SIGTTOU
    SignalDefault::kIgnore,     // SIGURG
    SignalDefault::kCore,       // SIGXCPU
    SignalDefault::kCore,       // SIGXFSZ
    SignalDefault::kTerminate,  // SIGVTALRM
    SignalDefault::kTerminate,  // SIGPROF
    SignalDefault::kIgnore,     // SIGWINCH
    SignalDefault::kTerminate,  // SIGIO
    SignalDefault::kTerminate,  // SIGPWR
    SignalDefault::kCore,       // SIGSYS
    // 32..64: real-time signals.
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
    SignalDefault::kTerminate,
};
static_assert(sizeof(kSignalDefaults) == kNumSignals + 1);

// A 64-bit signal set: bit (sig - 1) stands for signal sig. rt_sig* calls take
// sigsetsize, which must be 8.
using SigSet = uint64_t;
inline constexpr size_t kSigSetSize = 8;
constexpr SigSet SigMask(int sig) { return SigSet{1} << (sig - 1); }
// SIGKILL and SIGSTOP can be neither blocked, caught nor ignored.
inline constexpr SigSet kUnblockableSignals = SigMask(kSigKill) | SigMask(kSigStop);

// rt_sigprocmask `how`.
inline constexpr int kSigBlock = 0;
inline constexpr int kSigUnblock = 1;
inline constexpr int kSigSetmask = 2;

// ---- rt_sigaction ----------------------------------------------------------------

// Special handler values.
inline constexpr uint64_t kSigDfl = 0;
inline constexpr uint64_t kSigIgn = 1;

// sa_flags.
inline constexpr uint64_t kSaNocldstop = 0x00000001;
inline constexpr uint64_t kSaNocldwait = 0x00000002;
inline constexpr uint64_t kSaSiginfo = 0x00000004;
inline constexpr uint64_t kSaUnsupported = 0x00000400;    // probe bit, always cleared
inline constexpr uint64_t kSaExposeTagbits = 0x00000800;  // no meaning on x86-64
inline constexpr uint64_t kSaRestorer = 0x04000000;       // x86: return via restorer
inline constexpr uint64_t kSaOnstack = 0x08000000;
inline constexpr uint64_t kSaRestart = 0x10000000;
inline constexpr uint64_t kSaNodefer = 0x40000000;
inline constexpr uint64_t kSaResethand = 0x80000000;

// struct sigaction as rt_sigaction(2) reads and writes it with sigsetsize == 8. The
// member order differs from glibc's struct sigaction (mask is last here).
struct KernelSigaction {
  uint64_t handler;  // kSigDfl, kSigIgn or a function address
  uint64_t flags;    // kSa*
  uint64_t restorer;
  SigSet mask;
};
static_assert(sizeof(KernelSigaction) == 32);
static_assert(offsetof(KernelSigaction, flags) == 8);
static_assert(offsetof(KernelSigaction, restorer) == 16);
static_assert(offsetof(KernelSigaction, mask) == 24);

// ---- siginfo ---------------------------------------------------------------------

// si_code values common to all signals (<= 0 means sent by a process).
inline constexpr int kSiUser = 0;
inline constexpr int kSiKernel = 0x80;
inline constexpr int kSiQueue = -1;
inline constexpr int kSiTimer = -2;
inline constexpr int kSiMesgq = -3;
inline constexpr int kSiAsyncio = -4;
inline constexpr int kSiSigio = -5;
inline constexpr int kSiTkill = -6;
// SIGCHLD.
inline constexpr int kCldExited = 1;
inline constexpr int kCldKilled = 2;
inline constexpr int kCldDumped = 3;
inline constexpr int kCldTrapped = 4;
inline constexpr int kCldStopped = 5;
inline constexpr int kCldContinued = 6;
// SIGSEGV.
inline constexpr int kSegvMaperr = 1;
inline constexpr int kSegvAccerr = 2;
// SIGBUS.
inline constexpr int kBusAdraln = 1;
inline constexpr int kBusAdrerr = 2;
inline constexpr int kBusObjerr = 3;
// SIGILL.
inline constexpr int kIllIllopc = 1;
inline constexpr int kIllIllopn = 2;
inline constexpr int kIllIlladr = 3;
inline constexpr int kIllIlltrp = 4;
inline constexpr int kIllPrvopc = 5;
inline constexpr int kIllPrvreg = 6;
inline constexpr int kIllCoproc = 7;
inline constexpr int kIllBadstk = 8;
// SIGFPE.
inline constexpr int kFpeIntdiv = 1;
inline constexpr int kFpeIntovf = 2;
inline constexpr int kFpeFltdiv = 3;
inline constexpr int kFpeFltovf = 4;
inline constexpr int kFpeFltund = 5;
inline constexpr int kFpeFltres = 6;
inline constexpr int kFpeFltinv = 7;
inline constexpr int kFpeFltsub = 8;
// SIGTRAP.
inline constexpr int kTrapBrkpt = 1;
inline constexpr int kTrapTrace = 2;
// SIGSYS.
inline constexpr int kSysSeccomp = 1;

// union sigval.
union SigVal {
  int32_t sival_int;
  uint64_t sival_ptr;
};
static_assert(sizeof(SigVal) == 8);

// siginfo_t (include/uapi/asm-generic/siginfo.h): three ints, then a union that starts
// at offset 16 because it contains 8-byte members; 128 bytes in all.
struct SigInfo {
  int32_t signo;
  int32_t err;  // si_errno
  int32_t code;
  int32_t pad0;
  union Fields {
    struct Kill {  // SI_USER, SI_TKILL: kill(2), tgkill(2)
      int32_t pid;
      uint32_t uid;
    } kill;
    struct Timer {  // SI_TIMER: POSIX timers
      int32_t tid;
      int32_t overrun;
      SigVal value;
      int32_t sys_private;
    } timer;
    struct Rt {  // SI_QUEUE, SI_MESGQ: sigqueue(3)
      int32_t pid;
      uint32_t uid;
      SigVal value;
    } rt;
    struct Chld {  // SIGCHLD
      int32_t pid;
      uint32_t uid;
      int32_t status;  // exit code, or the signal number
      int32_t pad;
      int64_t utime;  // clock ticks
      int64_t stime;
    } chld;
    struct Sigfault {  // SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP
      uint64_t addr;
      int16_t addr_lsb;
    } sigfault;
    struct Sigpoll {  // SIGIO
      int64_t band;
      int32_t fd;
    } sigpoll;
    struct Sigsys {  // SIGSYS from seccomp
      uint64_t call_addr;
      int32_t syscall;
      uint32_t arch;
    } sigsys;
    uint8_t raw[112];
  } fields;
};
static_assert(sizeof(SigInfo) == 128);
static_assert(offsetof(SigInfo, code) == 8);
static_assert(offsetof(SigInfo, fields) == 16);
static_assert(offsetof(SigInfo, fields.kill.uid) == 20);
static_assert(offsetof(SigInfo, fields.rt.value) == 24);
static_assert(offsetof(SigInfo, fields.chld.status) == 24);
static_assert(offsetof(SigInfo, fields.chld.utime) == 32);
static_assert(offsetof(SigInfo, fields.chld.stime) == 40);
static_assert(offsetof(SigInfo, fields.sigfault.addr) == 16);
static_assert(offsetof(SigInfo, fields.sigsys.syscall) == 24);

// ---- sigevent, signalfd ----------------------------------------------------------

// sigev_notify (timer_create(2)). SIGEV_THREAD is a glibc construct; the kernel treats
// it as kSigevSignal.
inline constexpr int kSigevSignal = 0;
inline constexpr int kSigevNone = 1;
inline constexpr int kSigevThread = 2;
inline constexpr int kSigevThreadId = 4;

// struct sigevent (include/uapi/asm-generic/siginfo.h): 64 bytes.
struct SigEvent {
  SigVal value;
  int32_t signo;
  int32_t notify;  // kSigev*
  union {
    int32_t pad[12];
    int32_t tid;  // kSigevThreadId: the target thread
  } un;
};
static_assert(sizeof(SigEvent) == 64);
static_assert(offsetof(SigEvent, signo) == 8);
static_assert(offsetof(SigEvent, notify) == 12);
static_assert(offsetof(SigEvent, un.tid) == 16);

// struct signalfd_siginfo (include/uapi/linux/signalfd.h): what read(2) on a signalfd
// returns per signal, 128 bytes.
struct SignalfdSiginfo {
  uint32_t signo;
  int32_t err;  // ssi_errno
  int32_t code;
  uint32_t pid;
  uint32_t uid;
  int32_t fd;
  uint32_t tid;  // POSIX timer id
  uint32_t band;
  uint32_t overrun;
  uint32_t trapno;
  int32_t status;
  int32_t int_value;  // ssi_int
  uint64_t ptr;
  uint64_t utime;
  uint64_t stime;
  uint64_t addr;
  uint16_t addr_lsb;
  uint16_t pad2;
  int32_t syscall;
  uint64_t call_addr;
  uint32_t arch;
  uint8_t pad[28];
};
static_assert(sizeof(SignalfdSiginfo) == 128);
static_assert(offsetof(SignalfdSiginfo, tid) == 24);
static_assert(offsetof(SignalfdSiginfo, int_value) == 44);
static_assert(offsetof(SignalfdSiginfo, ptr) == 48);
static_assert(offsetof(SignalfdSiginfo, addr) == 72);
static_assert(offsetof(SignalfdSiginfo, addr_lsb) == 80);
static_assert(offsetof(SignalfdSiginfo, syscall) == 84);
static_assert(offsetof(SignalfdSiginfo, call_addr) == 88);
static_assert(offsetof(SignalfdSiginfo, arch) == 96);

// ---- sigaltstack -----------------------------------------------------------------

inline constexpr int kSsOnstack = 1;
inline constexpr int kSsDisable = 2;
inline constexpr uint32_t kSsAutodisarm = 1u << 31;
inline constexpr uint64_t kMinSigStkSz = 2048;  // the kernel's constant (x86 may need more)
inline constexpr uint64_t kSigStkSz = 8192;

// stack_t.
struct StackT {
  uint64_t sp;
  int32_t flags;  // kSs*
  int32_t pad;
  uint64_t size;
};
static_assert(sizeof(StackT) == 24);
static_assert(offsetof(StackT, flags) == 8);
static_assert(offsetof(StackT, size) == 16);

// ---- Signal frame ----------------------------------------------------------------

// x86-64 Linux's user segment selectors (__USER_CS, __USER32_CS, __USER_DS): the only
// ones a signal frame may name for cs and ss.
inline constexpr uint16_t kUserCs = 0x33;
inline constexpr uint16_t kUser32Cs = 0x23;
inline constexpr uint16_t kUserDs = 0x2b;

// struct sigcontext for x86-64 (arch/x86/include/uapi/asm/sigcontext.h): the
// registers at the time of the signal, restored by rt_sigreturn.
struct SigContext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip;
  uint64_t eflags;
  uint16_t cs, gs, fs;  // gs/fs are never saved or restored by Linux; keep them 0
  uint16_t ss;          // meaningful only with kUcSigcontextSs in uc_flags
  uint64_t err;
  uint64_t trapno;
  uint64_t oldmask;
  uint64_t cr2;      // fault address for SIGSEGV
  uint64_t fpstate;  // app address of the FP state (FxsaveArea), 0 if none
  uint64_t reserved1[8];
};
static_assert(sizeof(SigContext) == 256);
static_assert(offsetof(SigContext, rdi) == 64);
static_assert(offsetof(SigContext, rax) == 104);
static_assert(offsetof(SigContext, rsp) == 120);
static_assert(offsetof(SigContext, rip) == 128);
static_assert(offsetof(SigContext, eflags) == 136);
static_assert(offsetof(SigContext, cs) == 144);
static_assert(offsetof(SigContext, ss) == 150);
static_assert(offsetof(SigContext, err) == 152);
static_assert(offsetof(SigContext, trapno) == 160);
static_assert(offsetof(SigContext, oldmask) == 168);
static_assert(offsetof(SigContext, cr2) == 176);
static_assert(offsetof(SigContext, fpstate) == 184);
static_assert(offsetof(SigContext, reserved1) == 192);

// uc_flags bits (arch/x86/include/uapi/asm/ucontext.h).
inline constexpr uint64_t kUcFpXstate = 0x1;         // fpstate has the XSAVE extension
inline constexpr uint64_t kUcSigcontextSs = 0x2;     // ss in sigcontext is valid
inline constexpr uint64_t kUcStrictRestoreSs = 0x4;  // sigreturn restores ss as saved

// The kernel's struct ucontext (include/uapi/asm-generic/ucontext.h): 304 bytes. glibc's
// ucontext_t is larger (it appends FP register storage); the kernel never writes that.
struct UContext {
  uint64_t flags;  // kUc*
  uint64_t link;
  StackT stack;
  SigContext mcontext;
  SigSet sigmask;  // the mask to restore on rt_sigreturn
};
static_assert(sizeof(UContext) == 304);
static_assert(offsetof(UContext, stack) == 16);
static_assert(offsetof(UContext, mcontext) == 40);
static_assert(offsetof(UContext, sigmask) == 296);

// struct rt_sigframe for x86-64 (arch/x86/include/asm/sigframe.h). How Linux places it
// (arch/x86/kernel/signal.c, get_sigframe):
//   sp = the app's rsp - 128 (the red zone), or the top of the sigaltstack;
//   FP state: sp = round_down(sp - fp_size, 64); uc.mcontext.fpstate = sp. It is an
//     FxsaveArea followed by the XSAVE extension and kFpXstateMagic2 (fp_size covers all);
//   frame: sp = ((sp - sizeof(RtSigframe) + 8) & ~15) - 8, i.e. (frame + 8) is 16-byte
//     aligned, as if `pretcode` had been pushed by a call.
// The handler starts with rsp = frame (pointing at pretcode, the sa_restorer address,
// so its `ret` calls rt_sigreturn), rdi = signo, rsi = &info, rdx = &uc, rax = 0.
// rt_sigreturn finds the frame at its rsp - 8 (the `ret` popped pretcode).
// uc.flags is kUcFpXstate (when XSAVE is used) | kUcSigcontextSs | kUcStrictRestoreSs.
struct RtSigframe {
  uint64_t pretcode;
  UContext uc;
  SigInfo info;
};
static_assert(offsetof(RtSigframe, pretcode) == 0);
static_assert(offsetof(RtSigframe, uc) == 8);
static_assert(offsetof(RtSigframe, info) == 312);
static_assert(sizeof(RtSigframe) == 440);

// ---- FP state in the frame -------------------------------------------------------

inline constexpr uint32_t kFpXstateMagic1 = 0x46505853;  // "FPXS" in sw_reserved
inline constexpr uint32_t kFpXstateMagic2 = 0x46505845;  // "FPXE" after the xsave area
inline constexpr size_t kFpXstateMagic2Size = 4;

// The software-reserved bytes of the FXSAVE image (struct _fpx_sw_bytes). When magic1
// is kFpXstateMagic1 the FP state is an XSAVE image of xstate_size bytes, followed by
// kFpXstateMagic2 at offset extended_size - 4 (extended_size = xstate_size + 4).
struct FpxSwBytes {
  uint32_t magic1;
  uint32_t extended_size;
  uint64_t xfeatures;
  uint32_t xstate_size;
  uint32_t padding[7];
};
static_assert(sizeof(FpxSwBytes) == 48);
static_assert(offsetof(FpxSwBytes, xfeatures) == 8);
static_assert(offsetof(FpxSwBytes, xstate_size) == 16);

// The 512-byte FXSAVE image (struct _fpstate_64), the legacy part of any XSAVE image.
struct FxsaveArea {
  uint16_t cwd;
  uint16_t swd;
  uint16_t twd;  // abridged tag word
  uint16_t fop;
  uint64_t rip;
  uint64_t rdp;
  uint32_t mxcsr;
  uint32_t mxcsr_mask;
  uint32_t st_space[32];   // 8 x87 registers, 16 bytes each
  uint32_t xmm_space[64];  // 16 XMM registers, 16 bytes each
  uint32_t reserved2[12];
  FpxSwBytes sw_reserved;
};
static_assert(sizeof(FxsaveArea) == 512);
static_assert(offsetof(FxsaveArea, mxcsr) == 24);
static_assert(offsetof(FxsaveArea, st_space) == 32);
static_assert(offsetof(FxsaveArea, xmm_space) == 160);
static_assert(offsetof(FxsaveArea, sw_reserved) == 464);

// The XSAVE header that follows the FXSAVE image in an XSAVE area.
struct XsaveHeader {
  uint64_t xfeatures;
  uint64_t xcomp_bv;
  uint64_t reserved[6];
};
static_assert(sizeof(XsaveHeader) == 64);
inline constexpr size_t kXsaveHeaderOffset = 512;
inline constexpr uint64_t kXfeatureFp = 0x1;
inline constexpr uint64_t kXfeatureSse = 0x2;
inline constexpr uint64_t kXfeatureYmm = 0x4;
inline constexpr uint64_t kXfeaturePkru = 0x200;
inline constexpr uint32_t kMxcsrDefault = 0x1f80;
inline constexpr uint16_t kFpuCwdDefault = 0x37f;

}  // namespace usentry::abi

#endif  // USENTRY_ABI_SIGNAL_H_
