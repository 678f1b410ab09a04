#!/usr/bin/env bash
# Interpolation accuracy and the collection planner (issue 18), on the bundled seed database and
# on a DeepSeek-V3 grid grown in a temp copy and measured on the simulated device:
# db_accuracy's report, CSV and page (rendered by headless Chromium when installed: the DOM has
# the charts, the screenshot the markers' colours); plan_collection's plan, --dry-run writing
# nothing, the append of empty-latency rows through the grid, and --simulate lowering the
# reported p90 error of the planned kernels.
source "$(dirname "$0")/lib.sh" || exit 1
R=$SRC/recipes
VER=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
SEED=$SRC/data/seed_db/$VER
[[ -d $SEED ]] || { echo "SKIP: no seed database at $SEED"; exit 77; }
cd "$TMP"

# --- the seed database: one row per kernel type, nothing can be predicted
out=$("$PS_BIN" "$R/db_accuracy.lua" --database-path "$SEED" --kernels MatMulV2,Add --html seed.html \
  --output seed.csv 2>err) || not_ok "db_accuracy on the seed" "$(cat err)"
expect_contains "seed: MatMulV2 report" "$out" "accuracy MatMulV2 (leave-one-out, as db:interp): 1 signatures, 0 predicted, 1 cannot be"
expect_contains "seed: the reason" "$out" "cannot be predicted: 1 by M: regime_key_unmatched"
expect_contains "seed: summary table" "$out" "interpolation accuracy of $SEED"
expect_contains "seed: CSV written" "$(cat err)" "seed.csv (every prediction)"
expect_eq "seed: CSV rows (header + 2 kernels)" "$(wc -l < seed.csv | tr -d ' ')" 3
expect_contains "seed: page" "$(cat seed.html)" "<h2>MatMulV2</h2>"
out=$("$PS_BIN" "$R/db_accuracy.lua" --help)
expect_contains "db_accuracy --help" "$out" "--kernels"

# --- a DeepSeek-V3 grid, measured on the simulated device
cp -r "$SEED" dsv3
"$PS_BIN" "$R/dsv3_grid.lua" --database-path dsv3 --rows 50 >grid.log 2>&1 || not_ok "dsv3 grid" "$(tail -5 grid.log)"
"$PS_BIN" "$R/microbench.lua" --database-path dsv3 --output dsv3 --simulate >mb.log 2>&1 ||
  not_ok "simulated measurement of the grid" "$(tail -5 mb.log)"
out=$("$PS_BIN" "$R/db_accuracy.lua" --database-path dsv3 --kernels MatMulV2,Add,BatchMatMulNd --html acc.html \
  --output acc.csv 2>err) || not_ok "db_accuracy on the dsv3 grid" "$(cat err)"
expect_contains "dsv3: MatMulV2 predicted rows" "$out" "accuracy MatMulV2 (leave-one-out, as db:interp): 51 signatures, 6 predicted"
expect_contains "dsv3: the worst rows have their neighbours" "$out" "(line "
expect_contains "dsv3: Add summary" "$out" "  Add "
html=$(cat acc.html)
expect_contains "dsv3: page has charts" "$html" 'class="chart accuracy-chart" data-axis="M"'
expect_not_contains "dsv3: page loads nothing (no script)" "$html" "<script"
expect_not_contains "dsv3: page loads nothing (no src)" "$html" "src="

if [[ -n $CHROMIUM ]]; then
  dom=$(browser --dump-dom "file://$TMP/acc.html")
  expect_contains "browser: page parsed" "$dom" "Interpolation accuracy of dsv3"
  expect_contains "browser: MatMulV2 chart along M" "$dom" 'aria-label="MatMulV2 error against M"'
  expect_contains "browser: Add chart along tokens" "$dom" 'aria-label="Add error against tokens"'
  browser --window-size=900,1400 --screenshot="$TMP/acc.png" "file://$TMP/acc.html" >/dev/null
  if [[ -s $TMP/acc.png ]]; then
    expect_png_colours "screenshot shows error markers" "$TMP/acc.png" 20 d62728 4c72b0
  else
    not_ok "browser: screenshot written"
  fi
else
  echo "SKIP: chromium not installed; accuracy page not rendered"
fi

