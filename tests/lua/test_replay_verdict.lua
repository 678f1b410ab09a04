-- The replay registry's check-only verdict (registry.verdict, the builders' .check) gives the
-- same verdicts and reasons as building the case (registry.check): over the shape grid's real
-- candidates for every kernel whose builder has a check-only entry, and over edge-case rows.
local lu = require "luaunit"
local reg = require "perfscript.replay.registry"
local perf = require "perfscript"

local verdict = reg.verdict  -- the registry's own (one test wraps reg.verdict)
local function both(kernel, row, ctx)
  local case, why, kind = reg.check(kernel, row, ctx)
  local ok, vwhy, vkind = verdict(kernel, row, ctx)
  return case and true or nil, why, kind, ok, vwhy, vkind
end

local function assert_same(kernel, row, ctx, where)
  local c, cw, ck, v, vw, vk = both(kernel, row, ctx)
  lu.assertEquals({ v, vw, vk }, { c, cw, ck }, where)
end

-- the kernels whose builders have a check-only entry, with the seed files that hold them
local CHECKED = { "QuantBatchMatmulV3", "BatchMatMulV2", "BatchMatMulNd", "MatMulV2", "MatMulV3", "MatMul",
                  "GatherV2", "GatherV3", "DispatchFFNCombine", "TransposeBatchMatMul", "GroupedMatmul", "PadV3",
                  "PadV3AiCore" }
