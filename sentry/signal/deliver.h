// Sending and delivering signals. All functions require the kernel lock.
#ifndef USENTRY_SENTRY_SIGNAL_DELIVER_H_
#define USENTRY_SENTRY_SIGNAL_DELIVER_H_

#include <signal.h>

#include "base/sys_result.h"

namespace usentry::sentry {

class Task;
class ThreadGroup;

// kill(2)-style: queue for the whole group; wakes a thread that can take it.
void SendGroupSignal(ThreadGroup& tg, const siginfo_t& info);
// tgkill(2)-style: queue for one thread.
void SendTaskSignal(Task& t, const siginfo_t& info);
// A synchronous fault: delivered to `t` even if blocked or ignored (then it kills the
// group, as Linux's force_sig does).
void ForceSignal(Task& t, const siginfo_t& info);

// Before returning to app code: resolves a pending syscall restart (`restart_errno` is
// the ERESTART* code of the syscall just handled, or 0) and delivers at most one
// handler frame, or applies default actions.
void DeliverSignals(Task& t, int restart_errno);
// While t's group is stopped (job control) and t is not being killed: waits. The run
// loop calls it after DeliverSignals, before app code runs.
void ParkWhileStopped(Task& t);

// Signal frames (frame_unsafe.cc): builds the x86-64 rt_sigframe on the app stack and
// points the registers at the handler; rt_sigreturn undoes it.
SysStatus SetupSignalFrame(Task& t, int sig, const siginfo_t& info, uint64_t saved_mask);
SysStatus SignalReturn(Task& t);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SIGNAL_DELIVER_H_
