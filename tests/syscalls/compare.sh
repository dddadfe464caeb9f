#!/usr/bin/env bash
# compare.sh USENTRY PLATFORM BINDIR PROGRAM: runs one tests/syscalls program natively
# and under `usentry run --platform PLATFORM --user 0` (root inside, as the native run
# is root), both with the sandbox's default environment, and compares the outcome of every case. Fails when a case fails
# natively (the case is wrong), or passes natively but not in the sandbox. Prints the
# case counts and the sandbox's output of any case that differs.
set -uo pipefail
usentry=$(realpath "$1") platform=$2 bindir=$(realpath "$3") program=$4
env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
  LANG=C.UTF-8)

# "[       OK ] Suite.Case (0 ms)" -> "Suite.Case OK"; FAILED and SKIPPED likewise.
outcomes() {
  sed -nE 's/^\[ +(OK|FAILED|SKIPPED) +\] ([A-Za-z0-9_/.]+) \(.*/\2 \1/p' | sort -u
}

native_out=$(cd / && timeout 120 "${env[@]}" "$bindir/$program" 2>&1)
native_rc=$?
sandbox_out=$(cd / && timeout 240 "${env[@]}" "$usentry" run --platform "$platform" --user 0 \
  --mount "$bindir:/syscalls:ro" -- "/syscalls/$program" 2>&1)
sandbox_rc=$?

native=$(outcomes <<<"$native_out")
sandbox=$(outcomes <<<"$sandbox_out")
status=0
if [[ -z $native ]]; then
  echo "compare.sh: $program printed no results natively (exit $native_rc):"
  echo "$native_out" | tail -20
  exit 1
fi
if grep -q ' FAILED$' <<<"$native"; then
  echo "compare.sh: cases failing natively (fix the case, not the sandbox):"
  grep ' FAILED$' <<<"$native"
  status=1
fi
total=0 same=0
while read -r name result; do
  total=$((total + 1))
  got=$(awk -v n="$name" '$1 == n {print $2}' <<<"$sandbox")
  if [[ $result == OK && $got != OK ]]; then
    echo "DIFFERS $name: native OK, $platform ${got:-no result}"
    status=1
  else
    same=$((same + 1))
  fi
done <<<"$native"
echo "$program on $platform: $same/$total cases as on the host (native exit $native_rc, sandbox exit $sandbox_rc)"
if ((status != 0)); then
  echo "--- sandbox output (failures) ---"
  grep -vE '^\[ +(OK|RUN) +\]' <<<"$sandbox_out" | tail -80
fi
exit $status
