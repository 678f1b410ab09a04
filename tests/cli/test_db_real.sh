#!/usr/bin/env bash
# The database explorer on real databases: the bundled seed database, and one built by
# recipes/parse_profile.lua from a real profiler export (skipped when the exports are absent).
# Every query runs in a piped REPL session.
source "$(dirname "$0")/lib.sh" || exit 1

SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
session() {  # session DIR KERNEL: every query
  printf '%s\n' 'db:kernels()' 'db:lint()' \
    "k = db.$2" 'k' \
    'r = k:rows()' 'r' 'shapes, dtypes = r[1]["Input Shapes"], r[1]["Input Data Types"]' \
    'k:lookup(shapes, dtypes)' 'k:lookup(shapes, dtypes, {explain = true})' \
    'k:nearest(shapes, 3)' 'k:coverage("M")' 'k:interp(shapes, dtypes)' \
    'k:dups()' 'k:outliers()' "db:diff(\"$1\")" "db:diff(\"$1\", k.name)" 'print("session end")' \
    | "$PS_BIN" --db "$1" 2>"$TMP/err"
}

if [[ -d $SEED ]]; then
  out=$(session "$SEED" MatMulV2)
  expect_contains "seed: kernels" "$out" "85 kernel types"
  expect_contains "seed: lint runs" "$out" "lint $SEED:"
  expect_contains "seed: exact lookup of its own row" "$out" "MEASURED 9.84 us from line 2"
  expect_contains "seed: explain" "$out" "1 rows tried, 1 match"
  expect_contains "seed: nearest" "$out" "nearest MatMulV2"
  expect_contains "seed: coverage" "$out" "coverage MatMulV2 along M"
  expect_contains "seed: interp on an exact point" "$out" "interp MatMulV2 (16,7168)x(2112,7168) DT_BF16;DT_BF16: MEASURED 9.84 us on M"
  expect_contains "seed: dups" "$out" "dups MatMulV2: 0 signatures"
  expect_contains "seed: outliers" "$out" "outliers MatMulV2"
  expect_contains "seed: diff with itself" "$out" "diff MatMulV2: $SEED vs $SEED: 1 common signatures (1 with both latencies), 0 only in A, 0 only in B; median B/A 1"
  expect_contains "seed: session completes" "$out" "session end"
  expect_eq "seed: no errors" "$(cat "$TMP/err")" ""
else
  echo "SKIP: no seed database at $SEED"
fi

export_dir=$(real_data "Ascend-msinsight/test/st/level2/rank_0_ascend_pt") || { finish; exit $?; }
DB="$TMP/real/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
"$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path "$export_dir" --database-path "$DB" >/dev/null 2>"$TMP/pp.err"
expect_eq "parse_profile builds a database from the real export" "$?" "0"
out=$(session "$DB" MatMulV3)
expect_contains "real: kernels" "$out" "27 kernel types, 92 rows, 92 with a valid latency"
expect_not_contains "real: lint finds no cell that crashes the consumer (parse_profile writes no empty shape cell)" "$out" "crashes on it"
expect_contains "real: exact lookup" "$out" "lookup MatMulV3"
expect_contains "real: explain" "$out" "rows tried"
expect_contains "real: coverage" "$out" "coverage MatMulV3 along M: 8 buckets"
expect_contains "real: interp" "$out" "interp MatMulV3"
expect_contains "real: dups" "$out" "dups MatMulV3"
expect_contains "real: outliers" "$out" "outliers MatMulV3"
expect_contains "real: diff" "$out" "27 kernel types"
expect_contains "real: diff of one kernel" "$out" "diff MatMulV3: $DB vs $DB: 10 common signatures"
expect_contains "real: session completes" "$out" "session end"
expect_eq "real: no errors" "$(cat "$TMP/err")" ""
out=$("$PS_BIN" "$SRC/recipes/db_coverage.lua" "$DB" --html "$TMP/real.html" 2>&1)
expect_eq "real: db_coverage over every kernel" "$?" "0"
expect_contains "real: heatmap page" "$(cat "$TMP/real.html")" "MatMulV3 along M"
finish
