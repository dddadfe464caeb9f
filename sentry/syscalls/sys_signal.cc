// Signal syscalls: dispositions, masks, alternate stacks, sending, waiting.
#include "sentry/syscalls/sys_signal.h"

#include <signal.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/signal/signal.h"

namespace usentry::sentry {

namespace {

constexpr uint64_t kSigSetSize = 8;
constexpr uint64_t kSsAutodisarm = 1u << 31;

bool ValidSignal(int sig) { return sig >= 1 && sig <= kNumSignals; }

siginfo_t UserInfo(Task& t, int sig, int code) {
  siginfo_t info{};
  info.si_signo = sig;
  info.si_code = code;
  info.si_pid = t.thread_group().pid();
  info.si_uid = t.creds().ruid;
  return info;
}

// Waits with the given temporary mask until a signal arrives (sigsuspend, pause).
SyscallResult SuspendWith(Task& t, uint64_t mask) {
  t.sig->saved_mask = t.sig->mask;
  t.sig->has_saved_mask = true;
  t.sig->mask = mask & ~kUnblockable;
  Waiter w(&t);
  while (!t.InterruptPending()) (void)t.Block(w);
  // Delivery sees ERESTARTNOHAND: with a handler the call returns EINTR, and the saved
  // mask is restored after the frame is built.
  return Errno{kERestartNoHand};
}

}  // namespace

SyscallResult SysRtSigaction(Task& t, const SyscallArgs& a) {
  int sig = a.i32(0);
  if (a.u64(3) != kSigSetSize || !ValidSignal(sig)) return Errno{EINVAL};
  ThreadGroup& tg = t.thread_group();
  KSigAction& cur = tg.handlers->actions[sig];
  KSigAction old = cur;
  if (!a.ptr(1).IsNull()) {
    if (sig == SIGKILL || sig == SIGSTOP) return Errno{EINVAL};
    ASSIGN_OR_RETURN_ERRNO(KSigAction act, t.mm().CopyInObj<KSigAction>(a.ptr(1)));
    act.mask &= ~kUnblockable;
    cur = act;
    // Setting a signal to be ignored discards its pending instances (POSIX).
    bool ignored = act.handler == reinterpret_cast<uint64_t>(SIG_IGN) ||
                   (act.handler == 0 && DefaultActionOf(sig) == DefaultAction::kIgnore);
    if (ignored) {
      tg.pending.Discard(sig);
      for (Task* th : tg.tasks) th->sig->pending.Discard(sig);
    }
  }
  if (!a.ptr(2).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(2), old));
  return 0;
}

SyscallResult SysRtSigprocmask(Task& t, const SyscallArgs& a) {
  int how = a.i32(0);
  if (a.u64(3) != kSigSetSize) return Errno{EINVAL};
  uint64_t old = t.sig->mask;
  if (!a.ptr(1).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(uint64_t set, t.mm().CopyInObj<uint64_t>(a.ptr(1)));
    switch (how) {
      case SIG_BLOCK:
        t.sig->mask |= set;
        break;
      case SIG_UNBLOCK:
        t.sig->mask &= ~set;
        break;
      case SIG_SETMASK:
        t.sig->mask = set;
        break;
      default:
        return Errno{EINVAL};
    }
    t.sig->mask &= ~kUnblockable;
  }
  if (!a.ptr(2).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(2), old));
  return 0;
}

SyscallResult SysRtSigreturn(Task& t, const SyscallArgs&) {
  if (!SignalReturn(t).ok()) {
    siginfo_t info{};
    info.si_signo = SIGSEGV;
    info.si_code = SI_KERNEL;
    ForceSignal(t, info);
  }
  return 0;
}

SyscallResult SysRtSigpending(Task& t, const SyscallArgs& a) {
  if (a.u64(1) > kSigSetSize) return Errno{EINVAL};
  uint64_t set = (t.sig->pending.set() | t.thread_group().pending.set()) & t.sig->mask;
  RETURN_IF_ERRNO(t.mm().CopyOut(a.ptr(0), &set, a.u64(1)));
  return 0;
}

