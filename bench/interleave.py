#!/usr/bin/env python3
"""bench/interleave.py: wall time of a few commands, run in interleaved rounds.

Usage: bench/interleave.py [--rounds N] [--warmup N] [--timeout SECS] [--csv FILE]
                           LABEL=COMMAND [LABEL=COMMAND ...]

Each round runs every command once, in a new random order, so that a slow minute of a
shared VM lands on all of them alike; compare.sh instead runs each column's repetitions
back to back. One untimed warm-up run of each command comes first. COMMAND is split like
a shell would split it (no shell runs it: no pipes, no redirections); its output is
discarded. Prints, per command, the median, the 25th and 75th percentiles in ms, and the
ratio of its median to the first command's (put the native run first), and the median
CPU time (user + system) the run's processes were charged, from getrusage of the
reaped children: a change that only moves work between CPUs shows there. Exits 1 if any
run exited non-zero or timed out (each such run is named on stderr), 2 on bad usage.

A command whose warm-up run fails is named on stderr and left out of the rounds (its
row says "failed"). --timeout kills a run that takes longer (SIGKILL; a failure).
--csv also writes the figures to FILE, one line per command after a header
(label,median_ms,p25_ms,p75_ms,cpu_ms,runs,failed_runs; the figures empty for a command
that failed its warm-up): bench/compare.sh times its workload rows this way.

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
import threading
import time


def children_cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def run(argv, timeout):
    """Runs argv once; returns (wall milliseconds, CPU milliseconds, exit status), the
    status None if it ran longer than `timeout` seconds and was killed."""
    cpu = children_cpu_ms()
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    # A timer thread kills it: Popen.wait(timeout) polls with sleeps of up to 50 ms,
    # which would round every run's time up to the next poll.
    killed = threading.Event()

    def kill():
        killed.set()
        child.kill()

    timer = threading.Timer(timeout, kill) if timeout is not None else None
    if timer:
        timer.start()
    status = child.wait()
    elapsed = (time.perf_counter() - start) * 1000
    if timer:
        timer.cancel()
    return elapsed, children_cpu_ms() - cpu, None if killed.is_set() else status


def describe(status):
    return "timed out" if status is None else f"exited {status}"


def percentile(sorted_values, fraction):
    """The nearest-rank percentile of already sorted values."""
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def main():
    parser = argparse.ArgumentParser(
        description="Wall time of commands run in interleaved, randomly ordered rounds.")
    parser.add_argument("--rounds", type=int, default=20, help="timed runs of each (20)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed runs of each before the rounds (1)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds before a run is killed (none)")
    parser.add_argument("--csv", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("commands", nargs="+", metavar="LABEL=COMMAND")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    if args.timeout is not None and args.timeout <= 0:
        parser.error("--timeout must be positive")
    commands = []
    for spec in args.commands:
        label, sep, command = spec.partition("=")
        argv = shlex.split(command) if sep else []
        if not label or not argv or "," in label:
            parser.error(f"expected LABEL=COMMAND (no comma in LABEL), got {spec!r}")
        commands.append((label, argv))

    failures = 0
    broken = set()  # labels whose warm-up failed: left out of the rounds
    times = {label: [] for label, _ in commands}
    cpus = {label: [] for label, _ in commands}
    failed_runs = {label: 0 for label, _ in commands}
    for label, argv in commands:  # warm-up: page cache, first-run costs
        for _ in range(args.warmup):
            try:
                _, _, status = run(argv, args.timeout)
            except OSError as e:
                print(f"interleave.py: {label}: cannot run {argv[0]}: {e.strerror}",
                      file=sys.stderr)
                return 2
            if status != 0:
                print(f"interleave.py: {label}: warm-up run {describe(status)}; left out",
                      file=sys.stderr)
                broken.add(label)
                failures += 1
                break
    live = [(label, argv) for label, argv in commands if label not in broken]
    for round_number in range(args.rounds):
        order = live[:]
        random.shuffle(order)
        for label, argv in order:
            ms, cpu, status = run(argv, args.timeout)
            times[label].append(ms)
            cpus[label].append(cpu)
            if status != 0:
                failures += 1
                failed_runs[label] += 1
                print(f"interleave.py: {label}: round {round_number + 1} {describe(status)}",
                      file=sys.stderr)

    rows = []  # (label, median, p25, p75, cpu) or (label, None...) for a broken one
    for label, _ in commands:
        if label in broken:
            rows.append((label, None, None, None, None))
            continue
        values = sorted(times[label])
        rows.append((label, statistics.median(values), percentile(values, 0.25),
                     percentile(values, 0.75), statistics.median(cpus[label])))
    width = max([8] + [len(label) for label, _ in commands])
    print(f"{'command':<{width}} {'median ms':>10} {'p25':>9} {'p75':>9} {'ratio':>7} "
          f"{'cpu ms':>9}   ({args.rounds} interleaved rounds)")
    base = rows[0][1]
    for label, median, p25, p75, cpu in rows:
        if median is None:
            print(f"{label:<{width}} {'failed':>10}")
            continue
        ratio = f"{median / base:.2f}x" if base else "-"
        print(f"{label:<{width}} {median:>10.2f} {p25:>9.2f} {p75:>9.2f} {ratio:>7} {cpu:>9.2f}")
    if args.csv:
        with open(args.csv, "w", encoding="utf-8") as out:
            out.write("label,median_ms,p25_ms,p75_ms,cpu_ms,runs,failed_runs\n")
            for label, *figures in rows:
                cells = ["" if f is None else f"{f:.3f}" for f in figures]
                out.write(",".join([label, *cells, str(len(times[label])),
                                    str(failed_runs[label])]) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
