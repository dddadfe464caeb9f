#!/usr/bin/env python3
"""bench/median_tables.py: the median of several bench/compare.sh tables, cell by cell.

Usage: bench/median_tables.py RUN1.txt RUN2.txt ...   (each file one compare.sh stdout)

On a shared VM one compare.sh run can land on a bad minute; several runs spread over
time and their per-cell medians are steadier. Prints the medians in compare.sh's layout,
with the ratio columns recomputed from the medians (not the median of the ratios), then
the min-max of each cell over the runs. Cells that are "-" (failed) in a run are left
out of that cell's median; "n/a" stays "n/a". Lines that do not belong to a table (for
example a "load: ..." note) are ignored.
"""
import statistics
import sys


def parse(path):
    """Returns (runners, {label: {runner: text}}, [labels in order]) of one table."""
    runners, rows, order = None, {}, []
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"median_tables.py: {e}")
    with f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if line.startswith("benchmark (median)"):
                runners = [w for w in words[2:] if not w.endswith("/nat")]
                continue
            if runners is None:
                continue
            cells = 2 * len(runners) - 1
            if len(words) <= cells:
                continue
            values = words[-cells:][: len(runners)]
            label = " ".join(words[:-cells])
            rows[label] = dict(zip(runners, values))
            order.append(label)
    if runners is None:
        sys.exit(f"median_tables.py: {path}: no compare.sh table")
    return runners, rows, order


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def decimals(cells):
    """How many decimals the cells were printed with (ns: 0, ms and %cpu: 2)."""
    return max((len(c.split(".")[1]) for c in cells if "." in c and number(c) is not None),
               default=0)


def main(paths):
    tables = [parse(p) for p in paths]
    runners, _, order = tables[0]
    for p, (r, _, _) in zip(paths, tables):
        if r != runners:
            sys.exit(f"median_tables.py: {p}: runners {r} differ from {runners}")
    others = [r for r in runners if r != "native"]
    lw = max([24] + [len(label) + 1 for label in order])
    w = max([12] + [len(r) + 1 for r in runners])
    rw = w + 4

    def cells(label, runner):
        return [t[1].get(label, {}).get(runner, "-") for t in tables]

    def values(label, runner):
        c = cells(label, runner)
        if all(x == "n/a" for x in c):
            return None
        return [v for v in map(number, c) if v is not None]

    print(f"{'benchmark (median of ' + str(len(tables)) + ')':<{lw}}"
          + "".join(f" {r:>{w}}" for r in runners)
          + "".join(f" {r + '/nat':>{rw}}" for r in others))
    for label in order:
        med = {}
        line = f"{label:<{lw}}"
        for r in runners:
            v = values(label, r)
            med[r] = "n/a" if v is None else (statistics.median(v) if v else None)
            if isinstance(med[r], float):
                text = f"{med[r]:.{decimals(cells(label, r))}f}"
            else:
                text = med[r] or "-"
            line += f" {text:>{w}}"
        for r in others:
            if med[r] == "n/a":
                line += f" {'n/a':>{rw}}"
            elif label.endswith("%cpu"):
                line += f" {'n/a':>{rw}}"
            elif med[r] is None or not isinstance(med["native"], float) or not med["native"]:
                line += f" {'-':>{rw}}"
            else:
                line += f" {med[r] / med['native']:>{rw - 1}.1f}x"
        print(line)
    print()
    print(f"{'min-max over the runs':<{lw}}" + "".join(f" {r:>{w + 8}}" for r in runners))
    for label in order:
        line = f"{label:<{lw}}"
        for r in runners:
            v = values(label, r)
            d = decimals(cells(label, r))
            text = "n/a" if v is None else (f"{min(v):.{d}f}-{max(v):.{d}f}" if v else "-")
            line += f" {text:>{w + 8}}"
        print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1:])
