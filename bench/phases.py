#!/usr/bin/env python3
"""bench/phases.py: where the fixed cost of a `usentry run` goes, phase by phase.

Usage: bench/phases.py [--runs N] USENTRY run [FLAGS] -- PROGRAM [ARGS...]

Runs the command N times (after one untimed warm-up) with USENTRY_DEBUG_PHASES=1, which
makes the CLI, the sentry and the gofer print a line on stderr at each milestone
(base/phases.h; the program's own output is discarded). Prints, for each phase in the
order of its median, the median time since the spawn, and the median time since the
phase before it, in ms; "spawned" is when this script started the process and "exit
seen" when wait returned. A phase that repeats in a run (address-space-ready at each
exec or fork) counts at its first line. Phases run in three processes at once, so the
steps overlap: "sentry-start" comes while the CLI still writes the id maps. Exits 1
if a run failed, 2 on bad usage.

Example:
  bench/phases.py --runs 30 build/cli/usentry run -- /usr/bin/python3 -c pass
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def one_run(argv):
    """Returns ({phase: ms since spawn}, exit status) of one run."""
    env = dict(os.environ, USENTRY_DEBUG_PHASES="1")
    start = time.monotonic()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, errors="replace")
    seen = {"spawned": 0.0, "exit seen": (time.monotonic() - start) * 1000}
    for line in proc.stderr.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[:2] == ["usentry:", "phase"]:
            seen.setdefault(fields[3], (float(fields[2]) - start) * 1000)
    return seen, proc.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.runs < 1 or len(args.command) < 2 or args.command[1] != "run":
        parser.print_usage(sys.stderr)
        return 2
    one_run(args.command)  # warm-up: page cache, the dentry cache
    runs = []
    failed = 0
    for _ in range(args.runs):
        seen, status = one_run(args.command)
        if status != 0:
            failed += 1
            print(f"run exited with status {status}", file=sys.stderr)
        runs.append(seen)
    names = {n for r in runs for n in r}
    order = sorted(names, key=lambda n: statistics.median(r[n] for r in runs if n in r))
    print(f"{'phase':24s} {'since spawn':>12s} {'step':>8s}   ({args.runs} runs, medians in ms)")
    for i, name in enumerate(order):
        at = statistics.median(r[name] for r in runs if name in r)
        steps = [r[name] - r[order[i - 1]] for r in runs if i > 0 and name in r and order[i - 1] in r]
        step = f"{statistics.median(steps):8.2f}" if steps else f"{'':8s}"
        print(f"{name:24s} {at:12.2f} {step}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
