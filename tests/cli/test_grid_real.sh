#!/usr/bin/env bash
# shape_grid.lua on a copy of the real database fixture of msmodeling (FusedInferAttentionScore
# with 31-slot rows and an avg_seq_len column, TransposeBatchMatMul without quoted shapes).
# Skipped when the real data is absent.
set -euo pipefail
: "${PERFSCRIPT:?}" "${PERFSCRIPT_SOURCE_DIR:?}" "${PERFSCRIPT_TEST_TMP:?}"
real=${PERFSCRIPT_REAL_DATA:-$PERFSCRIPT_SOURCE_DIR/../shared/data/real}
fix=$real/msmodeling/tests/benchmark/ops/perf_database/fixtures/fia_raw_test
if [[ ! -f $fix/FusedInferAttentionScore.csv ]]; then
  echo "SKIP: $fix not found (set PERFSCRIPT_REAL_DATA)"; exit 77
fi
work="$PERFSCRIPT_TEST_TMP/grid_real"
rm -rf "$work" && mkdir -p "$work/db" && cd "$work"
cp "$fix"/*.csv db/
chmod u+w db/*.csv  # the real data is read-only, and perfscript leaves read-only files alone
rows_before=$(wc -l < db/FusedInferAttentionScore.csv)
"$PERFSCRIPT" "$PERFSCRIPT_SOURCE_DIR/recipes/shape_grid.lua" --database-path db --rows 0 > out.txt
# 157 decode rows would tie with an equal-key row of block-padded-compatible T (the consumer
# then misses with ambiguous_semantic_match): shadowed, not appended
grep -q "^FusedInferAttentionScore  *916 .* 157  *759 *appended$" out.txt
grep -q "^TransposeBatchMatMul  *11840 " out.txt
# the old rows are kept (padded with empty runtime cells), the header gained the runtime columns
head -1 db/FusedInferAttentionScore.csv | grep -q ",avg_seq_len,Runtime source_profile,"
[[ $(wc -l < db/FusedInferAttentionScore.csv) -eq $((rows_before + 759)) ]]
"$PERFSCRIPT" "$PERFSCRIPT_SOURCE_DIR/recipes/shape_grid.lua" --database-path db --rows 0 > again.txt
grep -q "^Appended 0 rows" again.txt
echo ok
