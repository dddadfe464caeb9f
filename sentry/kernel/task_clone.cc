// clone/fork/vfork and execve.
#include "sentry/kernel/task_clone.h"

#include <sched.h>
#include <signal.h>

#include <cstdio>
#include <cstring>

#include "abi/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/process_timers.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/task_exit.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"

namespace usentry::sentry {

namespace {

constexpr uint64_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                     CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME;

void ReleaseVforkParent(ThreadGroup& tg) {
  if (!tg.vfork_pending) return;
  tg.vfork_pending = false;
  tg.vfork_wq.Notify(kAllEvents);
}

// execve(2) in a multi-threaded process: every other thread is killed and waited for,
// and a non-leader caller takes over the leader's TID (the PID), as on Linux.
void KillOtherThreads(Task& t) {
  Kernel& k = t.kernel();
  ThreadGroup& tg = t.thread_group();
  if (tg.tasks.size() > 1) {
    for (Task* other : tg.tasks) {
      if (other == &t) continue;
      other->killed = true;
      other->Interrupt();
    }
    Waiter w(&t);
    ScopedWait sw(tg.thread_exit_wq, w, kAllEvents);
    // Only a group kill ends this wait early; ordinary signals wait for the exec.
    t.WillSleep();  // the others need CPUs to leave
    while (tg.tasks.size() > 1 && !t.killed && !tg.exiting) t.cv.Wait(&k.mu);
  }
  if (t.tid() != tg.pid() && !t.killed && !tg.exiting) {
    k.UnregisterTask(&t);
    t.set_tid(tg.pid());
    k.RegisterTask(&t);
  }
}

}  // namespace

SysResult<int32_t> DoClone(Task& parent, const CloneArgs& a) {
  Kernel& k = parent.kernel();
  if (a.flags & kNamespaceFlags) return Errno{EPERM};
  if (a.flags & CLONE_PIDFD) return Errno{EINVAL};  // pidfds are not implemented
  // clone(2): a thread shares the handlers, and shared handlers need a shared mm.
  if ((a.flags & CLONE_THREAD) && !(a.flags & CLONE_SIGHAND)) return Errno{EINVAL};
  if ((a.flags & CLONE_SIGHAND) && !(a.flags & CLONE_VM)) return Errno{EINVAL};
  const bool thread = a.flags & CLONE_THREAD;
  ThreadGroup& ptg = parent.thread_group();
  if (thread && (ptg.exiting || parent.killed)) return Errno{EAGAIN};
  // --max-tasks: threads and processes alive at once, as RLIMIT_NPROC fails fork.
  if (!k.limits().TaskMayStart(parent)) return Errno{EAGAIN};

  // The child's address space: the parent's for threads and CLONE_VM processes where
  // the platform can run tasks of several host threads in one address space (both
  // platforms do: see Platform::SharedAddressSpaces), else a private copy (see header).
  const bool share_mm = (a.flags & CLONE_VM) && k.platform().SharedAddressSpaces();
  if (thread && !share_mm) return Errno{EAGAIN};
  // Fork copies no pages (copy-on-write, mm/cow.cc): --memory counts the copies as the
  // processes write, like any other page they touch.
  std::shared_ptr<mm::MemoryManager> child_mm =
      share_mm ? parent.mm_ptr() : std::shared_ptr<mm::MemoryManager>(parent.mm().Fork());
  if (!child_mm) return Errno{ENOMEM};

  // The new thread's platform context is made here, on the parent's host thread while
  // its app thread is stopped: ptrace creates the stub thread from it.
  std::unique_ptr<platform::Context> child_ctx;
  if (share_mm && child_mm->address_space() && parent.ctx) {
    auto ctx = k.platform().NewThreadContext(*child_mm->address_space(), *parent.ctx);
    if (!ctx.ok()) {
      // Out of stub threads is the app's EAGAIN (a thread limit); anything else is a
      // platform failure worth a line on stderr.
      if (!absl::IsResourceExhausted(ctx.status())) {
        fprintf(stderr, "usentry: clone: %s\n", ctx.status().ToString().c_str());
      }
      return Errno{EAGAIN};
    }
    child_ctx = std::move(ctx).value();
  }

  int32_t tid = k.AllocatePid();
  if (tid < 0) return Errno{EAGAIN};
  std::shared_ptr<ThreadGroup> tg;
  std::shared_ptr<ThreadGroup> real_parent;
  if (thread) {
    tg = parent.thread_group_ptr();
    if (!tg->had_threads) {  // the caller's clock goes on from its process's
      parent.cpu_offset = tg->CpuTime() - parent.app_time;
      tg->had_threads = true;
    }
  } else {
    tg = std::make_shared<ThreadGroup>(tid);
    tg->parent = (a.flags & CLONE_PARENT) ? ptg.parent : ptg.weak_from_this();
    tg->pgid = ptg.pgid;
    tg->sid = ptg.sid;
    tg->exit_signal = a.exit_signal;
    if (a.flags & CLONE_SIGHAND) {
      tg->handlers = ptg.handlers;
    } else {
      *tg->handlers = *ptg.handlers;
    }
    tg->rlimits = ptg.rlimits;
    tg->sched = ptg.sched.ForFork();
    real_parent = tg->parent.lock();
    if (!real_parent) return Errno{EINVAL};
  }

  auto* child = new Task(&k, tg, tid);
  if (!share_mm) tg->cpu_mm = child_mm;  // a fork's own address space
  child->set_mm(std::move(child_mm));
  child->set_fds((a.flags & CLONE_FILES) ? parent.fds_ptr() : parent.fds().Fork());
  child->set_fs((a.flags & CLONE_FS) ? parent.fs_ptr() : parent.fs().Fork());
  child->creds() = parent.creds();
  child->comm = parent.comm;
  child->sig->mask = parent.sig->mask;
  // clone(2): a thread with its own stack must not inherit the alternate stack.
  if ((a.flags & (CLONE_VM | CLONE_VFORK)) != CLONE_VM) child->sig->altstack = parent.sig->altstack;
  child->ctx = std::move(child_ctx);

  platform::Registers& regs = child->regs();
  // The child continues from the same point with the parent's registers and FPU state.
  if (!parent.regs().fp_valid && parent.ctx && parent.mm().address_space()) {
    (void)parent.ctx->LoadFpState(*parent.mm().address_space(), parent.regs());
  }
  regs = parent.regs();
  regs.fp_dirty = regs.fp_valid;
  regs.gp.rax = 0;
  if (!a.stack.IsNull()) regs.gp.rsp = a.stack.value();
  if (a.flags & CLONE_SETTLS) regs.gp.fs_base = a.tls;

  if (a.flags & CLONE_PARENT_SETTID) {
    SysStatus st = parent.mm().CopyOutObj<int32_t>(a.parent_tid, tid);
    if (!st.ok()) {
      delete child;
      return Errno{st.error()};
    }
  }
  if (a.flags & CLONE_CHILD_SETTID) {
    (void)child->mm().CopyOutObj<int32_t>(a.child_tid, tid);
  }
  if (a.flags & CLONE_CHILD_CLEARTID) child->clear_child_tid = a.child_tid.value();

  tg->tasks.push_back(child);
  if (!thread) {
    real_parent->children.push_back(tg);
    k.RegisterThreadGroup(tg);
  }
  k.RegisterTask(child);
  k.tasks_created++;  // run_end's "tasks_created"
  if (a.flags & CLONE_VFORK) tg->vfork_pending = true;
  k.StartTask(child);

  if (a.flags & CLONE_VFORK) {
    // Like Linux, the wait is killable but not interruptible by ordinary signals.
    Waiter w(&parent);
    ScopedWait sw(tg->vfork_wq, w, kAllEvents);
    // Sleep on the task's condition variable directly: pending signals must not end
    // this wait (Task::Block would return EINTR at once and spin).
    parent.WillSleep();  // the child runs meanwhile
    while (tg->vfork_pending && !parent.killed && !ptg.exiting) parent.cv.Wait(&k.mu);
  }
  return tid;
}

void ResetRegistersForExec(Task& t, uint64_t entry, uint64_t sp) {
  platform::Registers& regs = t.raw_regs();  // all replaced: none need loading
  regs.gp_partial = false;
  memset(&regs.gp, 0, sizeof(regs.gp));
  regs.gp.rip = entry;
  regs.gp.rsp = sp;
  regs.gp.cs = abi::kUserCs;
  regs.gp.ss = abi::kUserDs;
  regs.gp.eflags = 0x202;  // IF set, as the CPU requires for user mode
  regs.gp.orig_rax = static_cast<uint64_t>(-1);
  // A new image starts with the initial FPU state of its new stub.
  regs.fp_valid = false;
  regs.fp_dirty = false;
  regs.fp_initial = false;
  t.regs_replaced = true;
}

SysStatus DoExecve(Task& t, const std::string& path, std::vector<std::string> argv,
                   std::vector<std::string> envp) {
  const audit::AuditLog& audit = t.kernel().audit();
  std::vector<std::string> audit_argv;
  if (audit.enabled()) audit_argv = argv;
  ASSIGN_OR_RETURN_ERRNO(loader::LoadedImage img, loader::Load(t, path, std::move(argv), envp));
  // Point of no return.
  ThreadGroup& tg = t.thread_group();
  ReleaseRobustFutexes(t);  // in the old image, before it goes
  const bool was_shared = tg.tasks.size() > 1 || t.tid() != tg.pid();
  KillOtherThreads(t);
  if (t.killed || tg.exiting) return SysOk();  // killed meanwhile: the run loop ends
  // A thread other than the process's first leaves its stub thread before the old
  // address space goes (ptrace: a traced thread of a killed stub must be reaped by its
  // own tracer before the stub can be); the run loop makes a fresh context.
  if (was_shared) t.ctx.reset();
  tg.AccountImage(t.kernel().memory_file().fd());  // the old image's figures
  t.set_mm(std::move(img.mm));
  tg.cpu_mm = t.mm_ptr();
  t.fds().CloseOnExec();
  // Caught signals revert to the default; ignored ones stay ignored (execve(2)).
  auto handlers = std::make_shared<SignalHandlers>(*tg.handlers);
  for (KSigAction& act : handlers->actions) {
    if (act.handler != reinterpret_cast<uint64_t>(SIG_IGN)) act = KSigAction{};
  }
  tg.handlers = std::move(handlers);
  t.sig->altstack = stack_t{nullptr, SS_DISABLE, 0};
  ProcessTimersOnExec(tg);  // POSIX timers go; alarm and itimers survive exec
  t.comm = img.comm;
  t.clear_child_tid = 0;
  t.robust_list = 0;
  ResetRegistersForExec(t, img.entry, img.sp);
  ReleaseVforkParent(tg);
  // The exec tree: each image with the process that ran it and its parent.
  audit.Emit(audit::kExec, {{"pid", tg.pid()},
                            {"ppid", tg.ppid()},
                            {"path", t.mm().executable_path},
                            {"argv", audit_argv}});
  return SysOk();
}

}  // namespace usentry::sentry
