// Smaller Linux x86-64 ABI structs and constants: time, resource usage, sysinfo,
// uname, rlimit, poll, times, terminal ioctls, sched_attr, clone3, robust futex list, auxv keys
// and futex operations. Constants use kName: the C names are macros in glibc headers.
#ifndef USENTRY_ABI_MISC_H_
#define USENTRY_ABI_MISC_H_

#include <cstddef>
#include <cstdint>

namespace usentry::abi {

// ---- Time --------------------------------------------------------------------------

struct Timespec {
  int64_t sec;
  int64_t nsec;
};
static_assert(sizeof(Timespec) == 16);

struct Timeval {
  int64_t sec;
  int64_t usec;
};
static_assert(sizeof(Timeval) == 16);

struct Itimerval {
  Timeval interval;
  Timeval value;
};
static_assert(sizeof(Itimerval) == 32);

struct Itimerspec {
  Timespec interval;
  Timespec value;
};
static_assert(sizeof(Itimerspec) == 32);

// utimensat special nsec values.
inline constexpr int64_t kUtimeNow = (1l << 30) - 1;
inline constexpr int64_t kUtimeOmit = (1l << 30) - 2;

// struct tms (times(2)), in clock ticks (kClockTicksPerSecond).
struct Tms {
  int64_t utime;
  int64_t stime;
  int64_t cutime;
  int64_t cstime;
};
static_assert(sizeof(Tms) == 32);
inline constexpr int64_t kClockTicksPerSecond = 100;  // USER_HZ, also AT_CLKTCK

// ---- Resources ---------------------------------------------------------------------

struct Rusage {
  Timeval utime;
  Timeval stime;
  int64_t maxrss;  // kilobytes
  int64_t ixrss;
  int64_t idrss;
  int64_t isrss;
  int64_t minflt;
  int64_t majflt;
  int64_t nswap;
  int64_t inblock;
  int64_t oublock;
  int64_t msgsnd;
  int64_t msgrcv;
  int64_t nsignals;
  int64_t nvcsw;
  int64_t nivcsw;
};
static_assert(sizeof(Rusage) == 144);
static_assert(offsetof(Rusage, maxrss) == 32);
static_assert(offsetof(Rusage, nivcsw) == 136);

inline constexpr int kRusageSelf = 0;
inline constexpr int kRusageChildren = -1;
inline constexpr int kRusageThread = 1;

struct Rlimit {
  uint64_t cur;
  uint64_t max;
};
static_assert(sizeof(Rlimit) == 16);
inline constexpr uint64_t kRlimInfinity = ~uint64_t{0};

// Resource numbers (getrlimit/prlimit64).
inline constexpr int kRlimitCpu = 0;
inline constexpr int kRlimitFsize = 1;
inline constexpr int kRlimitData = 2;
inline constexpr int kRlimitStack = 3;
inline constexpr int kRlimitCore = 4;
inline constexpr int kRlimitRss = 5;
inline constexpr int kRlimitNproc = 6;
inline constexpr int kRlimitNofile = 7;
inline constexpr int kRlimitMemlock = 8;
inline constexpr int kRlimitAs = 9;
inline constexpr int kRlimitLocks = 10;
inline constexpr int kRlimitSigpending = 11;
inline constexpr int kRlimitMsgqueue = 12;
inline constexpr int kRlimitNice = 13;
inline constexpr int kRlimitRtprio = 14;
inline constexpr int kRlimitRttime = 15;
inline constexpr int kRlimitNlimits = 16;

// struct sysinfo on x86-64. The kernel's trailing char _f[20-2*sizeof(long)-sizeof(int)]
// is empty on 64-bit; the struct is padded to 112 bytes.
struct Sysinfo {
  int64_t uptime;
  uint64_t loads[3];  // 1, 5, 15 minute load averages, fixed point << 16
  uint64_t totalram;
  uint64_t freeram;
  uint64_t sharedram;
  uint64_t bufferram;
  uint64_t totalswap;
  uint64_t freeswap;
  uint16_t procs;
  uint16_t pad;
  uint32_t pad2;  // implicit in the kernel's struct
  uint64_t totalhigh;
  uint64_t freehigh;
  uint32_t mem_unit;
  uint32_t pad3;  // implicit tail padding
};
static_assert(sizeof(Sysinfo) == 112);
static_assert(offsetof(Sysinfo, procs) == 80);
static_assert(offsetof(Sysinfo, totalhigh) == 88);
static_assert(offsetof(Sysinfo, mem_unit) == 104);

// struct new_utsname (uname(2)): six NUL-terminated fields of 65 bytes.
inline constexpr size_t kUtsFieldLen = 65;
struct NewUtsname {
  char sysname[kUtsFieldLen];
  char nodename[kUtsFieldLen];
  char release[kUtsFieldLen];
  char version[kUtsFieldLen];
  char machine[kUtsFieldLen];
  char domainname[kUtsFieldLen];
};
static_assert(sizeof(NewUtsname) == 390);

// ---- poll --------------------------------------------------------------------------

struct Pollfd {
  int32_t fd;
  int16_t events;
  int16_t revents;
};
static_assert(sizeof(Pollfd) == 8);

inline constexpr int16_t kPollIn = 0x001;
inline constexpr int16_t kPollPri = 0x002;
inline constexpr int16_t kPollOut = 0x004;
inline constexpr int16_t kPollErr = 0x008;
inline constexpr int16_t kPollHup = 0x010;
inline constexpr int16_t kPollNval = 0x020;
inline constexpr int16_t kPollRdnorm = 0x040;
inline constexpr int16_t kPollRdband = 0x080;
inline constexpr int16_t kPollWrnorm = 0x100;
inline constexpr int16_t kPollWrband = 0x200;
inline constexpr int16_t kPollMsg = 0x400;
inline constexpr int16_t kPollRdhup = 0x2000;

// ---- Terminals ---------------------------------------------------------------------

// struct termios as TCGETS/TCSETS copy it (include/uapi/asm-generic/termbits.h): the
// kernel's has no speed fields and 19 control characters; glibc's struct termios is
// larger (NCCS 32, c_ispeed, c_ospeed), so never memcpy one into the other.
inline constexpr size_t kNccs = 19;
struct Termios {
  uint32_t iflag;
  uint32_t oflag;
  uint32_t cflag;
  uint32_t lflag;
  uint8_t line;
  uint8_t cc[kNccs];
};
static_assert(sizeof(Termios) == 36);
static_assert(offsetof(Termios, line) == 16);
static_assert(offsetof(Termios, cc) == 17);

struct Winsize {
  uint16_t row;
  uint16_t col;
  uint16_t xpixel;
  uint16_t ypixel;
};
static_assert(sizeof(Winsize) == 8);

// Terminal ioctl request numbers (x86-64 uses the generic values).
inline constexpr uint32_t kTcgets = 0x5401;
inline constexpr uint32_t kTcsets = 0x5402;
inline constexpr uint32_t kTcsetsw = 0x5403;
inline constexpr uint32_t kTcsetsf = 0x5404;
inline constexpr uint32_t kTiocsctty = 0x540e;
inline constexpr uint32_t kTiocgpgrp = 0x540f;
inline constexpr uint32_t kTiocspgrp = 0x5410;
inline constexpr uint32_t kTiocgwinsz = 0x5413;
inline constexpr uint32_t kTiocswinsz = 0x5414;
inline constexpr uint32_t kFionread = 0x541b;
inline constexpr uint32_t kFionbio = 0x5421;
inline constexpr uint32_t kTiocnotty = 0x5422;
inline constexpr uint32_t kTiocgptn = 0x80045430;
inline constexpr uint32_t kTiocsptlck = 0x40045431;
inline constexpr uint32_t kFioclex = 0x5451;
inline constexpr uint32_t kFionclex = 0x5450;

// ---- sched_setattr -----------------------------------------------------------------

// struct sched_attr, SCHED_ATTR_SIZE_VER1 (glibc before 2.41 does not declare it). For a
// SCHED_OTHER task, sched_runtime is its requested slice (Linux 6.12).
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};
static_assert(sizeof(SchedAttr) == 56);
inline constexpr uint32_t kSchedAttrSizeVer0 = 48;

