// Process scheduling and privilege basics, emulated in the sentry (nothing reaches the
// host scheduler): capget/capset, personality, getpriority/setpriority, the
// sched_*param/scheduler family, sched_get_priority_max/min, sched_rr_get_interval.
// The state lives in ThreadGroup::sched and Credentials::cap_*; it is per process (Linux
// keeps nice and policy per thread).
#include "sentry/syscalls/sys_sched.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/resource.h>

#include <algorithm>

#include "abi/misc.h"
#include "absl/functional/function_ref.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry {
namespace {

constexpr int kCapSysNice = 23;

// The process `pid` names (0 = the caller): a thread group id, or any thread's id.
SysResult<ThreadGroup*> FindProcess(Task& t, int32_t pid) {
  if (pid < 0) return Errno{EINVAL};
  if (pid == 0) return &t.thread_group();
  if (auto tg = t.kernel().FindThreadGroup(pid); tg && !tg->reaped) return tg.get();
  if (Task* other = t.kernel().FindTask(pid)) return &other->thread_group();
  return Errno{ESRCH};
}

const Credentials* CredsOf(const ThreadGroup& tg) {
  Task* leader = tg.leader();
  return leader ? &leader->creds() : nullptr;
}

// --- capabilities ---

struct CapHeader {
  uint32_t version;
  int32_t pid;
};
struct CapData {
  uint32_t effective, permitted, inheritable;
};

// How many 32-bit data elements a header version uses; EINVAL (after writing the
// preferred version back, as Linux does) for unknown versions.
SysResult<int> CapVersion(Task& t, mm::GuestAddr hdr_addr, CapHeader& hdr) {
  ASSIGN_OR_RETURN_ERRNO(hdr, t.mm().CopyInObj<CapHeader>(hdr_addr));
  switch (hdr.version) {
    case _LINUX_CAPABILITY_VERSION_1:
      return 1;
    case _LINUX_CAPABILITY_VERSION_2:
    case _LINUX_CAPABILITY_VERSION_3:
      return 2;
    default: {
      uint32_t v = _LINUX_CAPABILITY_VERSION_3;
      RETURN_IF_ERRNO(t.mm().CopyOutObj(hdr_addr, v));
      return Errno{EINVAL};
    }
  }
}

}  // namespace

SyscallResult SysCapget(Task& t, const SyscallArgs& a) {
  CapHeader hdr;
  ASSIGN_OR_RETURN_ERRNO(int n, CapVersion(t, a.ptr(0), hdr));
  if (a.ptr(1).IsNull()) return 0;  // a version probe
  if (hdr.pid < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, hdr.pid));
  const Credentials* c = hdr.pid == 0 ? &t.creds() : CredsOf(*tg);
  if (c == nullptr) return Errno{ESRCH};
  const bool any_root = c->ruid == 0 || c->euid == 0 || c->suid == 0;
  const uint64_t eff = c->euid == 0 ? c->cap_effective : 0;
  const uint64_t prm = any_root ? c->cap_permitted : 0;
  const uint64_t inh = c->cap_inheritable;
  CapData d[2] = {
      {static_cast<uint32_t>(eff), static_cast<uint32_t>(prm), static_cast<uint32_t>(inh)},
      {static_cast<uint32_t>(eff >> 32), static_cast<uint32_t>(prm >> 32),
       static_cast<uint32_t>(inh >> 32)}};
  RETURN_IF_ERRNO(t.mm().CopyOut(a.ptr(1), d, n * sizeof(CapData)));
  return 0;
}

