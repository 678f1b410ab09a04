-- The replay builders (lua/perfscript/replay/<Op>.lua; docs/rules.md, Replay): the Python
-- original's argument derivations D1-D24 and D33, and one representative row per operator for
-- all 36 of them.
local lu = require "luaunit"
local perf = require "perfscript"
local h = require "tests.lua.helpers"
local C = require "perfscript.replay.common"
local plan = require "perfscript.microbench.plan"

local row = h.kernel_row

local function rep(s, n)
  local t = {}
  for i = 1, n do t[i] = s end
  return table.concat(t, ";")
end

TestDerivations = {}

function TestDerivations:test_D1_D2_D3()
  local shape = require "perfscript.shape"
  lu.assertEquals(shape.nz_logical { 2, 3, 4, 5 }, { 12, 10 })
  lu.assertNil(shape.nz_logical { 2, 3, 4 })
  lu.assertEquals(require("perfscript.replay.PadV3").pads({ 2, 3 }, { 2, 8 }), { 0, 5, 0, 0 })
  local T = require "perfscript.replay.Transpose"
  local function d(a, b) return { T.dims(a, b) } end
  lu.assertEquals(d({ 4, 896 }, { 896, 4 }), { 0, 1 })
  lu.assertEquals(d({ 2, 3, 4, 5 }, { 2, 4, 3, 5 }), { 1, 2 })
  lu.assertEquals(d({ 2, 3, 4 }, { 4, 3, 2 }), { 0, 2 })
  lu.assertEquals(d({ 8, 8 }, { 8, 8 }), { 0, 1 })
  lu.assertEquals(d({ 8 }, { 8 }), { 0, 0 })
end

function TestDerivations:test_D4_head_dim()
  local S = require "perfscript.replay.split_qkv_rmsnorm_rope_kernel"
  lu.assertEquals(S.head_dim(1024, 64, 64), 64)
  lu.assertEquals(S.head_dim(4096, 512, 64), 64)
  lu.assertEquals(S.head_dim(5120, 1024, 128), 128)
  lu.assertEquals(S.head_dim(1536, 256, 32), 32)
  lu.assertEquals(S.head_dim(3072, 768, 96), 96)
  local case = assert(S(row("128,1152;64", "DT_BF16;DT_BF16", "ND;ND", "128,1024;128,64", "DT_BF16;DT_BF16")))
  lu.assertEquals(case.kwargs.q_hidden_size, 1024)
  lu.assertEquals(case.kwargs.kv_hidden_size, 64)
  lu.assertEquals(case.kwargs.cos_sin_cache.tensor.shape, { 2048, 64 })
  lu.assertEquals(case.kwargs.positions.tensor.shape, { 128 })
end

function TestDerivations:test_D5_to_D10_fia()
  local F = require "perfscript.replay.FusedInferAttentionScore"
  lu.assertEquals(C.distribute(10, 3, 1), { 4, 3, 3 })
  lu.assertEquals(C.cumsum(C.distribute(10, 3, 1)), { 4, 7, 10 })
  lu.assertEquals(F.seq_q({ 9, 16, 128 }, 3), { 3, 6, 9 })
  lu.assertEquals(F.seq_q({ 3, 16, 4, 128 }, 3), { 4, 4, 4 })
  -- D8
  lu.assertEquals(F.seq_kv({ 100, 16, 128 }, 2, true, { 2, 3 }), { 32, 48 })
  lu.assertEquals(F.seq_kv({ 100, 16, 128 }, 2, true, nil), { 16, 16 })
  -- D9, D10
  local t = F.block_table(2, 8, { 40, 998 }, 128, 100)
  lu.assertEquals(t, { 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8 })
  lu.assertEquals(F.block_table(3, 4, { 32, 48, 16 }, 16, 5, { 2, 3, 1 }), { 0, 1, 0, 0, 2, 3, 4, 0, 0, 0, 0, 0 })
end

local function fia_row(shapes, extra)
  return row(shapes, rep("DT_BF16", 31), rep("ND", 31), "16,1,1,512;16,1,1", "DT_BF16;FLOAT", extra)
end

