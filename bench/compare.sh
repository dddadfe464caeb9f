#!/usr/bin/env bash
# bench/compare.sh: what the sandbox costs. Runs the same work natively, under
# `usentry run` for each platform, and under bwrap and runsc (gVisor) when they are
# installed, side by side in one run, and prints medians and ratios to native.
#
# Usage: bench/compare.sh [BUILD_DIR]     (default: build-bench next to bench/)
# Environment (all optional):
#   PLATFORMS="ptrace systrap"  usentry platforms; default: every one for which
#                               `usentry run --platform P -- /bin/true` exits 0
#   RUNSC_PLATFORMS="ptrace systrap"  runsc platforms to try (columns runsc-P)
#   RUNNERS="native usentry-ptrace"   only these columns (default: all found)
#   PARTS="micro net workloads idle"  which groups of rows to measure
#   REPS=10          runs per workload (median), after one checked warm-up run; the
#                    runners take turns, round by round (bench/interleave.py)
#   BENCH_ARGS=...   extra syscall_bench and net_bench flags, e.g. --benchmark_min_time=0.05
#   IDLE_SECS=10     duration of the idle-CPU `sleep`
#   FORKS=1000       iterations of the sh fork loop
#   TIMEOUT=900      seconds before one command (one run of a workload) is killed
#   IDLE_ACCOUNTING=rusage   use getrusage even when a cgroup can be made (see below)
#   USENTRY, BENCH, NET_BENCH, HANDOFF_BENCH   paths of the usentry CLI, syscall_bench,
#                    net_bench and handoff_bench
# A measurement, not a test: nothing here passes or fails on timing. A runner that
# fails leaves its cells as "-" and says why in one line on stderr.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build-bench}
usentry=${USENTRY:-$build/cli/usentry}
bench=${BENCH:-$build/bench/syscall_bench}
net_bench=${NET_BENCH:-$build/bench/net_bench}
handoff_bench=${HANDOFF_BENCH:-$build/bench/handoff_bench}
reps=${REPS:-10}
idle_secs=${IDLE_SECS:-10}
forks=${FORKS:-1000}
limit=${TIMEOUT:-900}
parts=" ${PARTS:-micro net workloads idle} "
read -r -a bench_args <<<"${BENCH_ARGS:-}"
# Debian's interpreter and compiler, not whatever PATH finds first (pyenv shims).
python=/usr/bin/python3
gcc=/usr/bin/gcc

note() { echo "compare.sh: $*" >&2; }
# POSIX single quotes (which interleave.py's shlex.split also understands), and a
# command line for messages, quoted where needed.
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
show() {
  local a words=()
  for a in "$@"; do
    if [[ $a =~ ^[-A-Za-z0-9_./:=+,@%]+$ ]]; then words+=("$a"); else words+=("$(sq "$a")"); fi
  done
  echo "${words[*]}"
}
# The last non-empty line of a file, for one-line failure reasons.
last_line() { awk 'NF { l = $0 } END { print substr(l, 1, 200) }' "$1" 2>/dev/null; }

