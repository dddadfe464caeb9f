// System information and small per-task syscalls: uname, sysinfo, getrandom, resource
// limits and usage, scheduler affinity, arch_prctl, prctl, robust lists.
#include "sentry/syscalls/sys_info.h"

#include <asm/prctl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {

namespace {

// The kernel version the sandbox reports: a current LTS, independent of the host so
// that runs are reproducible across hosts.
constexpr char kRelease[] = "6.1.0";
constexpr char kVersion[] = "#1 SMP usentry";

// The sentry's own CPU affinity. Not std::thread::hardware_concurrency: glibc's
// get_nprocs reads /sys/devices/system/cpu/online, and an open kills the confined
// sentry (seccomp), while sched_getaffinity is on its allowlist.
int NumCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

void CopyField(char* dst, size_t size, const std::string& s) {
  strncpy(dst, s.c_str(), size - 1);
  dst[size - 1] = '\0';
}

SyscallResult GetLimit(Task& t, int resource, rlimit* out) {
  if (resource < 0 || resource >= RLIM_NLIMITS) return Errno{EINVAL};
  *out = t.thread_group().rlimits[resource];
  if (resource == RLIMIT_NOFILE) out->rlim_cur = t.fds().limit();
  return 0;
}

SyscallResult SetLimit(Task& t, int resource, const rlimit& lim) {
  if (resource < 0 || resource >= RLIM_NLIMITS) return Errno{EINVAL};
  if (lim.rlim_cur > lim.rlim_max) return Errno{EINVAL};
  rlimit& cur = t.thread_group().rlimits[resource];
  // Raising a hard limit needs privilege (CAP_SYS_RESOURCE) — sandbox root has it, the
  // host is unaffected either way since every limit is enforced by the sentry.
  if (lim.rlim_max > cur.rlim_max && !t.creds().IsRoot()) return Errno{EPERM};
  // The policy's limits are ceilings even for sandbox root (as fs.nr_open is for
  // RLIMIT_NOFILE): --max-fds, --max-tasks, --max-file-size (docs/limits.md).
  const policy::Limits& pl = t.kernel().options().limits;
  uint64_t ceiling = RLIM_INFINITY;
  if (resource == RLIMIT_NOFILE) ceiling = std::min<uint64_t>(pl.max_fds, vfs::FdTable::kMaxLimit);
  if (resource == RLIMIT_NPROC) ceiling = pl.max_tasks;
  if (resource == RLIMIT_FSIZE && pl.max_file_size != 0) ceiling = pl.max_file_size;
  if (lim.rlim_max > ceiling || lim.rlim_cur > ceiling) return Errno{EPERM};
  if (resource == RLIMIT_NOFILE) t.fds().set_limit(lim.rlim_cur);
  cur = lim;
  return 0;
}

}  // namespace

SyscallResult SysUname(Task& t, const SyscallArgs& a) {
  struct utsname u {};
  CopyField(u.sysname, sizeof(u.sysname), "Linux");
  CopyField(u.nodename, sizeof(u.nodename), t.kernel().hostname());
  CopyField(u.release, sizeof(u.release), kRelease);
  CopyField(u.version, sizeof(u.version), kVersion);
  CopyField(u.machine, sizeof(u.machine), "x86_64");
  CopyField(u.domainname, sizeof(u.domainname), "(none)");
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), u));
  return 0;
}

SyscallResult SysSethostname(Task& t, const SyscallArgs& a) {
  uint64_t len = a.u64(1);
  if (len > 64) return Errno{EINVAL};
  if (!t.creds().IsRoot()) return Errno{EPERM};
  std::string name(len, '\0');
  RETURN_IF_ERRNO(t.mm().CopyIn(a.ptr(0), name.data(), len));
  t.kernel().set_hostname(name);
  return 0;
}

SyscallResult SysSysinfo(Task& t, const SyscallArgs& a) {
  struct sysinfo si {};
  si.uptime = static_cast<long>(absl::ToInt64Seconds(absl::Now() - t.kernel().boot_time()));
  // The sandbox's memory (--memory), not the host's.
  const uint64_t limit = t.kernel().options().limits.memory_bytes;
  si.totalram = limit != 0 ? limit : 2ull << 30;
  si.freeram = si.totalram - std::min<uint64_t>(si.totalram, t.kernel().limits().ResidentBytes());
  si.procs = static_cast<uint16_t>(t.kernel().tasks().size());
  si.mem_unit = 1;
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), si));
  return 0;
}

