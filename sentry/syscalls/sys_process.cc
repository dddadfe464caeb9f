// Process lifecycle syscalls: fork/vfork/clone/clone3, execve, exit, wait4/waitid,
// process IDs, process groups and sessions.
#include "sentry/syscalls/sys_process.h"

#include <linux/sched.h>
#include <sys/wait.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task_clone.h"
#include "sentry/kernel/task_exit.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_pidfd.h"

namespace usentry::sentry {

namespace {

constexpr size_t kMaxPath = 4096;
constexpr size_t kMaxArgs = 2 << 20;

SyscallResult Clone(Task& t, uint64_t flags, mm::GuestAddr stack, mm::GuestAddr ptid,
                    mm::GuestAddr ctid, uint64_t tls) {
  CloneArgs a;
  a.flags = flags & ~uint64_t{0xff};
  a.exit_signal = static_cast<int>(flags & 0xff);
  a.stack = stack;
  a.parent_tid = ptid;
  a.child_tid = ctid;
  a.tls = tls;
  ASSIGN_OR_RETURN_ERRNO(int32_t pid, DoClone(t, a));
  return static_cast<uint64_t>(pid);
}

// Does `child` match wait4's pid selector for a caller in `parent`?
bool Selected(const ThreadGroup& parent, const ThreadGroup& child, int32_t pid) {
  if (pid > 0) return child.pid() == pid;
  if (pid == -1) return true;
  if (pid == 0) return child.pgid == parent.pgid;
  return child.pgid == -pid;
}

// What a wait found: a zombie to reap, or a stop or continue not reported yet.
enum class WaitKind { kExited, kStopped, kContinued };
struct WaitOutcome {
  std::shared_ptr<ThreadGroup> child;  // null: nothing yet (WNOHANG)
  WaitKind kind = WaitKind::kExited;
};

// The first child matching `pid` with something `options` asks for (WEXITED, WSTOPPED
// = WUNTRACED, WCONTINUED), in Linux's order per child; ECHILD if no child matches.
SysResult<WaitOutcome> FindWaitable(ThreadGroup& tg, int32_t pid, int options) {
  bool any = false;
  for (auto& c : tg.children) {
    if (!Selected(tg, *c, pid)) continue;
    any = true;
    if ((options & WEXITED) && c->zombie && !c->reaped) return WaitOutcome{c, WaitKind::kExited};
    if (c->zombie) continue;
    if ((options & WSTOPPED) && c->stopped && c->stop_unreported) {
      return WaitOutcome{c, WaitKind::kStopped};
    }
    if ((options & WCONTINUED) && c->continue_unreported) {
      return WaitOutcome{c, WaitKind::kContinued};
    }
  }
  if (!any) return Errno{ECHILD};
  return WaitOutcome{};
}

// Shared by wait4 and waitid: blocks until FindWaitable finds something (or WNOHANG).
// Unless WNOWAIT, a stop or continue found is reported only this once.
SysResult<WaitOutcome> WaitForChild(Task& t, int32_t pid, int options) {
  ThreadGroup& tg = t.thread_group();
  Waiter w(&t);
  ScopedWait sw(tg.child_wq, w, kAllEvents);
  while (true) {
    ASSIGN_OR_RETURN_ERRNO(WaitOutcome o, FindWaitable(tg, pid, options));
    if (o.child || (options & WNOHANG)) {
      if (o.child && !(options & WNOWAIT)) {
        if (o.kind == WaitKind::kStopped) o.child->stop_unreported = false;
        if (o.kind == WaitKind::kContinued) o.child->continue_unreported = false;
      }
      return o;
    }
    w.clear();
    SysStatus s = t.Block(w);
    if (!s.ok()) return Errno{kERestartSys};
  }
}

}  // namespace

SyscallResult SysFork(Task& t, const SyscallArgs&) {
  return Clone(t, SIGCHLD, mm::GuestAddr(), mm::GuestAddr(), mm::GuestAddr(), 0);
}

SyscallResult SysVfork(Task& t, const SyscallArgs&) {
  return Clone(t, CLONE_VM | CLONE_VFORK | SIGCHLD, mm::GuestAddr(), mm::GuestAddr(),
               mm::GuestAddr(), 0);
}

// x86-64 argument order: flags, stack, parent_tid, child_tid, tls.
SyscallResult SysClone(Task& t, const SyscallArgs& a) {
  return Clone(t, a.u64(0), a.ptr(1), a.ptr(2), a.ptr(3), a.u64(4));
}

SyscallResult SysClone3(Task& t, const SyscallArgs& a) {
  struct clone_args ca {};
  uint64_t size = a.u64(1);
  if (size < CLONE_ARGS_SIZE_VER0 || size > 4096) return Errno{EINVAL};
  RETURN_IF_ERRNO(t.mm().CopyIn(a.ptr(0), &ca, std::min<uint64_t>(size, sizeof(ca))));
  if (ca.exit_signal > 64) return Errno{EINVAL};
  if (ca.flags & (CLONE_PIDFD | CLONE_INTO_CGROUP | CLONE_CLEAR_SIGHAND)) return Errno{EINVAL};
  if (ca.set_tid != 0 || ca.set_tid_size != 0) return Errno{EINVAL};
  mm::GuestAddr stack;
  if (ca.stack != 0) stack = mm::GuestAddr(ca.stack + ca.stack_size);
  return Clone(t, (ca.flags & ~uint64_t{0xff}) | ca.exit_signal, stack,
               mm::GuestAddr(ca.parent_tid), mm::GuestAddr(ca.child_tid), ca.tls);
}

SyscallResult SysExecve(Task& t, const SyscallArgs& a) {
  mm::MemoryManager& m = t.mm();
  ASSIGN_OR_RETURN_ERRNO(std::string path, m.CopyInString(a.ptr(0), kMaxPath));
  ASSIGN_OR_RETURN_ERRNO(std::vector<std::string> argv, m.CopyInStringArray(a.ptr(1), kMaxArgs));
  ASSIGN_OR_RETURN_ERRNO(std::vector<std::string> envp, m.CopyInStringArray(a.ptr(2), kMaxArgs));
  if (path.empty()) return Errno{ENOENT};
  RETURN_IF_ERRNO(DoExecve(t, path, std::move(argv), std::move(envp)));
  return 0;
}

SyscallResult SysExit(Task& t, const SyscallArgs& a) {
  // Only this thread ends; the run loop stops and TaskExited reports the group's exit
  // with this status if it was the last thread.
  t.exit_code = (a.i32(0) & 0xff) << 8;
  t.exiting = true;
  return 0;
}

SyscallResult SysExitGroup(Task& t, const SyscallArgs& a) {
  ExitGroup(t.thread_group(), (a.i32(0) & 0xff) << 8);
  return 0;
}

SyscallResult SysWait4(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  int options = a.i32(2);
  if (options & ~(WNOHANG | WUNTRACED | WCONTINUED | __WNOTHREAD | __WALL | __WCLONE)) {
    return Errno{EINVAL};
  }
  if (pid == INT32_MIN) return Errno{ESRCH};
  // WUNTRACED is waitid's WSTOPPED; wait4 always reports exits.
  ASSIGN_OR_RETURN_ERRNO(WaitOutcome o, WaitForChild(t, pid, (options & ~WNOWAIT) | WEXITED));
  if (!o.child) return 0;
  const std::shared_ptr<ThreadGroup>& z = o.child;
  int32_t status = o.kind == WaitKind::kStopped     ? (z->stop_signal << 8) | 0x7f
                   : o.kind == WaitKind::kContinued ? 0xffff
                                                    : z->exit_status;
  if (!a.ptr(1).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj<int32_t>(a.ptr(1), status));
  if (!a.ptr(3).IsNull()) {
    struct rusage ru {};
    const int64_t ut = absl::ToInt64Microseconds(z->CpuTime());
    ru.ru_utime.tv_sec = ut / 1000000;
    ru.ru_utime.tv_usec = ut % 1000000;
    ru.ru_maxrss = static_cast<long>(z->max_rss_bytes / 1024);
    ru.ru_stime.tv_sec = z->stime_us / 1000000;
    ru.ru_stime.tv_usec = z->stime_us % 1000000;
    RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(3), ru));
  }
  int32_t child_pid = z->pid();
  if (o.kind == WaitKind::kExited) ReapChild(t.kernel(), t.thread_group(), *z);
  return static_cast<uint64_t>(child_pid);
}