function TestDerivations:test_D6_D7_D11_D12_D13_fia_rows()
  local F = require "perfscript.replay.FusedInferAttentionScore"
  -- D11: the raw override gives the real slots, layout and heads
  local raw = "16,1,1,512;4099,1,128,512;4099,1,128,512;;;1;1;;;;;;;;1,512;;;;;;;;;;16,1,1,64;4099,1,128,64;;;;;"
  local sl = F.slots(fia_row("16,512;4099,512", { ["Runtime operator_input_shapes_raw"] = raw }))
  lu.assertEquals({ sl.shapes[1], sl.shapes[2], sl.shapes[25], sl.shapes[26] },
    { { 16, 1, 1, 512 }, { 4099, 1, 128, 512 }, { 16, 1, 1, 64 }, { 4099, 1, 128, 64 } })
  -- the same without the query's sequence-length slot (its batch 1 disagrees with q's 16)
  raw = "16,1,1,512;4099,1,128,512;4099,1,128,512;;;;1;;;;;;;;1,512;;;;;;;;;;16,1,1,64;4099,1,128,64;;;;;"
  local case = assert(F(fia_row("16,512;4099,512", { ["Runtime operator_input_shapes_raw"] = raw,
    ["Runtime input_layout"] = "BNSD_NBSD", ["Runtime num_heads"] = "16", ["Runtime num_key_value_heads"] = "1" })))
  lu.assertEquals(case.args[1].tensor.shape, { 16, 1, 1, 512 })
  lu.assertEquals(case.args[2].tensor.shape, { 4099, 1, 128, 512 })
  lu.assertEquals(case.kwargs.query_rope.tensor.shape, { 16, 1, 1, 64 })
  lu.assertEquals(case.kwargs.key_rope.tensor.shape, { 4099, 1, 128, 64 })
  lu.assertEquals({ case.kwargs.input_layout, case.kwargs.num_heads, case.kwargs.num_key_value_heads },
    { "BNSD_NBSD", 16, 1 })
  lu.assertEquals(case.kwargs.block_size, 128) -- D6: 4-D key with a block table
  lu.assertEquals(case.kwargs.sparse_mode, 0)   -- D7: no mask
  lu.assertTrue(case.kwargs.softmax_lse_flag)
  -- D12 / D13
  local tnd = "16,16,128;4099,16,128;4099,16,128"
  local c, why = F(fia_row(tnd, { ["Runtime num_key_value_heads"] = "1" }))
  lu.assertNil(c)
  lu.assertStrContains(why, "Runtime operator_input_shapes_raw is missing")
  lu.assertNotNil(F(fia_row(tnd, { ["Runtime num_key_value_heads"] = "16", ["Runtime operator_input_shapes_raw"] = "  " })))
  -- D7: a 2048 mask gives sparse mode 3, a runtime value wins
  local masked = "16,16,128;4099,16,128;4099,16,128;;2048,2048"
  local dt = rep("DT_BF16", 4) .. ";DT_BOOL;" .. rep("DT_BF16", 26)
  lu.assertEquals(assert(F(row(masked, dt, rep("ND", 31), "16,16,128", "DT_BF16"))).kwargs.sparse_mode, 3)
  lu.assertEquals(assert(F(row(masked, dt, rep("ND", 31), "16,16,128", "DT_BF16", { ["Runtime sparse_mode"] = "4" }))).kwargs.sparse_mode, 4)
  lu.assertEquals(assert(F(row(masked, dt, rep("ND", 31), "16,16,128", "DT_BF16", { ["Runtime block_size"] = "64" }))).kwargs.block_size, 64)
end

function TestDerivations:test_D14_to_D18()
  lu.assertEquals(C.group_list(10, 4), { 3, 6, 8, 10 })
  local q, k = require("perfscript.replay.LightningIndexer").lengths(102, 34, 1766, 128)
  lu.assertEquals(q[1], 3)
  lu.assertEquals(q[34], 102)
  lu.assertEquals(k[1], 6649)
  lu.assertEquals(k[16], 6649)
  lu.assertEquals(k[17], 6648)
  local sum = 0
  for _, v in ipairs(k) do sum = sum + v end
  lu.assertEquals(sum, 226048)
  lu.assertEquals(require("perfscript.replay.SparseFlashAttention").topk(8, 5), { 0, 1, 2, 3, 4, 4, 4, 4 })
  local D = require "perfscript.replay.DispatchFFNCombine"
  lu.assertEquals(D.balanced_ids(2, 4, 16, 16), { 0, 1, 2, 3, 4, 5, 6, 7 })
  local ids = D.balanced_ids(5, 8, 32, 16)
  lu.assertEquals({ table.unpack(ids, 17, 24) }, { 1, 3, 5, 7, 9, 11, 13, 15 }) -- row index 2
  lu.assertEquals(D.balanced_ids(2, 3, 6, 16), { 0, 1, 2, 3, 4, 5 })
  local R = require "perfscript.replay.RINGMLAPrefillBF16Kernel"
  lu.assertEquals(R.chunks(1300, 3, 512), { 512, 512, 276 })
  lu.assertEquals(R.chunks(100, 2, 512), { 100, 0 })
end

-- MoeGatingTopK's grouping (not recorded): DeepSeek-V3's 8 groups / 4 chosen where each group
-- then holds more experts than group_select_mode 1 needs (its top 2), else one group; the
-- golden of npu_moe_gating_top_k refused 8 experts in 8 groups of 1 (aclnnMoeGatingTopK:
-- experts / group_count > group_select_mode).
function TestDerivations:test_moe_gating_groups()
  local G = require "perfscript.replay.MoeGatingTopK"
  lu.assertEquals({ G.groups(256, 8) }, { 8, 4 })
  lu.assertEquals({ G.groups(16, 8) }, { 8, 4 })
  lu.assertEquals({ G.groups(8, 2) }, { 1, 1 })
  lu.assertEquals({ G.groups(256, 200) }, { 1, 1 })
