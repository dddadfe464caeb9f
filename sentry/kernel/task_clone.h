// Creating and replacing processes: clone/fork/vfork and execve.
#ifndef USENTRY_SENTRY_KERNEL_TASK_CLONE_H_
#define USENTRY_SENTRY_KERNEL_TASK_CLONE_H_

#include <csignal>
#include <string>
#include <vector>

#include "sentry/kernel/sys_result.h"
#include "sentry/mm/guest_addr.h"

namespace usentry::sentry {

class Task;

struct CloneArgs {
  uint64_t flags = 0;  // CLONE_* (without the exit signal)
  int exit_signal = SIGCHLD;
  mm::GuestAddr stack;       // new stack pointer, or null to keep the parent's
  mm::GuestAddr parent_tid;  // CLONE_PARENT_SETTID
  mm::GuestAddr child_tid;   // CLONE_CHILD_SETTID / CLONE_CHILD_CLEARTID
  uint64_t tls = 0;          // CLONE_SETTLS: new fs_base
};

// Creates a new process (thread creation is not supported yet: CLONE_THREAD → EINVAL,
// reported). With CLONE_VFORK the parent sleeps until the child execs or exits; with
// CLONE_VM too (vfork, posix_spawn) the child runs in the parent's address space where
// the platform allows it (systrap), and in a copy elsewhere (ptrace), where writes the
// child makes before exec (posix_spawn's exec error report) are lost. CLONE_VM without
// CLONE_VFORK gets a copy. Returns the child's PID.
SysResult<int32_t> DoClone(Task& parent, const CloneArgs& args);

// Replaces the calling process's image. On success the task's registers are replaced
// (t.regs_replaced). Errors leave the process untouched.
SysStatus DoExecve(Task& t, const std::string& path, std::vector<std::string> argv,
                   std::vector<std::string> envp);

// Sets the registers of a freshly exec'd image.
void ResetRegistersForExec(Task& t, uint64_t entry, uint64_t sp);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TASK_CLONE_H_