SyscallResult SysWaitid(Task& t, const SyscallArgs& a) {
  int idtype = a.i32(0);
  int32_t id = a.i32(1);
  int options = a.i32(3);
  if (!(options & (WEXITED | WSTOPPED | WCONTINUED))) return Errno{EINVAL};
  int32_t pid;
  switch (idtype) {
    case P_ALL:
      pid = -1;
      break;
    case P_PID:
      if (id <= 0) return Errno{EINVAL};
      pid = id;
      break;
    case P_PGID:
      if (id < 0) return Errno{EINVAL};
      pid = id == 0 ? 0 : -id;
      break;
    case P_PIDFD: {
      ASSIGN_OR_RETURN_ERRNO(pid, PidOfPidfd(t, id));  // sys_pidfd.cc
      break;
    }
    default:
      return Errno{EINVAL};
  }
  ASSIGN_OR_RETURN_ERRNO(WaitOutcome o, WaitForChild(t, pid, options));
  siginfo_t info{};
  if (const std::shared_ptr<ThreadGroup>& z = o.child) {
    info.si_signo = SIGCHLD;
    info.si_pid = z->pid();
    int st = z->exit_status;
    if (o.kind == WaitKind::kStopped) {
      info.si_code = CLD_STOPPED;
      info.si_status = z->stop_signal;
    } else if (o.kind == WaitKind::kContinued) {
      info.si_code = CLD_CONTINUED;
      info.si_status = SIGCONT;
    } else if (WIFEXITED(st)) {
      info.si_code = CLD_EXITED;
      info.si_status = WEXITSTATUS(st);
    } else {
      info.si_code = WCOREDUMP(st) ? CLD_DUMPED : CLD_KILLED;
      info.si_status = WTERMSIG(st);
    }
  }
  if (!a.ptr(2).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(2), info));
  if (o.child && o.kind == WaitKind::kExited && !(options & WNOWAIT)) {
    ReapChild(t.kernel(), t.thread_group(), *o.child);
  }
  return 0;
}