# --- the planner
K=MatMulV2,BatchMatMulNd,DispatchFFNCombine
sum0=$(cat dsv3/*.csv | md5sum)
out=$("$PS_BIN" "$R/plan_collection.lua" --database-path dsv3 --target-models deepseek-ai/DeepSeek-V3 --rows 200 \
  --budget 30 --kernels $K --dry-run 2>err) || not_ok "plan --dry-run" "$(cat err)"
expect_contains "plan: needs" "$out" "needs: 600 signatures"
expect_contains "plan: proposal" "$out" "proposal: 30 new shapes"
expect_contains "plan: estimates after" "$out" "estimated after the proposal"
expect_contains "plan: dry run" "$out" "Dry run: nothing written."
expect_eq "plan --dry-run writes nothing" "$(cat dsv3/*.csv | md5sum)" "$sum0"

# two kernels whose needs are nearly all answered: the plan is mostly error splits, and stops
# when every estimate is under --max-error (fewer shapes than the budget)
out=$("$PS_BIN" "$R/plan_collection.lua" --database-path dsv3 --target-models deepseek-ai/DeepSeek-V3 --rows 200 \
  --budget 30 --kernels BroadcastTo,InterleaveRope --simulate --output sim 2>err) ||
  not_ok "plan --simulate" "$(cat err) $(tail -5 <<<"$out")"
expect_contains "plan --simulate: the smallest set" "$out" "proposal: 13 new shapes"
expect_contains "plan --simulate: error splits" "$out" " error "
expect_contains "plan --simulate: appended" "$out" "Appended 13 of 13 planned rows (empty latencies) under sim."
expect_contains "plan --simulate: table" "$out" "before / after the simulated measurement of 13 rows"
expect_eq "plan --simulate leaves the database alone" "$(cat dsv3/*.csv | md5sum)" "$sum0"
line=$(grep "^p90 |error| of the planned kernels, every predicted signature" <<<"$out")
before=$(sed -E 's/.*: ([0-9.]+)% -> ([0-9.]+)%/\1/' <<<"$line")
after=$(sed -E 's/.*: ([0-9.]+)% -> ([0-9.]+)%/\2/' <<<"$line")
if [[ -n $before && -n $after ]] && awk -v b="$before" -v a="$after" 'BEGIN { exit !(a < b) }'; then
  ok "plan --simulate lowers the p90 error ($before% -> $after%)"
else
  not_ok "plan --simulate lowers the p90 error" "$line"
fi

# --from-trace: the needs are a TensorCast trace's lookups (TC's [M,K],[K,N] layout); a planned
# shape is written as the grid row of the same signature, one no grid row has is listed
cat > tc.json <<'JSON'
{"traceEvents": [
{"name":"process_name","ph":"M","pid":1,"args":{"name":"empirical (PID: 1)"}},
{"name":"aten.mm.default","ph":"X","ts":0,"dur":20,"pid":1,"tid":0,"args":{"kernel_type":"MatMulV2","simulation_shapes":"[[32768, 7168], [7168, 1536]]"}},
{"name":"aten.mm.default","ph":"X","ts":20,"dur":20,"pid":1,"tid":0,"args":{"kernel_type":"MatMulV2","simulation_shapes":"[[16384, 2048], [2048, 7168]]"}},
{"name":"aten.mm.default","ph":"X","ts":40,"dur":20,"pid":1,"tid":0,"args":{"kernel_type":"MatMulV2","simulation_shapes":"[[777, 7168], [7168, 1536]]"}},
{"name":"aten.add.Tensor","ph":"X","ts":60,"dur":3,"pid":1,"tid":0,"args":{"kernel_type":"NoSuchKernel","simulation_shapes":"[[4, 8], [4, 8]]"}}
]}
JSON
cp -r dsv3 dsv3t  # a copy as the simulated run left it
rows0=$(wc -l < dsv3t/MatMulV2.csv)
out=$("$PS_BIN" "$R/plan_collection.lua" --database-path dsv3t --target-models deepseek-ai/DeepSeek-V3 \
  --from-trace tc.json --budget 10 2>err) || not_ok "plan --from-trace" "$(cat err)"
expect_contains "trace: needs" "$out" "needs: 3 signatures (the trace's lookups)"
expect_contains "trace: a kernel the database lacks" "$out" "Not in the database (or no shapes): NoSuchKernel (1)"
expect_contains "trace: a shape no grid row has" "$out" "MatMulV2  777,7168;7168,1536"
expect_contains "trace: the grid twins written" "$out" "Appended 2 of 2 planned rows"
expect_eq "trace: MatMulV2.csv grew by 2 rows" "$(( $(wc -l < dsv3t/MatMulV2.csv) - rows0 ))" 2
expect_contains "trace: written in the database's layout" "$(tail -2 dsv3t/MatMulV2.csv)" '"""32768,7168;1536,7168"""'

# without --simulate: the planned rows land in the database, empty, through the grid's append
rows0=$(wc -l < dsv3/MatMulV2.csv)
out=$("$PS_BIN" "$R/plan_collection.lua" --database-path dsv3 --target-models deepseek-ai/DeepSeek-V3 --rows 200 \
  --budget 10 --kernels MatMulV2 2>err) || not_ok "plan (append)" "$(cat err)"
n=$(sed -nE 's/^Appended ([0-9]+) of 10 planned rows.*/\1/p' <<<"$out")
expect_eq "plan appends the 10 planned rows" "$n" 10
expect_eq "MatMulV2.csv grew by 10 rows" "$(( $(wc -l < dsv3/MatMulV2.csv) - rows0 ))" 10
expect_eq "the new rows have empty latencies" "$(tail -10 dsv3/MatMulV2.csv | grep -c ',,,,$')" 10
expect_contains "plan says how to measure them" "$out" "recipes/microbench.lua --database-path dsv3 --update-mode missing-only"
[[ -z $(find dsv3 sim -name '*.tmp*') ]] && ok "no temp files left" || not_ok "no temp files left"

# bad input: the model names of the grid
if "$PS_BIN" "$R/plan_collection.lua" --database-path dsv3 --target-models dsv3 2>err >/dev/null; then
  not_ok "legacy model name refused"
else
  expect_contains "legacy model name refused" "$(cat err)" "Use 'deepseek-ai/DeepSeek-V3'"
fi
finish
