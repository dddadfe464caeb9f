// Cross-checks abi/ layouts against the host's Linux UAPI headers, at compile time.
// This file includes only kernel headers (no glibc or gtest), whose struct names would
// collide with glibc's; abi_test.cc calls AbiMatchesKernelHeaders() so it is linked.
#include <asm/sigcontext.h>
#include <asm/siginfo.h>
#include <asm/signal.h>
#include <asm/stat.h>
#include <asm/termbits.h>
#include <asm/termios.h>
#include <linux/auxvec.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <linux/sched/types.h>
#include <linux/shm.h>
#include <linux/signalfd.h>
#include <linux/stat.h>
#include <linux/sysinfo.h>
#include <linux/tcp.h>
#include <linux/utsname.h>

// Needs stack_t, sigcontext and sigset_t from the headers above.
#include <asm-generic/ucontext.h>

#include <cstddef>

#include "abi/ipc.h"
#include "abi/misc.h"
#include "abi/signal.h"
#include "abi/stat.h"
#include "abi/tcp.h"

namespace usentry::abi {
namespace {

#define SAME_OFFSET(ours, field, theirs, tfield) \
  static_assert(offsetof(ours, field) == offsetof(theirs, tfield), #ours "." #field)

static_assert(sizeof(Stat) == sizeof(struct stat));
SAME_OFFSET(Stat, nlink, struct stat, st_nlink);
SAME_OFFSET(Stat, mode, struct stat, st_mode);
SAME_OFFSET(Stat, rdev, struct stat, st_rdev);
SAME_OFFSET(Stat, size, struct stat, st_size);
SAME_OFFSET(Stat, blocks, struct stat, st_blocks);
SAME_OFFSET(Stat, atime_sec, struct stat, st_atime);
SAME_OFFSET(Stat, atime_nsec, struct stat, st_atime_nsec);
SAME_OFFSET(Stat, mtime_sec, struct stat, st_mtime);
SAME_OFFSET(Stat, ctime_nsec, struct stat, st_ctime_nsec);

static_assert(sizeof(Statx) == sizeof(struct statx));
SAME_OFFSET(Statx, mode, struct statx, stx_mode);
SAME_OFFSET(Statx, ino, struct statx, stx_ino);
SAME_OFFSET(Statx, attributes_mask, struct statx, stx_attributes_mask);
SAME_OFFSET(Statx, btime, struct statx, stx_btime);
SAME_OFFSET(Statx, mtime, struct statx, stx_mtime);
SAME_OFFSET(Statx, dev_minor, struct statx, stx_dev_minor);
SAME_OFFSET(Statx, mnt_id, struct statx, stx_mnt_id);
SAME_OFFSET(Statx, dio_offset_align, struct statx, stx_dio_offset_align);
static_assert(kStatxBasicStats == STATX_BASIC_STATS);
static_assert(kStatxBtime == STATX_BTIME);
static_assert(kStatxDioAlign == STATX_DIOALIGN);
static_assert(kStatxAll == STATX_ALL);

static_assert(sizeof(SigContext) == sizeof(struct sigcontext));
SAME_OFFSET(SigContext, rip, struct sigcontext, rip);
SAME_OFFSET(SigContext, cs, struct sigcontext, cs);
SAME_OFFSET(SigContext, gs, struct sigcontext, gs);
SAME_OFFSET(SigContext, fs, struct sigcontext, fs);
SAME_OFFSET(SigContext, ss, struct sigcontext, ss);
SAME_OFFSET(SigContext, err, struct sigcontext, err);
SAME_OFFSET(SigContext, cr2, struct sigcontext, cr2);
SAME_OFFSET(SigContext, fpstate, struct sigcontext, fpstate);
static_assert(sizeof(FpxSwBytes) == sizeof(struct _fpx_sw_bytes));
static_assert(sizeof(FxsaveArea) == sizeof(struct _fpstate_64));
SAME_OFFSET(FxsaveArea, xmm_space, struct _fpstate_64, xmm_space);
SAME_OFFSET(FxsaveArea, sw_reserved, struct _fpstate_64, sw_reserved);
static_assert(kFpXstateMagic1 == FP_XSTATE_MAGIC1);
static_assert(kFpXstateMagic2 == FP_XSTATE_MAGIC2);

static_assert(sizeof(SigInfo) == sizeof(siginfo_t));
SAME_OFFSET(SigInfo, code, siginfo_t, si_code);
SAME_OFFSET(SigInfo, fields.kill.pid, siginfo_t, si_pid);
SAME_OFFSET(SigInfo, fields.kill.uid, siginfo_t, si_uid);
SAME_OFFSET(SigInfo, fields.rt.value, siginfo_t, si_value);
SAME_OFFSET(SigInfo, fields.chld.status, siginfo_t, si_status);
SAME_OFFSET(SigInfo, fields.chld.utime, siginfo_t, si_utime);
SAME_OFFSET(SigInfo, fields.chld.stime, siginfo_t, si_stime);
SAME_OFFSET(SigInfo, fields.sigfault.addr, siginfo_t, si_addr);
SAME_OFFSET(SigInfo, fields.sigfault.addr_lsb, siginfo_t, si_addr_lsb);
SAME_OFFSET(SigInfo, fields.timer.overrun, siginfo_t, si_overrun);
SAME_OFFSET(SigInfo, fields.sigpoll.fd, siginfo_t, si_fd);
SAME_OFFSET(SigInfo, fields.sigsys.syscall, siginfo_t, si_syscall);
SAME_OFFSET(SigInfo, fields.sigsys.arch, siginfo_t, si_arch);

static_assert(sizeof(SigEvent) == sizeof(sigevent_t));
SAME_OFFSET(SigEvent, signo, sigevent_t, sigev_signo);
SAME_OFFSET(SigEvent, notify, sigevent_t, sigev_notify);
SAME_OFFSET(SigEvent, un.tid, sigevent_t, _sigev_un._tid);
static_assert(kSigevThreadId == SIGEV_THREAD_ID);
static_assert(sizeof(SignalfdSiginfo) == sizeof(struct signalfd_siginfo));
SAME_OFFSET(SignalfdSiginfo, tid, struct signalfd_siginfo, ssi_tid);
SAME_OFFSET(SignalfdSiginfo, overrun, struct signalfd_siginfo, ssi_overrun);
SAME_OFFSET(SignalfdSiginfo, int_value, struct signalfd_siginfo, ssi_int);
SAME_OFFSET(SignalfdSiginfo, ptr, struct signalfd_siginfo, ssi_ptr);
SAME_OFFSET(SignalfdSiginfo, addr_lsb, struct signalfd_siginfo, ssi_addr_lsb);
SAME_OFFSET(SignalfdSiginfo, call_addr, struct signalfd_siginfo, ssi_call_addr);
SAME_OFFSET(SignalfdSiginfo, arch, struct signalfd_siginfo, ssi_arch);

static_assert(sizeof(UContext) == sizeof(struct ucontext));
SAME_OFFSET(UContext, stack, struct ucontext, uc_stack);
SAME_OFFSET(UContext, mcontext, struct ucontext, uc_mcontext);
SAME_OFFSET(UContext, sigmask, struct ucontext, uc_sigmask);
// The UAPI struct sigaction of x86-64 is the one rt_sigaction really copies.
static_assert(sizeof(KernelSigaction) == sizeof(struct sigaction));
SAME_OFFSET(KernelSigaction, flags, struct sigaction, sa_flags);
SAME_OFFSET(KernelSigaction, restorer, struct sigaction, sa_restorer);
SAME_OFFSET(KernelSigaction, mask, struct sigaction, sa_mask);

static_assert(sizeof(StackT) == sizeof(stack_t));

static_assert(sizeof(TcpInfo) == sizeof(struct tcp_info));
SAME_OFFSET(TcpInfo, rto, struct tcp_info, tcpi_rto);
SAME_OFFSET(TcpInfo, rcv_space, struct tcp_info, tcpi_rcv_space);
SAME_OFFSET(TcpInfo, bytes_acked, struct tcp_info, tcpi_bytes_acked);
SAME_OFFSET(TcpInfo, delivery_rate, struct tcp_info, tcpi_delivery_rate);
SAME_OFFSET(TcpInfo, bytes_sent, struct tcp_info, tcpi_bytes_sent);
SAME_OFFSET(TcpInfo, snd_wnd, struct tcp_info, tcpi_snd_wnd);
SAME_OFFSET(StackT, flags, stack_t, ss_flags);
SAME_OFFSET(StackT, size, stack_t, ss_size);
static_assert(kSaRestorer == SA_RESTORER);
static_assert(kSaOnstack == SA_ONSTACK);
static_assert(kSaRestart == SA_RESTART);
static_assert(kSaNodefer == SA_NODEFER);
static_assert(kSaResethand == SA_RESETHAND);
static_assert(kSaSiginfo == SA_SIGINFO);
static_assert(kSigRtMin == SIGRTMIN);
static_assert(kSigSys == SIGSYS);
static_assert(kSigStkflt == SIGSTKFLT);
static_assert(kMinSigStkSz == MINSIGSTKSZ);

static_assert(sizeof(Ipc64Perm) == sizeof(struct ipc64_perm));
SAME_OFFSET(Ipc64Perm, mode, struct ipc64_perm, mode);
SAME_OFFSET(Ipc64Perm, seq, struct ipc64_perm, seq);
static_assert(sizeof(ShmidDs) == sizeof(struct shmid64_ds));
SAME_OFFSET(ShmidDs, segsz, struct shmid64_ds, shm_segsz);
SAME_OFFSET(ShmidDs, ctime, struct shmid64_ds, shm_ctime);
SAME_OFFSET(ShmidDs, lpid, struct shmid64_ds, shm_lpid);
SAME_OFFSET(ShmidDs, nattch, struct shmid64_ds, shm_nattch);
static_assert(sizeof(ShmInfo64) == sizeof(struct shminfo64));
SAME_OFFSET(ShmInfo64, shmall, struct shminfo64, shmall);
static_assert(sizeof(ShmInfo) == sizeof(struct shm_info));
SAME_OFFSET(ShmInfo, shm_rss, struct shm_info, shm_rss);
SAME_OFFSET(ShmInfo, swap_successes, struct shm_info, swap_successes);
static_assert(kIpcCreat == IPC_CREAT && kIpcExcl == IPC_EXCL && kIpcPrivate == IPC_PRIVATE);
static_assert(kIpcRmid == IPC_RMID && kIpcSet == IPC_SET && kIpcStat == IPC_STAT);
static_assert(kIpcInfo == IPC_INFO);
static_assert(kShmRdonly == SHM_RDONLY && kShmRnd == SHM_RND && kShmRemap == SHM_REMAP);
static_assert(kShmExec == SHM_EXEC && kShmHugetlb == SHM_HUGETLB);
static_assert(kShmNoreserve == SHM_NORESERVE);
static_assert(kShmLock == SHM_LOCK && kShmUnlock == SHM_UNLOCK && kShmStat == SHM_STAT);
static_assert(kShmInfo == SHM_INFO && kShmStatAny == SHM_STAT_ANY);
// SHM_DEST and SHM_LOCKED are kernel-internal (not in the UAPI headers).

static_assert(sizeof(Termios) == sizeof(struct termios));
SAME_OFFSET(Termios, line, struct termios, c_line);
SAME_OFFSET(Termios, cc, struct termios, c_cc);
static_assert(kNccs == NCCS);
static_assert(sizeof(Winsize) == sizeof(struct winsize));

static_assert(sizeof(SchedAttr) == sizeof(struct sched_attr));
static_assert(kSchedAttrSizeVer0 == SCHED_ATTR_SIZE_VER0);
SAME_OFFSET(SchedAttr, sched_runtime, struct sched_attr, sched_runtime);
SAME_OFFSET(SchedAttr, sched_util_max, struct sched_attr, sched_util_max);

static_assert(sizeof(CloneArgs) == sizeof(struct clone_args));
static_assert(kCloneArgsSizeVer2 == CLONE_ARGS_SIZE_VER2);
SAME_OFFSET(CloneArgs, set_tid_size, struct clone_args, set_tid_size);
SAME_OFFSET(CloneArgs, cgroup, struct clone_args, cgroup);
static_assert(kCloneIntoCgroup == CLONE_INTO_CGROUP);
static_assert(kCloneClearSighand == CLONE_CLEAR_SIGHAND);

static_assert(sizeof(RobustListHead) == sizeof(struct robust_list_head));
static_assert(FutexOps::kLockPi2 == FUTEX_LOCK_PI2);
static_assert(FutexOps::kWaitRequeuePi == FUTEX_WAIT_REQUEUE_PI);
static_assert(FutexOps::kPrivateFlag == FUTEX_PRIVATE_FLAG);
static_assert(FutexOps::kClockRealtime == FUTEX_CLOCK_REALTIME);
static_assert(FutexOps::kTidMask == FUTEX_TID_MASK);

static_assert(sizeof(Sysinfo) == sizeof(struct sysinfo));
SAME_OFFSET(Sysinfo, procs, struct sysinfo, procs);
SAME_OFFSET(Sysinfo, totalhigh, struct sysinfo, totalhigh);
SAME_OFFSET(Sysinfo, mem_unit, struct sysinfo, mem_unit);
static_assert(sizeof(NewUtsname) == sizeof(struct new_utsname));

static_assert(kAtRandom == AT_RANDOM);
static_assert(kAtHwcap2 == AT_HWCAP2);
static_assert(kAtExecfn == AT_EXECFN);
static_assert(kAtSysinfoEhdr == AT_SYSINFO_EHDR);
static_assert(kAtMinsigstksz == AT_MINSIGSTKSZ);
static_assert(kAtSecure == AT_SECURE);
static_assert(kAtBasePlatform == AT_BASE_PLATFORM);

}  // namespace

bool AbiMatchesKernelHeaders() { return true; }

}  // namespace usentry::abi