// capset may only lower: permitted within the old permitted set, effective within the
// new permitted set, inheritable within the old inheritable and permitted sets.
SyscallResult SysCapset(Task& t, const SyscallArgs& a) {
  CapHeader hdr;
  ASSIGN_OR_RETURN_ERRNO(int n, CapVersion(t, a.ptr(0), hdr));
  if (hdr.pid != 0 && hdr.pid != t.tid() && hdr.pid != t.thread_group().pid()) {
    return Errno{EPERM};
  }
  CapData d[2] = {};
  RETURN_IF_ERRNO(t.mm().CopyIn(a.ptr(1), d, n * sizeof(CapData)));
  auto join = [](uint32_t lo, uint32_t hi) {
    return (uint64_t{hi} << 32 | lo) & Credentials::kAllCaps;
  };
  const uint64_t eff = join(d[0].effective, d[1].effective);
  const uint64_t prm = join(d[0].permitted, d[1].permitted);
  const uint64_t inh = join(d[0].inheritable, d[1].inheritable);
  Credentials& c = t.creds();
  const bool any_root = c.ruid == 0 || c.euid == 0 || c.suid == 0;
  const uint64_t old_prm = any_root ? c.cap_permitted : 0;
  if ((prm & ~old_prm) || (eff & ~prm) || (inh & ~(c.cap_inheritable | old_prm))) {
    return Errno{EPERM};
  }
  c.cap_permitted = prm;
  c.cap_effective = eff;
  c.cap_inheritable = inh;
  return 0;
}

// personality(persona): 0xffffffff queries. Accepted: PER_LINUX with ADDR_NO_RANDOMIZE
// (the sandbox's layout is not randomized anyway) and the historical no-op flags;
// personas and flags that would change behaviour here (PER_LINUX32, READ_IMPLIES_EXEC,
// MMAP_PAGE_ZERO, UNAME26, layouts...) are EINVAL rather than silently ignored.
SyscallResult SysPersonality(Task& t, const SyscallArgs& a) {
  uint32_t persona = a.u32(0);
  uint32_t old = t.thread_group().sched.personality;
  if (persona == 0xffffffff) return old;
  constexpr uint32_t kAccepted = ADDR_NO_RANDOMIZE | SHORT_INODE | WHOLE_SECONDS | STICKY_TIMEOUTS;
  if (persona & ~kAccepted) return Errno{EINVAL};
  t.thread_group().sched.personality = persona;
  return old;
}

// --- nice values ---

namespace {

// Calls `fn` on every live process `which`/`who` selects; ESRCH when none.
SysStatus ForEachSelected(Task& t, int which, int32_t who,
                          absl::FunctionRef<void(ThreadGroup&)> fn) {
  if (which < PRIO_PROCESS || which > PRIO_USER) return Errno{EINVAL};
  bool any = false;
  if (which == PRIO_PROCESS) {
    ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, who));
    if (tg->zombie) return Errno{ESRCH};
    fn(*tg);
    return SysOk();
  }
  const int32_t pgid = who == 0 ? t.thread_group().pgid : who;
  const uint32_t uid = who == 0 ? t.creds().ruid : static_cast<uint32_t>(who);
  for (const std::shared_ptr<ThreadGroup>& tg : t.kernel().ThreadGroups()) {
    if (tg->zombie) continue;
    const Credentials* c = tg.get() == &t.thread_group() ? &t.creds() : CredsOf(*tg);
    if (c == nullptr) continue;
    if (which == PRIO_PGRP ? tg->pgid != pgid : c->ruid != uid) continue;
    any = true;
    fn(*tg);
  }
  return any ? SysOk() : SysStatus(Errno{ESRCH});
}

}  // namespace

// getpriority returns 20 - nice (1..40) so that it is never negative; libc converts.
SyscallResult SysGetpriority(Task& t, const SyscallArgs& a) {
  int best = 20;  // the highest priority = lowest nice among the selected processes
  RETURN_IF_ERRNO(ForEachSelected(t, a.i32(0), a.i32(1),
                                  [&](ThreadGroup& tg) { best = std::min(best, tg.sched.nice); }));
  return static_cast<uint64_t>(20 - best);
}

