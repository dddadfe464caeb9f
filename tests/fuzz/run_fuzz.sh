#!/usr/bin/env bash
# run_fuzz.sh USENTRY PLATFORM FUZZ_BINARY SEEDS ITERATIONS [BATCH [TIMEOUT [ARGS...]]]:
# runs syscall_fuzz under `usentry run --platform PLATFORM` once per seed (SEEDS: "1,2,3"
# or "100-199"; ARGS go to the fuzzer, e.g. --threads 3) and fails when
#   - usentry's exit code is not the fuzzer's own 0 (125 or "sentry crashed": the
#     sentry died; 3: a batch survived SIGKILL, i.e. the sentry stopped serving it),
#   - a run outlives TIMEOUT seconds (default 120): the sentry hung,
#   - a host canary directory, visible read-only through the sandbox's root and named
#     in the fuzzer's path arguments, or the fuzzer's own directory changed.
# The sandbox gets no read-write mount; its cwd and HOME are the ephemeral /workspace
# and the read-only /root. Prints one line per seed and the total cost.
set -uo pipefail
usentry=$(realpath "$1") platform=$2 fuzz=$(realpath "$3") seeds=$4 iterations=$5
batch=${6:-200} timeout=${7:-120}
extra=("${@:8}")
fuzzdir=$(dirname "$fuzz")
env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
  LANG=C.UTF-8)

# The canary lives beside the binary (not under the host's /tmp, which the sandbox
# replaces with its own tmpfs), so the sandbox sees it at the same path.
canary=$(mktemp -d "$fuzzdir/../canary.XXXXXX") || exit 1
logdir=$(mktemp -d) || exit 1
trap 'rm -rf "$canary" "$logdir"' EXIT
mkdir -p "$canary/sub"
echo "canary file" >"$canary/file"
echo "inner" >"$canary/sub/inner"
ln -s file "$canary/link"
chmod 0644 "$canary/file"
touch -d '2001-01-01 00:00:00' "$canary/file" "$canary/sub/inner" "$canary/sub"

snapshot() {
  (cd "$1" && find . -printf '%p %y %m %s %T@ %i %n %l\n' | sort &&
    find . -type f -exec sha256sum {} + | sort)
}
canary_before=$(snapshot "$canary")
fuzzdir_before=$(snapshot "$fuzzdir")

expand_seeds() {
  local part
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}

status=0 total_calls=0 total_batches=0
start=$SECONDS
for seed in $(expand_seeds "$seeds"); do
  out=$logdir/out.$seed err=$logdir/err.$seed
  t0=$SECONDS
  (cd / && timeout -k 10 "$timeout" "${env[@]}" "$usentry" run --platform "$platform" --user 0 \
    --mount "$fuzzdir:/fuzz:ro" -- /fuzz/$(basename "$fuzz") --seed "$seed" \
    --iterations "$iterations" --batch "$batch" --canary "$canary" "${extra[@]}") >"$out" \
    2>"$err"
  rc=$?
  # The batches write random bytes to stdout too, so the line may not start clean.
  summary=$(grep -ao 'summary: seed=.*' "$out" | tail -1)
  bad=""
  if ((rc == 124 || rc == 137)); then
    bad="usentry did not finish within ${timeout}s (sentry hung)"
  elif grep -q 'sentry crashed' "$err" || ((rc == 125)); then
    bad="the sentry crashed (exit $rc)"
  elif ((rc == 3)); then
    bad="a batch outlived SIGKILL (the sentry stopped serving it)"
  elif ((rc != 0)) || [[ -z $summary ]]; then
    bad="the fuzzer exited $rc without a summary"
  fi
  # What the sentry reported on stderr (killed tasks, internal errors): not a failure,
  # but worth reading; numbers folded so that the same message counts once.
  grep -a '^usentry:' "$err" | sed -E 's/[0-9]+/N/g' >>"$logdir/messages"
  calls=$(sed -nE 's/.* calls=([0-9]+).*/\1/p' <<<"$summary")
  batches=$(sed -nE 's/.* batches=([0-9]+).*/\1/p' <<<"$summary")
  total_calls=$((total_calls + ${calls:-0})) total_batches=$((total_batches + ${batches:-0}))
  echo "$platform seed $seed: ${summary:-no summary} ($((SECONDS - t0))s)"
  if [[ -n $bad ]]; then
    status=1
    echo "FAIL $platform seed $seed: $bad"
    echo "  reproduce: usentry run --platform $platform --mount $fuzzdir:/fuzz:ro --" \
      "/fuzz/$(basename "$fuzz") --seed $seed --iterations $iterations --batch $batch" \
      "${extra[*]}"
    echo "--- last batches ---"
    tail -8 "$out" | cat -v | cut -c1-300
    echo "--- stderr ---"
    tail -20 "$err"
  fi
done

if [[ $(snapshot "$canary") != "$canary_before" ]]; then
  status=1
  echo "FAIL: the host canary directory $canary changed:"
  diff <(echo "$canary_before") <(snapshot "$canary")
fi
if [[ $(snapshot "$fuzzdir") != "$fuzzdir_before" ]]; then
  status=1
  echo "FAIL: the read-only mounted $fuzzdir changed:"
  diff <(echo "$fuzzdir_before") <(snapshot "$fuzzdir")
fi
if [[ -s $logdir/messages ]]; then
  echo "sentry messages (count, text):"
  sort "$logdir/messages" | uniq -c | sort -rn | head -20
fi
echo "$platform: $total_batches batches, $total_calls syscalls in $((SECONDS - start))s"
exit $status
