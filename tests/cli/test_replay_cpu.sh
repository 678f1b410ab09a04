#!/usr/bin/env bash
# The replay cases of the table-driven and shape-derived builders really run: the registry
# builds a case for a seed-style row of each kernel type, plan.write writes them, and
# executor.py's own tensor building and call (make_call) run them with torch on the CPU (a
# tensor's .npu() is the identity here); each result has the row's output shape.
source "$(dirname "$0")/lib.sh" || exit 1
torch_python
export PERFSCRIPT_LUA_DIR="${PERFSCRIPT_LUA_DIR:-$SRC/lua}"
cat > "$TMP/mk.lua" <<'LUA'
local registry = require "perfscript.replay.registry"
local plan = require "perfscript.microbench.plan"
local function row(is, id, os, od, fm)
  local n = select(2, is:gsub(";", ";")) + 1
  return { ["Input Shapes"] = is, ["Input Data Types"] = id, ["Input Formats"] = fm or ("ND" .. (";ND"):rep(n - 1)),
           ["Output Shapes"] = os, ["Output Data Types"] = od }
end
local ROWS = {
  { "CastAiCore", row("3,7168", "DT_BF16", "3,7168", "FLOAT") },
  { "MulAiCore", row("3,7168;3,7168", "DT_BF16;DT_BF16", "3,7168", "DT_BF16") },
  { "Sub", row("16,64;16,64", "DT_BF16;DT_BF16", "16,64", "DT_BF16") },
  { "RealDiv", row("16,64;16,64", "DT_BF16;DT_BF16", "16,64", "DT_BF16") },
  { "Less", row("16,64;16,64", "INT32;INT32", "16,64", "BOOL") },
  { "Equal", row("16,64;16,64", "INT32;INT32", "16,64", "BOOL") },
  { "FloorDiv", row("16,64;16,64", "INT32;INT32", "16,64", "INT32") },
  { "FloorMod", row("16,64;16,64", "INT32;INT32", "16,64", "INT32") },
  { "LogicalAndAiCore", row("3,64;3,64", "BOOL;BOOL", "3,64", "BOOL") },
  { "LogicalNot", row("16,64", "BOOL", "16,64", "BOOL") },
  { "Neg", row("16,64", "DT_BF16", "16,64", "DT_BF16") },
  { "Log", row("16,64", "DT_BF16", "16,64", "DT_BF16") },
  { "Muls", row("16,64", "DT_BF16", "16,64", "DT_BF16") },
  { "ZerosLike", row("16,64", "DT_BF16", "16,64", "DT_BF16") },
  { "Fill", row("16,64", "DT_BF16", "16,64", "DT_BF16") },
  { "Cumsum", row("16,64", "INT32", "16,64", "INT32") },
  { "ReduceSum", row("16,64", "DT_BF16", "16,64", "DT_BF16") },
  { "BroadcastTo", row("1,64;2", "DT_BF16;INT64", "16,64", "DT_BF16") },
  { "Tile", row("16,64;2", "DT_BF16;INT64", "16,128", "DT_BF16") },
  { "ConcatD", row("16,512;16,512", "DT_BF16;DT_BF16", "16,1024", "DT_BF16") },
  { "AsStridedAiCore", row("32768;3;3;1", "DT_BF16;INT64;INT64;INT64", "2,128,64", "DT_BF16") },
  { "Pack", row("16,64", "DT_BF16", "1,16,64", "DT_BF16") },
  { "BatchMatMulNd", row("16,32,128;16,128,512", "DT_BF16;DT_BF16", "16,32,512", "DT_BF16") },
  { "MatMul", row("16,256;512,256", "DT_BF16;DT_BF16", "16,512", "DT_BF16") },
  { "GatherV3", row("64,256;16;1", "DT_BF16;INT64;INT64", "16,256", "DT_BF16") },
  { "PadV3AiCore", row("11,256;4;", "DT_BF16;INT64;DT_BF16", "16,256", "DT_BF16") },
  { "TransposeAiCore", row("16,256;2", "DT_BF16;INT64", "256,16", "DT_BF16") },
  { "MaskedFillAiCore", row("3,64;3,64", "DT_BF16;BOOL", "3,64", "DT_BF16") },
}
local p = { cases = {}, ops = {} }
for _, r in ipairs(ROWS) do
  local case, why = registry.check(r[1], r[2], { ep_size = 16 })
  if not case then error(r[1] .. ": " .. tostring(why)) end
  case.id, case.op, case.record = r[1] .. ":2", r[1], { ["Output Shapes"] = r[2]["Output Shapes"] }
  p.cases[#p.cases + 1] = case
  p.ops[#p.ops + 1] = r[1]
end
assert(plan.write(arg[1], p, {}))
print(#p.cases .. " cases")
LUA
out=$("$PS_BIN" "$TMP/mk.lua" "$TMP/plan.jsonl" 2>&1)
expect_eq "the registry builds every case" "$out" "28 cases"
out=$(cd "$SRC/lua/perfscript/replay" && "$PY" - "$TMP/plan.jsonl" <<'PY' 2>&1
import sys, torch
import executor as e
torch.Tensor.npu = lambda self: self          # the CPU stands in for the NPU
header, cases = e.check_plan(sys.argv[1])
bad = 0
for _, c in cases:
    gen = torch.Generator().manual_seed(0)
    try:
        y = e.make_call(torch, None, c, gen)()
        if isinstance(y, (tuple, list)):
            y = y[0]
        want = [int(d) for d in c["record"]["Output Shapes"].split(";")[0].split(",")]
        if list(y.shape) != want:
            bad += 1
            print(f"{c['op']}: shape {list(y.shape)}, the row says {want}")
    except Exception as x:
        bad += 1
        print(f"{c['op']}: {type(x).__name__}: {x}")
print(f"ran {len(cases)}, {bad} bad")
PY
)
expect_contains "every case runs on the CPU with the row's output shape" "$out" "ran 28, 0 bad"
finish