tmp=$(mktemp -d /tmp/usentry-compare-XXXXXX)
cgroup=""
peer_pid="" # net_bench --serve, the host-side peer of the netgate rows
cleanup() {
  if [[ -n $peer_pid ]]; then
    kill "$peer_pid" 2>/dev/null
    wait "$peer_pid" 2>/dev/null
  fi
  if [[ -n $cgroup ]]; then
    # Stragglers (processes a runner did not reap) may take a moment to die.
    for _ in 1 2 3 4 5; do rmdir "$cgroup" 2>/dev/null && break; sleep 0.2; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if [[ -x $bench ]]; then
  bench_dir=$(cd "$(dirname "$bench")" && pwd)
else
  note "$bench not built; no microbenchmarks"
  parts=${parts/ micro / }
fi
if [[ -x $net_bench ]]; then
  net_bench_dir=$(cd "$(dirname "$net_bench")" && pwd)
elif [[ $parts == *" net "* ]]; then
  note "$net_bench not built; no network rows"
  parts=${parts/ net / }
fi

# --- runners ---
# set_argv RUNNER DIR CMD...: sets argv to CMD run by RUNNER. A non-empty DIR is what a
# benchmark binary needs: usentry gets that build dir mounted at /bench, since the build
# tree is not part of its default view (see in_runner). usentry runners also get the
# flags in usentry_flags.
argv=()
usentry_flags=()
set_argv() {
  local r=$1 dir=$2
  shift 2
  case $r in
    native) argv=() ;;
    usentry-*)
      argv=("$usentry" run --platform "${r#usentry-}" "${usentry_flags[@]}")
      if [[ -n $dir ]]; then argv+=(--mount "$dir:/bench:ro"); fi
      argv+=(--)
      ;;
    bwrap)
      argv=(bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all
        --die-with-parent --)
      ;;
    # runsc (gVisor) `do`: the host root read-only under a tmpfs overlay, as root.
    # --ignore-cgroups keeps the sandbox in our cgroup (otherwise runsc moves it into
    # runsc-PID cgroups, which the idle-CPU accounting would not see, and may leave
    # them behind).
    runsc-*) argv=(runsc --ignore-cgroups --platform="${r#runsc-}" --network=none "do" --) ;;
    *)
      note "unknown runner $r (expected native, usentry-P, bwrap or runsc-P)"
      argv=(false)
      return
      ;;
  esac
  argv+=("$@")
}
# in_runner RUNNER PATH: the benchmark binary PATH as seen by RUNNER (under usentry, in
# its directory mounted at /bench by set_argv).
in_runner() { if [[ $1 == usentry-* ]]; then echo "/bench/$(basename "$2")"; else echo "$2"; fi; }

# probe RUNNER WHAT-THEN: does it run /bin/true? On failure prints the reason and what
# happens to the column, and returns 1.
probe() {
  set_argv "$1" "" /bin/true
  if timeout -k 5 120 "${argv[@]}" </dev/null >/dev/null 2>"$tmp/probe.err"; then
    return 0
  fi
  note "$1: \`$(show "${argv[@]}")\` failed, $2: $(last_line "$tmp/probe.err")"
  return 1
}

# A runner whose probe fails is dropped with a note, unless it was asked for
# explicitly (RUNNERS, PLATFORMS): then it keeps its column of "-" (dead[R]=1).
runners=(native)
declare -A dead
if [[ -n ${RUNNERS:-} ]]; then
  runners=()
  for r in $RUNNERS; do
    case $r in
      native | usentry-?* | bwrap | runsc-?*) runners+=("$r") ;;
      *) note "unknown runner $r (expected native, usentry-P, bwrap or runsc-P); ignored" ;;
    esac
  done
  for r in "${runners[@]}"; do probe "$r" "its cells are -" || dead[$r]=1; done
else
  if [[ -x $usentry ]]; then
    for p in ${PLATFORMS:-ptrace systrap}; do
      # An explicitly requested platform keeps its column even when it fails.
      if [[ -n ${PLATFORMS:-} ]]; then
        runners+=("usentry-$p")
        probe "usentry-$p" "its cells are -" || dead[usentry-$p]=1
      elif probe "usentry-$p" "skipped (this build does not run it)"; then
        runners+=("usentry-$p")
      fi
    done
  else
    note "$usentry not built; no usentry columns"
  fi
  if command -v bwrap >/dev/null; then
    probe bwrap skipped && runners+=(bwrap)
  else
    note "bwrap not installed (apt-get install bubblewrap); no bwrap column"
  fi
  if command -v runsc >/dev/null; then
    for p in ${RUNSC_PLATFORMS:-ptrace systrap}; do
      probe "runsc-$p" skipped && runners+=("runsc-$p")
    done
  else
    note "runsc not installed (apt-get install runsc); no runsc columns"
  fi