namespace {

// Sets `tg`'s nice value for the caller: another user's processes need CAP_SYS_NICE
// (EPERM); lowering the value needs CAP_SYS_NICE or RLIMIT_NICE room (`lower_errno`:
// EACCES for setpriority, EPERM for sched_setattr), as on Linux.
SysStatus SetNice(Task& t, ThreadGroup& tg, int nice, int lower_errno) {
  const Credentials& me = t.creds();
  const bool can_nice = me.HasCapability(kCapSysNice);
  const rlimit& lim = t.thread_group().rlimits[RLIMIT_NICE];
  const bool rlimit_allows = lim.rlim_cur >= static_cast<rlim_t>(20 - nice);
  const Credentials* c = &tg == &t.thread_group() ? &me : CredsOf(tg);
  if (!can_nice && c && c->ruid != me.euid && c->euid != me.euid) return Errno{EPERM};
  if (nice < tg.sched.nice && !can_nice && !rlimit_allows) return Errno{lower_errno};
  tg.sched.nice = nice;
  return SysOk();
}

}  // namespace

SyscallResult SysSetpriority(Task& t, const SyscallArgs& a) {
  const int nice = std::clamp(a.i32(2), -20, 19);
  int err = 0;
  RETURN_IF_ERRNO(ForEachSelected(t, a.i32(0), a.i32(1), [&](ThreadGroup& tg) {
    SysStatus s = SetNice(t, tg, nice, EACCES);
    if (!s.ok()) err = s.error();
  }));
  if (err) return Errno{err};
  return 0;
}

// --- scheduling policy ---

namespace {

bool NormalPolicy(int p) { return p == SCHED_OTHER || p == SCHED_BATCH || p == SCHED_IDLE; }

// Validates policy+priority like Linux; FIFO/RR are refused with EPERM (no real-time
// scheduling to give), DEADLINE needs sched_setattr (EINVAL here too).
SysStatus CheckPolicy(int policy, int prio) {
  if (NormalPolicy(policy)) return prio == 0 ? SysOk() : SysStatus(Errno{EINVAL});
  if (policy == SCHED_FIFO || policy == SCHED_RR) {
    if (prio < 1 || prio > 99) return Errno{EINVAL};
    return Errno{EPERM};
  }
  return Errno{EINVAL};
}

}  // namespace

SyscallResult SysSchedGetscheduler(Task& t, const SyscallArgs& a) {
  ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, a.i32(0)));
  return static_cast<uint64_t>(tg->sched.policy |
                               (tg->sched.reset_on_fork ? SCHED_RESET_ON_FORK : 0));
}

SyscallResult SysSchedSetscheduler(Task& t, const SyscallArgs& a) {
  if (a.ptr(2).IsNull() || a.i32(0) < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(sched_param p, t.mm().CopyInObj<sched_param>(a.ptr(2)));
  ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, a.i32(0)));
  const int policy = a.i32(1) & ~SCHED_RESET_ON_FORK;
  RETURN_IF_ERRNO(CheckPolicy(policy, p.sched_priority));
  tg->sched.policy = policy;
  tg->sched.reset_on_fork = a.i32(1) & SCHED_RESET_ON_FORK;
  return 0;
}

SyscallResult SysSchedGetparam(Task& t, const SyscallArgs& a) {
  if (a.ptr(1).IsNull() || a.i32(0) < 0) return Errno{EINVAL};
  RETURN_IF_ERRNO(FindProcess(t, a.i32(0)));
  sched_param p{};  // normal policies have priority 0
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), p));
  return 0;
}

SyscallResult SysSchedSetparam(Task& t, const SyscallArgs& a) {
  if (a.ptr(1).IsNull() || a.i32(0) < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(sched_param p, t.mm().CopyInObj<sched_param>(a.ptr(1)));
  ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, a.i32(0)));
  RETURN_IF_ERRNO(CheckPolicy(tg->sched.policy, p.sched_priority));
  return 0;
}

SyscallResult SysSchedGetPriorityMax(Task&, const SyscallArgs& a) {
  int policy = a.i32(0);
  if (policy == SCHED_FIFO || policy == SCHED_RR) return 99;
  if (NormalPolicy(policy) || policy == 6 /* SCHED_DEADLINE */) return 0;
  return Errno{EINVAL};
}

SyscallResult SysSchedGetPriorityMin(Task&, const SyscallArgs& a) {
  int policy = a.i32(0);
  if (policy == SCHED_FIFO || policy == SCHED_RR) return 1;
  if (NormalPolicy(policy) || policy == 6 /* SCHED_DEADLINE */) return 0;
  return Errno{EINVAL};
}

