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

bool IsStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// Tells the parent its child stopped or continued (Linux's do_notify_parent_cldstop):
// SIGCHLD with CLD_STOPPED/CLD_CONTINUED unless the parent ignores SIGCHLD or set
// SA_NOCLDSTOP; a wait blocked in the parent looks again either way.
void NotifyParentOfStop(ThreadGroup& tg, int code, int status) {
  std::shared_ptr<ThreadGroup> parent = tg.parent.lock();
  if (!parent || parent->zombie) return;
  const KSigAction& act = parent->handlers->actions[SIGCHLD];
  if (act.handler != kSigIgn && !(act.flags & SA_NOCLDSTOP)) {
    siginfo_t info{};
    info.si_signo = SIGCHLD;
    info.si_code = code;
    info.si_pid = tg.pid();
    info.si_status = status;
    SendGroupSignal(*parent, info);
  }
  parent->child_wq.Notify(kAllEvents);
}

// A stop signal took its default action: the group stops; every thread is interrupted
// so that it parks before running app code again.
void GroupStop(ThreadGroup& tg, int sig) {
  if (tg.stopped || tg.exiting) return;
  tg.stopped = true;
  tg.stop_signal = sig;
  tg.stop_unreported = true;
  tg.continue_unreported = false;
  for (Task* t : tg.tasks) t->Interrupt();
  NotifyParentOfStop(tg, CLD_STOPPED, sig);
}

// What generating `sig` does before it is queued (Linux's prepare_signal): SIGCONT
// continues a stopped group and discards pending stop signals, even when SIGCONT itself
// is blocked or ignored; a stop signal discards a pending SIGCONT.
void PrepareSignal(ThreadGroup& tg, int sig) {
  if (sig == SIGCONT) {
    for (int stop : {SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU}) {
      tg.pending.Discard(stop);
      for (Task* t : tg.tasks) t->sig->pending.Discard(stop);
    }
    if (tg.stopped) {
      tg.stopped = false;
      tg.stop_unreported = false;
      tg.continue_unreported = true;
      for (Task* t : tg.tasks) t->Interrupt();
      NotifyParentOfStop(tg, CLD_CONTINUED, SIGCONT);
    }
  } else if (IsStopSignal(sig)) {
    tg.pending.Discard(SIGCONT);
    for (Task* t : tg.tasks) t->sig->pending.Discard(SIGCONT);
  }
}

}  // namespace

void ParkWhileStopped(Task& t) {
  ThreadGroup& tg = t.thread_group();
  t.WillSleep();
  while (tg.stopped && !t.killed && !t.exiting && !tg.exiting) t.cv.Wait(&t.kernel().mu);
}

void SendGroupSignal(ThreadGroup& tg, const siginfo_t& info) {
  int sig = info.si_signo;
  if (tg.exiting || sig < 1 || sig > kNumSignals) return;
  if (sig == SIGKILL) {
    ExitGroup(tg, SIGKILL);
    return;
  }
  PrepareSignal(tg, sig);
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
  PrepareSignal(tg, sig);
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
  bool stopping = false;
  while (!stopping && !tg.stopped) {
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
        case DefaultAction::kContinue:  // the continuing happened when it was sent
          continue;
        case DefaultAction::kStop:
          // The group stops now; other pending signals wait until it continues. The run
          // loop parks this thread (ParkWhileStopped) after the restart below.
          GroupStop(tg, sig);
          stopping = true;
          continue;  // leaves the loop
        case DefaultAction::kTerminate:
        case DefaultAction::kCore:
          ExitGroup(tg, WaitStatusForSignal(sig));
          return;
      }
    }
    // A handler runs: decide the fate of an interrupted syscall first (a restart block
    // is never resumed after a handler: restart_syscall then gives EINTR, as Linux).
    t.restart_block = nullptr;
    if (restart_errno != 0) {
      user_regs_struct& gp = t.regs().gp;
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
  // No handler ran: interrupted syscalls restart transparently. One that left a
  // restart block (a sleep) resumes from it when re-entered: the same syscall number
  // comes back (a patched call site loads it again, so restart_syscall's number could
  // not be used), and the dispatcher runs Task::restart_block instead.
  if (restart_errno != 0) {
    user_regs_struct& gp = t.regs().gp;
    gp.rax = gp.orig_rax;
    gp.rip -= 2;
    if (restart_errno == kERestartRestartBlock) t.restart_resume_nr = static_cast<int>(gp.orig_rax);
  }
  if (t.sig->has_saved_mask) {
    t.sig->mask = t.sig->saved_mask;
    t.sig->has_saved_mask = false;
  }
}

}  // namespace usentry::sentry