fi
((${#runners[@]})) || { note "no runners"; exit 1; }
note "runners: ${runners[*]}"

# --- Google Benchmark results (syscall_bench, net_bench): medians of 5 repetitions ---
# ns[RUNNER,NAME] is the median real time in ns, mbs[RUNNER,NAME] the median MB/s of a
# benchmark that counts bytes (bytes[NAME]=1). NAME is the benchmark's name without the
# "/real_time" of UseRealTime(), plus a suffix telling variants apart.
declare -A ns mbs bytes seen
# read_medians CSV RUNNER SUFFIX LIST: fills ns and mbs from --benchmark_format=csv
# output and appends each NAME not seen before to the array named LIST. A benchmark that
# skipped with an error says so in one line on stderr (its cells stay "-").
read_medians() {
  local csv=$1 r=$2 suffix=$3 name _iters real _cpu unit bps _items _label err msg base f
  local -n list=$4
  local -A told=()
  while IFS=, read -r name _iters real _cpu unit bps _items _label err msg; do
    name=${name//\"/}
    base=${name%_median}
    base=${base%/real_time}$suffix
    if [[ $err == true ]]; then
      [[ -n ${told[$base]:-} ]] || note "$r: ${base#BM_}: ${msg//\"/}"
      told[$base]=1
    elif [[ $name == *_median && -n $real ]]; then
      case $unit in ns) f=1 ;; us) f=1000 ;; ms) f=1000000 ;; s) f=1000000000 ;; *) f=1 ;; esac
      ns[$r,$base]=$(awk -v t="$real" -v f="$f" 'BEGIN { printf "%.0f", t * f }')
      if [[ -n $bps ]]; then
        mbs[$r,$base]=$(awk -v b="$bps" 'BEGIN { printf "%.0f", b / 1e6 }')
        bytes[$base]=1
      fi
    else
      continue
    fi
    if [[ -z ${seen[$base]:-} ]]; then
      seen[$base]=1
      list+=("$base")
    fi
  done <"$csv"
}
# gbench RUNNER DIR BINARY TAG ARGS...: runs a Google Benchmark binary (in DIR) under
# RUNNER with ARGS, 5 repetitions, CSV into $tmp/TAG-RUNNER.csv; a failing run says so.
gbench() {
  local r=$1 dir=$2 binary=$3 tag=$4
  shift 4
  set_argv "$r" "$dir" "$(in_runner "$r" "$binary")" "$@" --benchmark_format=csv \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "${bench_args[@]}"
  if ! timeout -k 10 "$limit" "${argv[@]}" </dev/null >"$tmp/$tag-$r.csv" 2>"$tmp/$tag-$r.err"; then
    note "$r: $(basename "$binary") ($tag) failed, missing rows are '-': $(last_line "$tmp/$tag-$r.err")"
  fi
}

# --- microbenchmarks: syscall_bench, in ns ---
# host_handoff: the round trip of one cache line between two processes on the host
# (handoff_bench's Handoff/0, run natively, ns), or nothing. A sandbox's handoffs cross
# the same path, and on a VM whose vCPUs the host moves between cores it changes from
# minute to minute (~70 or ~330 ns on the AMD guest of docs/benchmarks.md, session 28),
# and with it a sandbox column's micro rows; each column gets the figure of its moment.
host_handoff() {
  [[ -x $handoff_bench ]] || return
  "$handoff_bench" --benchmark_filter='^BM_Handoff/0$' --benchmark_min_time=0.05 \
    --benchmark_format=csv 2>/dev/null | awk -F, '$1 ~ /^"?BM_Handoff\/0"?$/ { printf "%.0f", $3 }'
}
names=()
declare -A handoff
if [[ $parts == *" micro "* ]]; then
  for r in "${runners[@]}"; do
    [[ -n ${dead[$r]:-} ]] && continue
    handoff[$r]=$(host_handoff)
    gbench "$r" "$bench_dir" "$bench" micro
    read_medians "$tmp/micro-$r.csv" "$r" "" names
  done
fi