// --- sched_setattr / sched_getattr ---

namespace {

using abi::kSchedAttrSizeVer0;
using abi::SchedAttr;
constexpr uint64_t kFlagResetOnFork = 0x01, kFlagKeepPolicy = 0x08, kFlagKeepParams = 0x10,
                   kFlagUtilClamp = 0x20 | 0x40, kFlagsAll = 0x7f;

}  // namespace

// sched_setattr(pid, attr, flags): the normal policies with a nice value; real-time and
// deadline policies are EPERM, utilization clamps EOPNOTSUPP.
SyscallResult SysSchedSetattr(Task& t, const SyscallArgs& a) {
  if (a.ptr(1).IsNull() || a.i32(0) < 0 || a.u32(2) != 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(uint32_t size, t.mm().CopyInObj<uint32_t>(a.ptr(1)));
  if (size == 0) size = kSchedAttrSizeVer0;
  if (size < kSchedAttrSizeVer0 || size > 4096) {
    const uint32_t want = sizeof(SchedAttr);
    RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), want));
    return Errno{E2BIG};
  }
  SchedAttr attr{};
  RETURN_IF_ERRNO(t.mm().CopyIn(a.ptr(1), &attr, std::min<size_t>(size, sizeof attr)));
  // Bytes past the struct we know must be zero (a newer ABI asking for more).
  for (uint32_t off = sizeof attr; off < size; ++off) {
    ASSIGN_OR_RETURN_ERRNO(uint8_t b, t.mm().CopyInObj<uint8_t>(a.ptr(1) + off));
    if (b != 0) {
      const uint32_t want = sizeof(SchedAttr);
      RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), want));
      return Errno{E2BIG};
    }
  }
  if (attr.sched_flags & ~kFlagsAll) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, a.i32(0)));
  const int policy =
      (attr.sched_flags & kFlagKeepPolicy) ? tg->sched.policy : static_cast<int>(attr.sched_policy);
  if (policy == 6 /* SCHED_DEADLINE */) return Errno{EPERM};
  RETURN_IF_ERRNO(CheckPolicy(policy, static_cast<int>(attr.sched_priority)));
  if (attr.sched_flags & kFlagUtilClamp) return Errno{EOPNOTSUPP};
  // KEEP_PARAMS keeps the policy and nice value (Linux skips setting both).
  if (!(attr.sched_flags & kFlagKeepParams)) {
    // Out-of-range nice values are clamped, as Linux does.
    RETURN_IF_ERRNO(SetNice(t, *tg, std::clamp(attr.sched_nice, -20, 19), EPERM));
    tg->sched.policy = policy;
  }
  tg->sched.reset_on_fork = attr.sched_flags & kFlagResetOnFork;
  return 0;
}

// sched_getattr(pid, attr, size, flags): answers with min(size, 56) bytes.
SyscallResult SysSchedGetattr(Task& t, const SyscallArgs& a) {
  const uint32_t size = a.u32(2);
  if (a.ptr(1).IsNull() || a.i32(0) < 0 || a.u32(3) != 0) return Errno{EINVAL};
  if (size < kSchedAttrSizeVer0 || size > 4096) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(ThreadGroup * tg, FindProcess(t, a.i32(0)));
  SchedAttr attr{};
  attr.size = std::min<uint32_t>(size, sizeof attr);
  attr.sched_policy = static_cast<uint32_t>(tg->sched.policy);
  attr.sched_flags = tg->sched.reset_on_fork ? kFlagResetOnFork : 0;
  attr.sched_nice = tg->sched.nice;
  attr.sched_util_max = 1024;  // no clamp: the whole capacity (SCHED_CAPACITY_SCALE)
  RETURN_IF_ERRNO(t.mm().CopyOut(a.ptr(1), &attr, attr.size));
  return 0;
}

// The time slice: Linux's RR default (100 ms) for every policy we run.
SyscallResult SysSchedRrGetInterval(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(FindProcess(t, a.i32(0)));
  timespec ts{0, 100 * 1000 * 1000};
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), ts));
  return 0;
}

}  // namespace usentry::sentry
