#!/usr/bin/env python3
"""bench/interleave.py: wall time of a few commands, run in interleaved rounds.

Usage: bench/interleave.py [--rounds N] LABEL=COMMAND [LABEL=COMMAND ...]

Each round runs every command once, in a new random order, so that a slow minute of a
shared VM lands on all of them alike; compare.sh instead runs each column's repetitions
back to back. One untimed warm-up run of each command comes first. COMMAND is split like
a shell would split it (no shell runs it: no pipes, no redirections); its output is
discarded. Prints, per command, the median, the 25th and 75th percentiles in ms, and the
ratio of its median to the first command's (put the native run first), and the median
CPU time (user + system) the run's processes were charged, from getrusage of the
reaped children: a change that only moves work between CPUs shows there. Exits 1 if any
run exited non-zero (each such run is named on stderr), 2 on bad usage.

Example:
  bench/interleave.py --rounds 30 "native=/usr/bin/python3 -c pass" \\
      "usentry=build/cli/usentry run -- /usr/bin/python3 -c pass"
"""
import argparse
import random
import resource
import shlex
import statistics
import subprocess
import sys
import time


def children_cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def run(argv):
    """Runs argv once; returns (wall milliseconds, CPU milliseconds, exit status)."""
    cpu = children_cpu_ms()
    start = time.perf_counter()
    status = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return (time.perf_counter() - start) * 1000, children_cpu_ms() - cpu, status


def percentile(sorted_values, fraction):
    """The nearest-rank percentile of already sorted values."""
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def main():
    parser = argparse.ArgumentParser(
        description="Wall time of commands run in interleaved, randomly ordered rounds.")
    parser.add_argument("--rounds", type=int, default=20, help="timed runs of each (20)")
    parser.add_argument("commands", nargs="+", metavar="LABEL=COMMAND")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    commands = []
    for spec in args.commands:
        label, sep, command = spec.partition("=")
        argv = shlex.split(command) if sep else []
        if not label or not argv:
            parser.error(f"expected LABEL=COMMAND, got {spec!r}")
        commands.append((label, argv))

    failures = 0
    times = {label: [] for label, _ in commands}
    cpus = {label: [] for label, _ in commands}
    for label, argv in commands:  # warm-up: page cache, first-run costs
        try:
            run(argv)
        except OSError as e:
            print(f"interleave.py: {label}: cannot run {argv[0]}: {e.strerror}", file=sys.stderr)
            return 2
    for round_number in range(args.rounds):
        order = commands[:]
        random.shuffle(order)
        for label, argv in order:
            ms, cpu, status = run(argv)
            times[label].append(ms)
            cpus[label].append(cpu)
            if status != 0:
                failures += 1
                print(f"interleave.py: {label}: round {round_number + 1} exited {status}",
                      file=sys.stderr)

    width = max([8] + [len(label) for label, _ in commands])
    print(f"{'command':<{width}} {'median ms':>10} {'p25':>9} {'p75':>9} {'ratio':>7} "
          f"{'cpu ms':>9}   ({args.rounds} interleaved rounds)")
    base = statistics.median(times[commands[0][0]])
    for label, _ in commands:
        values = sorted(times[label])
        median = statistics.median(values)
        ratio = f"{median / base:.2f}x" if base > 0 else "-"
        print(f"{label:<{width}} {median:>10.2f} {percentile(values, 0.25):>9.2f} "
              f"{percentile(values, 0.75):>9.2f} {ratio:>7} "
              f"{statistics.median(cpus[label]):>9.2f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
