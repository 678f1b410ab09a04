-- The grid pipeline end to end (docs/rules.md, Shape grids) on a small synthetic database:
-- routing, cells and signatures, the rows cap, sampling determinism.
local lu = require "luaunit"
local perf = require "perfscript"
local lfs = require "lfs"
local run = require "perfscript.grid.run"
local route = require "perfscript.grid.route"
local cells = require "perfscript.grid.cells"

local RULES = { patterns = require "perfscript.grids.patterns", assignments = require "perfscript.grids.assignments",
                grids = require "perfscript.grids.registry", scenes = require "perfscript.grids.fia_scenes" }
local TMP = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/grid_pipeline"
local DSV3 = "deepseek-ai/DeepSeek-V3"

local function write(path, text)
  local f = assert(io.open(path, "wb")); f:write(text); f:close()
end
local function read(path)
  local f = assert(io.open(path, "rb")); local t = f:read("a"); f:close(); return t
end
local rm_rf = require("perfscript.path").rmtree

local FIA_ROWS = { 128, 336, 496, 160, 200, 240, 272, 304, 400, 440 }

-- The synthetic database (the Python original's end-to-end example).
local function make_db(name, opts)
  opts = opts or {}
  local dir = TMP .. "/" .. name
  rm_rf(dir)
  assert(perf.fs.mkdir_p(dir))
  local files = {
    MatMulV2 = 'OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Median Duration(us),Note\r\n'
      .. 'dynamic,AI_CORE,"""32,7168;2048,7168""",DT_BF16;DT_BF16,ND;ND,"""32,2048""",DT_BF16,ND,12.5,12.0,keep\r\n',
    AddRmsNormBias = 'OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)\n'
      .. 'dynamic,AI_VECTOR_CORE,"""1,512;1,512;512;""",DT_BF16;DT_BF16;DT_BF16;DT_UNDEFINED,ND;ND;ND;NULL,"""1,512;1,1;1,512""",DT_BF16;FLOAT;DT_BF16,ND;ND;ND,1.0\n',
    PadV3 = 'OP State,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)\n'
      .. 'static,"""7,7168;4;""",DT_BF16;INT64;DT_BF16,ND;ND;ND,"""8,7168""",DT_BF16,ND,3.0\n',
    UnknownKernel = 'Input Shapes,Average Duration(us)\n"""128,5120""",10.0\n',
    DispatchFFNCombine = 'OP State,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,'
      .. (opts.no_ep and "" or "EP Size,") .. 'Average Duration(us)\n'
      .. 'dynamic,"""16,7168;8,7168,4096;8,2048,7168;16,8;32768;57344;16,8""",DT_BF16;INT8;INT8;INT32;INT64;INT64;FLOAT,ND;ND;ND;ND;ND;ND;ND,"""16,7168;8""",DT_BF16;INT32,ND;ND,'
      .. (opts.no_ep and "" or "32,") .. '100\n',
    GroupedMatmul = 'Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)\n'
      .. '"""1,7168;32,64,448,16,32;;32,2048;;;;32;1""",INT8;INT8;;FLOAT;;;;INT64;FLOAT,ND;FRACTAL_NZ;;ND;;;;ND;ND,"""1,2048""",DT_BF16,ND,5\n',
  }
  local dt = "DT_BF16;DT_BF16;DT_BF16;DT_UNDEFINED;INT8;INT64;INT64" .. string.rep(";DT_UNDEFINED", 7) .. ";INT32"
             .. string.rep(";DT_UNDEFINED", 16)
  local fm = "ND;ND;ND;NULL;ND;ND;ND" .. string.rep(";NULL", 7) .. ";ND" .. string.rep(";NULL", 16)
  local fia = { "OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),avg_seq_len" }
  for _, b in ipairs(FIA_ROWS) do
    fia[#fia + 1] = ('dynamic,MIX_AIC,"""%d,4,128;12307,128,128;12307,128,128;;2048,2048;%d;%d;;;;;;;;%d,512;%s""",%s,%s,"""%d,4,128;""",DT_BF16;FLOAT,ND;ND,58.2,4096')
      :format(b, b, b, b, string.rep(";", 15), dt, fm, b)
  end
  files.FusedInferAttentionScore = table.concat(fia, "\n") .. "\n"
  for k, text in pairs(files) do
    if not (opts.without and opts.without[k]) then write(dir .. "/" .. k .. ".csv", text) end
  end
  return dir
end

local function go(dir, o)
  local res = run.run { dir = dir, models = o.models, rows = o.rows or 0, seed = o.seed or 0,
                        max_hbm_bytes = o.budget, dry_run = o.dry_run, sampling = o.sampling,
                        rules = RULES }
  local by = {}
  for _, r in ipairs(res) do by[r.kernel] = r end
  return by
end

local function counts(by)
  local t, total = {}, 0
  for _, k in ipairs { "MatMulV2", "AddRmsNormBias", "PadV3", "DispatchFFNCombine", "GroupedMatmul",
                       "FusedInferAttentionScore" } do
    t[#t + 1] = by[k].appended
    total = total + by[k].appended
  end
  return t, total
end

local GiB32 = 32 * 1024 ^ 3 // 1

function test_e1_dsv3_full()
  local dir = make_db("e1")
  local by = go(dir, { models = { DSV3 }, budget = GiB32 })
  local t, total = counts(by)
  -- MatMulV2: 1591 candidates, the template's (2048, 7168) among them (the shared expert's gate_up
  -- at TP 2); GroupedMatmul: 1190, the template's gate_up (E 32, N 2048, K 7168) among them
  lu.assertEquals(t, { 1590, 480, 924, 274, 1189, 91 })
  lu.assertEquals(total, 4548)
  lu.assertStrContains(by.UnknownKernel.status, "no generator")
  -- existing bytes untouched (CRLF file keeps CRLF), template first, new rows appended
  local text = read(dir .. "/MatMulV2.csv")
  local lines = {}
  for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  lu.assertEquals(#lines, 2 + 1590)
  lu.assertStrContains(lines[2], "12.5,12.0,keep\r")
  lu.assertEquals(lines[3], 'dynamic,AI_CORE,"""1,128;7168,128""",DT_BF16;DT_BF16,ND;ND,"""1,7168""",DT_BF16,ND,,,\r')
  -- rows sorted by input shapes
  local prev
  for i = 3, #lines do
    local sk = cells.sort_key(cells.parse(lines[i]:match('"""(.-)"""')))
    if prev then lu.assertTrue(prev <= sk, lines[i]) end
    prev = sk
  end
  -- FIA: runtime columns added to the header, old rows padded, new rows complete
  local r = assert(perf.csv.open(dir .. "/FusedInferAttentionScore.csv"))
  local h = r:header()
  lu.assertEquals(h[#h], "Runtime operator_input_shapes_raw")
  lu.assertEquals(#h, 10 + 15)
  local n, first = 0, nil
  local avg_col = r:column("avg_seq_len")
  for f in r:lines() do
    n = n + 1
    lu.assertEquals(#f, #h)
    if n == 1 then first = table.move(f, 1, #f, 1, {}) end
    if n == 11 then
      lu.assertEquals(f[r:column("avg_seq_len")], "")         -- not inherited from the template
      lu.assertEquals(f[r:column("Average Duration(us)")], "") -- to be measured
      lu.assertEquals(f[r:column("Runtime metadata_completeness")], "shape_grid_scene_generated")
    end
  end
  r:close()
  lu.assertEquals(n, 10 + 91)
  -- 11 decode rows tie with another row of the same key and a block-padded-compatible T
  lu.assertEquals(by.FusedInferAttentionScore.shadowed, 11)
  lu.assertEquals(first[avg_col], "4096")
  -- rerun: nothing appended, nothing rewritten
  local before = {}
  for _, k in ipairs { "MatMulV2", "FusedInferAttentionScore", "PadV3" } do
    before[k] = read(dir .. "/" .. k .. ".csv")
  end
  local by2 = go(dir, { models = { DSV3 }, budget = GiB32 })
  local _, total2 = counts(by2)
  lu.assertEquals(total2, 0)
  for k, text2 in pairs(before) do lu.assertEquals(read(dir .. "/" .. k .. ".csv"), text2) end
end

function test_e2_all_models()
  local dir = make_db("e2")
  local t, total = counts(go(dir, { budget = GiB32 }))
  lu.assertEquals(t, { 50652, 480, 924, 549, 2379, 759 })  -- GroupedMatmul: GLM-5.2 = GLM-5.1
  lu.assertEquals(total, 55743)
end

function test_e3_small_budget()
  local dir = make_db("e3")
  local by = go(dir, { models = { DSV3 }, budget = 1073741, dry_run = true })
  local t, total = counts(by)
  lu.assertEquals(t, { 8, 138, 444, 0, 0, 0 })  -- the smallest expert weight (4 x 256 x 7168) > 1 MB
  lu.assertEquals(total, 590)
  lu.assertEquals(by.MatMulV2.memory, 1583)
  lu.assertEquals(by.PadV3.memory, 480)
  lu.assertEquals(by.DispatchFFNCombine.memory, 275)
  lu.assertEquals(by.GroupedMatmul.memory, 1190)
  lu.assertEquals(by.AddRmsNormBias.memory, 342)
  lu.assertEquals(by.FusedInferAttentionScore.memory, 102)
  -- dry run wrote nothing
  lu.assertEquals(read(dir .. "/PadV3.csv"):sub(-4), "3.0\n")
end

function test_e4_sampling_per_file_and_idempotent()
  local d1, d2 = make_db("e4a"), make_db("e4b", { without = { AddRmsNormBias = true } })
  local by = go(d1, { models = { DSV3 }, rows = 10, seed = 1 })
  for _, k in ipairs { "MatMulV2", "PadV3", "GroupedMatmul", "FusedInferAttentionScore" } do
    lu.assertTrue(by[k].appended <= 10 and by[k].appended >= 9, k)
    lu.assertEquals(by[k].appended + by[k].present, 10, k)
  end
  go(d2, { models = { DSV3 }, rows = 10, seed = 1 })
  -- a file's sample does not depend on which other files exist
  lu.assertEquals(read(d1 .. "/MatMulV2.csv"), read(d2 .. "/MatMulV2.csv"))
  lu.assertEquals(read(d1 .. "/PadV3.csv"), read(d2 .. "/PadV3.csv"))
  -- the same seed again: nothing new; a bigger cap tops up with the same first rows kept
  local again = go(d1, { models = { DSV3 }, rows = 10, seed = 1 })
  for _, r in pairs(again) do lu.assertEquals(r.appended or 0, 0, r.kernel) end
  local other = go(d1, { models = { DSV3 }, rows = 10, seed = 2 })
  lu.assertTrue(other.MatMulV2.appended > 0)
end

function test_e5_missing_extra_column_is_added()
  local dir = make_db("e5", { no_ep = true })
  local by = go(dir, { models = { DSV3 }, budget = GiB32 })
  lu.assertEquals(by.DispatchFFNCombine.appended, 275)
  local r = assert(perf.csv.open(dir .. "/DispatchFFNCombine.csv"))
  local ep = r:column("EP Size")
  lu.assertNotNil(ep)
  local f = r:read()
  lu.assertEquals(f[ep], "")     -- the old row: empty in the new column
  f = r:read()
  lu.assertEquals(f[ep], "256")
  r:close()
  for name in lfs.dir(dir) do lu.assertNil(name:find(".tmp", 1, true), name) end
end

function test_e6_empty_dir()
  local dir = TMP .. "/e6"
  rm_rf(dir)
  assert(perf.fs.mkdir_p(dir))
  local ok, e = pcall(run.run, { dir = dir, rules = RULES, rows = 0, seed = 0 })
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(e), "No CSV files found under")
  ok, e = pcall(run.run, { dir = dir .. "/nope", rules = RULES, rows = 0, seed = 0 })
  lu.assertStrContains(tostring(e), "Data directory does not exist")
end

function test_clearing_and_alignment()
  -- C1 / C2 through the pipeline: AddRmsNormBias template "1,512;1,512;512;" + DT_UNDEFINED
  local dir = make_db("c1")
  go(dir, { models = { DSV3 }, budget = GiB32 })
  lu.assertStrContains(read(dir .. "/AddRmsNormBias.csv"), '"""128,512;128,512;512;"""')
  lu.assertNil(read(dir .. "/AddRmsNormBias.csv"):find('"""128,512;128,512;512;512"""', 1, true))
end

function test_c2_override_and_column_policy()
  local dir = TMP .. "/c2"
  rm_rf(dir)
  assert(perf.fs.mkdir_p(dir))
  write(dir .. "/AddRmsNormBias.csv",
    "OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,"
    .. "Output Formats,Average Duration(us),Count,Note,Timestamp,Runtime attn_state,avg_seq_len\n"
    .. 'dynamic,AI_VECTOR_CORE,"""1,512;1,512;512;""",DT_BF16;DT_BF16;DT_BF16;DT_UNDEFINED,ND;ND;ND;NULL,'
    .. '"""1,512;1,1;1,512""",DT_BF16;FLOAT;DT_BF16,ND;ND;ND,1.0,7,keep,123,DecodeOnly,4096\n')
  local rules = {}
  for k, v in pairs(RULES) do rules[k] = v end
  rules.patterns = { add_rmsnorm_bias = {
    iterators = { { "tokens", { 128 } } }, constants = { D = 512 },
    inputs = { "(tokens, D)", "(tokens, D)", "(D,)", "(D,)" },
    outputs = { "(tokens, D)", "(tokens, 1)", "(tokens, D)" },
    input_dtypes = { "DT_BF16", "DT_BF16", "DT_BF16", "DT_BF16" }, input_formats = { "ND", "ND", "ND", "ND" } } }
  run.run { dir = dir, rows = 0, seed = 0, rules = rules }
  local r = assert(perf.csv.open(dir .. "/AddRmsNormBias.csv"))
  r:read()
  local f = r:read()
  local function col(name) return f[r:column(name)] end
  lu.assertEquals(col("Input Shapes"), '"128,512;128,512;512;512"')        -- C2: the override wins
  lu.assertEquals(col("Input Data Types"), "DT_BF16;DT_BF16;DT_BF16;DT_BF16")
  lu.assertEquals(col("OP State"), "dynamic")                                -- identity: inherited
  lu.assertEquals(col("Output Data Types"), "DT_BF16;FLOAT;DT_BF16")
  for _, name in ipairs { "Average Duration(us)", "Count", "Note", "Timestamp", "Runtime attn_state",
                          "avg_seq_len" } do
    lu.assertEquals(col(name), "", name)                                     -- to be measured / unknown
  end
  r:close()
end

-- Files the run must not trip on: BOM, no newline at the end, LFS pointers, empty files,
-- header-only files, leftover temp files; op_mapping.yaml per directory.
function test_odd_files()
  local dir = TMP .. "/odd"
  rm_rf(dir)
  assert(perf.fs.mkdir_p(dir .. "/sub"))
  local H = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)"
  write(dir .. "/SwiGlu.csv", "\239\187\191" .. H .. '\r\n"""16,4096""",DT_BF16,ND,"""16,2048""",DT_BF16,ND,2.5')
  write(dir .. "/Neg.csv", "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n")
  write(dir .. "/Cast.csv", "")
  write(dir .. "/Log.csv", H .. "\n")
  write(dir .. "/Fill.tmp.csv", H .. '\n"""1,1""",DT_BF16,ND,"""1,1""",DT_BF16,ND,1\n')
  write(dir .. "/sub/Add.csv", H .. '\n"""16,4096;16,4096""",DT_BF16;DT_BF16,ND;ND,"""16,4096""",DT_BF16,ND,2.5\n')
  write(dir .. "/sub/op_mapping.yaml", "operator_mappings:\n  a: {kernel_type: Add, zero_cost: true}\n")
  local by = {}
  for _, r in ipairs(run.run { dir = dir, rows = 5, seed = 0, rules = RULES }) do by[r.file] = r end
  lu.assertEquals(by["SwiGlu.csv"].appended, 5)
  local text = read(dir .. "/SwiGlu.csv")
  lu.assertEquals(text:sub(1, 3), "\239\187\191")                -- BOM kept
  lu.assertStrContains(text, '2.5\r\n"""')                         -- line ended, then CRLF rows
  lu.assertEquals(select(2, text:gsub("\r\n", "")), 7)
  lu.assertStrContains(by["Neg.csv"].status, "LFS pointer")
  lu.assertStrContains(by["Cast.csv"].status, "empty file")
  lu.assertStrContains(by["Log.csv"].status, "no template row")
  lu.assertNil(by["Fill.tmp.csv"])
  lu.assertStrContains(by["sub/Add.csv"].status, "zero-cost")     -- routed with sub/op_mapping.yaml
end

-- --variants: one template per kernel variant (docs/rules.md, Shape grids: row building); the
-- first variant samples as before.
function test_variants()
  local H = "OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
            .. "Output Data Types,Output Formats,Average Duration(us)\n"
  local rows = 'dynamic,AI_CORE,"""32,7168;2048,7168""",DT_BF16;DT_BF16,ND;ND,"""32,2048""",DT_BF16,ND,12.5\n'
            .. 'dynamic,AI_CORE,"""48,7168;2048,7168""",DT_BF16;DT_BF16,ND;ND,"""48,2048""",DT_BF16,ND,13.5\n'
            .. 'static,AI_CORE,"""32,7168;2048,7168""",INT8;INT8,ND;FRACTAL_NZ,"""32,2048""",DT_BF16,ND,9.5\n'
  local d1, d2 = TMP .. "/var1", TMP .. "/var2"
  for _, d in ipairs { d1, d2 } do
    rm_rf(d); assert(perf.fs.mkdir_p(d)); write(d .. "/MatMulV2.csv", H .. rows)
  end
  local one = run.run { dir = d1, models = { DSV3 }, rows = 7, seed = 3, rules = RULES }[1]
  local two = run.run { dir = d2, models = { DSV3 }, rows = 7, seed = 3, rules = RULES, variants = true }[1]
  lu.assertEquals(one.appended, 7)
  lu.assertEquals(two.appended, 14)
  lu.assertEquals(two.variants, 2)
  lu.assertEquals(two.candidates, 2 * 1591)
  local t1, t2 = read(d1 .. "/MatMulV2.csv"), read(d2 .. "/MatMulV2.csv")
  lu.assertEquals(t2:sub(1, #t1), t1)                       -- first variant: the same rows
  local _, int8 = t2:sub(#t1 + 1):gsub("static,AI_CORE,[^\n]*INT8;INT8,ND;FRACTAL_NZ", "")
  lu.assertEquals(int8, 7)
  local again = run.run { dir = d2, models = { DSV3 }, rows = 7, seed = 3, rules = RULES, variants = true }[1]
  lu.assertEquals(again.appended, 0)
end

function test_spread_sampling()
  lu.assertEquals(run.spread(10, 4), { 1, 4, 7, 10 })
  lu.assertEquals(run.spread(5, 5), { 1, 2, 3, 4, 5 })
  lu.assertEquals(run.spread(9, 1), { 1 })
  local dir = make_db("spread")
  local by = go(dir, { models = { DSV3 }, rows = 5, sampling = "spread" })
  lu.assertEquals(by.PadV3.appended + by.PadV3.present, 5)
  local text = read(dir .. "/PadV3.csv")
  lu.assertStrContains(text, '"""1,128;4;"""')        -- the smallest shape
  lu.assertStrContains(text, '"""8193,55296;4;"""')   -- and the largest
  lu.assertEquals(go(dir, { models = { DSV3 }, rows = 5, sampling = "spread" }).PadV3.appended, 0)
end

function test_sample_helper()
  local s = run.sample(19, 5, 42, "X")
  lu.assertEquals(#s, 5)
  for i = 2, 5 do lu.assertTrue(s[i] > s[i - 1]) end
  lu.assertEquals(run.sample(19, 5, 42, "X"), s)
  lu.assertNotEquals(run.sample(19, 5, 42, "Y"), s)
  lu.assertEquals(run.sample(3, 3, 0, "X"), { 1, 2, 3 })
end

---------------------------------------------------------------------------------------------
-- Routing (9.5)

local A = { MatMulV2 = "X", FusedInferAttentionScore = "FIA", hcom_allReduce_ = "skip", MatMulCommon = "skip",
            Comp = "X", Zero = "X", Bad = "nope" }
local P = { X = {}, FIA = {}, elementwise_binary = {} }

function test_routing()
  lu.assertEquals(route.pattern_for("MatMulV2", A, P, {}), "X")
  lu.assertEquals(route.pattern_for("BatchMatMulV2", A, P,
                  { BatchMatMulV2 = { alternates_of = "FusedInferAttentionScore" } }), "FIA")
  lu.assertEquals(route.pattern_for("Add", A, P, { Add = { query_mode = "elementwise" } }), "elementwise_binary")
  lu.assertNil(route.pattern_for("UnknownOp", A, P, {}))
  lu.assertNil(route.pattern_for("hcom_allReduce_", A, P, { hcom_allReduce_ = { communication = true } }))
  lu.assertNil(route.pattern_for("Comp", A, P, { Comp = { composite = true } }))
  lu.assertNil(route.pattern_for("Zero", A, P, { Zero = { zero_cost = true } }))
  lu.assertNil(route.pattern_for("Bad", A, P, {}))
  lu.assertNil(route.pattern_for("MatMulCommon", RULES.assignments, RULES.patterns, {}))
end

function test_op_mapping_meta()
  local yaml = [[
operator_mappings:
  aten.mm.default: {kernel_type: MatMulV2}
  aten.view.default: {kernel_type: TransData, zero_cost: true}
  tensor_cast.mla.default:
    kernel_type: FusedInferAttentionScore
    composite: true
    alternate_kernel_types: [BatchMatMulV2, TransposeBatchMatMul]
  tensor_cast.all_reduce.default: {kernel_type: hcom_allReduce_, category: communication, query_mode: hcom}
  weird: "a string"
  nokernel: {zero_cost: true}
  later.mm: {kernel_type: MatMulV2, zero_cost: true}
]]
  local path = TMP .. "/op_mapping.yaml"
  assert(perf.fs.mkdir_p(TMP))
  write(path, yaml)
  local m = route.load_meta(path)
  lu.assertFalse(m.MatMulV2.zero_cost)      -- the first occurrence wins
  lu.assertFalse(m.MatMulV2.composite)
  lu.assertTrue(m.TransData.zero_cost)
  lu.assertTrue(m.FusedInferAttentionScore.composite)
  lu.assertEquals(m.BatchMatMulV2.alternates_of, "FusedInferAttentionScore")
  lu.assertNotNil(m.TransposeBatchMatMul)
  lu.assertTrue(m.hcom_allReduce_.communication)
  lu.assertEquals(m.hcom_allReduce_.query_mode, "hcom")
  local n = 0
  for _ in pairs(m) do n = n + 1 end
  lu.assertEquals(n, 6)
  write(path, "{}\n")
  lu.assertEquals(route.load_meta(path), {})
  lu.assertEquals(route.load_meta(TMP .. "/missing.yaml"), {})
end

-- The shipped 0.18 mapping routes as the Python original routed it (docs/rules.md, Shape
-- grids: routing; skipped without the real data).
function test_real_op_mapping_parity()
  local real = os.getenv("PERFSCRIPT_REAL_DATA")
               or ((os.getenv("PERFSCRIPT_SOURCE_DIR") or ".") .. "/../shared/data/real")
  local path = real .. "/msmodeling/tensor_cast/performance_model/profiling_database/data/"
               .. "ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5/op_mapping.yaml"
  if not lfs.attributes(path) then
    print("SKIP test_real_op_mapping_parity: " .. path .. " not found")
    return
  end
  local m = assert(route.load_meta(path))
  local function pat(k) return (route.pattern_for(k, RULES.assignments, RULES.patterns, m)) end
  lu.assertEquals(pat("TensorMoveAiCore"), "elementwise_unary")
  lu.assertEquals(pat("TensorMove"), "tensor_move")
  lu.assertNil(pat("Pack")); lu.assertNil(pat("RealDiv")); lu.assertNil(pat("MemSet"))
  lu.assertNil(pat("reduce_scatterAicpuKernel"))
  lu.assertNil(pat("MatMulCommon"))
  lu.assertEquals(pat("ConcatD"), "concat")
  lu.assertEquals(pat("AddAiCore"), "elementwise_binary")
  lu.assertEquals(pat("split_qkv_rmsnorm_rope_kernel"), "split_qkv_rmsnorm_rope")
  lu.assertEquals(pat("FusedInferAttentionScore"), "fused_attention")
  lu.assertEquals(pat("QuantBatchMatmulV3"), "quant_matmul")
  for _, k in ipairs { "ClipByValueV2", "GatherElementsV2", "LayerNormV3", "SparseFlashAttention",
                       "_triton_rope_siso", "MoeTokenPermute" } do
    lu.assertNil(pat(k), k)
  end
end

---------------------------------------------------------------------------------------------
-- Cells and signatures (9.1, 9.9)

function test_shape_text_and_order()
  lu.assertEquals(cells.text { { 136, 7168 }, { 7168, 3584 } }, "136,7168;7168,3584")
  lu.assertEquals(cells.text { { 1 }, {}, { 2 }, {} }, "1;;2;")
  lu.assertEquals(cells.text {}, "")
  lu.assertEquals(cells.text { {}, {} }, ";")
  lu.assertEquals(cells.parse('"1,512;1,512;512;"'), { { 1, 512 }, { 1, 512 }, { 512 }, {} })
  lu.assertEquals(cells.parse("not a shape"), {})
  local s = { { { 300, 5120 } }, { { 100, 5120 } }, { { 200, 5120 } }, { {}, { 1 } }, { { 100 } } }
  table.sort(s, function(a, b) return cells.sort_key(a) < cells.sort_key(b) end)
  lu.assertEquals(s, { { {}, { 1 } }, { { 100 } }, { { 100, 5120 } }, { { 200, 5120 } }, { { 300, 5120 } } })
  lu.assertTrue(cells.sort_key { { 2 } } < cells.sort_key { { 10 } })
end

-- The sort key (C) is the byte string of its definition: per dim "\1" + the dim with its sign
-- bit flipped, 8 bytes big-endian; "\0" per slot; the tie-break n in 4 bytes big-endian.
function test_sort_key_bytes()
  local pack, MIN = string.pack, math.mininteger
  local function ref(shapes, n)
    local parts = {}
    for _, s in ipairs(shapes) do
      for _, d in ipairs(s) do parts[#parts + 1] = pack(">BI8", 1, d ~ MIN) end
      parts[#parts + 1] = "\0"
    end
    return table.concat(parts) .. (n and pack(">I4", n) or "")
  end
  local x = 7
  for t = 1, 2000 do
    local shapes = {}
    for i = 1, t % 5 do
      local s = {}
      for j = 1, (t + i) % 4 do
        x = (x * 6364136223846793005 + 1442695040888963407)
        s[j] = ({ 1, x >> 20, -(x >> 40), math.maxinteger, MIN, 0 })[(x >> 7) % 6 + 1]
      end
      shapes[i] = s
    end
    lu.assertEquals(cells.sort_key(shapes), ref(shapes))
    lu.assertEquals(cells.sort_key(shapes, t * 99991), ref(shapes, t * 99991))
  end
  local shape = require "perfscript.shape"
  lu.assertTrue(shape.positive({ { 1, 2 }, {} }, { { 3 } }))
  lu.assertFalse(shape.positive({ { 1, 0 } }, {}))
  lu.assertFalse(shape.positive({ { 1 } }, { { 2.0 } }))
  lu.assertFalse(shape.positive({ { -4 } }))
end

local function key(k, ins, idt, ifm, outs, odt, ep)
  return cells.key(k, { ["Input Shapes"] = ins, ["Input Data Types"] = idt, ["Input Formats"] = ifm,
                        ["Output Shapes"] = outs, ["Output Data Types"] = odt, ["EP Size"] = ep })
end

-- The grid's dedup keys (docs/rules.md, Shape grids: dedup) through perfscript.sig.
function test_dedup_keys()
  lu.assertEquals(key("MatMulV2", '"32,6144;2048,6144"', "DT_BF16;DT_BF16", "ND;ND", '"32,2048"', "DT_BF16"),
                  key("MatMulV2", '"32,6144;6144,2048"', "DT_BF16;DT_BF16", "ND;ND", '"32,2048"', "DT_BF16"))
  lu.assertNotEquals(key("MatMulV2", "32,6144;2048,6144", "A;A", "ND;ND", "32,2048", "A"),
                     key("MatMulV2", "48,6144;2048,6144", "A;A", "ND;ND", "48,2048", "A"))
  lu.assertEquals(key("Transpose", "1024,12288;2;2", "DT_BF16;INT64;INT64", "ND;ND;ND", "12288,1024", "DT_BF16"),
                  key("Transpose", "1024,12288;1;3", "DT_BF16;INT64;INT64", "NCHW;ND;ND", "12288,1024", "DT_BF16"))
  lu.assertNotEquals(key("Transpose", "1024,12288;2;2", "DT_BF16;INT64;INT64", "ND;ND;ND", "12288,1024", "DT_BF16"),
                     key("Transpose", "512,12288;1;3", "DT_BF16;INT64;INT64", "ND;ND;ND", "12288,512", "DT_BF16"))
  lu.assertEquals(key("MatMulCommon", "2,3;4,3", "A;A", "ND;ND", "2,4", "A"),
                  key("MatMulCommon", "2,3;3,4", "A;A", "ND;ND", "2,4", "A"))
  lu.assertNotEquals(key("DispatchFFNCombine", "1", "A", "ND", "1", "A", " 32 "),
                     key("DispatchFFNCombine", "1", "A", "ND", "1", "A", "16"))
  lu.assertEquals(key("DispatchFFNCombine", "1", "A", "ND", "1", "A", " 32 "),
                  key("DispatchFFNCombine", "1", "A", "ND", "1", "A", "32"))
  -- the profiler's trailing empty slot and the absent slot's dtype do not matter
  lu.assertEquals(key("AddRmsNormBias", '"1,512;1,512;512;"', "DT_BF16;DT_BF16;DT_BF16;DT_UNDEFINED", "ND;ND;ND;NULL",
                      '"1,512;1,1;1,512"', "DT_BF16;FLOAT;DT_BF16"),
                  key("AddRmsNormBias", "1,512;1,512;512", "DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND",
                      "1,512;1,1;1,512", "DT_BF16;FLOAT;DT_BF16"))
  -- the record keyer (existing rows) and the row key (generated rows) agree
  local header = { "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types" }
  local k = cells.record_keyer(header, "PadV3")
  lu.assertEquals(k { '"7,7168;4;"', "DT_BF16;INT64;DT_BF16", "ND;ND;ND", '"8,7168"', "DT_BF16" },
                  key("PadV3", "7,7168;4;", "DT_BF16;INT64;DT_BF16", "ND;ND;ND", "8,7168", "DT_BF16"))
end

-- A bad rule anywhere in a run (a negative grid value, a 64-bit overflow) is an error naming
-- the rule, the kernel and the value, and no file of the database is written: every file is
-- staged, and the commit comes only after the last one (docs/rules.md, All-or-nothing writes).
function test_bad_dimensions_fail_the_run_before_any_write()
  local H = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)"
  local row = '"""16,8;16,8""",DT_BF16;DT_BF16,ND;ND,"""16,8""",DT_BF16,ND,2.5'
  local good = { iterators = { { "M", { 8, 32 } } }, inputs = { "(M, 8)", "(M, 8)" }, outputs = { "(M, 8)" } }
  local cases = {
    { { iterators = { { "M", { 8, -16 } } }, inputs = { "(M, 8)", "(M, 8)" }, outputs = { "(M, 8)" } },
      "pattern 'bad' (kernel Neg): generated dimension -16 of input 1 (-16,8) is not a positive integer" },
    { { iterators = { { "M", { 8, 0 } } }, inputs = { "(M, 8)", "(8, 8)" }, outputs = { "(M, 8)" } },
      "pattern 'bad' (kernel Neg): generated dimension 0 of input 1 (0,8) is not a positive integer" },
    { { iterators = { { "M", { 1, 4 } } }, inputs = { "(M*2**62, 8)", "(M, 8)" }, outputs = { "(M, 8)" } },
      "pattern 'bad': expression 'M*2**62': integer overflow: 4 * 4611686018427387904 does not fit in 64 bits" },
    { { iterators = { { "M", { 1, 2 } } }, inputs = { "(M - 2, 8)", "(M, 8)" }, outputs = { "(M, 8)" } },
      "pattern 'bad' (kernel Neg): generated dimension -1 of input 1" },
  }
  for n, case in ipairs(cases) do
    local dir = TMP .. "/baddims" .. n
    rm_rf(dir)
    assert(perf.fs.mkdir_p(dir))
    local before = {}
    for _, k in ipairs { "Add", "Cast", "Neg" } do
      before[k] = H .. "\n" .. row .. "\n"
      write(dir .. "/" .. k .. ".csv", before[k])
    end
    local rules = { patterns = { good = good, bad = case[1] }, grids = RULES.grids, scenes = RULES.scenes,
                    assignments = { Add = "good", Cast = "good", Neg = "bad" } }
    local ok, e = pcall(run.run, { dir = dir, rows = 0, seed = 0, rules = rules })
    lu.assertFalse(ok)
    lu.assertTrue(perf.is_user_error(e), tostring(e))
    lu.assertStrContains(tostring(e), case[2])
    for k, text in pairs(before) do lu.assertEquals(read(dir .. "/" .. k .. ".csv"), text, k) end
    for name in lfs.dir(dir) do lu.assertNil(name:find(".tmp", 1, true), name) end
  end
  -- the good rule alone appends to both its files
  local dir = TMP .. "/baddims1"
  local rules = { patterns = { good = good }, grids = RULES.grids, scenes = RULES.scenes,
                  assignments = { Add = "good", Cast = "good", Neg = "skip" } }
  local by = {}
  for _, r in ipairs(run.run { dir = dir, rows = 0, seed = 0, rules = rules }) do by[r.kernel] = r end
  lu.assertEquals(by.Add.appended + by.Cast.appended, 4)
end

os.exit(lu.LuaUnit.run())
