// Where a run's fixed cost goes: with USENTRY_DEBUG_PHASES=1 in usentry's environment,
// the CLI, the sentry and the gofer each print a line on stderr as a run passes its
// start-up and teardown milestones. bench/phases.py turns many runs into a table of
// medians (docs/benchmarks.md); nothing else reads them.
#ifndef USENTRY_BASE_PHASES_H_
#define USENTRY_BASE_PHASES_H_

namespace usentry {

// Reads USENTRY_DEBUG_PHASES once, in the CLI's main: the processes the CLI forks and
// clones (no exec) inherit the answer, so the sentry never looks at its environment.
void EnablePhasesFromEnv();

// When enabled, writes "usentry: phase <seconds.nanoseconds> <name>\n" (CLOCK_MONOTONIC,
// the clock Python's time.monotonic reads) on stderr with one write(2), which every
// usentry process's filter allows; otherwise does nothing. `name` is a fixed word.
void Phase(const char* name);

}  // namespace usentry

#endif  // USENTRY_BASE_PHASES_H_
