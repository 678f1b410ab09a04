#!/usr/bin/env bash
# Shape-grid benchmark: every preset, --rows 0, on a database whose CSVs hold N rows each
# (default 20000): perfscript recipes/shape_grid.lua against a Python baseline with the
# original's cost structure (grid_baseline.py), in one run on copies of the same database.
#   tests/bench/grid_bench.sh [N] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
BIN=${2:-build}/perfscript
work=$(mktemp -d /tmp/perfscript-grid-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
seed=data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
cp -r "$seed" "$work/db"
python3 tests/bench/grid_pad_db.py "$work/db" "$N"
cp -r "$work/db" "$work/py"
"$BIN" tests/bench/grid_dump_rules.lua "$work/rules.json"
echo "database: $(ls "$work/db"/*.csv | wc -l) CSVs, $N rows each, $(du -sh "$work/db" | cut -f1)"

t0=$(date +%s.%N)
"$BIN" recipes/shape_grid.lua --database-path "$work/db" --rows 0 | tail -1
t1=$(date +%s.%N)
python3 tests/bench/grid_baseline.py "$work/rules.json" "$work/py"
t2=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:])
ps, py = t1 - t0, t2 - t1
print(f"perfscript {ps:.2f} s | python baseline {py:.2f} s | speedup {py / ps:.1f}x")
PY
