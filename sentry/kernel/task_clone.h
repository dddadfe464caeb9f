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

// Creates a new thread (CLONE_THREAD: a Task in the caller's ThreadGroup) or process.
// CLONE_VM children (threads, vfork, posix_spawn, CLONE_VM processes) run in the
// parent's address space (Platform::SharedAddressSpaces; their platform Context is made
// on the parent's host thread by Platform::NewThreadContext); others get a copy. With
// CLONE_VFORK the parent sleeps until the child execs or exits. Returns the new TID.
SysResult<int32_t> DoClone(Task& parent, const CloneArgs& args);

// Replaces the calling process's image. On success the task's registers are replaced
// (t.regs_replaced); the process's other threads are killed first and a non-leader
// caller takes over the leader's TID. Errors leave the process untouched.
SysStatus DoExecve(Task& t, const std::string& path, std::vector<std::string> argv,
                   std::vector<std::string> envp);

// Sets the registers of a freshly exec'd image.
void ResetRegistersForExec(Task& t, uint64_t entry, uint64_t sp);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TASK_CLONE_H_
