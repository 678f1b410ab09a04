#!/usr/bin/env bash
# The goldens of the attention / MLA / RoPE-cache / MoE operators (lua/perfscript/replay/golden/
# attention.py, mla.py, rope_cache.py, moe.py):
#  1. their unit tests (golden_attn_cases.py): results against references, meta = cpu shapes,
#     wrong arguments rejected with a message naming them;
#  2. a small seed-style row of each kernel type, built by its builder, runs on cpu through
#     `microbench.lua --validate cpu` and gives the row's output shapes;
#  3. the bundled seed database's rows of these kernel types on meta: valid, or rejected for
#     the two known reasons (see below).
source "$(dirname "$0")/lib.sh" || exit 1
torch_python
export PERFSCRIPT_LUA_DIR="${PERFSCRIPT_LUA_DIR:-$SRC/lua}" PYTHONDONTWRITEBYTECODE=1

out=$("$PY" "$SRC/tests/cli/golden_attn_cases.py" 2>&1)
expect_contains "the golden unit tests pass" "$out" $'\nOK'
[[ $out == *$'\nOK'* ]] || echo "$out" | tail -30

# seed-style rows, one CSV per kernel type (ReshapeAndCacheNdKernel is in-place: its golden
# returns None as the API does, and the rows' outputs are the caches it writes)
cat > "$TMP/mk.lua" <<'LUA'
local perf = require "perfscript"
local dir = arg[1]
local function rep(v, n) local t = {} for i = 1, n do t[i] = v end return table.concat(t, ";") end
local U = "DT_UNDEFINED"
local function fia_types(extra)
  local d, f = {}, {}
  for i = 1, 31 do d[i], f[i] = extra[i] or U, extra[i] and "ND" or "NULL" end
  return table.concat(d, ";"), table.concat(f, ";")
end
local ROWS = {
  FusedInferAttentionScore = {
    { "2,8,1,64;6,1,16,64;6,1,16,64;;;2;2;;;;;;;;2,3;;;;;;;;;;2,8,1,16;6,1,16,16;;;;;",
      { [1] = "DT_BF16", [2] = "DT_BF16", [3] = "DT_BF16", [6] = "INT64", [7] = "INT64", [15] = "INT32", [25] = "DT_BF16", [26] = "DT_BF16" },
      "8,2,1,64;", "DT_BF16;FLOAT" },
    { "16,4,128;16,4,128;16,4,128;;2048,2048;2;2" .. (";"):rep(24),
      { [1] = "DT_BF16", [2] = "DT_BF16", [3] = "DT_BF16", [5] = "BOOL", [6] = "INT64", [7] = "INT64" }, "16,4,128", "DT_BF16" } },
  SparseFlashAttention = { { "8,4,512;4,16,1,512;4,16,1,512;8,1,16;2,2;2;2;8,4,64;4,16,1,64",
    "DT_BF16;DT_BF16;DT_BF16;INT32;INT32;INT32;INT32;DT_BF16;DT_BF16", "8,4,512", "DT_BF16" } },
  LightningIndexer = { { "8,4,128;4,16,1,128;8,4;2;2;2,2", "DT_BF16;DT_BF16;DT_BF16;INT32;INT32;INT32", "8,1,2048", "INT32" } },
  RINGMLAPrefillBF16Kernel = {
    { "64,4,128;64,4,64;64,4,128;64,4,64;64,4,128", rep("DT_BF16", 5), "64,4,128;4,64", "DT_BF16;FLOAT" },
    { "64,4,128;64,4,64;64,4,128;64,4,64;64,4,128;512,512;;;;;;;;64,4,128;4,64", rep("DT_BF16", 6) .. ";;;;;;;;DT_BF16;FLOAT",
      "64,4,128;4,64", "DT_BF16;FLOAT" } },
  ReshapeAndCacheNdKernel = { { "4,1,128;4,1,128;16,128,1,128;16,128,1,128;4", rep("DT_BF16", 4) .. ";INT32",
    "16,128,1,128;16,128,1,128", "DT_BF16;DT_BF16" } },
  PagedCacheLoadNdKernel = { { "16,16,1,512;16,16,1,64;4,8;4;16,1,512;16,1,64;4", "DT_BF16;DT_BF16;INT32;INT32;DT_BF16;DT_BF16;INT32",
    "16,1,512;16,1,64", "DT_BF16;DT_BF16" } },
  InterleaveRope = { { "4,8,1,64;4,1,1,64;4,1,1,64", rep("DT_BF16", 3), "4,8,1,64", "DT_BF16" } },
  KvRmsNormRopeCache = { { "4,1,1,576;512;4,1,1,64;4,1,1,64;4;16,16,1,64;16,16,1,512;;;;;",
    rep("DT_BF16", 4) .. ";INT64;DT_BF16;DT_BF16;" .. rep(U, 5), "16,16,1,64;16,16,1,512;4,1,1,64;4,1,1,512", rep("DT_BF16", 4) } },
  split_qkv_rmsnorm_rope_kernel = { { "8,1536;64", "DT_BF16;DT_BF16", "8,1024;8,256;8,256", rep("DT_BF16", 3) } },
  MoeGatingTopK = { { "16,256;256;", "DT_BF16;DT_BF16;" .. U, "16,8;16,8;16,256", "DT_BF16;INT32;FLOAT" } },
  MoeTokenPermute = { { "16,64;16,2", "DT_BF16;INT64", "32,64;32", "DT_BF16;INT32" } },
  MoeTokenUnpermute = { { "32,64;32;16,2", "DT_BF16;INT32;DT_BF16", "16,64", "DT_BF16" } },
  DispatchFFNCombine = { { "4,16;2,16,8;2,4,16;4,2;2,8;2,16;4,2", "DT_BF16;DT_BF16;DT_BF16;INT32;FLOAT;FLOAT;FLOAT",
    "4,16;2", "DT_BF16;INT32", "2" } },
}
local n = 0
for op, rows in pairs(ROWS) do
  local w <close> = assert(perf.csv.writer(dir .. "/" .. op .. ".csv"))
  w:write { "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types", "Output Formats",
            "EP Size" }
  for _, r in ipairs(rows) do
    local dt, fm = r[2], nil
    if type(dt) == "table" then dt, fm = fia_types(dt) end
    local function formats(types) return (types:gsub("[^;]+", function(x) return x == U and "NULL" or "ND" end)) end
    w:write { r[1], dt, fm or formats(dt), r[3], r[4], formats(r[4]), r[5] or "" }
    n = n + 1
  end
  assert(w:commit())