-- the seed files of those builders (their aliases' files share the candidates)
local SEEDED = { "QuantBatchMatmulV3", "BatchMatMulV2", "MatMulV2", "GatherV2", "DispatchFFNCombine",
                 "TransposeBatchMatMul", "GroupedMatmul", "PadV3" }

TestVerdict = {}

function TestVerdict:test_builders_have_check_only_entries()
  for _, k in ipairs(CHECKED) do
    local b = assert(reg.builder(k))
    lu.assertEquals(type(b), "table", k)
    lu.assertEquals(type(b.check), "function", k)
  end
end

-- every candidate the grid asks about, in a dry run over the seed files of the builders with a
-- check-only entry (their aliases' files share the candidates)
function TestVerdict:test_grid_candidates_same_verdicts()
  local seed = "data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
  local dir = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/replay_verdict." .. tostring(os.time())
  assert(perf.fs.mkdir_p(dir))
  for _, name in ipairs { "op_mapping.yaml" } do
    local f = assert(io.open(seed .. "/" .. name, "rb")); local s = f:read("a"); f:close()
    f = assert(io.open(dir .. "/" .. name, "wb")); f:write(s); f:close()
  end
  for _, k in ipairs(SEEDED) do
    local f = assert(io.open(seed .. "/" .. k .. ".csv", "rb")); local s = f:read("a"); f:close()
    f = assert(io.open(dir .. "/" .. k .. ".csv", "wb")); f:write(s); f:close()
  end
  local asked, refused, per = 0, 0, {}
  reg.verdict = function(kernel, row, ctx)
    local c, cw, ck, v, vw, vk = both(kernel, row, ctx)
    asked = asked + 1
    per[kernel] = (per[kernel] or 0) + 1
    if not c then refused = refused + 1 end
    if v ~= c or vw ~= cw or vk ~= ck then
      lu.fail(("%s %s: check %s %s, verdict %s %s"):format(kernel, row["Input Shapes"], tostring(c), tostring(cw),
                                                            tostring(v), tostring(vw)))
    end
    return v, vw, vk
  end
  local ok, err = pcall(function()
    require("perfscript.grid.run").run { dir = dir, rows = 0, seed = 0, dry_run = true, replayable_only = true,
                                         sampling = "random", rules = require("perfscript.grid.cli").load_rules() }
  end)
  reg.verdict = verdict
  require("perfscript.path").rmtree(dir)
  if not ok then error(err, 0) end
  lu.assertTrue(asked > 1000, "candidates asked: " .. asked)
  print(("%d grid candidates asked, %d refused"):format(asked, refused))
  for _, k in ipairs(SEEDED) do
    lu.assertTrue((per[k] or 0) > 0, k .. " asked")
  end
end

-- the shared builder's rows without its OP State (these rows never had one)
local function row(...)
  local r = require("tests.lua.helpers").kernel_row(...)
  r["OP State"] = nil
  return r
end

function TestVerdict:test_edge_rows_same_verdicts()
  local cases = {
    -- matmuls: exact count, k mismatch, 3-D, NZ weight (logical shape), bad NZ, bad dtype, empty slot
    { "MatMulV2", row('"64,128;256,128"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,128;256,127"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,128;256,128;256"', "DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"2,64,128;256,128"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,128;8,16,16,16"', "DT_BF16;DT_BF16", "ND;FRACTAL_NZ", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,128;8,16,16"', "DT_BF16;DT_BF16", "ND;FRACTAL_NZ", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,128;256,128"', "DT_COMPLEX64;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,128;;256,128"', "DT_BF16;;DT_BF16", "ND;;ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row('"64,x"', "DT_BF16", "ND", '"64,256"', "DT_BF16") },
    { "MatMulV2", row("", "", "", "", "") },
    { "BatchMatMulV2", row('"4,64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"4,64,256"', "DT_BF16") },
    { "BatchMatMulV2", row('"4,64,128;4,256,128"', "DT_BF16;DT_BF16", "ND;ND", '"4,64,256"', "DT_BF16") },
    { "BatchMatMulV2", row('"4,64,128;4,256,129"', "DT_BF16;DT_BF16", "ND;ND", '"4,64,256"', "DT_BF16") },
    { "BatchMatMulV2", row('"4,64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"4,64"', "DT_BF16") },
    { "BatchMatMulV2", row('"4,64,128;4,128,256"', "DT_BF16;DT_COMPLEX64", "ND;ND", '"4,64,256"', "DT_BF16") },
    { "BatchMatMulV2", row('"4,64,128"', "DT_BF16", "ND", '"4,64,256"', "DT_BF16") },
    { "BatchMatMulV2", row('"64,128;256,128"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "BatchMatMulV2", row('"64,128;256,127"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "BatchMatMulV2", row("", "", "", "", "") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256"', "DT_INT8;DT_INT8;DT_FLOAT", "ND;ND;ND", '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;8,16,16,32;256;256"', "DT_INT8;DT_INT8;DT_FLOAT;DT_INT32",
                                "ND;FRACTAL_NZ;ND;ND", '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256;64"', "DT_INT8;DT_INT8;DT_FLOAT;DT_FLOAT", "ND;ND;ND;ND",
                                '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256;7"', "DT_INT8;DT_INT8;DT_FLOAT;DT_FLOAT", "ND;ND;ND;ND",
                                '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256;256"', "DT_INT8;DT_INT8;DT_FLOAT;DT_UINT64", "ND;ND;ND;ND",
                                '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256"', "DT_BF16;DT_INT8;DT_FLOAT", "ND;ND;ND", '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256"', "DT_INT8;DT_INT8;DT_FLOAT", "ND;ND;ND", '"64,256"', "DT_INT4") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256"', "DT_INT8;DT_INT8;DT_UINT64", "ND;ND;ND", '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128"', "DT_INT8;DT_INT8", "ND;ND", '"64,256"', "DT_BF16") },
    { "QuantBatchMatmulV3", row('"64,128;256,128;256"', "DT_INT8;DT_INT8;DT_FLOAT", "ND;ND;ND", '"64,256;1"',
                                "DT_BF16;DT_BF16") },
    { "GatherV2", row('"1000,64;32"', "DT_BF16;DT_INT32", "ND;ND", '"32,64"', "DT_BF16") },
    { "GatherV2", row('"1000,64;32"', "DT_BF16;DT_UINT32", "ND;ND", '"32,64"', "DT_BF16") },
    { "GatherV2", row('"1000,64"', "DT_BF16", "ND", '"32,64"', "DT_BF16") },
    { "GatherV2", row('";1000,64;32"', ";DT_BF16;DT_INT64", ";ND;ND", '"32,64"', "DT_BF16") },
    -- TransposeBatchMatMul: both layouts, input count, rank, formats, output count and rank,
    -- incompatible dims, K/N alignment (bf16 vs float32), bad dtype
    { "TransposeBatchMatMul", row('"4,64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,4,256"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"64,4,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,4,256"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,128"', "DT_BF16", "ND", '"64,4,256"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,4,256"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;FRACTAL_NZ", '"64,4,256"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,4,256;1"', "DT_BF16;DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,128;4,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,1024"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,128;4,96,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,4,256"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,96;4,96,200"', "DT_BF16;DT_BF16", "ND;ND", '"64,4,200"', "DT_BF16") },
    { "TransposeBatchMatMul", row('"4,64,96;4,96,200"', "DT_FLOAT;DT_FLOAT", "ND;ND", '"64,4,200"', "DT_FLOAT") },
    { "TransposeBatchMatMul", row('"4,64,128;4,128,256"', "DT_COMPLEX64;DT_BF16", "ND;ND", '"64,4,256"', "DT_BF16") },
    -- GroupedMatmul: plain, NZ weight (5-D logical, 3-D kept), K mismatch, scale, group list
    -- (and an empty group count: the builder's error), per-token scale, output dtypes
    { "GroupedMatmul", row('"64,128;8,128,256;;;;;;8"', "DT_BF16;DT_BF16;;;;;;DT_INT64", "ND;ND;;;;;;ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,16,8,16,16"', "DT_INT8;DT_INT8", "ND;FRACTAL_NZ", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,128,256"', "DT_INT8;DT_INT8", "ND;FRACTAL_NZ", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,127,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,128,256;;8,256"', "DT_INT8;DT_INT8;;DT_COMPLEX64", "ND;ND;;ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,128,256;;;;;;0"', "DT_BF16;DT_BF16;;;;;;DT_INT64", "ND;ND;;;;;;ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,128,256;;;;;;;64"', "DT_INT8;DT_INT8;;;;;;;DT_UINT64", "ND;ND;;;;;;;ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "DT_INT4") },
    { "GroupedMatmul", row('"64,128;8,128,256"', "DT_BF16;DT_BF16", "ND;ND", '"64,256"', "") },
    { "GroupedMatmul", row('"64,128"', "DT_BF16", "ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('";8,128,256"', ";DT_BF16", ";ND", '"64,256"', "DT_BF16") },
    { "GroupedMatmul", row('"64,128;8,128,256"', "DT_COMPLEX64;DT_BF16", "ND;ND", '"64,256"', "DT_BF16") },
    -- PadV3 (and its AiCore variant): plain, no output, bad dtype, default dtype
    { "PadV3", row('"4,8;4"', "DT_BF16;DT_INT64", "ND;ND", '"4,16"', "DT_BF16") },
    { "PadV3", row('"4,8;4"', "DT_BF16;DT_INT64", "ND;ND", "", "") },
    { "PadV3", row('"4,8;4"', "DT_COMPLEX64;DT_INT64", "ND;ND", '"4,16"', "DT_BF16") },
    { "PadV3AiCore", row('"4,8"', "", "", '"4,16"', "") },
  }
  -- DispatchFFNCombine: T=16, H=256, E=8, I=512, topk=2
  local d_ins = '"16,256;8,256,512;8,256,256;16,2;8,512;8,256;16,2"'
  local d_dt = "DT_BF16;DT_INT8;DT_INT8;DT_INT32;DT_FLOAT;DT_FLOAT;DT_FLOAT"
  local d_fm = "ND;ND;ND;ND;ND;ND;ND"
  local d_out = '"16,256;8"'
  local d_odt = "DT_BF16;DT_INT32"
  local function dfc(ins, dt, fm, outs, odt, ep)
    return { "DispatchFFNCombine", row(ins or d_ins, dt or d_dt, fm or d_fm, outs or d_out, odt or d_odt,
                                       { ["EP Size"] = ep or "", ["Output Formats"] = "ND;ND" }) }
  end
  local dcases = {
    dfc(), dfc(nil, nil, nil, nil, nil, "4"), dfc(nil, nil, nil, nil, nil, "0"), dfc(nil, nil, nil, nil, nil, "x"),
    dfc(nil, "DT_BF16;DT_BF16;DT_BF16;DT_INT32;DT_BF16;DT_BF16;DT_FLOAT"),
    dfc('"16,256;8,256,512;8,256,256;16,2;4096;2048;16,2"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512,1;8,256;16,2"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,511;8,256;16,2"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512;7,256;16,2"'),
    dfc('"16,256;0,256,512;0,256,256;16,2;0,512;0,256;16,2"', nil, nil, '"16,256;0"'),
    dfc('"16,256;0,256,512;0,256,256;16,2;0,512;0,256;16,2"', nil, nil, '"16,256;0"', nil, "4"),
    dfc('"16,256;8,256,512;8,256,255;16,2;8,512;8,256;16,2"'),
    dfc('"16,256;8,256,512;8,256,256;16,3;8,512;8,256;16,2"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512;8,256;16,2"', nil, nil, '"16,255;8"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512;8,256;16,2"', nil, nil, '"16,256;1,8"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512;8,256;16,2"', nil, nil, '"16,256;9"'),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512;8,256"'),
    dfc(nil, "DT_BF16;DT_COMPLEX64;DT_INT8;DT_INT32;DT_FLOAT;DT_FLOAT;DT_FLOAT"),
    dfc('"16,256;8,256,512;8,256,256;16,2;8,512;8,256;16,2"', nil, "ND;FRACTAL_NZ;FRACTAL_NZ;ND;ND;ND;ND"),
    dfc('"0,256;8,256,512;8,256,256;0,2;8,512;8,256;0,2"', nil, nil, '"0,256;8"'),
  }
  for _, c in ipairs(dcases) do cases[#cases + 1] = c end
  local refused = 0
  for n, c in ipairs(cases) do
    assert_same(c[1], c[2], { ep_size = 16 }, n .. " " .. c[1] .. " " .. c[2]["Input Shapes"])
    if not reg.check(c[1], c[2], { ep_size = 16 }) then refused = refused + 1 end
  end
  lu.assertTrue(refused > 10 and refused < #cases, "refused " .. refused .. " of " .. #cases)
  -- kernels with no check-only entry and no builder answer as check does
  assert_same("Add", row('"4,4;4,4"', "DT_FLOAT;DT_FLOAT", "ND;ND", '"4,4"', "DT_FLOAT"), {}, "Add")
  assert_same("LinearIndex", row("", "", "", "", ""), {}, "LinearIndex")
end

os.exit(lu.LuaUnit.run())
