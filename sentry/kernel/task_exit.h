// Process and thread exit: exit_group, fatal signals, zombies, reparenting, and the end
// of the run when init exits.
#ifndef USENTRY_SENTRY_KERNEL_TASK_EXIT_H_
#define USENTRY_SENTRY_KERNEL_TASK_EXIT_H_

namespace usentry::sentry {

class Kernel;
class Task;
class ThreadGroup;

// Removes a zombie child from its parent and the kernel, accumulating its CPU times.
void ReapChild(Kernel& k, ThreadGroup& parent, ThreadGroup& child);

// Starts tearing down every thread of `tg`; `wait_status` is the wait(2) status word
// reported to the parent (e.g. exit code << 8, or the killing signal). First call wins.
void ExitGroup(ThreadGroup& tg, int wait_status);

// Marks the robust futexes `t` still holds (set_robust_list) FUTEX_OWNER_DIED and wakes
// a waiter of each; at thread exit and at execve, as Linux does. Clears the list.
void ReleaseRobustFutexes(Task& t);

// Called on the task's own thread after its run loop ends: releases its resources (the
// platform address space must be destroyed by this thread), and if it was the last
// thread, turns the group into a zombie and notifies the parent. Frees `t`.
void TaskExited(Task& t);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TASK_EXIT_H_
