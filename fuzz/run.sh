#!/usr/bin/env bash
# Builds the fuzz targets (clang, ASan + UBSan + libFuzzer) in build-fuzz and runs each for a
# while on seeds generated from the test fixtures, then the expression language's and the
# number parser's differentials against Python. ./setup.sh fuzz [SECONDS] calls it; CI runs it for a few seconds per target.
#   fuzz/run.sh [SECONDS per target, default 60] [TARGET...]
# Corpora grow in build-fuzz/corpus/<target>; crashes are written to build-fuzz/crashes/ and
# make the run fail (reproduce: build-fuzz/fuzz/fuzz_<target> build-fuzz/crashes/<file>).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
[[ $# -gt 0 ]] && shift
CC_FUZZ=${CC_FUZZ:-$(command -v clang-14 || command -v clang || true)}
[[ -n $CC_FUZZ ]] || { echo "fuzz: clang is needed (apt-get install clang-14)" >&2; exit 1; }
B=build-fuzz
cmake -S . -B "$B" -DCMAKE_C_COMPILER="$CC_FUZZ" -DPERFSCRIPT_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$B" --target fuzz -j "$(nproc 2>/dev/null || echo 2)" 2>&1 | grep -vE '^\[ *[0-9]+%\]|^-- ' >&2 || true
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$B/perfscript" fuzz/seeds.lua . "$B/seeds"
mkdir -p "$B/crashes"
targets=("$@")
((${#targets[@]})) || targets=(csv trace keys num expr)
status=0
for t in "${targets[@]}"; do
  mkdir -p "$B/corpus/$t"
  log=$B/fuzz_$t.log
  if "$B/fuzz/fuzz_$t" "$B/corpus/$t" "$B/seeds/$t" -max_total_time="$SECONDS_EACH" -max_len=16384 \
       -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$B/crashes/${t}-" -print_final_stats=1 \
       >"$log" 2>&1; then
    echo "fuzz_$t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${SECONDS_EACH}s, no finding"
  else
    echo "fuzz_$t: FAILED (see $log):" >&2
    grep -E 'ERROR|SUMMARY|runtime error|abort|Test unit written' "$log" | head -20 >&2
    status=1
  fi
done
# the expression language and the number parser, differential against Python itself
# (expression overflow is counted apart: issue 13, item 1)
python3 fuzz/expr_diff.py "$B/perfscript" --seconds "$SECONDS_EACH" --count 2000 || status=1
python3 fuzz/num_diff.py "$B/perfscript" --seconds "$SECONDS_EACH" --count 5000 || status=1
exit $status