# --- network: net_bench, in ns or MB/s ---
# Loopback rows, every runner: the peer is a child of net_bench in the same sandbox.
# Netgate rows (NAME " netgate"), usentry only: the peer is `net_bench --serve` on the
# host's 127.0.0.1, started here natively; usentry runs the client with --allow-host-port
# against host.usentry.internal, so every connection is dialed by netgate and its data
# moves over the donated host socket; the native column runs the same client against
# 127.0.0.1 directly. bwrap and runsc run without a network (--unshare-all,
# --network=none), so their cells are n/a. No UDP row: --allow-host-port is TCP only.
net_names=()
# start_peer: starts the host-side peer and sets peer_port, or says why not.
peer_port=""
start_peer() {
  : >"$tmp/peer.port"
  "$net_bench" --serve=0 </dev/null >"$tmp/peer.port" 2>"$tmp/peer.err" &
  peer_pid=$!
  local i
  for ((i = 0; i < 50; i++)); do
    read -r peer_port <"$tmp/peer.port"
    [[ -n $peer_port ]] && return 0
    kill -0 "$peer_pid" 2>/dev/null || break
    sleep 0.1
  done
  note "\`$(show "$net_bench" --serve=0)\` failed, no netgate rows: $(last_line "$tmp/peer.err")"
  return 1
}
if [[ $parts == *" net "* ]]; then
  for r in "${runners[@]}"; do
    [[ -n ${dead[$r]:-} ]] && continue
    gbench "$r" "$net_bench_dir" "$net_bench" net
    read_medians "$tmp/net-$r.csv" "$r" "" net_names
  done
  if start_peer; then
    for r in "${runners[@]}"; do
      [[ -n ${dead[$r]:-} ]] && continue
      case $r in
        native) target=127.0.0.1:$peer_port ;;
        usentry-*) target=host.usentry.internal:$peer_port ;;
        *) continue ;;
      esac
      usentry_flags=(--allow-host-port "$peer_port")
      gbench "$r" "$net_bench_dir" "$net_bench" netgate --target="$target" \
        --benchmark_filter='^BM_Tcp'
      usentry_flags=()
      read_medians "$tmp/netgate-$r.csv" "$r" " netgate" net_names
    done
    kill "$peer_pid" 2>/dev/null
    wait "$peer_pid" 2>/dev/null
    peer_pid=""
  fi
fi

# --- workloads: median wall time of $reps runs, in ms ---
# Row labels, and wl_argv N DIR which sets cmd to workload N writing into DIR (a
# writable scratch dir: /tmp inside every sandbox, a private dir natively).
wl_labels=("true ms" "python3 -c pass ms" "python3 imports ms" "gcc -O2 hello ms"
  "sh ${forks}x true ms" "python3 8 threads ms")
cmd=()
wl_argv() {
  case $1 in
    0) cmd=(/bin/true) ;;
    1) cmd=("$python" -c pass) ;;
    2) cmd=("$python" -c 'import json, re, os, subprocess, collections, datetime, pathlib, tempfile, argparse, logging, hashlib, typing') ;;
    3) cmd=(/bin/sh -c "printf '#include <stdio.h>\\nint main(void) { puts(\"hello\"); return 0; }\\n' >$2/h.c && $gcc -O2 -o $2/h $2/h.c") ;;
    4) cmd=(/bin/sh -c "i=0; while [ \$i -lt $forks ]; do /bin/true; i=\$((i + 1)); done") ;;
    # Eight threads making syscalls that release the GIL, so that it passes between them
    # through futexes all along: more runnable threads than CPUs.
    5) cmd=("$python" -c 'import os, threading
def work():
    for _ in range(1000):
        os.stat("/")
        os.getpid()
        with open("/etc/hostname", "rb") as f:
            f.read()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()') ;;
  esac
}
scratch() { if [[ $1 == native ]]; then echo "$tmp"; else echo /tmp; fi; }

