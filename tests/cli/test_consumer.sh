#!/usr/bin/env bash
# The database's real consumer (TensorCast's profiling-database reader, read by path from
# ../shared/consumer or $PERFSCRIPT_CONSUMER) asked, through tests/consumer/consumer_ask.py, for
# the measured rows of the databases perfscript writes (issue 19):
#   1. the Quick start's grown database (dsv3_grid.lua on a copy of the seed database), filled by
#      microbench.lua --simulate (which writes to the separate <db>_simulated copy);
#   2. a written-back database: the grown database replayed with the stand-in msprof
#      (tests/fixtures/microbench/msprof), whose op_summary goes through the real write-back;
#   3. the real torch_npu exports imported with parse_profile (when the real data is present).
# 1 and 2 must answer at least 99 % of the rows that have a route in op_mapping.yaml with the row
# itself; for 3 (real data, rows in the profiler's order) no row may miss or crash the consumer.
# Rows are sampled per kernel, evenly and deterministically: $PERFSCRIPT_CONSUMER_SAMPLE (25),
# 0 = every row. Skipped (77) when /usr/bin/python3 lacks torch, pandas, numpy or yaml
# (apt-get install python3-torch python3-pandas python3-numpy python3-yaml) or the consumer is
# not there.
set -euo pipefail
: "${PERFSCRIPT:?}" "${PERFSCRIPT_SOURCE_DIR:?}" "${PERFSCRIPT_TEST_TMP:?}"
SRC=$PERFSCRIPT_SOURCE_DIR
PY=${PERFSCRIPT_PYTHON:-/usr/bin/python3}
ASK=$SRC/tests/consumer/consumer_ask.py
SAMPLE=${PERFSCRIPT_CONSUMER_SAMPLE:-25}
real=${PERFSCRIPT_REAL_DATA:-$SRC/../shared/data/real}
ver=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
seed=$SRC/data/seed_db/$ver
if [[ ! -x $PY ]]; then echo "SKIP: $PY not found"; exit 77; fi
rc=0; probe=$("$PY" "$ASK" "$seed" --kernels Add --show "") || rc=$?
if [[ $rc -eq 77 ]]; then echo "$probe"; exit 77; fi
if [[ $rc -ne 0 ]]; then echo "$probe"; exit 1; fi

work=$PERFSCRIPT_TEST_TMP/consumer
rm -rf "$work" && mkdir -p "$work/mbwork" && cd "$work"
ask() { "$PY" "$ASK" "$@"; }

echo "== 1. grown (dsv3_grid.lua) and filled by microbench.lua --simulate; $SAMPLE rows per kernel"
"$PERFSCRIPT" "$SRC/recipes/dsv3_grid.lua" > grid.txt
db=perfdb/$ver
cp -r "$db" grown_copy
"$PERFSCRIPT" "$SRC/recipes/microbench.lua" --simulate --database-path "$db" > simulate.txt
grep -q "SIMULATED" simulate.txt
ask "${db}_simulated" --sample "$SAMPLE" --min-exact 99

echo "== 2. written back from the stand-in msprof's op_summary; $SAMPLE rows per kernel"
ops=(MatMulV2 BatchMatMulV2 Add RmsNorm AddRmsNormBias DynamicQuant SwiGlu GroupedMatmul
     DispatchFFNCombine FusedInferAttentionScore QuantBatchMatmulV3 InterleaveRope)
ASCEND_CUSTOM_OPP_PATH=$work/mbwork LD_LIBRARY_PATH=$work/mbwork \
  "$PERFSCRIPT" "$SRC/recipes/microbench.lua" --msprof "$SRC/tests/fixtures/microbench/msprof" \
  --work-dir "$work/mbwork" --database-path grown_copy --ops "${ops[@]}" > writeback.txt
grep -q "Update Summary\|update" writeback.txt
ask grown_copy --kernels "$(IFS=,; echo "${ops[*]}")" --sample "$SAMPLE" --min-exact 99

echo "== 3. real exports imported with parse_profile"
exports=$real/Ascend-msinsight/test/st/level2
if [[ -d $exports ]]; then
  "$PERFSCRIPT" "$SRC/recipes/parse_profile.lua" --profiling-path "$exports" --database-path imported > import.txt
  cp "$seed/op_mapping.yaml" imported/
  ask imported --json > imported.json
  ask imported --show "miss,error,other" | tee imported.txt
  # rows in the profiler's order: a row may lose to an earlier twin (db_lint names it), but none
  # may miss or crash the consumer
  "$PY" - imported.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
bad = [r for r in doc["rows"] if r["status"] in ("miss", "error")]
for r in bad:
    print(f"{r['status']}: {r['kernel']} row {r['row']}: {r['reason']}")
sys.exit(1 if bad else 0)
PY
else
  echo "skipped part 3: $exports not found (set PERFSCRIPT_REAL_DATA)"
fi
echo ok
