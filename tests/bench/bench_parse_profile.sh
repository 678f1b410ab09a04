#!/usr/bin/env bash
# Benchmark: parse_profile against a Python baseline in the Python original's style (csv.DictReader,
# every row loaded, dict grouping: baseline_parse_kernel_details.py), on one generated
# kernel_details.csv, in the same run. Prints wall time, CPU time and peak RSS of each (for
# perfscript the median of three runs, with all cores and with --threads 1 and 2 for the
# scaling), the ratios, and DuckDB doing the same grouping (read_csv + GROUP BY with the 25
# counter means, 2 threads: duckdb_group.cjs) when it can be had. Not a ctest test.
#   tests/bench/bench_parse_profile.sh [SIZE_MB [NSIG]]     (default 1024 MB, 50000 signatures;
#                                       the issue's file: 288 49000, 302 MB and 890k rows)
# Environment: PERFSCRIPT (the binary; default build/perfscript), BENCH_TMP (default /tmp),
# DUCKDB_DIR (a directory holding node_modules/@duckdb/node-api; without it the bench runs
# `npm install @duckdb/node-api` into a temporary directory, and says so and skips DuckDB when
# node or the package cannot be had).
# The Python baseline needs about 16 bytes of memory per byte of CSV; when the machine has less
# available, it runs on the largest leading slice that fits and its figures are scaled to the
# full size linearly (the report says so).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PS=${PERFSCRIPT:-$SRC/build/perfscript}
SIZE_MB=${1:-1024}
NSIG=${2:-50000}
WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/psbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
KD=$WORK/cap/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv
mkdir -p "$(dirname "$KD")"

echo "generating $SIZE_MB MB kernel_details with $NSIG signatures in $WORK ..."
python3 "$SRC/tests/bench/gen_kernel_details.py" "$KD" "$SIZE_MB" "$NSIG"
bytes=$(stat -c %s "$KD")
rows=$(($(wc -l < "$KD") - 1))
echo "input: $bytes bytes, $rows rows"

# measure NAME CMD...: sets W (wall s), C (user+sys s), R (max RSS KB)
measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.$name" "$@" > "$WORK/out.$name" 2>&1 || {
    echo "$name failed:"; cat "$WORK/out.$name"; exit 1; }
  read -r W u s R < "$WORK/time.$name"
  C=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
}