// ---- clone3 ------------------------------------------------------------------------

// struct clone_args, CLONE_ARGS_SIZE_VER2 (88 bytes). clone3 accepts smaller (VER0 = 64,
// VER1 = 80) and larger sizes; larger ones must have zero bytes past what is known.
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;       // app address of an int
  uint64_t child_tid;   // app address
  uint64_t parent_tid;  // app address
  uint64_t exit_signal;
  uint64_t stack;  // lowest address of the stack (clone3), not its top
  uint64_t stack_size;
  uint64_t tls;
  uint64_t set_tid;  // app address of a pid_t array
  uint64_t set_tid_size;
  uint64_t cgroup;
};
static_assert(sizeof(CloneArgs) == 88);
static_assert(offsetof(CloneArgs, exit_signal) == 32);
static_assert(offsetof(CloneArgs, tls) == 56);
static_assert(offsetof(CloneArgs, cgroup) == 80);
inline constexpr size_t kCloneArgsSizeVer0 = 64;
inline constexpr size_t kCloneArgsSizeVer1 = 80;
inline constexpr size_t kCloneArgsSizeVer2 = 88;

// clone flags.
inline constexpr uint64_t kCloneVm = 0x00000100;
inline constexpr uint64_t kCloneFs = 0x00000200;
inline constexpr uint64_t kCloneFiles = 0x00000400;
inline constexpr uint64_t kCloneSighand = 0x00000800;
inline constexpr uint64_t kClonePidfd = 0x00001000;
inline constexpr uint64_t kClonePtrace = 0x00002000;
inline constexpr uint64_t kCloneVfork = 0x00004000;
inline constexpr uint64_t kCloneParent = 0x00008000;
inline constexpr uint64_t kCloneThread = 0x00010000;
inline constexpr uint64_t kCloneNewns = 0x00020000;
inline constexpr uint64_t kCloneSysvsem = 0x00040000;
inline constexpr uint64_t kCloneSettls = 0x00080000;
inline constexpr uint64_t kCloneParentSettid = 0x00100000;
inline constexpr uint64_t kCloneChildCleartid = 0x00200000;
inline constexpr uint64_t kCloneDetached = 0x00400000;
inline constexpr uint64_t kCloneUntraced = 0x00800000;
inline constexpr uint64_t kCloneChildSettid = 0x01000000;
inline constexpr uint64_t kCloneNewcgroup = 0x02000000;
inline constexpr uint64_t kCloneNewuts = 0x04000000;
inline constexpr uint64_t kCloneNewipc = 0x08000000;
inline constexpr uint64_t kCloneNewuser = 0x10000000;
inline constexpr uint64_t kCloneNewpid = 0x20000000;
inline constexpr uint64_t kCloneNewnet = 0x40000000;
inline constexpr uint64_t kCloneIo = 0x80000000;
inline constexpr uint64_t kCloneClearSighand = 0x100000000;  // clone3 only
inline constexpr uint64_t kCloneIntoCgroup = 0x200000000;    // clone3 only
inline constexpr uint64_t kCsignal = 0xff;                   // exit signal bits of clone(2)'s flags