SyscallResult SysGetpid(Task& t, const SyscallArgs&) { return t.thread_group().pid(); }
SyscallResult SysGettid(Task& t, const SyscallArgs&) { return t.tid(); }
SyscallResult SysGetppid(Task& t, const SyscallArgs&) { return t.thread_group().ppid(); }

SyscallResult SysGetpgid(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  if (pid == 0) return t.thread_group().pgid;
  auto tg = t.kernel().FindThreadGroup(pid);
  if (!tg || tg->reaped) return Errno{ESRCH};
  return tg->pgid;
}

SyscallResult SysGetpgrp(Task& t, const SyscallArgs&) { return t.thread_group().pgid; }

SyscallResult SysSetpgid(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  int32_t pgid = a.i32(1);
  if (pgid < 0) return Errno{EINVAL};
  ThreadGroup& self = t.thread_group();
  std::shared_ptr<ThreadGroup> target =
      pid == 0 ? self.shared_from_this() : t.kernel().FindThreadGroup(pid);
  if (!target || target->zombie) return Errno{ESRCH};
  // Only the caller or its children may be moved.
  if (target.get() != &self && target->parent.lock().get() != &self) return Errno{ESRCH};
  if (target->sid != self.sid) return Errno{EPERM};
  if (target->pid() == target->sid) return Errno{EPERM};  // a session leader
  if (pgid == 0) pgid = target->pid();
  if (pgid != target->pid()) {
    // The group must already exist in the caller's session.
    bool found = false;
    for (auto& g : t.kernel().ThreadGroups()) {
      if (g->pgid == pgid && g->sid == self.sid && !g->zombie) found = true;
    }
    if (!found) return Errno{EPERM};
  }
  target->pgid = pgid;
  return 0;
}

SyscallResult SysSetsid(Task& t, const SyscallArgs&) {
  ThreadGroup& tg = t.thread_group();
  // A process-group leader cannot start a session (its group would be split).
  for (auto& g : t.kernel().ThreadGroups()) {
    if (g->pgid == tg.pid() && !g->zombie) return Errno{EPERM};
  }
  tg.sid = tg.pid();
  tg.pgid = tg.pid();
  return tg.pid();
}

SyscallResult SysGetsid(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  if (pid == 0) return t.thread_group().sid;
  auto tg = t.kernel().FindThreadGroup(pid);
  if (!tg || tg->reaped) return Errno{ESRCH};
  return tg->sid;
}

SyscallResult SysSetTidAddress(Task& t, const SyscallArgs& a) {
  t.clear_child_tid = a.u64(0);
  return t.tid();
}

}  // namespace usentry::sentry
