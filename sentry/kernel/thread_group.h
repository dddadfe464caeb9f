// ThreadGroup: a process — its threads, its place in the process tree, its process group
// and session, shared signal dispositions and group-directed pending signals, and its
// exit status once it is a zombie. All fields are guarded by Kernel::mu.
#ifndef USENTRY_SENTRY_KERNEL_THREAD_GROUP_H_
#define USENTRY_SENTRY_KERNEL_THREAD_GROUP_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/signal/signal.h"

namespace usentry::sentry {

class Task;
namespace mm {
class MemoryManager;
}
struct ProcessTimers;

class ThreadGroup : public std::enable_shared_from_this<ThreadGroup> {
 public:
  explicit ThreadGroup(int32_t pid) : pid_(pid) {}

  int32_t pid() const { return pid_; }
  Task* leader() const { return tasks.empty() ? nullptr : tasks.front(); }
  int32_t ppid() const;

  std::vector<Task*> tasks;  // live threads; the leader first while it lives
  std::weak_ptr<ThreadGroup> parent;
  std::vector<std::shared_ptr<ThreadGroup>> children;  // live and zombie children
  int32_t pgid = 0;
  int32_t sid = 0;

  // Shared dispositions (CLONE_SIGHAND shares the object) and group-directed signals.
  std::shared_ptr<SignalHandlers> handlers = std::make_shared<SignalHandlers>();
  PendingSignals pending;
  // Signal sent to the parent when this group exits (SIGCHLD, or clone's exit signal).
  int exit_signal = SIGCHLD;

  // Exit: set when exit_group/fatal signal starts tearing the group down.
  bool exiting = false;
  int exit_status = 0;  // wait(2) status word to report
  bool zombie = false;  // every thread gone; waiting to be reaped
  bool reaped = false;
  // Job control: a stop signal's default action stops the whole group (its threads park
  // before returning to app code) until SIGCONT or SIGKILL (signal/deliver.cc). The
  // last stop or continue is reported once to a wait with WUNTRACED / WCONTINUED.
  bool stopped = false;
  int stop_signal = 0;
  bool stop_unreported = false;
  bool continue_unreported = false;
  // vfork: the parent sleeps until the child execs or exits.
  bool vfork_pending = false;
  WaitQueue vfork_wq;
  // execve from one thread waits here for the group's other threads to be gone.
  WaitQueue thread_exit_wq;
  // Parents wait here for child state changes (wait4/waitid).
  WaitQueue child_wq;
  // Notified (POLLIN) when the group becomes a zombie: pidfds wait here.
  WaitQueue exit_wq;

  // alarm/setitimer and timer_create timers (sentry/kernel/process_timers.h); null
  // until the first use, never copied by fork.
  std::shared_ptr<ProcessTimers> timers;

  std::array<rlimit, RLIM_NLIMITS> rlimits{};
  // Emulated scheduling state (sys_sched.cc), inherited by fork: nice value, policy
  // (SCHED_OTHER/BATCH/IDLE, with SCHED_RESET_ON_FORK), personality(2) persona, and
  // membarrier registrations (MEMBARRIER_CMD_REGISTER_* bits).
  struct SchedState {
    int nice = 0;
    int policy = 0;
    bool reset_on_fork = false;
    uint32_t personality = 0;
    int membarrier_registered = 0;
    // What a fork child starts with: a new address space has no membarrier
    // registrations; SCHED_RESET_ON_FORK (which would turn real-time policies, never
    // granted here, back into SCHED_OTHER) clears itself and a negative nice.
    SchedState ForFork() const {
      SchedState s = *this;
      s.membarrier_registered = 0;
      if (reset_on_fork) {
        s.reset_on_fork = false;
        if (s.nice < 0) s.nice = 0;
      }
      return s;
    }
  } sched;
  // App CPU time: the host's figure for the stub process of each address space this
  // group made (by exec or fork; a vfork child's time before its exec counts in its
  // parent's), the live one read when asked (cpu_mm) and the earlier ones summed in
  // cpu_done. Where the platform cannot tell (cpu_known false), the wall time its threads
  // spent running app code instead (app_wall_us).
  absl::Duration CpuTime() const;
  // Takes the live address space's last figures (its CPU time into cpu_done, its
  // resident size into max_rss_bytes: NoteMaxRss) and forgets it: before exec replaces
  // it, and when the group's last thread exits. `memfd`: the kernel's memory file.
  // `note_rss` false skips the resident size (a walk of every mapping's pages, 0.1-0.15
  // ms for python3) where nothing can read it.
  void AccountImage(int memfd, bool note_rss = true);
  std::weak_ptr<mm::MemoryManager> cpu_mm;
  absl::Duration cpu_done;
  bool cpu_known = false;
  bool had_threads = false;  // ever more than one: its CpuTime is not one thread's
  int64_t app_wall_us = 0;
  // Reaped children's CPU time, in microseconds (system time is not measured: 0).
  int64_t stime_us = 0, child_utime_us = 0, child_stime_us = 0;
  // Largest resident size seen (NoteMaxRss), and the largest of any reaped descendant.
  uint64_t max_rss_bytes = 0, child_max_rss_bytes = 0;

 private:
  int32_t pid_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_THREAD_GROUP_H_
