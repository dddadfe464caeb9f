#!/usr/bin/python3
"""Runs CPython's own regression tests natively and under usentry, and compares.

    tests/cpython/compare.py [--usentry BIN] [--platform P ...] [--markdown] [MODULE ...]

Needs Debian's libpython3.11-testsuite (setup.sh installs it). Each module runs through
run_module.py with Debian's /usr/bin/python3 and the sandbox's default environment, on
the host and in `usentry run --platform P`. For every module it prints how many cases
pass natively, how many of those also pass in the sandbox, and the percentage (the
issue's bar is >= 95% per module), then the cases that pass natively but not in the
sandbox with the sandbox's first error line. Exit status 0 when every module meets the
bar on every platform.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_MODULES = [
    "test_os", "test_posix", "test_subprocess", "test_signal", "test_select",
    "test_selectors", "test_threading", "test_fcntl", "test_mmap", "test_tempfile",
    "test_shutil", "test_pty", "test_time", "test_socket",
]
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "HOME": "/root", "LANG": "C.UTF-8"}
BAR = 95.0


def parse(output):
    cases, details = {}, {}
    for line in output.splitlines():
        if line.startswith("CASE "):
            _, outcome, case_id = line.split(" ", 2)
            cases[case_id] = outcome
        elif line.startswith("DETAIL "):
            _, case_id, detail = (line.split(" ", 2) + [""])[:3]
            details[case_id] = detail
    return cases, details


def run(argv, timeout):
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, env=ENV, cwd="/tmp", capture_output=True, text=True,
                              errors="replace", timeout=timeout)
        out, err, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, code = "timed out", "timeout"
    return out, err, code, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--usentry", default=os.path.join(ROOT, "build", "cli", "usentry"))
    ap.add_argument("--platform", action="append", help="ptrace and/or systrap (default both)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per module and side")
    ap.add_argument("--markdown", action="store_true", help="print the summary as a table")
    ap.add_argument("modules", nargs="*", default=DEFAULT_MODULES)
    args = ap.parse_args()
    args.usentry = os.path.abspath(args.usentry)
    platforms = args.platform or ["systrap", "ptrace"]
    if not os.path.isdir("/usr/lib/python3.11/test/libregrtest"):
        sys.exit("compare.py: install libpython3.11-testsuite first")

    rows, misses, ok = [], [], True
    for module in args.modules:
        native_out, native_err, _, native_secs = run(
            ["/usr/bin/python3", os.path.join(HERE, "run_module.py"), module], args.timeout)
        native, _ = parse(native_out)
        passing = {c for c, o in native.items() if o == "pass"}
        if not native:
            print(f"{module}: no results natively: {native_err.strip()[-300:]}", file=sys.stderr)
        row = [module, len(native), len(passing), f"{native_secs:.1f}s"]
        for platform in platforms:
            out, err, code, secs = run(
                [args.usentry, "run", "--platform", platform, "--user", "0", "--workdir", "/tmp",
                 "--mount", f"{HERE}:/cpython:ro", "--",
                 "/usr/bin/python3", "/cpython/run_module.py", module], args.timeout)
            cases, details = parse(out)
            both = sum(1 for c in passing if cases.get(c) == "pass")
            pct = 100.0 * both / len(passing) if passing else 100.0
            ok &= pct >= BAR and bool(native)
            note = "" if cases or not passing else f" (no results: exit {code}; {err.strip()[-200:]})"
            if code == "timeout":
                note += f" (killed at the {args.timeout}s timeout)"
            row += [f"{both}", f"{pct:.1f}%{note}", f"{secs:.1f}s"]
            for c in sorted(passing):
                if cases.get(c) != "pass":
                    misses.append((module, platform, c, cases.get(c, "missing"),
                                   details.get(c, "")))
        rows.append(row)
        print(" ".join(str(x) for x in row), file=sys.stderr, flush=True)

    header = ["module", "cases", "pass natively", "native time"]
    for platform in platforms:
        header += [f"pass on {platform}", f"{platform} %", f"{platform} time"]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(str(x) for x in row) + " |")
    else:
        print("\t".join(header))
        for row in rows:
            print("\t".join(str(x) for x in row))
    print()
    print(f"Cases passing natively but not under usentry ({len(misses)}):")
    for module, platform, case, outcome, detail in misses:
        print(f"  [{platform}] {case}: {outcome} {detail}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
