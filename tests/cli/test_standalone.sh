#!/usr/bin/env bash
# The binary alone, copied to an empty directory with no source tree and no PERFSCRIPT_LUA_DIR,
# grows a grid and builds a replay plan: model presets, grid rules, replay builders and the
# replay executor are embedded library data. A user's own directory (--lua-dir) adds a preset
# and replaces a builder without a rebuild.
source "$(dirname "$0")/lib.sh" || exit 1
unset PERFSCRIPT_LUA_DIR
SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
mkdir -p "$TMP/alone" "$TMP/db"
cp "$PS_BIN" "$TMP/alone/perfscript"
cp "$SEED"/*.csv "$SEED/op_mapping.yaml" "$TMP/db/"
cd "$TMP/alone" || exit 1

GRID='require("perfscript.grid.cli").main(arg, {name = "g", description = "g", models = {"deepseek-ai/DeepSeek-V3"}})'
out=$(./perfscript -e "arg = {'--database-path', '$TMP/db', '--rows', '5'}" -e "$GRID" 2>&1); rc=$?
expect_eq "the binary alone grows a grid" "$rc" "0"
expect_contains "grid appended rows" "$out" "Appended "
expect_contains "grid used the embedded preset" "$out" "Target models: deepseek-ai/DeepSeek-V3"

MB='os.exit(require("perfscript.microbench.run").main(arg))'
out=$(./perfscript -e "arg = {'--database-path', '$TMP/db', '--ops', 'MatMulV2', '--plan-only', '--work-dir', '$TMP/work'}" \
      -e "$MB" 2>&1); rc=$?
expect_eq "the binary alone builds a plan" "$rc" "0"
expect_contains "plan has cases" "$out" "[PLAN] "
plan=$(ls "$TMP"/work/perfscript-microbench-*/plan.jsonl 2>/dev/null | head -1)
[[ -s "$plan" ]] && ok "plan.jsonl written" || not_ok "plan.jsonl written" "$out"
exe="$(dirname "$plan")/executor.py"
cmp -s "$exe" "$SRC/lua/perfscript/replay/executor.py" && ok "the embedded executor is written beside the plan" \
  || not_ok "executor.py beside the plan" "$(ls "$(dirname "$plan")")"
if command -v python3 >/dev/null; then
  out=$(python3 "$exe" "$plan" --check 2>&1); rc=$?
  expect_eq "the written executor accepts the plan" "$rc" "0"
fi

# The user's own directory: a new preset file is a new model; a builder file replaces the embedded one.
mkdir -p "$TMP/mine/perfscript/models" "$TMP/mine/perfscript/replay"
cat > "$TMP/mine/perfscript/models/my_dense.lua" <<'EOF'
return { model_id = "my-org/My-Dense-7B", name = "My-Dense-7B", hidden_size = 4096,
         intermediate_size = 11008, num_attention_heads = 32, num_kv_heads = 8, tp_sizes = { 1 } }
EOF
cat > "$TMP/mine/perfscript/replay/Add.lua" <<'EOF'
return function() return nil, "user builder says no" end
EOF
out=$(./perfscript --lua-dir "$TMP/mine" -e 'for _, p in ipairs(require("perfscript.grid.models").resolve(nil)) do print(p.model_id) end' 2>&1)
expect_contains "a user preset joins the registry" "$out" "my-org/My-Dense-7B"
expect_contains "the embedded presets stay" "$out" "deepseek-ai/DeepSeek-V3"
out=$(PERFSCRIPT_LUA_DIR="$TMP/mine" ./perfscript -e 'print(select(2, require("perfscript.microbench.plan").builder("Add")()))' 2>&1)
expect_eq "a user builder replaces the embedded one" "$out" "user builder says no"
out=$(./perfscript -e 'print(require("perfscript.library").read("perfscript/replay/nope.py"))' 2>&1)
expect_contains "a missing library file is named" "$out" "perfscript/replay/nope.py: not in the perfscript library"
finish
