// A short scheduler slice for the sandbox's processes, so that a wake-up on a busy host
// gets a CPU at once instead of at the next tick.
//
// Every handoff between the sentry, a stub and the gofer wakes a thread that slept. On a
// host with a CPU-bound process on each CPU, EEVDF leaves the running task its slice
// (0.75 ms by default) and the woken one waits for the next tick (4 ms at HZ=250): with
// one busy loop per vCPU, `python3 -c pass` took 1.6 s in the sandbox against 25 ms
// natively, its threads waiting 3-3.4 ms on average at each of ~450 wake-ups (perf sched
// latency). A shorter requested slice (Linux 6.12's sched_attr.sched_runtime for
// SCHED_OTHER) gives a woken thread an earlier deadline, so it preempts at wake-up; its
// share of the CPU does not change. Kernels without custom slices ignore the request.
#ifndef USENTRY_BASE_SCHED_SLICE_H_
#define USENTRY_BASE_SCHED_SLICE_H_

#include <cstdint>

namespace usentry {

// The slice requested: the shortest Linux accepts.
inline constexpr uint64_t kShortSliceNanos = 100'000;

// Requests kShortSliceNanos for the calling thread (threads and processes it starts
// later inherit it), keeping its nice value. Only a SCHED_OTHER thread is changed (a
// caller that chose batch, idle or real-time scheduling keeps it). Best effort: false if
// the kernel refused (seccomp, an old kernel without sched_setattr).
bool RequestShortSchedulerSlice();

// The calling thread's requested slice in nanoseconds as the kernel reports it
// (sched_getattr's sched_runtime), or 0 if it cannot tell.
uint64_t SchedulerSliceNanos();

}  // namespace usentry

#endif  // USENTRY_BASE_SCHED_SLICE_H_
