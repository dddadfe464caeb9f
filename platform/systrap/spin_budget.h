// How long the two sides of a systrap handoff spin before they sleep in FUTEX_WAIT.
//
// Sleeping costs: the other side's FUTEX_WAKE takes ~35 us on the 2-vCPU VM of
// 2026-12-06 (an interrupt to a halted vCPU), and the sleeper then waits to be
// scheduled. Spinning costs a vCPU that an app with one thread would leave idle. So both
// sides spin about as long as the other usually takes, measured in time: a `pause` took
// ~19 ns on the VM the first budgets were tuned on, 30 ns on an AMD EPYC host and 11.5 ns
// on the 2026-12-06 VM, where the old budget of 4000 pauses let the stub sleep ~15-30
// times per python3 start (docs/benchmarks.md).
#ifndef USENTRY_PLATFORM_SYSTRAP_SPIN_BUDGET_H_
#define USENTRY_PLATFORM_SYSTRAP_SPIN_BUDGET_H_

#include <cstdint>

#include "absl/time/time.h"

namespace usentry::platform::systrap {

// The stub thread waiting for the sentry: longer than the sentry takes for nearly every
// syscall and fault of a busy app (gofer round trips and 64 KiB fills included).
inline constexpr absl::Duration kStubSpinBudget = absl::Microseconds(200);
// ...and once the sentry said it is about to block (Context::WillBlock), only this long,
// which still catches blocks that end at once.
inline constexpr absl::Duration kStubSpinBudgetBeforeHint = absl::Microseconds(10);
// The sentry waiting for app code: app code between two syscalls is often longer than
// the sentry's work on one.
inline constexpr absl::Duration kSentrySpinBudget = absl::Microseconds(800);
// The sentry's first sched_yield while it waits for app code comes after this much
// spinning, unless its last yield gave the CPU away (later ones every kSpinsPerYield
// pauses; StubProcess::Wait): later than a report that comes
// through a signal, a SIGSYS trap or a fault (2.3-2.8 us on the AMD guest of 2026-12-07,
// where the first yield after 64 pauses, ~1.8 us, came just before such a report and
// held its handling up by the yield's ~0.55 us).
inline constexpr absl::Duration kSentryFirstYieldAfter = absl::Microseconds(4);
// How long app code must have run since the sentry's first yield before the sentry
// spends its spin on idle work (Context::SetIdleWork): a step holds up the next trap's
// handling by up to its length, and most traps come sooner (a syscall every ~40 us in
// python3's start), so only a stretch of app code already this long gets steps.
inline constexpr absl::Duration kIdleWorkAfter = absl::Microseconds(20);

// A sched_yield that kept a side off its CPU this long gave it to another thread for a
// time slice (alone on its CPU the call returns in ~0.5 us; a partner sharing the CPU
// hands it back within its handling, microseconds). Then the machine has more runnable
// threads than CPUs, and every further yield may cost a slice too (milliseconds: with a
// CPU-bound process on each vCPU, python3 -c pass took 1.6 s instead of ~25 ms): the side
// stops spinning and sleeps in FUTEX_WAIT, where the other side's FUTEX_WAKE gets it
// scheduled again as soon as it is wanted.
inline constexpr absl::Duration kYieldLostASlice = absl::Microseconds(50);
// The same in time-stamp-counter ticks, for the stub's generated code (at least 1).
uint64_t YieldLostASliceTicks();

// App threads the sentry has not blocked (in Task::Block), across the sandbox. Each has
// two host threads taking turns, its stub thread running app code while its sentry thread
// waits for it, and the other way round, and the waiting one spins. With more of them
// than usable CPUs, spinning waiters hold CPUs the others' work needs: eight python3
// threads passing the GIL around took ~10x native, both vCPUs busy spinning and
// yielding to one another. Then both sides sleep instead (Context::Switch, WillBlock).
// Up to as many as CPUs they spin as before: two processes taking turns through a pipe
// hand off faster spinning than sleeping, even while both are awake. On one CPU every
// hand-off goes through the scheduler either way, and sleeping made that pipe slower
// (docs/benchmarks.md, session 30): there the rule never applies.
void AddActiveAppThreads(int delta);
bool CpusOversubscribed();
// The rule itself: more active app threads than usable CPUs, of which there are two or
// more.
inline bool Oversubscribed(int active_app_threads, int usable_cpus) {
  return usable_cpus >= 2 && active_app_threads > usable_cpus;
}

// Nanoseconds one `pause` takes on this CPU, measured once per process (a few
// microseconds, the fastest of a few short runs) and cached.
double PauseNanos();

// How many `pause`s last about `d` (at least 1): the stub's spin loop counts pauses, since
// its generated code has no clock.
uint32_t PausesFor(absl::Duration d);

}  // namespace usentry::platform::systrap

#endif  // USENTRY_PLATFORM_SYSTRAP_SPIN_BUDGET_H_
