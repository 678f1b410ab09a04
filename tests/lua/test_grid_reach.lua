-- perfscript.grid.reach: the grid appends only rows the consumer (TensorCast's reader) would
-- answer with (issue 19), and run.lua uses it on a database with an op_mapping.yaml.
local lu = require "luaunit"
local perf = require "perfscript"
local reach = require "perfscript.grid.reach"
local route = require "perfscript.grid.route"
local run = require "perfscript.grid.run"

local RULES = { patterns = require "perfscript.grids.patterns", assignments = require "perfscript.grids.assignments",
                grids = require "perfscript.grids.registry", scenes = require "perfscript.grids.fia_scenes" }
local TMP = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/grid_reach"

local function write(path, text)
  local f = assert(io.open(path, "wb")); f:write(text); f:close()
end
local rm_rf = require("perfscript.path").rmtree
local function getter(t) return function(c) return t[c] end end
local function rows(list)
  local i = 0
  return function() i = i + 1; return list[i] and getter(list[i]) end
end

local MAPPING = [[
operator_mappings:
  aten.mm.default: {kernel_type: MatMulV2, alternate_kernel_types: [MatMulV3, MatMulCommon]}
  aten.add.Tensor: {kernel_type: Add, alternate_kernel_types: [AddAiCore], query_mode: elementwise}
  aten.index.Tensor: {kernel_type: Index, tc_input_count: 1}
  tensor_cast.attention.default: {kernel_type: FusedInferAttentionScore, query_mode: attention_special}
]]

local function state()
  rm_rf(TMP); assert(perf.fs.mkdir_p(TMP))
  write(TMP .. "/op_mapping.yaml", MAPPING)
  return reach.new(assert(route.load_meta(TMP .. "/op_mapping.yaml")))
end

function test_misspelled_dtypes()
  lu.assertEquals(reach.misspelled("DT_INT8"), "INT8")
  lu.assertEquals(reach.misspelled("DT_FLOAT"), "FLOAT")
  lu.assertEquals(reach.misspelled("BF16"), "DT_BF16")
  lu.assertNil(reach.misspelled("DT_BF16"))
  lu.assertNil(reach.misspelled("FLOAT16"))       -- the profiler's own spelling
  lu.assertEquals({ reach.check_dtypes("DT_BF16;DT_INT8;;INT64") }, { "DT_INT8", "INT8" })
  lu.assertNil(reach.check_dtypes("DT_BF16;INT8;DT_UNDEFINED;INT64"))
end

-- Elementwise: the first row whose output matches (also block-padded) answers.
function test_elementwise_first_match()
  local st = state()
  local ctx = reach.begin(st, "Add", rows { { ["Output Shapes"] = '"16,7168"' } })
  lu.assertTrue(reach.first_match(st, "Add"))
  -- M=32 pads up from the existing M=16 row: the consumer answers with that row
  lu.assertFalse(reach.keep(ctx, getter { ["Output Shapes"] = "32,7168" }))
  lu.assertFalse(reach.keep(ctx, getter { ["Output Shapes"] = "1,16,7168" }))   -- leading 1 stripped
  lu.assertTrue(reach.keep(ctx, getter { ["Output Shapes"] = "8,7168" }))
  lu.assertTrue(reach.keep(ctx, getter { ["Output Shapes"] = "17,7168" }))
  -- once M=8 is in, M=1 could still be appended (1 does not pad to 8), M=16 is there already
  lu.assertTrue(reach.keep(ctx, getter { ["Output Shapes"] = "1,7168" }))
  -- the alternate of an elementwise op is never read by the consumer
  local alt = reach.begin(st, "AddAiCore", rows {})
  lu.assertNil(reach.keep(alt, getter { ["Output Shapes"] = "3,7168" }))
end

-- Attention: equally near rows of the same key with block-padded-compatible T make the consumer
-- miss (ambiguous_semantic_match); a 4-D query with S > 1 is unreadable.
function test_attention_ties()
  local st = state()
  local function fia(q, avg, sparse, kv)
    return getter { ["Input Shapes"] = '"' .. q .. ';32,1,128,512"', ["Input Data Types"] = "DT_BF16;DT_BF16",
                    ["Runtime avg_seq_len"] = avg, ["Runtime sparse_mode"] = sparse,
                    ["Runtime num_key_value_heads"] = kv }
  end
  local ctx = reach.begin(st, "FusedInferAttentionScore", rows {})
  lu.assertTrue(reach.keep(ctx, fia("1,128,1,512", "2048", "0", "1")))
  lu.assertFalse(reach.keep(ctx, fia("16,128,1,512", "2048", "0", "1")))   -- 16 = pad16(1)
  lu.assertTrue(reach.keep(ctx, fia("2,128,1,512", "2048", "0", "1")))     -- 2 and 1 not compatible
  lu.assertTrue(reach.keep(ctx, fia("16,128,1,512", "2049", "0", "1")))    -- nearer for its own query
  lu.assertTrue(reach.keep(ctx, fia("16,128,1,512", "2048", "3", "1")))    -- another sparse mode
  lu.assertNil(reach.keep(ctx, fia("1,128,2048,512", "2048", "3", "1")))   -- BNSD with S > 1
end

-- Compute: distance-0 twins on the first tc_input_count inputs, and rows of earlier kernels.
function test_compute_ties_and_alternates()
  local st = state()
  local v2 = reach.begin(st, "MatMulV2", rows { { ["Input Shapes"] = '"16,7168;2112,7168"',
                                                  ["Input Data Types"] = "DT_BF16;DT_BF16",
                                                  ["Input Formats"] = "ND;ND" } })
  local mm = function(s) return getter { ["Input Shapes"] = s, ["Input Data Types"] = "DT_BF16;DT_BF16",
                                          ["Input Formats"] = "ND;ND" } end
  lu.assertFalse(reach.keep(v2, mm("16,7168;2112,7168")))
  lu.assertTrue(reach.keep(v2, mm("32,7168;2112,7168")))
  local v3 = reach.begin(st, "MatMulV3", rows {})
  lu.assertFalse(reach.keep(v3, mm("32,7168;2112,7168")))     -- MatMulV2 answers first
  lu.assertFalse(reach.keep(v3, mm("32,7168;7168,2112")))     -- ... also through the transpose rule
  lu.assertTrue(reach.keep(v3, mm("4099,7168;2112,7168")))
  local ix = reach.begin(st, "Index", rows {})
  local idx = function(s) return getter { ["Input Shapes"] = s, ["Input Data Types"] = "DT_BF16;INT64",
                                           ["Input Formats"] = "ND;ND" } end
  lu.assertTrue(reach.keep(ix, idx("64,7168;16")))
  lu.assertFalse(reach.keep(ix, idx("64,7168;32")))            -- only input 1 is compared
end

-- run.lua: a DT_INT8 template is refused with the fix; elementwise rows go largest first.
function test_run_refuses_misspelled_template_and_orders_elementwise()
  local st = state()
  local H = "OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
            .. "Output Data Types,Output Formats,Average Duration(us)\n"
  write(TMP .. "/DynamicQuant.csv", H .. 'dynamic,AI_VECTOR_CORE,"""16,7168""",DT_BF16,ND,"""16,7168;16""",DT_INT8;FLOAT,ND;ND,3.0\n')
  write(TMP .. "/Add.csv", H .. 'dynamic,AI_VECTOR_CORE,"""16,7168;16,7168""",DT_BF16;DT_BF16,ND;ND,"""16,7168""",DT_BF16,ND,2.4\n')
  local by = {}
  for _, r in ipairs(run.run { dir = TMP, models = { "deepseek-ai/DeepSeek-V3" }, rows = 0, seed = 0,
                               rules = RULES }) do by[r.kernel] = r end
  lu.assertStrContains(by.DynamicQuant.status, "Output Data Types says DT_INT8, which the consumer spells INT8")
  lu.assertEquals(by.DynamicQuant.appended or 0, 0)
  lu.assertTrue(by.Add.appended > 0)
  lu.assertTrue(by.Add.shadowed > 0)
  -- every appended row is the first whose output answers it, in file order
  local r = assert(perf.csv.open(TMP .. "/Add.csv"))
  local col = r:column("Output Shapes")
  local seen = {}
  local ctx = reach.begin(reach.new(assert(route.load_meta(TMP .. "/op_mapping.yaml"))), "Add", rows {})
  for f in r:lines() do
    local out = f[col]
    lu.assertTrue(reach.keep(ctx, getter { ["Output Shapes"] = out }), out)
    seen[#seen + 1] = out
  end
  r:close()
  lu.assertTrue(#seen > 2)
end

TestDtypesPastTheShapes = {}

-- The consumer compares the dtype of each input it has a shape for: AddRmsNormBias's empty beta
-- slot (DT_UNDEFINED) does not keep its rows from answering AddRmsNorm's queries, so the grid's
-- AddRmsNorm rows with the same shapes were never read (the consumer answered 24 of 25 of them
-- with AddRmsNormBias rows once microbench measured them).
function TestDtypesPastTheShapes:test_alternate_shadowed_by_the_primary()
  local answer = require "perfscript.db.reach"
  local bias = answer.view(getter { ["Input Shapes"] = '"16,7168;16,7168;7168;"',
    ["Input Data Types"] = "DT_BF16;DT_BF16;DT_BF16;DT_UNDEFINED", ["Input Formats"] = "ND;ND;ND;NULL" }, "compute")
  lu.assertEquals(#bias.shapes, 3)
  lu.assertEquals(#bias.dtypes, 3)
  local set = answer.answer_set("AddRmsNormBias", "compute")
  set:add(bias)
  local alt = answer.view(getter { ["Input Shapes"] = '"16,7168;16,7168;7168"',
    ["Input Data Types"] = "DT_BF16;DT_BF16;DT_BF16", ["Input Formats"] = "ND;ND;ND" }, "compute")
  lu.assertTrue(set:answers(alt, "AddRmsNormBias"))
end

os.exit(lu.LuaUnit.run())