# perfscript three times (a fresh database each time); the run with the median wall time
# counts. ps_runs LABEL [--threads N]: sets PW PC PR
ps_runs() {
  local label=$1 runs=() k; shift
  for k in 1 2 3; do
    rm -rf "$WORK/db"
    measure perfscript "$PS" "$SRC/recipes/parse_profile.lua" --profiling-path "$WORK/cap" --database-path "$WORK/db" "$@"
    runs+=("$W $C $R")
    echo "perfscript $label run $k: $W s wall, $C s cpu, $((R / 1024)) MB"
  done
  read -r PW PC PR < <(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
}
ps_runs "--threads 1" --threads 1; P1="$PW $PC $PR"
ps_runs "--threads 2" --threads 2; P2="$PW $PC $PR"
ps_runs "(all $(nproc) cores)"

# DuckDB, when node and @duckdb/node-api can be had
DW= druns=()
if command -v node > /dev/null; then
  DD=${DUCKDB_DIR:-$WORK/duckdb}
  if [[ ! -d $DD/node_modules/@duckdb/node-api ]]; then
    echo "installing @duckdb/node-api into $DD ..."
    mkdir -p "$DD"
    (cd "$DD" && timeout 300 npm install --no-audit --no-fund --silent @duckdb/node-api) > "$WORK/npm.log" 2>&1 || true
  fi
  if [[ -d $DD/node_modules/@duckdb/node-api ]]; then
    for k in 1 2 3; do
      DUCKDB_DIR=$DD measure duckdb node "$SRC/tests/bench/duckdb_group.cjs" "$KD" 2
      druns+=("$W $C $R")
      echo "duckdb run $k: $W s wall, $C s cpu, $((R / 1024)) MB ($(cat "$WORK/out.duckdb"))"
    done
    read -r DW DC DR < <(printf '%s\n' "${druns[@]}" | sort -n | sed -n 2p)
  else
    echo "duckdb: @duckdb/node-api could not be installed (see below); its line is skipped"
    tail -3 "$WORK/npm.log"
  fi
else
  echo "duckdb: no node on PATH; its line is skipped"
fi

avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
need_kb=$((bytes / 1024 * 17))
scale=1
BKD=$KD
if (( need_kb > avail_kb * 7 / 10 )); then
  slice=$((bytes * avail_kb * 7 / 10 / need_kb))
  head -c "$slice" "$KD" | sed '$d' > "$WORK/slice.csv"
  BKD=$WORK/slice.csv
  scale=$(awk -v a="$bytes" -v b="$(stat -c %s "$BKD")" 'BEGIN { printf "%.6f", a / b }')
  echo "baseline: not enough memory for the whole file (needs ~$((need_kb / 1024)) MB, $((avail_kb / 1024)) MB available);"
  echo "          run on the first $(stat -c %s "$BKD") bytes, figures scaled x$scale"
fi
measure python python3 "$SRC/tests/bench/baseline_parse_kernel_details.py" "$BKD" "$WORK/dbpy"
YW=$(awk -v a="$W" -v k="$scale" 'BEGIN { printf "%.2f", a * k }')
YC=$(awk -v a="$C" -v k="$scale" 'BEGIN { printf "%.2f", a * k }')
YR=$(awk -v a="$R" -v k="$scale" 'BEGIN { printf "%d", a * k }')

# what perfscript wrote
ours=$(cat "$WORK"/db/*.csv | grep -c -v '^OP State')
echo "perfscript wrote $ours rows in $(ls "$WORK/db" | wc -l) files"

printf '\n%-12s %10s %10s %12s\n' "" "wall s" "cpu s" "peak RSS MB"
printf '%-12s %10.2f %10.2f %12d\n' perfscript "$PW" "$PC" $((PR / 1024))
read -r w c r <<< "$P1"; printf '%-12s %10.2f %10.2f %12d\n' "  1 thread" "$w" "$c" $((r / 1024))
read -r w c r <<< "$P2"; printf '%-12s %10.2f %10.2f %12d\n' "  2 threads" "$w" "$c" $((r / 1024))
[[ -n $DW ]] && printf '%-12s %10.2f %10.2f %12d\n' "duckdb (2t)" "$DW" "$DC" $((DR / 1024))
printf '%-12s %10.2f %10.2f %12d%s\n' python "$YW" "$YC" $((YR / 1024)) "$([[ $scale != 1 ]] && echo ' (scaled)' || true)"
awk -v yw="$YW" -v pw="$PW" -v yc="$YC" -v pc="$PC" -v yr="$YR" -v pr="$PR" \
  'BEGIN { printf "speed-up: %.1fx wall, %.1fx cpu; memory: %.1fx less\n", yw / pw, yc / pc, yr / pr }'
[[ -n $DW ]] && awk -v dw="$DW" -v pw="$PW" -v dc="$DC" -v pc="$PC" -v dr="$DR" -v pr="$PR" \
  'BEGIN { printf "against duckdb: %.2fx wall, %.2fx cpu; memory: %.1fx less\n", dw / pw, dc / pc, dr / pr }'
# --threads scaling: wall speed against one thread, and the CPU each spends (a pass that
# scales keeps its CPU about constant while its wall time drops)
read -r w1 c1 _ <<< "$P1"; read -r w2 c2 _ <<< "$P2"
awk -v a="$w1" -v b="$w2" -v n="$(nproc)" -v c="$PW" -v ca="$c1" -v cb="$c2" -v cc="$PC" \
  'BEGIN { printf "scaling: 2 threads %.2fx the wall speed of 1, all %d cores %.2fx (cpu s: %.2f, %.2f, %.2f)\n", a / b, n, a / c, ca, cb, cc }'
# how busy the two threads were: CPU over twice the wall time (100%: both busy throughout;
# the rest is the serial part of the run (startup, the statistics' tail, the commit) and the load of others)
awk -v w="$w2" -v c="$c2" 'BEGIN { printf "2 threads busy: %.0f%% of 2 x wall (serial part and waits: the rest)\n", 100 * c / (2 * w) }'
