// Task: one app thread as the kernel sees it, run by one dedicated sentry host thread.
//
// The host thread loops: Switch into app code (kernel lock released) -> trap -> take the
// kernel lock -> handle the syscall/fault -> deliver signals -> release -> repeat.
// Handlers therefore always run under Kernel::mu and may touch any kernel state.
#ifndef USENTRY_SENTRY_KERNEL_TASK_H_
#define USENTRY_SENTRY_KERNEL_TASK_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "platform/platform.h"
#include "sentry/kernel/cpu_gate.h"
#include "sentry/kernel/credentials.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"

namespace usentry::sentry {

namespace mm {
class MemoryManager;
}
namespace vfs {
class FdTable;
class FsContext;
}  // namespace vfs

class Kernel;
class ThreadGroup;
struct SignalState;

class Task {
 public:
  Task(Kernel* kernel, std::shared_ptr<ThreadGroup> tg, int32_t tid);
  ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  Kernel& kernel() const { return *kernel_; }
  ThreadGroup& thread_group() const { return *tg_; }
  const std::shared_ptr<ThreadGroup>& thread_group_ptr() const { return tg_; }
  int32_t tid() const { return tid_; }
  // execve from a non-leader thread takes over the leader's TID (the caller re-registers
  // the task with the kernel).
  void set_tid(int32_t tid) { tid_ = tid; }

  mm::MemoryManager& mm() const { return *mm_; }
  const std::shared_ptr<mm::MemoryManager>& mm_ptr() const { return mm_; }
  void set_mm(std::shared_ptr<mm::MemoryManager> m) { mm_ = std::move(m); }
  vfs::FdTable& fds() const { return *fds_; }
  const std::shared_ptr<vfs::FdTable>& fds_ptr() const { return fds_; }
  void set_fds(std::shared_ptr<vfs::FdTable> f) { fds_ = std::move(f); }
  vfs::FsContext& fs() const { return *fs_; }
  const std::shared_ptr<vfs::FsContext>& fs_ptr() const { return fs_; }
  void set_fs(std::shared_ptr<vfs::FsContext> f) { fs_ = std::move(f); }
  Credentials& creds() { return creds_; }
  const Credentials& creds() const { return creds_; }

  // The app's registers at its last trap, all of them (loaded from the platform first
  // if its Switch left them partial: Registers::gp_partial).
  platform::Registers& regs() {
    if (regs_.gp_partial) ctx->CompleteRegisters(regs_);
    return regs_;
  }
  // The registers as the platform left them, maybe partial: for the run loop's Switch,
  // the syscall dispatch (number, arguments, result) and code that replaces them all.
  platform::Registers& raw_regs() { return regs_; }

  // Sleeps until `w` is notified (OK), the deadline passes (ETIMEDOUT) or a signal is
  // pending / the task is being killed (EINTR). Requires the kernel lock; releases it
  // while asleep. The caller registers `w` on the queues it needs first.
  SysStatus Block(Waiter& w, std::optional<absl::Time> deadline = std::nullopt);
  // The task is about to sleep in the sentry (Block, or a wait of its own on `cv`): its
  // app thread need not stay ready for a resume (Context::WillBlock), and its CPU slot
  // goes to another task (Kernel::cpu_gate). Kernel lock held.
  void WillSleep();
  // Sleeps for `d` unless interrupted (EINTR) — nanosleep and friends.
  SysStatus Sleep(absl::Duration d);
  // True if an unblocked signal is pending or the task must exit.
  bool InterruptPending() const;
  // Wakes the task from Block or from app code (platform Interrupt). Kernel lock held.
  void Interrupt();

  // --- set by the run loop / process syscalls ---
  std::string comm;  // thread name (16 bytes max), from the exec'd file name
  uint64_t clear_child_tid = 0;
  uint64_t robust_list = 0;
  bool killed = false;               // SIGKILL'd or exit_group'ed: leave at the next chance
  bool exiting = false;              // this thread is done (exit status recorded in the group)
  int exit_code = 0;                 // exit(2)'s status word, used if it is the last thread
  std::unique_ptr<SignalState> sig;  // per-thread mask, pending, altstack
  std::unique_ptr<platform::Context> ctx;
  // Set by handlers that replace the register file (execve, rt_sigreturn): the
  // dispatcher must not write the result into rax.
  bool regs_replaced = false;
  // How a syscall that returned kERestartRestartBlock resumes (a sleep continues to its
  // deadline), set by that syscall. When no handler ran, DeliverSignals restarts it and
  // sets restart_resume_nr: the next syscall, if it has that number, runs restart_block
  // instead of starting over. Anything else clears both.
  std::function<SysResult<uint64_t>(Task&)> restart_block;
  int restart_resume_nr = -1;

  // Condition the task sleeps on in Block (with Kernel::mu).
  absl::CondVar cv;
  bool woken = false;
  // Whether this task may run app code now (Kernel::cpu_gate, with Kernel::mu).
  CpuSlot cpu_slot;
  // Set (under Kernel::mu) while the task's thread is in ctx->Switch.
  std::atomic<bool> in_app{false};
  // Wall time this thread spent running app code, and what its CPU clock read beyond
  // that when its process got a second thread (CpuTime stays monotonic).
  absl::Duration app_time, cpu_offset;
  // This thread's CPU time: its process's (ThreadGroup::CpuTime) if it never had another
  // thread; else the host cannot tell them apart (their stub threads are in another
  // process), so app_time.
  absl::Duration CpuTime() const;

 private:
  Kernel* kernel_;
  std::shared_ptr<ThreadGroup> tg_;
  int32_t tid_;
  std::shared_ptr<mm::MemoryManager> mm_;
  std::shared_ptr<vfs::FdTable> fds_;
  std::shared_ptr<vfs::FsContext> fs_;
  Credentials creds_;
  platform::Registers regs_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TASK_H_
