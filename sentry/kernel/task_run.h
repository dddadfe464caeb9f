// The per-task host thread: runs app code through the platform and dispatches traps.
#ifndef USENTRY_SENTRY_KERNEL_TASK_RUN_H_
#define USENTRY_SENTRY_KERNEL_TASK_RUN_H_

namespace usentry::sentry {

class Task;

// Thread entry for `t` (registered, with mm/fds/fs set). Returns after the task exited;
// frees it.
void RunTask(Task* t);

// Handles the syscall trap in t.regs(): strace, dispatch through the table, result into
// rax, restart bookkeeping. Kernel lock held. Returns the ERESTART* code the handler
// produced (0 if none) for signal delivery to resolve.
int HandleSyscall(Task& t);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TASK_RUN_H_