// ---- Futexes -----------------------------------------------------------------------

// struct robust_list_head (set_robust_list). Each list entry is a pointer to the next;
// the futex word is at entry + futex_offset.
struct RobustListHead {
  uint64_t list_next;  // app address; points to itself when the list is empty
  int64_t futex_offset;
  uint64_t list_op_pending;
};
static_assert(sizeof(RobustListHead) == 24);

struct FutexOps {
  static constexpr int kWait = 0;
  static constexpr int kWake = 1;
  static constexpr int kFd = 2;  // removed in 2.6.26
  static constexpr int kRequeue = 3;
  static constexpr int kCmpRequeue = 4;
  static constexpr int kWakeOp = 5;
  static constexpr int kLockPi = 6;
  static constexpr int kUnlockPi = 7;
  static constexpr int kTrylockPi = 8;
  static constexpr int kWaitBitset = 9;
  static constexpr int kWakeBitset = 10;
  static constexpr int kWaitRequeuePi = 11;
  static constexpr int kCmpRequeuePi = 12;
  static constexpr int kLockPi2 = 13;

  static constexpr int kPrivateFlag = 128;
  static constexpr int kClockRealtime = 256;
  // op & kCmdMask is the operation.
  static constexpr int kCmdMask = ~(kPrivateFlag | kClockRealtime);

  static constexpr uint32_t kBitsetMatchAny = 0xffffffff;
  // Bits of a PI / robust futex word.
  static constexpr uint32_t kWaiters = 0x80000000;
  static constexpr uint32_t kOwnerDied = 0x40000000;
  static constexpr uint32_t kTidMask = 0x3fffffff;
};
inline constexpr int kRobustListLimit = 2048;  // entries walked at exit, as Linux

// ---- Auxiliary vector --------------------------------------------------------------

// Keys of the auxv pairs placed on the initial stack (include/uapi/linux/auxvec.h).
inline constexpr uint64_t kAtNull = 0;
inline constexpr uint64_t kAtIgnore = 1;
inline constexpr uint64_t kAtExecfd = 2;
inline constexpr uint64_t kAtPhdr = 3;
inline constexpr uint64_t kAtPhent = 4;
inline constexpr uint64_t kAtPhnum = 5;
inline constexpr uint64_t kAtPagesz = 6;
inline constexpr uint64_t kAtBase = 7;  // interpreter load address
inline constexpr uint64_t kAtFlags = 8;
inline constexpr uint64_t kAtEntry = 9;  // the program's entry, not the interpreter's
inline constexpr uint64_t kAtNotelf = 10;
inline constexpr uint64_t kAtUid = 11;
inline constexpr uint64_t kAtEuid = 12;
inline constexpr uint64_t kAtGid = 13;
inline constexpr uint64_t kAtEgid = 14;
inline constexpr uint64_t kAtPlatform = 15;  // address of "x86_64"
inline constexpr uint64_t kAtHwcap = 16;
inline constexpr uint64_t kAtClktck = 17;
inline constexpr uint64_t kAtSecure = 23;
inline constexpr uint64_t kAtBasePlatform = 24;
inline constexpr uint64_t kAtRandom = 25;  // address of 16 random bytes
inline constexpr uint64_t kAtHwcap2 = 26;
inline constexpr uint64_t kAtRseqFeatureSize = 27;
inline constexpr uint64_t kAtRseqAlign = 28;
inline constexpr uint64_t kAtHwcap3 = 29;
inline constexpr uint64_t kAtHwcap4 = 30;
inline constexpr uint64_t kAtExecfn = 31;       // address of the exec'd path string
inline constexpr uint64_t kAtSysinfoEhdr = 33;  // vDSO base
inline constexpr uint64_t kAtMinsigstksz = 51;

}  // namespace usentry::abi

#endif  // USENTRY_ABI_MISC_H_
