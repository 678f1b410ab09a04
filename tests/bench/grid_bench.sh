#!/usr/bin/env bash
# Shape-grid benchmark: every preset, --rows 0, on a realistic database whose 85 CSVs hold N
# rows each (default 20000; about 600 bytes a row with all 62 columns and the Runtime
# columns filled: grid_pad_db.py): perfscript recipes/shape_grid.lua against a Python baseline
# with the original's cost structure (grid_baseline.py), in one run on copies of the same
# database. Prints both wall times, the ratio and each one's peak RSS.
#   tests/bench/grid_bench.sh [N] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
BIN=${2:-build}/perfscript
work=$(mktemp -d /tmp/perfscript-grid-bench.XXXXXX)
trap 'rm -rf "${work:?}"' EXIT
seed=data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
# the columns the grid's generators write (Runtime, EP Size), as a real database holds them
cp -r "$seed" "$work/shaped"
"$BIN" recipes/shape_grid.lua --database-path "$work/shaped" --rows 0 >/dev/null
cp -r "$seed" "$work/db"
python3 tests/bench/grid_pad_db.py "$work/db" "$N" "$work/shaped"
cp -r "$work/db" "$work/py"
"$BIN" tests/bench/grid_dump_rules.lua "$work/rules.json"
sync
echo "database: $(ls "$work/db"/*.csv | wc -l) CSVs, $N rows each, $(du -sh "$work/db" | cut -f1)," \
  "$(( $(cat "$work"/db/*.csv | wc -c) / ($(cat "$work"/db/*.csv | wc -l) ) )) bytes a row"

/usr/bin/time -f "%e %M" -o "$work/ps.time" \
  "$BIN" recipes/shape_grid.lua --database-path "$work/db" --rows 0 | tail -1
/usr/bin/time -f "%e %M" -o "$work/py.time" \
  python3 tests/bench/grid_baseline.py "$work/rules.json" "$work/py"
python3 - "$work/ps.time" "$work/py.time" <<'PY'
import sys
(ps, ps_kb), (py, py_kb) = (map(float, open(p).read().split()[-2:]) for p in sys.argv[1:])
print(f"perfscript {ps:.2f} s, {ps_kb / 1024:.0f} MB peak | python baseline {py:.2f} s, "
      f"{py_kb / 1024:.0f} MB peak | speedup {py / ps:.1f}x")
PY
