#!/usr/bin/env bash
# The grid-to-measurement loop (issue 12): every bundled preset grown into a scratch copy of the
# seed database, then microbench.lua --simulate --update-mode missing-only. Every appended row
# is measured or listed with its reason (tests/cli/replay_loop_check.lua); with the default
# --replayable-only no row is listed as "no builder". With --no-replayable-only the rows no
# builder replays are appended, and the measurement lists them per kernel, once.
source "$(dirname "$0")/lib.sh" || exit 1
export PERFSCRIPT_LUA_DIR="${PERFSCRIPT_LUA_DIR:-$SRC/lua}"
ver=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
seed="$SRC/data/seed_db/$ver"
check="$SRC/tests/cli/replay_loop_check.lua"

# 1. every preset (shape_grid.lua grows all of them; dsv3_grid.lua runs in 2)
cp -r "$seed" "$TMP/db"
out=$("$PS_BIN" "$SRC/recipes/shape_grid.lua" --database-path "$TMP/db" --rows 20 2>&1); rc=$?
expect_eq "shape_grid grows every preset" "$rc" "0"
expect_contains "the summary counts the rows left out" "$out" "Left out, not replayable"
expect_contains "a kernel with no builder is named with its reason" "$out" "LinearIndex"
expect_contains "the summary table has the unreplayable column" "$out" "unreplayable"
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --simulate --update-mode missing-only --database-path "$TMP/db" \
      --output-database "$TMP/sim" 2>&1); rc=$?
expect_eq "microbench --simulate runs" "$rc" "0"
expect_not_contains "no kernel type without a builder" "$out" "[NO BUILDER]"
expect_not_contains "no flood of match-only warnings" "$out" "[WARN] match-only"
n=$(wc -l <<<"$out")
if (( n < 400 )); then ok "the console output stays short ($n lines)"; else not_ok "console output short" "$n lines"; fi
res=$("$PS_BIN" "$check" "$TMP/db" "$TMP/sim" "$TMP"/sim/reports/profile_update_report_*.json 2>&1); rc=$?
expect_eq "every appended row measured or listed, none for want of a builder" "$rc" "0"
[[ $rc -eq 0 ]] || echo "$res"
expect_contains "accounting" "$res" "unaccounted 0"
total=$(awk '$1 == "total" {print $2, $3}' <<<"$res")
read -r tm ms <<<"$total"
if [[ -n ${tm:-} && $tm -gt 1000 && $tm == "$ms" ]]; then ok "all $tm appended rows measured"; else not_ok "all rows measured" "$total"; fi

# 2. --no-replayable-only: the rows no builder replays are appended and listed, per kernel, once
# A Mixtral-style config.json (MoE from num_local_experts): its grid, measured the same way.
mkdir -p "$TMP/mixtral"
cat > "$TMP/mixtral/config.json" <<'JSON'
{"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "_name_or_path": "mistralai/Mixtral-8x7B-v0.1",
 "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
 "num_hidden_layers": 32, "num_local_experts": 8, "num_experts_per_tok": 2, "head_dim": 128,
 "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "torch_dtype": "bfloat16", "vocab_size": 32000}
JSON
cp -r "$seed" "$TMP/dbm"
out=$("$PS_BIN" "$SRC/recipes/shape_grid.lua" --database-path "$TMP/dbm" --model-config "$TMP/mixtral/config.json" \
      --rows 20 2>&1); rc=$?
expect_eq "mixtral config: grid" "$rc" "0"
expect_contains "mixtral config: MoE rows" "$out" "GroupedMatmul"
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --simulate --update-mode missing-only --database-path "$TMP/dbm" \
      --output "$TMP/simm" 2>&1); rc=$?
expect_eq "mixtral config: microbench --simulate" "$rc" "0"
expect_not_contains "mixtral config: no kernel type without a builder" "$out" "[NO BUILDER]"
res=$("$PS_BIN" "$check" "$TMP/dbm" "$TMP/simm" "$TMP"/simm/reports/profile_update_report_*.json 2>&1); rc=$?
expect_eq "mixtral config: every appended row measured or listed" "$rc" "0"
[[ $rc -eq 0 ]] || echo "$res"
gm=$(awk '$1 == "GroupedMatmul" {print $2, $3}' <<<"$res")
read -r tm ms <<<"$gm"
if [[ -n ${tm:-} && $tm -gt 0 && $tm == "$ms" ]]; then ok "mixtral config: all $tm GroupedMatmul rows measured"; else not_ok "mixtral GroupedMatmul measured" "$gm" "$res"; fi

cp -r "$seed" "$TMP/db2"
"$PS_BIN" "$SRC/recipes/dsv3_grid.lua" --database-path "$TMP/db2" --rows 5 --no-replayable-only > "$TMP/g2.txt" 2>&1
expect_eq "dsv3_grid --no-replayable-only" "$?" "0"
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --simulate --update-mode missing-only --database-path "$TMP/db2" \
      --output-database "$TMP/sim2" 2>&1); rc=$?
expect_eq "microbench on all rows" "$rc" "0"
expect_contains "no builder, per kernel" "$out" "[NO BUILDER] LinearIndex: 5 row(s) to measure: an internal kernel"
n=$(grep -c '^\[INVALID\] TransposeBatchMatMul:' <<<"$out")
expect_eq "one line per reason, not per row" "$n" "1"
expect_contains "the reason and an example" "$out" "K and N must be multiples of 128 for DT_BF16 inputs"
n=$(grep -c 'Rows Not Replayed (kept), row by row' <<<"$out")
expect_eq "the row-by-row table is not printed" "$n" "0"
md=$(cat "$TMP"/sim2/reports/profile_update_report_*.md)
expect_contains "the report file has every row" "$md" "## Rows Not Replayed (kept), row by row"
expect_contains "the report file has the no-builder counts" "$md" "## Kernel Types With No Replay Builder"
res=$("$PS_BIN" "$check" "$TMP/db2" "$TMP/sim2" "$TMP"/sim2/reports/profile_update_report_*.json --no-builder-allowed 2>&1)
expect_eq "every row measured or listed" "$?" "0"
expect_contains "accounting" "$res" "unaccounted 0"

# 3. a variant's replay profiled as its base kernel (AddAiCore as Add) still fills its own file
mkdir -p "$TMP/v"
H='OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)'
printf '%s\ndynamic,AI_CORE,"""3,7168;3,7168""",DT_BF16;DT_BF16,ND;ND,"""3,7168""",DT_BF16,ND,,\n' "$H" > "$TMP/v/AddAiCore.csv"
out=$(MSPROF_STANDIN_AS_BASE=1 "$PS_BIN" "$SRC/recipes/microbench.lua" --database-path "$TMP/v" \
      --msprof "$SRC/tests/fixtures/microbench/msprof" --work-dir "$TMP/work" --update-mode missing-only 2>&1)
expect_eq "microbench with the stand-in msprof" "$?" "0"
line=$(sed -n 2p "$TMP/v/AddAiCore.csv")
if [[ $line =~ ,ND,[0-9.]+, ]]; then ok "AddAiCore.csv measured from the Add samples"; else not_ok "AddAiCore.csv measured" "$line" "$out"; fi
expect_not_contains "Add is not reported as an ignored side kernel" "$out" "[IGNORED] Add:"
finish
