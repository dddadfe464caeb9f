// Exit of threads and thread groups.
#include "sentry/kernel/task_exit.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/process_timers.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"

namespace usentry::sentry {

namespace {

siginfo_t ChildInfo(const ThreadGroup& child) {
  siginfo_t info{};
  info.si_signo = SIGCHLD;
  int st = child.exit_status;
  if (WIFEXITED(st)) {
    info.si_code = CLD_EXITED;
    info.si_status = WEXITSTATUS(st);
  } else {
    info.si_code = WCOREDUMP(st) ? CLD_DUMPED : CLD_KILLED;
    info.si_status = WTERMSIG(st);
  }
  info.si_pid = child.pid();
  return info;
}

void GroupExited(Kernel& k, const std::shared_ptr<ThreadGroup>& tg) {
  tg->zombie = true;
  tg->exiting = true;
  ProcessTimersOnExit(*tg);
  tg->exit_wq.Notify(POLLIN);  // pidfds become readable
  if (tg->vfork_pending) {
    tg->vfork_pending = false;
    tg->vfork_wq.Notify(kAllEvents);
  }
  // Orphans go to init, like Linux (no subreapers yet).
  std::shared_ptr<ThreadGroup> init = k.init();
  for (auto& child : tg->children) {
    child->parent = init;
    if (init && init != tg && !init->zombie) {
      init->children.push_back(child);
      if (child->zombie) init->child_wq.Notify(kAllEvents);
    }
  }
  tg->children.clear();

  if (tg->pid() == 1) {
    // The run ends with init: every other process is killed (PID-namespace semantics).
    k.init_exited = true;
    k.init_wait_status = tg->exit_status;
    for (auto& other : k.ThreadGroups()) {
      if (other != tg && !other->zombie) ExitGroup(*other, SIGKILL);
    }
    k.init_exit_cv.SignalAll();
    return;
  }

  std::shared_ptr<ThreadGroup> parent = tg->parent.lock();
  if (!parent || parent->zombie) {
    tg->reaped = true;
    k.UnregisterThreadGroup(tg->pid());
    return;
  }
  const KSigAction& act = parent->handlers->actions[SIGCHLD];
  bool autoreap =
      act.handler == reinterpret_cast<uint64_t>(SIG_IGN) || (act.flags & SA_NOCLDWAIT) != 0;
  if (tg->exit_signal > 0) {
    siginfo_t info = ChildInfo(*tg);
    info.si_signo = tg->exit_signal;
    SendGroupSignal(*parent, info);
  }
  if (autoreap) {
    ReapChild(k, *parent, *tg);
  } else {
    parent->child_wq.Notify(kAllEvents);
  }
}

}  // namespace

void ReapChild(Kernel& k, ThreadGroup& parent, ThreadGroup& child) {
  child.reaped = true;
  parent.child_utime_us += child.utime_us + child.child_utime_us;
  parent.child_stime_us += child.stime_us + child.child_stime_us;
  auto& c = parent.children;
  c.erase(std::remove_if(c.begin(), c.end(),
                         [&](const std::shared_ptr<ThreadGroup>& g) { return g.get() == &child; }),
          c.end());
  k.UnregisterThreadGroup(child.pid());
}

void ExitGroup(ThreadGroup& tg, int wait_status) {
  if (tg.exiting) return;
  tg.exiting = true;
  tg.exit_status = wait_status;
  for (Task* t : tg.tasks) {
    t->killed = true;
    t->Interrupt();
  }
}

void TaskExited(Task& t) {
  Kernel& k = t.kernel();
  std::shared_ptr<ThreadGroup> tg = t.thread_group_ptr();
  if (t.clear_child_tid != 0 && t.mm_ptr()) {
    uint32_t zero = 0;
    (void)t.mm().CopyOut(mm::GuestAddr(t.clear_child_tid), &zero, sizeof(zero));
  }
  // The address space (a stub process under ptrace) must die on this thread.
  t.set_mm(nullptr);
  t.ctx.reset();
  t.set_fds(nullptr);
  t.set_fs(nullptr);
  auto& tasks = tg->tasks;
  tasks.erase(std::remove(tasks.begin(), tasks.end(), &t), tasks.end());
  k.UnregisterTask(&t);
  if (tasks.empty()) GroupExited(k, tg);
  delete &t;
}

}  // namespace usentry::sentry