SyscallResult SysGetrandom(Task& t, const SyscallArgs& a) {
  uint64_t len = std::min<uint64_t>(a.u64(1), 33554431);  // Linux caps one call at 32 MiB-1
  unsigned flags = a.u32(2);
  if (flags & ~(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(std::vector<iovec> dst,
                         t.mm().Translate(a.ptr(0), len, mm::Access::kWrite));
  uint64_t done = 0;
  for (const iovec& v : dst) {
    size_t off = 0;
    while (off < v.iov_len) {
      ssize_t n = getrandom(static_cast<char*>(v.iov_base) + off, v.iov_len - off, 0);
      if (n <= 0) return done > 0 ? SyscallResult(done) : SyscallResult(Errno{EIO});
      off += n;
      done += n;
    }
  }
  return done;
}

SyscallResult SysGetrlimit(Task& t, const SyscallArgs& a) {
  rlimit lim;
  RETURN_IF_ERRNO(GetLimit(t, a.i32(0), &lim));
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), lim));
  return 0;
}

SyscallResult SysSetrlimit(Task& t, const SyscallArgs& a) {
  ASSIGN_OR_RETURN_ERRNO(rlimit lim, t.mm().CopyInObj<rlimit>(a.ptr(1)));
  return SetLimit(t, a.i32(0), lim);
}

SyscallResult SysPrlimit64(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  if (pid != 0 && pid != t.thread_group().pid()) {
    // Other processes' limits: supported only for the caller for now.
    if (!t.kernel().FindThreadGroup(pid)) return Errno{ESRCH};
    return Errno{EPERM};
  }
  rlimit old;
  RETURN_IF_ERRNO(GetLimit(t, a.i32(1), &old));
  if (!a.ptr(2).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(rlimit lim, t.mm().CopyInObj<rlimit>(a.ptr(2)));
    RETURN_IF_ERRNO(SetLimit(t, a.i32(1), lim));
  }
  if (!a.ptr(3).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(3), old));
  return 0;
}

SyscallResult SysGetrusage(Task& t, const SyscallArgs& a) {
  int who = a.i32(0);
  ThreadGroup& tg = t.thread_group();
  int64_t ut, st;
  uint64_t rss;
  switch (who) {
    case RUSAGE_SELF:
      ut = absl::ToInt64Microseconds(tg.CpuTime());
      st = tg.stime_us;
      NoteMaxRss(t.kernel().memory_file().fd(), tg);
      rss = tg.max_rss_bytes;
      break;
    case RUSAGE_THREAD:  // ru_maxrss is the process's, as on Linux
      ut = absl::ToInt64Microseconds(t.CpuTime());
      st = 0;
      NoteMaxRss(t.kernel().memory_file().fd(), tg);
      rss = tg.max_rss_bytes;
      break;
    case RUSAGE_CHILDREN:
      ut = tg.child_utime_us;
      st = tg.child_stime_us;
      rss = tg.child_max_rss_bytes;
      break;
    default:
      return Errno{EINVAL};
  }
  struct rusage ru {};
  ru.ru_utime = {ut / 1000000, ut % 1000000};
  ru.ru_stime = {st / 1000000, st % 1000000};
  ru.ru_maxrss = static_cast<long>(rss / 1024);
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), ru));
  return 0;
}

SyscallResult SysSchedGetaffinity(Task& t, const SyscallArgs& a) {
  uint64_t size = a.u64(1);
  if (size < sizeof(uint64_t) || (size % sizeof(uint64_t)) != 0) return Errno{EINVAL};
  int32_t pid = a.i32(0);
  if (pid != 0 && !t.kernel().FindTask(pid)) return Errno{ESRCH};
  // As Linux does: the mask has whole words for the CPUs that exist, that much is copied
  // and returned. `size` comes from the app and must never size an allocation (a huge
  // one was a std::bad_alloc that crashed the sentry).
  const uint64_t cpus = static_cast<uint64_t>(NumCpus());
  if (size < (cpus + 7) / 8) return Errno{EINVAL};
  const uint64_t mask_size = std::min<uint64_t>(size, (cpus + 63) / 64 * sizeof(uint64_t));
  std::vector<uint8_t> mask(mask_size, 0);
  for (uint64_t i = 0; i < cpus && i / 8 < mask_size; i++) mask[i / 8] |= 1 << (i % 8);
  RETURN_IF_ERRNO(t.mm().CopyOut(a.ptr(2), mask.data(), mask_size));
  return mask_size;
}

