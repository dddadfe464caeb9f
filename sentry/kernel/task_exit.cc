// Exit of threads and thread groups.
#include "sentry/kernel/task_exit.h"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>

#include "abi/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
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
    // The run ends with init; every other process was killed as its last thread left.
    k.init_exited = true;
    k.init_wait_status = tg->exit_status;
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
  // Auto-reaped children leave no zombie, but a wait() blocked in the parent must still
  // look again: with no children left it fails with ECHILD (CPython's
  // test_wait_when_sigchild_ignored hung here).
  if (autoreap) ReapChild(k, *parent, *tg);
  parent->child_wq.Notify(kAllEvents);
}

}  // namespace

// set_robust_list(2): on thread death, every futex of the thread's robust list (and
// the one it was acquiring or releasing) that it still owns gets FUTEX_OWNER_DIED and
// one waiter is woken, so the next locker sees EOWNERDEAD.
void ReleaseRobustFutexes(Task& t) {
  if (t.robust_list == 0) return;
  const mm::MemoryManager& m = t.mm();
  auto head = m.CopyInObj<robust_list_head>(mm::GuestAddr(t.robust_list));
  if (!head.ok()) return;
  const uint64_t head_addr = t.robust_list;
  auto release = [&](uint64_t entry) {
    uint64_t word_addr = (entry & ~uint64_t{1}) + head->futex_offset;
    auto word = FutexWordPtr(m, mm::GuestAddr(word_addr));
    if (!word.ok()) return;
    std::atomic_ref<uint32_t> ref(**word);
    uint32_t old = ref.load();
    do {
      if ((old & FUTEX_TID_MASK) != static_cast<uint32_t>(t.tid())) return;
    } while (!ref.compare_exchange_weak(old, (old & FUTEX_WAITERS) | FUTEX_OWNER_DIED));
    if (old & FUTEX_WAITERS) {
      // A shared wake, as Linux does: the mutex may be process-shared.
      auto key = FutexKeyFor(m, mm::GuestAddr(word_addr), /*private_op=*/false);
      if (key.ok()) t.kernel().futexes().Wake(*key, 1, FUTEX_BITSET_MATCH_ANY);
    }
  };
  uint64_t entry = reinterpret_cast<uint64_t>(head->list.next);
  const uint64_t pending = reinterpret_cast<uint64_t>(head->list_op_pending);
  // Linux's bound on the walk (ROBUST_LIST_LIMIT): a cyclic list cannot hang us.
  for (int i = 0; i < 2048 && entry != head_addr && entry != 0; i++) {
    auto next = m.CopyInObj<uint64_t>(mm::GuestAddr(entry & ~uint64_t{1}));
    if (!next.ok()) break;
    if (entry != pending) release(entry);
    entry = *next;
  }
  if (pending != 0) release(pending);
  t.robust_list = 0;
}

void ReapChild(Kernel& k, ThreadGroup& parent, ThreadGroup& child) {
  child.reaped = true;
  parent.child_utime_us += absl::ToInt64Microseconds(child.CpuTime()) + child.child_utime_us;
  parent.child_stime_us += child.stime_us + child.child_stime_us;
  parent.child_max_rss_bytes =
      std::max({parent.child_max_rss_bytes, child.max_rss_bytes, child.child_max_rss_bytes});
  auto& c = parent.children;
  c.erase(std::remove_if(c.begin(), c.end(),
                         [&](const std::shared_ptr<ThreadGroup>& g) { return g.get() == &child; }),
          c.end());
  k.UnregisterThreadGroup(child.pid());
  // The child's address space is gone: code it shared with the parent copy-on-write is
  // the parent's alone again (mm/cow.cc).
  if (!parent.tasks.empty() && parent.tasks.front()->mm_ptr()) {
    parent.tasks.front()->mm().ReclaimReadOnly();
  }
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
  if (t.mm_ptr()) {
    ReleaseRobustFutexes(t);
    if (t.clear_child_tid != 0) {
      // CLONE_CHILD_CLEARTID: pthread_join sleeps on this word until it reads 0.
      mm::GuestAddr addr(t.clear_child_tid);
      uint32_t zero = 0;
      if (t.mm().CopyOut(addr, &zero, sizeof(zero)).ok()) {
        auto key = FutexKeyFor(t.mm(), addr, /*private_op=*/false);  // a shared wake, as Linux
        if (key.ok()) k.futexes().Wake(*key, 1, FUTEX_BITSET_MATCH_ANY);
      }
    }
  }
  // init's last thread: the run ends here.
  const bool run_ends = tg->tasks.size() == 1 && tg->pid() == 1;
  // The group's CPU time and size, read while its stub process is still there. init's
  // size has no reader: it has no parent to wait for it, and the run's record reports
  // the memory file's peak instead.
  if (tg->tasks.size() == 1) tg->AccountImage(k.memory_file().fd(), /*note_rss=*/!run_ends);
  if (run_ends) {
    // Every other process is killed (PID-namespace semantics). Killed first, none runs
    // on to find the memory file refusing allocations; then no address space's pages
    // need giving back.
    for (auto& other : k.ThreadGroups()) {
      if (other != tg && !other->zombie) ExitGroup(*other, SIGKILL);
    }
    k.memory_file().EndRun();
    k.platform().EndRun();
  }
  // The address space (a stub process under ptrace) must die on this thread.
  t.ctx.reset();
  t.set_mm(nullptr);
  t.set_fds(nullptr);
  t.set_fs(nullptr);
  auto& tasks = tg->tasks;
  tasks.erase(std::remove(tasks.begin(), tasks.end(), &t), tasks.end());
  k.UnregisterTask(&t);
  tg->thread_exit_wq.Notify(kAllEvents);
  if (tasks.empty()) {
    // The last thread left with exit(2) rather than exit_group: its status is the group's.
    if (!tg->exiting) tg->exit_status = t.exit_code;
    // A process killed by a signal: who, by what, whether it dumped core.
    if (WIFSIGNALED(tg->exit_status) && k.audit().enabled()) {
      const char* name = abi::SignalName(WTERMSIG(tg->exit_status));
      k.audit().Emit(audit::kSignal, {{"pid", tg->pid()},
                                      {"signal", name ? name : "?"},
                                      {"comm", t.comm},
                                      {"core", WCOREDUMP(tg->exit_status) != 0}});
    }
    GroupExited(k, tg);
  }
  delete &t;
}

}  // namespace usentry::sentry