end
print(n .. " rows")
LUA
mkdir -p "$TMP/db"
out=$("$PS_BIN" "$TMP/mk.lua" "$TMP/db" 2>&1)
expect_eq "the sample database is written" "$out" "15 rows"
OPS=FusedInferAttentionScore,SparseFlashAttention,LightningIndexer,RINGMLAPrefillBF16Kernel,PagedCacheLoadNdKernel
OPS=$OPS,InterleaveRope,KvRmsNormRopeCache,split_qkv_rmsnorm_rope_kernel,MoeGatingTopK,MoeTokenPermute,MoeTokenUnpermute
OPS=$OPS,DispatchFFNCombine,ReshapeAndCacheNdKernel
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --validate cpu --max-elements 0 --python "$PY" \
  --database-path "$TMP/db" --ops "$OPS" 2>&1)
expect_contains "every sample row is valid on cpu" "$out" "[SUMMARY] 15 row(s): 15 valid, 0 rejected, 0 not replayable"
expect_not_contains "no sample row falls back to meta" "$out" "[META]"
[[ $out == *"15 valid, 0 rejected"* ]] || echo "$out" | grep -v '^\[SKIP\]'

# the seed database on meta: MoeGatingTopK's row records a third output (16) where torch_npu,
# vllm-ascend and aclnnMoeGatingTopK's reference return the norm output shaped as x, (T, E)
seed="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --validate meta --python "$PY" --database-path "$seed" \
  --ops "$OPS,reshape_and_cache_200000000,split_qkv_rmsnorm_rope_kernel_0" 2>&1)
expect_contains "the seed rows: 9 valid, 1 rejected" "$out" "[SUMMARY] 10 row(s): 9 valid, 1 rejected, 0 not replayable"
expect_contains "MoeGatingTopK's third output" "$out" "[REJECTED] MoeGatingTopK: 1 row(s): output 3: shape (16,256), the row records (16)"
finish