SyscallResult SysRtSigsuspend(Task& t, const SyscallArgs& a) {
  if (a.u64(1) != kSigSetSize) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(uint64_t mask, t.mm().CopyInObj<uint64_t>(a.ptr(0)));
  return SuspendWith(t, mask);
}

SyscallResult SysPause(Task& t, const SyscallArgs&) {
  Waiter w(&t);
  while (!t.InterruptPending()) (void)t.Block(w);
  return Errno{kERestartNoHand};
}

SyscallResult SysSigaltstack(Task& t, const SyscallArgs& a) {
  stack_t& cur = t.sig->altstack;
  uint64_t sp = t.regs().gp.rsp;
  auto base = reinterpret_cast<uint64_t>(cur.ss_sp);
  bool on = !(cur.ss_flags & SS_DISABLE) && sp > base && sp <= base + cur.ss_size;
  if (!a.ptr(1).IsNull()) {
    stack_t old = cur;
    old.ss_flags = on ? SS_ONSTACK : (cur.ss_flags & SS_DISABLE ? SS_DISABLE : 0);
    if (cur.ss_flags & SS_DISABLE) old.ss_sp = nullptr, old.ss_size = 0;
    RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), old));
  }
  if (!a.ptr(0).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(stack_t ss, t.mm().CopyInObj<stack_t>(a.ptr(0)));
    if (on) return Errno{EPERM};
    uint64_t flags = static_cast<uint32_t>(ss.ss_flags) & ~kSsAutodisarm;
    if (flags != 0 && flags != SS_DISABLE) return Errno{EINVAL};
    if (flags == SS_DISABLE) {
      cur = stack_t{nullptr, SS_DISABLE, 0};
    } else {
      if (ss.ss_size < MINSIGSTKSZ) return Errno{ENOMEM};
      cur = ss;
      cur.ss_flags = 0;
    }
  }
  return 0;
}

SyscallResult SysKill(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  int sig = a.i32(1);
  if (sig < 0 || sig > kNumSignals) return Errno{EINVAL};
  Kernel& k = t.kernel();
  ThreadGroup& self = t.thread_group();
  siginfo_t info = UserInfo(t, sig, SI_USER);
  if (pid > 0) {
    auto tg = k.FindThreadGroup(pid);
    if (!tg || tg->zombie) return Errno{ESRCH};
    if (sig != 0) SendGroupSignal(*tg, info);
    return 0;
  }
  if (pid == INT32_MIN) return Errno{ESRCH};
  // Process groups (0: the caller's), or every process but init and the caller (-1).
  bool found = false;
  for (auto& tg : k.ThreadGroups()) {
    if (tg->zombie) continue;
    bool match = pid == -1 ? (tg->pid() != 1 && tg.get() != &self)
                           : tg->pgid == (pid == 0 ? self.pgid : -pid);
    if (!match) continue;
    found = true;
    if (sig != 0) SendGroupSignal(*tg, info);
  }
  return found ? SyscallResult(0) : SyscallResult(Errno{ESRCH});
}

SyscallResult SysTkill(Task& t, const SyscallArgs& a) {
  int32_t tid = a.i32(0);
  int sig = a.i32(1);
  if (tid <= 0 || sig < 0 || sig > kNumSignals) return Errno{EINVAL};
  Task* target = t.kernel().FindTask(tid);
  if (!target) return Errno{ESRCH};
  if (sig != 0) SendTaskSignal(*target, UserInfo(t, sig, SI_TKILL));
  return 0;
}

SyscallResult SysTgkill(Task& t, const SyscallArgs& a) {
  int32_t tgid = a.i32(0);
  int32_t tid = a.i32(1);
  int sig = a.i32(2);
  if (tgid <= 0 || tid <= 0 || sig < 0 || sig > kNumSignals) return Errno{EINVAL};
  Task* target = t.kernel().FindTask(tid);
  if (!target || target->thread_group().pid() != tgid) return Errno{ESRCH};
  if (sig != 0) SendTaskSignal(*target, UserInfo(t, sig, SI_TKILL));
  return 0;
}

}  // namespace usentry::sentry
