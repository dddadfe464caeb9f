#!/usr/bin/env bash
# test.sh: build (incrementally) and run the whole suite: every ctest test (unit tests
# beside the code, tests/integration end to end) plus script checks. Exits non-zero on
# any failure; the last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")"
build=${BUILD_DIR:-build}
passed=0
failed=0

finish() {
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
}

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo || { failed=1; finish; }
fi
if ! cmake --build "$build" -j"$(nproc)"; then
  echo "test.sh: build failed" >&2
  failed=$((failed + 1))
  finish
fi

log=$(mktemp /tmp/usentry-ctest-XXXXXX.log)
# The usentry binary skips absl::Mutex's lock-order checks unless asked (cli/main.cc):
# the suite keeps them, so a lock-order cycle on any path it runs aborts the sentry.
export USENTRY_DEBUG_LOCKS=1
ctest --test-dir "$build" --output-on-failure -j2 2>&1 | tee "$log"
# "97% tests passed, 3 tests failed out of 120"
summary=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
rm -f "$log"
if [[ -n $summary ]]; then
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  bad=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$summary")
  passed=$((passed + total - bad))
  failed=$((failed + bad))
else
  echo "test.sh: ctest produced no summary" >&2
  failed=$((failed + 1))
fi

# Scripts must at least parse.
for script in setup.sh test.sh .ci/run bench/compare.sh; do
  if bash -n "$script"; then
    passed=$((passed + 1))
  else
    echo "test.sh: $script: syntax error" >&2
    failed=$((failed + 1))
  fi
done

# median_tables.py must parse; interleave.py must time and report failures.
if python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' bench/median_tables.py; then
  passed=$((passed + 1))
else
  echo "test.sh: bench/median_tables.py: syntax error" >&2
  failed=$((failed + 1))
fi
if out=$(bench/interleave.py --rounds 2 a=/bin/true "b=/bin/sh -c true" 2>&1) &&
  grep -qE '^a +[0-9.]+ +[0-9.]+ +[0-9.]+ +1\.00x +[0-9.]+$' <<<"$out" &&
  ! bench/interleave.py --rounds 1 a=/bin/true b=/bin/false >/dev/null 2>&1; then
  passed=$((passed + 1))
else
  echo "test.sh: bench/interleave.py: wrong output or exit status: $out" >&2
  failed=$((failed + 1))
fi
# compare.sh reads its --csv: a failing or hanging command is left out, with no figures.
csv=$(mktemp)
if ! bench/interleave.py --rounds 1 --timeout 1 --csv "$csv" a=/bin/true b=/bin/false \
  "c=/bin/sleep 5" >/dev/null 2>&1 &&
  grep -qE '^a,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,1,0$' "$csv" &&
  grep -qx 'b,,,,,0,0' "$csv" && grep -qx 'c,,,,,0,0' "$csv"; then
  passed=$((passed + 1))
else
  echo "test.sh: bench/interleave.py --csv: wrong figures: $(tr '\n' ' ' <"$csv")" >&2
  failed=$((failed + 1))
fi
rm -f "$csv"

finish
