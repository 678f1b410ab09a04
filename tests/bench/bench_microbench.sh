#!/usr/bin/env bash
# Benchmark: microbench write-back of an op_summary into a database holding one large CSV,
# perfscript (recipes/microbench.lua --prof-path) against a Python baseline with the cost
# structure of the Python original (baseline_microbench.py), in one run on the same generated
# input. Prints wall time, CPU time and peak RSS of each and the ratios (wall and CPU: on a
# shared machine the CPU ratio is the steadier one). Not a ctest test.
#   tests/bench/bench_microbench.sh [DB_ROWS [SUMMARY_ROWS]]   (default 1000000 and 100000)
# Environment: PERFSCRIPT (default build/perfscript), BENCH_TMP (default /tmp).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PS=${PERFSCRIPT:-$SRC/build/perfscript}
N=${1:-1000000}
M=${2:-100000}
WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/psmbbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "generating a $N-row Add.csv and a $M-row op_summary in $WORK ..."
python3 "$SRC/tests/bench/gen_microbench.py" "$WORK/db0" "$WORK/prof" "$N" "$M"
echo "database CSV: $(stat -c %s "$WORK/db0/Add.csv") bytes"
cp -r "$WORK/db0" "$WORK/db_ps"
cp -r "$WORK/db0" "$WORK/db_py"

measure() {  # measure NAME CMD...: sets W (wall s), C (cpu s), R (max RSS KB)
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.$name" "$@" > "$WORK/out.$name" 2>&1 || {
    echo "$name failed:"; tail -20 "$WORK/out.$name"; exit 1; }
  read -r W u s R < "$WORK/time.$name"
  C=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
}
measure perfscript "$PS" "$SRC/recipes/microbench.lua" --database-path "$WORK/db_ps" --prof-path "$WORK/prof" \
  --ops Add --work-dir "$WORK"
PW=$W PC=$C PR=$R
grep -E "^\[WRITE\]" "$WORK/out.perfscript" || true
measure python python3 "$SRC/tests/bench/baseline_microbench.py" "$WORK/db_py" "$WORK/prof"
YW=$W YC=$C YR=$R
cat "$WORK/out.python"
printf '%-12s %10s %10s %12s\n' "" "wall s" "cpu s" "peak RSS MB"
printf '%-12s %10s %10s %12d\n' perfscript "$PW" "$PC" $((PR / 1024))
printf '%-12s %10s %10s %12d\n' python "$YW" "$YC" $((YR / 1024))
echo "speed-up: $(echo "scale=1; $YW / $PW" | bc)x wall, $(echo "scale=1; $YC / $PC" | bc)x cpu (issue 14's target: 30x);" \
  "peak RSS: perfscript $((PR / 1024)) MB (target: at most 300), python $((YR / 1024)) MB"
