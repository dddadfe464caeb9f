#!/usr/bin/env bash
# bench/compare.sh: what the sandbox costs. Runs bench/syscall_bench natively and under
# `usentry run` (each platform), and under bwrap / runsc when they are installed, plus
# whole workloads timed with repetition; prints medians and ratios to native.
# Usage: bench/compare.sh [BUILD_DIR]
#   env: PLATFORMS="ptrace systrap" (default ptrace), REPS=10 (workload runs),
#        BENCH_ARGS="--benchmark_min_time=0.1" (extra syscall_bench flags)
# A measurement, not a test: nothing here passes or fails on timing.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
usentry=${USENTRY:-$build/cli/usentry}
bench=${BENCH:-$build/bench/syscall_bench}
platforms=${PLATFORMS:-ptrace}
reps=${REPS:-10}
read -r -a bench_args <<<"${BENCH_ARGS:-}"
bench_dir=$(cd "$(dirname "$bench")" && pwd)
bench_name=$(basename "$bench")
tmp=$(mktemp -d /tmp/usentry-compare-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

[[ -x $usentry ]] || { echo "compare.sh: $usentry not built" >&2; exit 1; }
[[ -x $bench ]] || { echo "compare.sh: $bench not built" >&2; exit 1; }

# Runners: a name and a command prefix; the program follows. The benchmark binary is
# mounted at /bench in the sandbox (the build tree is not part of the default view).
runners=(native)
declare -A prefix=([native]="")
declare -A bench_path=([native]="$bench")
for p in $platforms; do
  runners+=("usentry-$p")
  prefix[usentry-$p]="$usentry run --platform $p --mount $bench_dir:/bench:ro --"
  bench_path[usentry-$p]="/bench/$bench_name"
done
if command -v bwrap >/dev/null; then
  runners+=(bwrap)
  prefix[bwrap]="bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent --"
  bench_path[bwrap]="$bench"
fi
if command -v runsc >/dev/null; then
  runners+=(runsc)
  prefix[runsc]="runsc --network=none do"
  bench_path[runsc]="$bench"
fi

# --- microbenchmarks: median of 5 repetitions, in ns ---
declare -A micro
names=()
for r in "${runners[@]}"; do
  out=$tmp/micro-$r.csv
  # shellcheck disable=SC2086
  if ! ${prefix[$r]} "${bench_path[$r]}" --benchmark_format=csv --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true "${bench_args[@]}" >"$out" 2>"$tmp/micro-$r.err"; then
    echo "compare.sh: $r: syscall_bench failed (see below); its column is empty" >&2
    tail -3 "$tmp/micro-$r.err" >&2
  fi
  while IFS=, read -r name _iters real _cpu unit _rest; do
    name=${name//\"/}
    [[ $name == *_median ]] || continue
    base=${name%_median}
    case $unit in ns) f=1 ;; us) f=1000 ;; ms) f=1000000 ;; s) f=1000000000 ;; *) f=1 ;; esac
    micro[$r,$base]=$(awk -v t="$real" -v f="$f" 'BEGIN { printf "%.0f", t * f }')
    [[ $r == native ]] && names+=("$base")
  done <"$out"
done

# --- workloads: median wall time of $reps runs, in ms ---
workloads=("/bin/true" "/usr/bin/python3 -c pass")
declare -A whole
median_ms() {  # runs "$@" $reps times, prints the median in ms
  local i start end times=()
  if command -v hyperfine >/dev/null; then
    hyperfine -N --runs "$reps" --warmup 1 --export-csv "$tmp/h.csv" -- "$*" >/dev/null 2>&1 &&
      awk -F, 'NR == 2 { printf "%.2f", $4 * 1000 }' "$tmp/h.csv"
    return
  fi
  for ((i = 0; i < reps; i++)); do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    times+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] / 1000 }'
}
for r in "${runners[@]}"; do
  for w in "${workloads[@]}"; do
    # shellcheck disable=SC2086
    whole[$r,$w]=$(median_ms ${prefix[$r]} $w)
  done
done

# --- table ---
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.1fx", a / b }'; }
printf '%-24s' "benchmark (median)"
for r in "${runners[@]}"; do printf ' %14s' "$r"; done
for r in "${runners[@]:1}"; do printf ' %18s' "$r/nat"; done
printf '\n'
for n in "${names[@]}"; do
  printf '%-24s' "${n#BM_} ns"
  for r in "${runners[@]}"; do printf ' %14s' "${micro[$r,$n]:--}"; done
  for r in "${runners[@]:1}"; do printf ' %18s' "$(ratio "${micro[$r,$n]:-}" "${micro[native,$n]:-}")"; done
  printf '\n'
done
for w in "${workloads[@]}"; do
  printf '%-24s' "${w##*/} ms"
  for r in "${runners[@]}"; do printf ' %14s' "${whole[$r,$w]:--}"; done
  for r in "${runners[@]:1}"; do printf ' %18s' "$(ratio "${whole[$r,$w]:-}" "${whole[native,$w]:-}")"; done
  printf '\n'
done