# warm_up RUNNER LABEL: the untimed first run of argv, which also catches a failing
# runner with its message; returns 1 (and says why on stderr) if it failed.
warm_up() {
  local r=$1 label=$2 rc
  timeout -k 10 "$limit" "${argv[@]}" </dev/null >/dev/null 2>"$tmp/wl.err"
  rc=$?
  ((rc == 0)) && return 0
  note "$r: $label: \`$(show "${argv[@]}")\` failed (exit $rc): $(last_line "$tmp/wl.err")"
  return 1
}
# Each workload's timed runs go round by round through every runner, in a new random
# order each round (bench/interleave.py), so that a slow minute of a shared machine
# lands on all columns alike rather than on whichever runner had its turn then.
declare -A whole
if [[ $parts == *" workloads "* ]]; then
  for i in "${!wl_labels[@]}"; do
    specs=()
    for r in "${runners[@]}"; do
      [[ -n ${dead[$r]:-} ]] && continue
      wl_argv "$i" "$(scratch "$r")"
      set_argv "$r" "" "${cmd[@]}"
      warm_up "$r" "${wl_labels[$i]}" || continue
      q=""
      for a in "${argv[@]}"; do q+="$(sq "$a") "; done
      specs+=("$r=$q")
    done
    ((${#specs[@]} > 0)) || continue
    rm -f "$tmp/wl.csv"
    "$python" "$here/interleave.py" --rounds "$reps" --warmup 0 --timeout "$limit" \
      --csv "$tmp/wl.csv" "${specs[@]}" >/dev/null 2>"$tmp/wl.err"
    while IFS=, read -r r median _ _ _ _ failed; do
      [[ $r == label ]] && continue
      if [[ -n $median && $failed == 0 ]]; then
        whole[$r,$i]=$(printf '%.2f' "$median")
      else
        note "$r: ${wl_labels[$i]}: $failed timed run(s) failed: $(last_line "$tmp/wl.err")"
      fi
    done <"$tmp/wl.csv"
  done
fi

# --- idle CPU: `sleep $idle_secs` under each runner; CPU of the whole process tree ---
# Preferred: a cgroup of our own (v1 cpuacct or v2 cpu.stat) that the runner starts in,
# so every process it creates is counted, reaped or not. Fallback: bash's `time`, i.e.
# getrusage(RUSAGE_CHILDREN), which counts a descendant only if every process between
# it and us waited for it. For usentry that holds: the CLI waits for the gofer and the
# sentry, the sentry for the stubs it creates. Checked on 2026-11-29 with a shell busy
# loop under usentry-ptrace: 1962 ms by rusage, 1977 ms by cgroup (sleep 3: 81 vs 92 ms,
# the difference being the measuring shell's own commands). It does not hold for runsc:
# the CPU of its ptrace stubs never reaches runsc's rusage (a 3.3 s busy loop under
# runsc-ptrace showed as 0.44 s of rusage but 3.3 s in the cgroup).
setup_cgroup() {
  local mnt rel d
  mnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpuacct(,|$)/ { print $2; exit }' /proc/self/mounts)
  rel=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ { print $3; exit }' /proc/self/cgroup)
  if [[ -n $mnt && -n $rel ]]; then
    d=$mnt${rel%/}/usentry-compare-$$
    if mkdir "$d" 2>/dev/null; then cgroup=$d cg_file=$d/cpuacct.usage cg_scale=1; return; fi
  fi
  mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
  rel=$(awk -F: '$1 == "0" { print $3; exit }' /proc/self/cgroup)
  if [[ -n $mnt && -n $rel ]]; then
    d=$mnt${rel%/}/usentry-compare-$$
    if mkdir "$d" 2>/dev/null; then cgroup=$d cg_file=$d/cpu.stat cg_scale=1000; return; fi
  fi
}
cg_ns() { awk -v s="$cg_scale" 'NF == 1 || $1 == "usage_usec" { printf "%.0f", $NF * s; exit }' "$cg_file"; }
# idle_pct RUNNER: prints CPU seconds / wall seconds * 100 for argv, or nothing.
idle_pct() {
  local r=$1 start end before after times
  start=${EPOCHREALTIME/[.,]/}
  if [[ -n $cgroup ]]; then
    before=$(cg_ns)
    (echo "$BASHPID" >"$cgroup/cgroup.procs" && exec timeout -k 10 "$limit" "${argv[@]}") \
      </dev/null >/dev/null 2>"$tmp/idle.err"
  else
    local TIMEFORMAT='%3U %3S'
    { time timeout -k 10 "$limit" "${argv[@]}" </dev/null >/dev/null 2>"$tmp/idle.err"; } \
      2>"$tmp/idle.time"
  fi
  local rc=$?
  end=${EPOCHREALTIME/[.,]/}
  if ((rc != 0)); then
    note "$r: idle: \`$(show "${argv[@]}")\` failed (exit $rc): $(last_line "$tmp/idle.err")"
    return
  fi
  if [[ -n $cgroup ]]; then
    sleep 0.2 # let unreaped stragglers finish dying
    after=$(cg_ns)
    awk -v c="$((after - before))" -v w="$((end - start))" 'BEGIN { printf "%.2f", c / 10 / w }'
  else
    read -r -a times <"$tmp/idle.time"
    awk -v u="${times[0]}" -v s="${times[1]}" -v w="$((end - start))" \
      'BEGIN { printf "%.2f", (u + s) * 1e8 / w }'
  fi
}
declare -A idle
if [[ $parts == *" idle "* ]]; then
  [[ ${IDLE_ACCOUNTING:-cgroup} == rusage ]] || setup_cgroup
  if [[ -n $cgroup ]]; then
    note "idle CPU from cgroup $cgroup"
  else
    note "idle CPU from getrusage of waited-for children (no writable cgroup); misses unreaped processes"
  fi
  for r in "${runners[@]}"; do
    [[ -n ${dead[$r]:-} ]] && continue
    set_argv "$r" "" /bin/sleep "$idle_secs"
    idle[$r]=$(idle_pct "$r")
  done
fi

# --- table ---
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "n/a") print "n/a"; else if (a == "" || b == "" || b == 0) print "-"; else printf "%.1fx", a / b }'
}
w=12
others=()  # the ratio columns
for r in "${runners[@]}"; do
  ((${#r} + 1 > w)) && w=$((${#r} + 1))
  [[ $r == native ]] || others+=("$r")
done
rw=$((w + 4))
lw=24 # the label column, wider for long benchmark names ("BM_" off, " MB/s" on)
for n in "${names[@]}" "${net_names[@]}"; do ((${#n} + 3 > lw)) && lw=$((${#n} + 3)); done
# row LABEL ratio|none: prints one line from the values v[runner], with ratios to
# native or "n/a" in the ratio columns.
declare -A v
row() {
  local r
  printf '%-*s' "$lw" "$1"
  for r in "${runners[@]}"; do printf " %${w}s" "${v[$r]:--}"; done
  for r in "${others[@]}"; do
    if [[ $2 == ratio ]]; then
      printf " %${rw}s" "$(ratio "${v[$r]:-}" "${v[native]:-}")"
    else
      printf " %${rw}s" "n/a"
    fi
  done
  printf '\n'
}
printf '%-*s' "$lw" "benchmark (median)"
for r in "${runners[@]}"; do printf " %${w}s" "$r"; done
for r in "${others[@]}"; do printf " %${rw}s" "$r/nat"; done
printf '\n'
for n in "${names[@]}"; do
  v=()
  for r in "${runners[@]}"; do v[$r]=${ns[$r,$n]:-}; done
  row "${n#BM_} ns" ratio
done
if ((${#names[@]} > 0)); then
  v=()
  for r in "${runners[@]}"; do v[$r]=${handoff[$r]:-}; done
  row "host handoff ns" none
fi
# Network rows; for MB/s the ratio is the fraction of native throughput.
for n in "${net_names[@]}"; do
  v=()
  for r in "${runners[@]}"; do
    if [[ $n == *" netgate" && $r != native && $r != usentry-* ]]; then
      v[$r]=n/a
    elif [[ -n ${bytes[$n]:-} ]]; then
      v[$r]=${mbs[$r,$n]:-}
    else
      v[$r]=${ns[$r,$n]:-}
    fi
  done
  if [[ -n ${bytes[$n]:-} ]]; then row "${n#BM_} MB/s" ratio; else row "${n#BM_} ns" ratio; fi
done
if [[ $parts == *" workloads "* ]]; then
  for i in "${!wl_labels[@]}"; do
    v=()
    for r in "${runners[@]}"; do v[$r]=${whole[$r,$i]:-}; done
    row "${wl_labels[$i]}" ratio
  done
fi
if [[ $parts == *" idle "* ]]; then
  v=()
  for r in "${runners[@]}"; do v[$r]=${idle[$r]:-}; done
  row "idle sleep ${idle_secs}s %cpu" none
fi
