// Signal sending and delivery: dispositions, masks, default actions, syscall restart.
#include "sentry/signal/deliver.h"

#include <sys/wait.h>

#include <bit>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/task_exit.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/signal/signal.h"

namespace usentry::sentry {

namespace {

constexpr uint64_t kSigDfl = 0;
constexpr uint64_t kSigIgn = 1;

// True if a signal sent now would be discarded: ignored and not blocked by `t`.
bool Ignored(const ThreadGroup& tg, const Task* t, int sig) {
  if (sig == SIGKILL || sig == SIGSTOP) return false;
  if (t && (t->sig->mask & SigBit(sig))) return false;
  const KSigAction& a = tg.handlers->actions[sig];
  if (a.handler == kSigIgn) return true;
  return a.handler == kSigDfl && DefaultActionOf(sig) == DefaultAction::kIgnore;
}

int WaitStatusForSignal(int sig) {
  return sig | (DefaultActionOf(sig) == DefaultAction::kCore ? 0x80 : 0);
}

}  // namespace

void SendGroupSignal(ThreadGroup& tg, const siginfo_t& info) {
  int sig = info.si_signo;
  if (tg.exiting || sig < 1 || sig > kNumSignals) return;
  if (sig == SIGKILL) {
    ExitGroup(tg, SIGKILL);
    return;
  }
  Task* leader = tg.leader();
  if (Ignored(tg, leader, sig)) return;
  tg.pending.Enqueue(info);
  // Wake one thread that can take it (the leader first, as Linux prefers); it stays
  // pending for the group until some thread that does not block it dequeues it.
  for (Task* t : tg.tasks) {
    if (!t->exiting && !t->killed && !(t->sig->mask & SigBit(sig))) {
      t->Interrupt();
      break;
    }
  }
}

void SendTaskSignal(Task& t, const siginfo_t& info) {
  int sig = info.si_signo;
  ThreadGroup& tg = t.thread_group();
  if (tg.exiting || sig < 1 || sig > kNumSignals) return;
  if (sig == SIGKILL) {
    ExitGroup(tg, SIGKILL);
    return;
  }
  if (Ignored(tg, &t, sig)) return;
  t.sig->pending.Enqueue(info);
  if (!(t.sig->mask & SigBit(sig))) t.Interrupt();
}

void ForceSignal(Task& t, const siginfo_t& info) {
  int sig = info.si_signo;
  KSigAction& a = t.thread_group().handlers->actions[sig];
  if ((t.sig->mask & SigBit(sig)) || a.handler == kSigIgn) {
    // Cannot be handled: the fault would repeat forever, so the default action applies.
    a.handler = kSigDfl;
    t.sig->mask &= ~SigBit(sig);
  }
  t.sig->pending.Enqueue(info);
}

void DeliverSignals(Task& t, int restart_errno) {
  ThreadGroup& tg = t.thread_group();
  user_regs_struct& gp = t.regs().gp;
  while (true) {
    uint64_t deliverable = (t.sig->pending.set() | tg.pending.set()) & ~t.sig->mask;
    if (deliverable == 0) break;
    // Synchronous and lower-numbered signals first, like Linux's next_signal().
    int sig = std::countr_zero(deliverable) + 1;
    siginfo_t info = t.sig->pending.Has(sig) && !(t.sig->mask & SigBit(sig))
                         ? t.sig->pending.Dequeue(sig)
                         : tg.pending.Dequeue(sig);
    KSigAction act = tg.handlers->actions[sig];
    if (act.handler == kSigIgn) continue;
    if (act.handler == kSigDfl) {
      switch (DefaultActionOf(sig)) {
        case DefaultAction::kIgnore:
        case DefaultAction::kContinue:
        // Job-control stops are not emulated yet: treated as ignored (documented).
        case DefaultAction::kStop:
          continue;
        case DefaultAction::kTerminate:
        case DefaultAction::kCore:
          ExitGroup(tg, WaitStatusForSignal(sig));
          return;
      }
    }
    // A handler runs: decide the fate of an interrupted syscall first.
    if (restart_errno != 0) {
      bool restart = restart_errno == kERestartNoIntr ||
                     (restart_errno == kERestartSys && (act.flags & SA_RESTART));
      if (restart) {
        gp.rax = gp.orig_rax;
        gp.rip -= 2;
      } else {
        gp.rax = static_cast<uint64_t>(-EINTR);
      }
      restart_errno = 0;
    }
    uint64_t old_mask = t.sig->has_saved_mask ? t.sig->saved_mask : t.sig->mask;
    t.sig->has_saved_mask = false;
    if (!SetupSignalFrame(t, sig, info, old_mask).ok()) {
      // Could not write the frame (bad stack): Linux kills with SIGSEGV.
      ExitGroup(tg, WaitStatusForSignal(SIGSEGV));
      return;
    }
    t.sig->mask |= act.mask & ~kUnblockable;
    if (!(act.flags & SA_NODEFER)) t.sig->mask |= SigBit(sig);
    if (act.flags & SA_RESETHAND) tg.handlers->actions[sig] = KSigAction{};
    return;
  }
  // No handler ran: interrupted syscalls restart transparently.
  if (restart_errno != 0) {
    gp.rax = gp.orig_rax;
    gp.rip -= 2;
  }
  if (t.sig->has_saved_mask) {
    t.sig->mask = t.sig->saved_mask;
    t.sig->has_saved_mask = false;
  }
}

}  // namespace usentry::sentry