end

function TestDerivations:test_D19_to_D24()
  local R = require "perfscript.replay.RINGMLAPrefillBF16Kernel"
  local s, d = R.parse("1,2;;UNDEFINED;n/a;3", "DT_BF16;;dt_undefined;NULL;FLOAT")
  lu.assertEquals(s, { { 1, 2 }, false, false, false, { 3 } })
  lu.assertEquals(d, { "DT_BF16", "", "", "", "FLOAT" })
  local Q = require "perfscript.replay.QuantBatchMatmulV3"
  lu.assertEquals(Q.role("DT_INT32", 5, { 8, 64 }, { 8, 256 }), "bias")
  lu.assertEquals(Q.role("DT_FLOAT", 8, { 8, 64 }, { 8, 256 }), "pertoken_scale")
  lu.assertEquals(Q.role("DT_FLOAT", 256, { 8, 64 }, { 8, 256 }), "offset")
  lu.assertEquals(Q.role("DT_FLOAT", 1, { 8, 64 }, { 8, 256 }), "offset")
  lu.assertNil(Q.role("DT_FLOAT", 7, { 8, 64 }, { 8, 256 }))
  -- D21
  local case = assert(require("perfscript.replay.Index")(row("64,1728;1;2;16", "DT_BF16;INT64;INT64;INT64", "ND;ND;ND;ND", "16,1728", "DT_BF16")))
  lu.assertTrue(case.index)
  lu.assertEquals(case.args[1].tensor.shape, { 64, 1728 })
  lu.assertEquals(case.args[2].tensor, { shape = { 16 }, dtype = "DT_INT64", format = "ND", init = "arange" })
  -- D22, D23
  lu.assertEquals({ C.dtype("FLOAT"), C.dtype(" INT64 "), C.dtype("bf16"), C.dtype("") },
    { "DT_FLOAT", "DT_INT64", "DT_bf16", "DT_UNDEFINED" })
  lu.assertEquals(C.split(' "a; ;b;" '), { "a", "", "b", "" })
  lu.assertNil(C.tensor({ shapes = { { 2 } }, dtypes = { "bf16" }, formats = { "ND" } }, 1))
  -- D24
  local c, why = require("perfscript.replay.DispatchFFNCombine")(row("2,4;1,4,8", "DT_BF16;DT_BF16", "ND;ND", "2,4", "DT_BF16"))
  lu.assertNil(c)
  lu.assertStrContains(why, "seven input metadata slots")
end

function TestDerivations:test_D25_dfc_skip()
  lu.assertTrue(plan.dfc_skip({ "DispatchFFNCombine" }, 16, nil, 2, "missing-only"))
  lu.assertTrue(plan.dfc_skip(nil, 16, nil, 2, "missing-only"))
  lu.assertFalse(plan.dfc_skip({ "DispatchFFNCombine" }, 32, 16, 16, "missing-only"))
  lu.assertFalse(plan.dfc_skip({ "DispatchFFNCombine", "MatMulV2" }, 16, nil, 2, "missing-only"))
  lu.assertFalse(plan.dfc_skip(nil, 16, nil, 2, "all"))
  lu.assertFalse(plan.dfc_skip(nil, 16, nil, 0, "missing-only"))
end