SyscallResult SysSchedSetaffinity(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  if (pid != 0 && !t.kernel().FindTask(pid)) return Errno{ESRCH};
  // Accepted and not applied: the sentry schedules tasks on host threads itself.
  return 0;
}

SyscallResult SysSchedYield(Task& t, const SyscallArgs&) {
  t.kernel().cpu_gate().Yield(t);
  t.kernel().mu.Unlock();
  std::this_thread::yield();
  t.kernel().mu.Lock();
  return 0;
}

SyscallResult SysGetcpu(Task& t, const SyscallArgs& a) {
  uint32_t zero = 0;
  if (!a.ptr(0).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), zero));
  if (!a.ptr(1).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), zero));
  return 0;
}

SyscallResult SysArchPrctl(Task& t, const SyscallArgs& a) {
  user_regs_struct& gp = t.raw_regs().gp;  // fs_base/gs_base are the sentry's: always loaded
  switch (a.i32(0)) {
    case ARCH_SET_FS:
      if (a.u64(1) >= (1ull << 47)) return Errno{EPERM};
      gp.fs_base = a.u64(1);
      return 0;
    case ARCH_SET_GS:
      if (a.u64(1) >= (1ull << 47)) return Errno{EPERM};
      gp.gs_base = a.u64(1);
      return 0;
    case ARCH_GET_FS:
      RETURN_IF_ERRNO(t.mm().CopyOutObj<uint64_t>(a.ptr(1), gp.fs_base));
      return 0;
    case ARCH_GET_GS:
      RETURN_IF_ERRNO(t.mm().CopyOutObj<uint64_t>(a.ptr(1), gp.gs_base));
      return 0;
    case ARCH_GET_CPUID:
      return 1;  // cpuid is not trapped
    default:
      return Errno{EINVAL};
  }
}

SyscallResult SysPrctl(Task& t, const SyscallArgs& a) {
  switch (a.i32(0)) {
    case PR_SET_NAME: {
      char name[16] = {};
      // The name is at most 16 bytes including the NUL; read what is mapped.
      for (int i = 0; i < 15; i++) {
        RETURN_IF_ERRNO(t.mm().CopyIn(a.ptr(1) + i, &name[i], 1));
        if (name[i] == '\0') break;
      }
      t.comm = name;
      return 0;
    }
    case PR_GET_NAME: {
      char name[16] = {};
      strncpy(name, t.comm.c_str(), 15);
      RETURN_IF_ERRNO(t.mm().CopyOut(a.ptr(1), name, sizeof(name)));
      return 0;
    }
    case PR_GET_DUMPABLE:
      return 1;
    case PR_SET_DUMPABLE:
      return a.u64(1) <= 1 ? SyscallResult(0) : SyscallResult(Errno{EINVAL});
    case PR_SET_NO_NEW_PRIVS:
    case PR_GET_NO_NEW_PRIVS:
      // There are no setuid transitions inside the sandbox to suppress.
      return a.i32(0) == PR_GET_NO_NEW_PRIVS ? 1 : 0;
    case PR_SET_PDEATHSIG:
    case PR_GET_PDEATHSIG:
    case PR_SET_CHILD_SUBREAPER:
    case PR_GET_CHILD_SUBREAPER:
    case PR_CAPBSET_READ:
    case PR_SET_SECCOMP:
    case PR_GET_SECCOMP:
    default:
      return Errno{EINVAL};
  }
}

SyscallResult SysSetRobustList(Task& t, const SyscallArgs& a) {
  if (a.u64(1) != 24) return Errno{EINVAL};  // sizeof(struct robust_list_head)
  t.robust_list = a.u64(0);
  return 0;
}

SyscallResult SysGetRobustList(Task& t, const SyscallArgs& a) {
  Task* target = a.i32(0) == 0 ? &t : t.kernel().FindTask(a.i32(0));
  if (target == nullptr) return Errno{ESRCH};
  // Only the caller's own process (no ptrace-style access to others).
  if (&target->thread_group() != &t.thread_group()) return Errno{EPERM};
  RETURN_IF_ERRNO(t.mm().CopyOutObj<uint64_t>(a.ptr(1), target->robust_list));
  RETURN_IF_ERRNO(t.mm().CopyOutObj<uint64_t>(a.ptr(2), 24));
  return 0;
}

}  // namespace usentry::sentry