function TestDerivations:test_D33_dfc_ep_from_the_row()
  -- the row's EP Size decides its EP (a run per EP size), the flag only where a row has none;
  -- before, rows of another EP were skipped ("does not match replay --ep-size 16")
  local dir = h.tmpdir()
  local p = h.write(dir .. "/DispatchFFNCombine.csv", "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,EP Size\n"
    .. '"4,16;2,16,8",x,x,x,x,x,8\n"4,16;2,16,8",x,x,x,x,x,16\n"4,16;2,16,8",x,x,x,x,x,\n')
  local pl = assert(plan.build({ { op = "DispatchFFNCombine", path = p } }, { mode = "all", ep_size = 16,
    builder = function() return function() return { api = "torch.x", args = {} } end end }))
  lu.assertEquals(#pl.cases, 3)
  lu.assertEquals(#pl.unreplayable, 0)
  local dfc = require "perfscript.replay.DispatchFFNCombine"
  local r = SAMPLES_DFC()
  r["EP Size"] = "32"
  lu.assertEquals(assert(dfc(r, { ep_size = 16 })).distributed.ep_size, 32)
  r["EP Size"] = ""
  lu.assertEquals(assert(dfc(r, { ep_size = 16 })).distributed.ep_size, 16)
  r["EP Size"] = "x"
  local c, why = dfc(r, { ep_size = 16 })
  lu.assertNil(c)
  lu.assertStrContains(why, 'EP Size "x" is not a positive integer')
  -- split by EP: the default group first, then one per EP size
  local cases = { { op = "A" }, { op = "D", distributed = { ep_size = 64 } }, { op = "D", distributed = { ep_size = 16 } },
                  { op = "D", distributed = { ep_size = 32 } } }
  local g = plan.split_ep({ cases = cases }, 16)
  lu.assertEquals({ g[1].ep, g[2].ep, g[3].ep }, { 16, 32, 64 })
  lu.assertEquals(#g[1].p.cases, 2)
  lu.assertEquals(g[1].p.ops, { "A", "D" })
end

-- One representative row per operator: every builder produces a case that the executor accepts.
function SAMPLES_DFC()
  return row("4,16;2,16,8;2,4,16;4,2;2,8;2,16;4,2", rep("DT_BF16", 3) .. ";INT32;FLOAT;FLOAT;FLOAT",
    rep("ND", 7), "4,16;1,2", "DT_BF16;INT32", { ["Output Formats"] = "ND;ND" })
end
local SAMPLES = {
  Add = row("8,8;8,8", "DT_BF16;DT_BF16", "ND;ND", "8,8", "DT_BF16"),
  AddRmsNormBias = row("4,64;4,64;64;64", "DT_BF16;DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND;ND", "4,64;4;4,64", "DT_BF16;FLOAT;DT_BF16"),
  ArgMaxV2 = row("8,128", "DT_FLOAT", "ND", "8", "INT32"),
  AscendQuantV2 = row("8,128;128", "DT_BF16;DT_BF16", "ND;ND", "8,128", "DT_INT8"),
  BatchMatMulV2 = row("4,16,32;4,64,32", "DT_BF16;DT_BF16", "ND;ND", "4,16,64", "DT_BF16"),
  DispatchFFNCombine = SAMPLES_DFC(),
  DynamicQuant = row("8,128", "DT_BF16", "ND", "8,128;8", "DT_INT8;FLOAT"),
  FusedInferAttentionScore = fia_row("16,16,128;4099,16,128;4099,16,128"),
  GatherV2 = row("1000,64;16", "DT_BF16;INT64", "ND;ND", "16,64", "DT_BF16"),
  GroupedMatmul = row("16,64;4,64,128;;;;;;4", "DT_BF16;DT_BF16;;;;;;INT64", "ND;ND;;;;;;ND", "16,128", "DT_BF16"),
  GroupedMatmulSwigluQuant = row("16,64;4,64,256;4,256;16;4", "DT_INT8;DT_INT8;FLOAT;FLOAT;INT64", rep("ND", 5), "16,128;16", "DT_INT8;FLOAT"),
  Index = row("64,1728;1;2;16", "DT_BF16;INT64;INT64;INT64", "ND;ND;ND;ND", "16,1728", "DT_BF16"),
  InterleaveRope = row("4,1,8,64;4,1,8,64;4,1,8,64", rep("DT_BF16", 3), rep("ND", 3), "4,1,8,64", "DT_BF16"),
  KvRmsNormRopeCache = row("4,1,1,576;512;4,1,1,64;4,1,1,64;4;16,128,1,64;16,128,1,512;;;;;",
    "DT_BF16;DT_BF16;DT_BF16;DT_BF16;INT64;DT_BF16;DT_BF16;;;;;", "ND;ND;ND;ND;ND;ND;ND;;;;;", "16,128,1,64;16,128,1,512;4,1,1,64;4,1,1,512", ""),
  LightningIndexer = row("102,64,128;1766,128,1,128;102,64;34;34;34,64", "DT_BF16;DT_BF16;DT_BF16;INT32;INT32;INT32",
    rep("ND", 6), "102,1,2048", "INT32"),
  MaskedFill = row("8,8;8,8", "DT_BF16;DT_BF16", "ND;ND", "8,8", "DT_BF16"),
  MatMulCommon = row("24,512;4096,512;4096", "DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND", "24,4096", "DT_BF16"),
  MatMulV2 = row("24,512;4096,512", "DT_BF16;DT_BF16", "ND;ND", "24,4096", "DT_BF16"),
  MatMulV3 = row("24,512;32,256,16,16", "DT_BF16;DT_BF16", "ND;FRACTAL_NZ", "24,4096", "DT_BF16"),
  MoeTokenPermute = row("16,64;16,2", "DT_BF16;INT32", "ND;ND", "32,64;32", "DT_BF16;INT32"),
  MoeTokenUnpermute = row("32,64;32;16,2", "DT_BF16;INT32;DT_BF16", "ND;ND;ND", "16,64", "DT_BF16"),
  PadV3 = row("2,3;4", "DT_BF16;INT64", "ND;ND", "2,8", "DT_BF16"),
  QuantBatchMatmulV3 = row("8,64;64,256;256;256", "DT_INT8;DT_INT8;DT_INT64;DT_INT32", rep("ND", 4), "8,256", "DT_BF16"),
  RINGMLAPrefillBF16Kernel = row("1300,16,128;1300,16,64;1300,16,128;1300,16,64;1300,16,128", rep("DT_BF16", 5),
    rep("ND", 5), "1300,16,128;16,1300", "DT_BF16;FLOAT"),
  ReshapeAndCacheNdKernel = row("4,1,128;4,1,128;16,128,1,128;16,128,1,128;4", "DT_BF16;DT_BF16;DT_BF16;DT_BF16;INT32",
    rep("ND", 5), "", ""),
  RmsNorm = row("128,4096;4096", "DT_BF16;DT_BF16", "ND;ND", "128,4096;128,1", "DT_BF16;FLOAT"),
  ScatterNdUpdate = row("64,128;4,1;4,128", "DT_BF16;INT64;DT_BF16", "ND;ND;ND", "64,128", "DT_BF16"),
  Slice = row("4,768;2;2", "DT_BF16;INT64;INT64", "NCL;ND;ND", "2,768", "DT_BF16"),
  SoftmaxV2 = row("8,128", "DT_FLOAT", "ND", "8,128", "DT_FLOAT"),
  Sort = row("8,128", "DT_FLOAT", "ND", "8,128;8,128", "DT_FLOAT;INT64"),
  SparseFlashAttention = row("32,16,576;64,128,1,576;64,128,1,576;32,1,8;4,16;4;4;32,16,64;64,128,1,64",
    "DT_BF16;DT_BF16;DT_BF16;INT32;INT32;INT32;INT32;DT_BF16;DT_BF16", rep("ND", 9), "32,16,512", "DT_BF16"),
  SwiGlu = row("8,256", "DT_BF16", "ND", "8,128", "DT_BF16"),
  AddRmsNormDynamicQuant = row("16,7168;16,7168;7168;7168", rep("DT_BF16", 4), rep("ND", 4),
    "16,7168;16,7168;16,7168;16;16", "INT8;INT8;DT_BF16;FLOAT;FLOAT"),
  MoeGatingTopK = row("16,256;256;", "DT_BF16;DT_BF16;DT_UNDEFINED", "ND;ND;NULL", "16,8;16,8;16", "DT_BF16;INT32;FLOAT"),
  PagedCacheLoadNdKernel = row("128,128,1,512;128,128,1,64;4,512;4;16,1,512;16,1,64;4",
    "DT_BF16;DT_BF16;INT32;INT32;DT_BF16;DT_BF16;INT32", rep("ND", 7), "16,1,512;16,1,64", "DT_BF16;DT_BF16"),
  TensorMove = row("8,128", "DT_BF16", "ND", "8,128", "DT_BF16"),
  TransposeBatchMatMul = row("4,16,128;4,128,512", "DT_BF16;DT_BF16", "ND;ND", "16,4,512", "DT_BF16"),
  Transpose = row("4,896;2", "DT_BF16;INT64", "ND;ND", "896,4", "DT_BF16"),
  split_qkv_rmsnorm_rope_kernel = row("128,1152;64", "DT_BF16;DT_BF16", "ND;ND", "128,1024;128,64", "DT_BF16;DT_BF16"),
}

TestAllOps = {}

function TestAllOps:test_every_operator_builds()
  local registry = require "perfscript.replay.registry"
  lu.assertEquals(#registry.FILES, 39)
  local dir = h.tmpdir()
  local files = {}
  for _, op in ipairs(registry.FILES) do
    local b = assert(plan.builder(op))
    local r = assert(SAMPLES[op], "no sample row for " .. op)
    local case, why = b(r, { op = op, ep_size = 16 })
    lu.assertNotNil(case, op .. ": " .. tostring(why))
    -- through a CSV and the plan writer as the recipe does
    local header = {}
    for k in pairs(r) do header[#header + 1] = k end
    table.sort(header)
    local w = assert(perf.csv.writer(dir .. "/" .. op .. ".csv"))
    w:write(header)
    local vals = {}
    for i, k in ipairs(header) do vals[i] = r[k] end
    w:write(vals)
    assert(w:commit())
    files[#files + 1] = { op = op, path = dir .. "/" .. op .. ".csv" }
  end
  local pl = assert(plan.build(files, { mode = "all", ep_size = 16 }))
  lu.assertEquals(#pl.unreplayable, 0, pl.unreplayable[1] and (pl.unreplayable[1].op .. ": " .. pl.unreplayable[1].reason))
  lu.assertEquals(#pl.cases, 39)
  assert(plan.write(dir .. "/plan.jsonl", pl, { repeat_count = 2 }))
  if perf.proc.which("python3") then
    local rc = perf.proc.run { argv = { "python3", "lua/perfscript/replay/executor.py", dir .. "/plan.jsonl", "--check" },
      stdout = dir .. "/check.out", stderr = dir .. "/check.out" }
    lu.assertEquals(rc, 0, h.read(dir .. "/check.out"))
    lu.assertStrContains(h.read(dir .. "/check.out"), "plan OK: 39 case(s)")
  else
    print("SKIP: python3 absent, executor --check not run")
  end
end

-- The registry (perfscript/replay/registry.lua): every kernel type it knows builds a case for
-- a row as the seed database and the grids write it, and refuses a malformed row with a reason.
-- good: a grid/seed row; bad: a malformed one and a fragment of the reason.
local B = {
  Cast = { row("16,7168", "DT_BF16", "ND", "16,7168", "FLOAT"), row("16,7168;16,7168", "DT_BF16;DT_BF16", "ND;ND", "16,7168", "FLOAT"), "expects exactly 1 input" },
  Mul = { row("16,7168;16,7168", "DT_BF16;DT_BF16", "ND;ND", "16,7168", "DT_BF16"), row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), "expects exactly 2 input" },
  Sub = { row("16,7168;16,7168", "DT_BF16;DT_BF16", "ND;ND", "16,7168", "DT_BF16"), row("16,7168", "DT_BF16", "ND", "", ""), "expects exactly 2 input" },
  RealDiv = { row("16,7168;16,7168", "DT_BF16;DT_BF16", "ND;ND", "16,7168", "DT_BF16"), row("16,7168;16,x", "DT_BF16;DT_BF16", "ND;ND", "", ""), "" },
  Equal = { row("16,7168;16,7168", "INT32;INT32", "ND;ND", "16,7168", "BOOL"), row("16,7168;16,7168", "INT32;DT_COMPLEX64", "ND;ND", "", ""), "Unsupported dtype" },
  NotEqual = { row("16,7168;16,7168", "INT32;INT32", "ND;ND", "16,7168", "BOOL"), row("16,7168", "INT32", "ND", "", ""), "expects exactly 2" },
  GreaterEqual = { row("16,7168;16,7168", "INT32;INT32", "ND;ND", "16,7168", "BOOL"), row("", "", "", "", ""), "expects exactly 2" },
  Less = { row("16,7168;16,7168", "INT32;INT32", "ND;ND", "16,7168", "BOOL"), row("16,7168", "INT32", "ND", "", ""), "expects exactly 2" },
  LogicalAnd = { row("16,7168;16,7168", "BOOL;BOOL", "ND;ND", "16,7168", "BOOL"), row("16,7168", "BOOL", "ND", "", ""), "expects exactly 2" },
  LogicalNot = { row("16,7168", "BOOL", "ND", "16,7168", "BOOL"), row("16,7168;16,7168", "BOOL;BOOL", "ND;ND", "", ""), "expects exactly 1" },
  FloorDiv = { row("16,7168;16,7168", "INT32;INT32", "ND;ND", "16,7168", "INT32"), row("16,7168", "INT32", "ND", "", ""), "expects exactly 2" },
  FloorMod = { row("16,7168;16,7168", "INT32;INT32", "ND;ND", "16,7168", "INT32"), row("16,7168", "INT32", "ND", "", ""), "expects exactly 2" },
  Neg = { row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), row("", "", "", "", ""), "expects exactly 1" },
  Log = { row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), row("", "", "", "", ""), "expects exactly 1" },
  Muls = { row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), row("", "", "", "", ""), "expects exactly 1" },
  Fill = { row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), row("", "", "", "", ""), "expects exactly 1" },
  ZerosLike = { row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), row("", "", "", "", ""), "expects exactly 1" },
  Cumsum = { row("16,7168", "INT32", "ND", "16,7168", "INT32"), row("", "", "", "", ""), "expects exactly 1" },
  ReduceSum = { row("16,7168", "DT_BF16", "ND", "16,7168", "DT_BF16"), row("16,7168", "DT_BF16", "ND", "16,7", "DT_BF16"), "neither the input's" },
  AddRmsNorm = { row("3,7168;3,7168;7168", rep("DT_BF16", 3), rep("ND", 3), "3,7168;3,1;3,7168", "DT_BF16;FLOAT;DT_BF16"), row("3,7168;7168", "DT_BF16;DT_BF16", "ND;ND", "", ""), "expects exactly 3" },
  InplaceAddRmsNorm = { row("16,7168;16,7168;7168", rep("DT_BF16", 3), rep("ND", 3), "16,7168;16,1;16,7168", "DT_BF16;FLOAT;DT_BF16"), row("16,7168", "DT_BF16", "ND", "", ""), "expects exactly 3" },
  AddRmsNormDynamicQuant = { SAMPLES.AddRmsNormDynamicQuant, row("16,7168;16,7168;7000;7168", rep("DT_BF16", 4), rep("ND", 4), "", ""), "gamma must be (7168,)" },
  BroadcastTo = { row("1,7168;2", "DT_BF16;INT64", "ND;ND", "16,7168", "DT_BF16"), row("3,7168;2", "DT_BF16;INT64", "ND;ND", "16,7168", "DT_BF16"), "does not broadcast" },
  Tile = { row("16,64;2", "DT_BF16;INT64", "ND;ND", "16,128", "DT_BF16"), row("16,64;2", "DT_BF16;INT64", "ND;ND", "16,100", "DT_BF16"), "not a multiple" },
  ConcatD = { row("16,512;16,512", "DT_BF16;DT_BF16", "ND;ND", "16,1024", "DT_BF16"), row("16,512;16,512", "DT_BF16;DT_BF16", "ND;ND", "16,1000", "DT_BF16"), "add up" },
  AsStrided = { row("32768;3;3;1", "DT_BF16;INT64;INT64;INT64", rep("ND", 4), "2,128,64", "DT_BF16"), row("100;3;3;1", "DT_BF16;INT64;INT64;INT64", rep("ND", 4), "2,128,64", "DT_BF16"), "the view needs 16384" },
  Pack = { row("16,7168", "DT_BF16", "ND", "1,16,7168", "DT_BF16"), row("", "", "", "", ""), "no inputs" },
  MoeGatingTopK = { SAMPLES.MoeGatingTopK, row("16,256;256;", "DT_BF16;DT_BF16;DT_UNDEFINED", "ND;ND;NULL", "8,8;16,8;16", "DT_BF16;INT32;FLOAT"), "(tokens, k)" },
  PagedCacheLoadNdKernel = { SAMPLES.PagedCacheLoadNdKernel, row("128,128,1,512;128,128,1,64;4,512;4;16,1,512;16,1,64", "", "", "", ""), "expects 7 input slots" },
  GatherV3 = { row("64,7168;16;1", "DT_BF16;INT64;INT64", rep("ND", 3), "16,7168", "DT_BF16"), row("64,7168", "DT_BF16", "ND", "", ""), "needs weight and indices" },
  MatMul = { row("16,7168;2112,7168", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16"), row("16,7168;2112,7000", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16"), "disagree on k" },
  BatchMatMulNd = { row("16,32,128;16,128,512", "DT_BF16;DT_BF16", "ND;ND", "16,32,512", "DT_BF16"), row("16,32,128;16,100,512", "DT_BF16;DT_BF16", "ND;ND", "16,32,512", "DT_BF16"), "not compatible" },
  reshape_and_cache_200000000 = { row("16,8,128;16,8,128;128,128,8,128;128,128,8,128;16", rep("DT_BF16", 4) .. ";INT32", rep("ND", 5), "128,128,8,128;128,128,8,128", "DT_BF16;DT_BF16"),
    row("16,8,128;16,8,128;128,128,8,128;128,128,8,128", rep("DT_BF16", 4), rep("ND", 4), "", ""), "expects exactly 5 inputs" },
  -- w2 must hold half of w1's columns: gate and up halves go through SwiGLU (the golden of
  -- dispatch_ffn_combine refused this row; the builder accepted it)
  DispatchFFNCombine = { SAMPLES_DFC(), row("4,16;2,16,8;2,8,16;4,2;2,8;2,16;4,2", rep("DT_BF16", 3) .. ";INT32;FLOAT;FLOAT;FLOAT",
    rep("ND", 7), "4,16;1,2", "DT_BF16;INT32", { ["Output Formats"] = "ND;ND" }), "half of w1's 8 columns" },
  -- the rows microbench refused before (issue 12)
  GroupedMatmul = { row("16,7168;32,128,448,16,32;;32,4096;;;;32;16", "INT8;INT8;;FLOAT;;;;INT64;FLOAT", "ND;FRACTAL_NZ;;ND;;;;ND;ND", "16,4096", "DT_BF16"),
    row("16,7168;32,128,448,16;;32,4096;;;;32;16", "INT8;INT8;;FLOAT;;;;INT64;FLOAT", "ND;FRACTAL_NZ;;ND;;;;ND;ND", "16,4096", "DT_BF16"), "disagrees with x 16,7168 on K" },
  GroupedMatmulSwigluQuant = { row("16,7168;32,128,448,16,32;;32,4096;16;32", "INT8;INT8;;FLOAT;FLOAT;INT64", "ND;FRACTAL_NZ;;ND;ND;ND", "16,2048;16", "INT8;FLOAT"),
    row("16,7168;32,128,448,16,32;;32,4096;;32", "INT8;INT8;;FLOAT;;INT64", "ND;FRACTAL_NZ;;ND;;ND", "16,2048;16", "INT8;FLOAT"), "expects 5 non-empty inputs" },
  QuantBatchMatmulV3 = { row("16,7168;224,448,16,32;7168;7168", "INT8;INT8;INT64;DT_BF16", "ND;FRACTAL_NZ;ND;ND", "16,7168", "DT_BF16"),
    row("16,7168;224,448,16,32;7168;99", "INT8;INT8;INT64;DT_BF16", "ND;FRACTAL_NZ;ND;ND", "16,7168", "DT_BF16"), "cannot tell the role of input 4" },
  TransposeBatchMatMul = { row("4,16,64;4,64,64", "DT_FLOAT;DT_FLOAT", "ND;ND", "16,4,64", "DT_FLOAT"),
    row("1,2,128;1,128,64", "DT_BF16;DT_BF16", "ND;ND", "2,1,64", "DT_BF16"), "K and N must be multiples of 128 for DT_BF16" },
}

TestRegistry = {}

function TestRegistry:test_grid_rows_build_and_malformed_rows_are_refused()
  local registry = require "perfscript.replay.registry"
  for kernel, t in pairs(B) do
    local case, why, kind = registry.check(kernel, t[1], { ep_size = 16 })
    lu.assertNotNil(case, kernel .. ": " .. tostring(why))
    lu.assertTrue(case.api ~= nil or case.method ~= nil or case.index ~= nil, kernel)
    case, why, kind = registry.check(kernel, t[2], { ep_size = 16 })
    lu.assertNil(case, kernel .. " accepted a malformed row")
    lu.assertEquals(kind, "rejected", kernel)
    lu.assertStrContains(why, t[3], false, kernel)
  end
end

function TestRegistry:test_every_kernel_type_is_covered_and_variants_resolve()
  local registry = require "perfscript.replay.registry"
  -- every kernel type with a builder has a test row here or in SAMPLES (through its base)
  for _, k in ipairs(registry.KERNELS) do
    local base = registry.ALIAS[k] or k
    local r = (B[k] and B[k][1]) or (B[base] and B[base][1]) or SAMPLES[base]
    if r then
      local case, why = registry.check(k, r, { ep_size = 16 })
      lu.assertNotNil(case, k .. ": " .. tostring(why))
    else
      -- table-driven kernels with no seed rows (Abs, Exp, ...): the builder exists
      lu.assertNotNil(registry.builder(k), k)
    end
  end
  lu.assertEquals(registry.ALIAS.AddAiCore, "Add")
  local case = assert(registry.check("CastAiCore", B.Cast[1]))
  lu.assertEquals(case.method, "to")
  lu.assertEquals(case.args[2], { torch_attr = "float32" })
  -- the 5-D FRACTAL_NZ weight is restored to (E, K, N)
  case = assert(registry.check("GroupedMatmul", B.GroupedMatmul[1]))
  lu.assertEquals(case.kwargs.weight.list_of[1].tensor.shape, { 32, 7168, 4096 })
  lu.assertTrue(case.kwargs.weight.list_of[1].tensor.nz)
  case = assert(registry.check("GroupedMatmulSwigluQuant", B.GroupedMatmulSwigluQuant[1]))
  lu.assertEquals(case.kwargs.weight.tensor.shape, { 32, 7168, 4096 })
  lu.assertEquals(case.kwargs.x_scale.tensor.shape, { 16 })
  lu.assertEquals(case.kwargs.weight_scale.tensor.shape, { 32, 4096 })
  case = assert(registry.check("QuantBatchMatmulV3", B.QuantBatchMatmulV3[1]))
  lu.assertEquals(case.kwargs.bias.tensor.dtype, "DT_BF16")
  -- ReduceSum over an axis of size 1 (output = input): a trailing 1 is summed away
  case = assert(registry.check("ReduceSum", B.ReduceSum[1]))
  lu.assertEquals(case.args[1].tensor.shape, { 16, 7168, 1 })
  lu.assertEquals(case.args[2], { 2 })
end

function TestRegistry:test_no_builder_says_why()
  local registry = require "perfscript.replay.registry"
  local c, why, kind = registry.check("LinearIndex", row("16,7168", "INT32", "ND", "16,7168", "INT32"))
  lu.assertNil(c)
  lu.assertEquals(kind, "no builder")
  lu.assertStrContains(why, "aclnnIndex")
  c, why, kind = registry.check("NoSuchKernel", row("1", "INT32", "ND", "1", "INT32"))
  lu.assertNil(c)
  lu.assertEquals(kind, "no builder")
  lu.assertEquals(why, "no replay builder for this kernel type")
  -- helper modules are no builders
  lu.assertNil(registry.builder("common"))
  lu.assertNil(registry.builder("registry"))
end

-- The real operator database of msmodeling records TransposeBatchMatMul's x1 as (M,B,K)
-- (perm_x1 [1,0,2]); the builder refused both of its rows ("x1 (B,M,K) and x2 (B,K,N) disagree").
function TestRegistry:test_real_transpose_batch_matmul_rows()
  local path = h.real_data("msmodeling/tests/benchmark/ops/perf_database/fixtures/fia_raw_test/TransposeBatchMatMul.csv")
  if not path then return end
  local registry = require "perfscript.replay.registry"
  local r = assert(perf.csv.open(path))
  local header, n = r:header(), 0
  for f in r:lines() do
    local rw = {}
    for i, c in ipairs(header) do rw[c] = f[i] end
    local case, why = registry.check("TransposeBatchMatMul", rw)
    lu.assertNotNil(case, tostring(why))
    lu.assertEquals(case.kwargs.perm_x1, { 1, 0, 2 })
    n = n + 1
  end
  r:close()
  lu.assertEquals(n, 2)
  -- the seed database's layout keeps perm_x1 [0,1,2]
  local case = assert(registry.check("TransposeBatchMatMul", row("128,16,128;128,128,512", "DT_BF16;DT_BF16", "ND;ND", "16,128,512", "DT_BF16")))
  lu.assertEquals(case.kwargs.perm_x1, { 0, 1, 2 })
end

os.exit(lu.LuaUnit.run())
