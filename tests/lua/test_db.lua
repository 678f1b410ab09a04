-- The database explorer on small generated databases: every query, against the consumer's
-- behaviour (docs/database.md; docs/rules.md, Lookups).
local lu = require "luaunit"
local perf = require "perfscript"
local h = require "tests.lua.helpers"

local HEAD, mm = h.MM_HEAD, h.mm

local function make_db()
  local dir = h.tmpdir()
  h.write(dir .. "/MatMulV2.csv", HEAD ..
    mm(100, 512, 1024, "10", "10.5") ..       -- line 2
    mm(200, 512, 1024, "20", "30") ..         -- line 3: microbench/profiling gap 0.667
    mm(400, 512, 1024, "40", "") ..           -- line 4
    mm(136, 512, 1024, "14.156", "") ..       -- line 5: padded target 144
    mm(800, 512, 1024, "35", "") ..           -- line 6: faster than 400 (monotonicity)
    mm(100, 512, 1024, "14", "") ..           -- line 7: duplicate of line 2
    mm(64, 512, 1024, "", "") ..              -- line 8: not measured
    'dynamic,AI_CORE,"""128,512;64,32,16,16""",DT_BF16;DT_BF16,ND;FRACTAL_NZ,"""128,1024""",DT_BF16,ND,77,\n' ..
    mm(100, 512, 2048, "", "99"))             -- line 10: profiling only (fallback column)
  h.write(dir .. "/RmsNorm.csv",
    "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Profiling Average Duration(us)\n" ..
    '"100,64;64",DT_BF16;DT_BF16,ND;ND,"100,64;100,1",DT_BF16;FLOAT,ND;ND,10\n' ..
    '"200,64;64",DT_BF16;DT_BF16,ND;ND,"200,64;200,1",DT_BF16;FLOAT,ND;ND,20\n' ..
    '"",DT_BF16;DT_BF16,ND;ND,"",DT_BF16,ND,5\n' ..
    '"N/A",DT_BF16;DT_BF16,ND;ND,"1,2",DT_BF16,ND,0\n' ..
    '"300,64;;64",DT_BF16;DT_BF16;FOO,ND;ND;ND,"300,64",DT_BF16,ND,30\n')
  h.write(dir .. "/DispatchFFNCombine.csv",
    "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,EP Size,Average Duration(us)\n" ..
    '"120,7168;16,7168,4096",DT_BF16;INT8,ND;ND,"120,7168",DT_BF16,16,10\n' ..
    '"240,7168;16,7168,4096",DT_BF16;INT8,ND;ND,"240,7168",DT_BF16,,20\n')
  return dir
end

local dir = make_db()
local db = assert(perf.open(dir))

TestOpen = {}
function TestOpen:test_kernels_are_fields()
  lu.assertEquals(db:names(), { "DispatchFFNCombine", "MatMulV2", "RmsNorm" })
  lu.assertStrContains(tostring(db.MatMulV2), "MatMulV2")
  lu.assertEquals(db:kernel("MatMulV2"), db.MatMulV2)
end
function TestOpen:test_bad_directories()
  local d, err = perf.open(dir .. "/nope")
  lu.assertNil(d)
  lu.assertStrContains(err, "not a directory")
  local empty = h.tmpdir()
  perf.fs.mkdir_p(empty .. "/ATLAS/vllm_ascend")
  d, err = perf.open(empty)
  lu.assertNil(d)
  lu.assertStrContains(err, "no kernel CSV files (directories in it: ATLAS")
end
function TestOpen:test_unknown_kernel_names_near_misses()
  local ok, err = pcall(db.lookup, db, "matmul", "1,2;2,3")
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "did you mean MatMulV2")
end
function TestOpen:test_lfs_pointer()
  local d = h.tmpdir()
  h.write(d .. "/X.csv", "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 10\n")
  local x = assert(perf.open(d))
  local ok, err = pcall(x.rows, x, "X")
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "Git LFS pointer")
  local k = x:kernels()
  lu.assertStrContains(k[1]["latency column"], "unreadable")
end

TestKernels = {}
function TestKernels:test_counts()
  local k = db:kernels()
  lu.assertEquals(#k, 3)
  local mmr = k[2]
  lu.assertEquals(mmr.kernel, "MatMulV2")
  lu.assertEquals(mmr.rows, 9)
  lu.assertEquals(mmr.valid, 8)
  lu.assertEquals(mmr.theory, 1)
  lu.assertEquals(mmr["latency column"], "Average Duration(us)")
  lu.assertStrContains(tostring(k), "DispatchFFNCombine")
end

TestRows = {}
function TestRows:test_filters()
  lu.assertEquals(#db:rows("MatMulV2"), 9)
  local r = db:rows("MatMulV2", { M = 100 })
  lu.assertEquals(#r, 3)
  lu.assertEquals(r[1].line, 2)
  r = db:rows("MatMulV2", { ["Input Shapes"] = "200,512;1024,512" })
  lu.assertEquals(#r, 1)
  lu.assertEquals(r[1]["latency(us)"], 20.0)
  r = db:rows("MatMulV2", function(row) return row.inputs[1][1] >= 400 and row.latency end)
  lu.assertEquals(#r, 2)
  -- profiling fallback when the microbench cell is blank (docs/rules.md, Lookups)
  r = db:rows("MatMulV2", { N = 2048 })
  lu.assertEquals(r[1]["latency(us)"], 99.0)
  lu.assertEquals(r[1].column, "Profiling Average Duration(us)")
end

TestLookup = {}
function TestLookup:test_identity_and_first_row_wins()
  local r = db:lookup("MatMulV2", "100,512;1024,512", "DT_BF16;DT_BF16")
  lu.assertEquals(r.latency, 10.0)
  lu.assertEquals(r.line, 2)
  lu.assertEquals(r.rule, "identity")
  lu.assertEquals(r.source, "MEASURED")
  lu.assertStrContains(tostring(r), "lines 7")
end
function TestLookup:test_transpose_dtype_names_and_padding()
  local r = db:lookup("MatMulV2", { { 100, 512 }, { 512, 1024 } }, "bfloat16")
  lu.assertEquals(r.rule, "transpose")
  lu.assertEquals(r.latency, 10.0)
  r = db:lookup("MatMulV2", "144,512;1024,512", "DT_BF16;DT_BF16")
  lu.assertEquals(r.latency, 14.156)
  lu.assertEquals(r.rule, "padding")
  r = db:lookup("MatMulV2", "1,200,512;1024,512", "DT_BF16;DT_BF16")
  lu.assertEquals(r.rule, "batch_strip")
  lu.assertEquals(r.latency, 20.0)
end
function TestLookup:test_fractal_nz_restore_and_float_group()
  -- [64,32,16,16] FRACTAL_NZ is (64*16, 32*16) = (1024, 512): the query's (512,1024) transposed
  local r = db:lookup("MatMulV2", "128,512;512,1024", "FLOAT;DT_BF16", { explain = true })
  -- line 2 (100,512) pads to 128 and its weight transposes: the consumer reports the last
  -- upgrade, "transpose", at distance 0, so the earlier row wins over the NZ row
  -- (docs/rules.md, Lookups)
  lu.assertEquals(r.latency, 10.0)
  lu.assertEquals(r.line, 2)
  lu.assertEquals(r.rule, "transpose")
  local nz
  for _, x in ipairs(r) do if x.line == 9 then nz = x end end
  lu.assertEquals(nz.result, "match")
  lu.assertStrContains(nz["rule or first failure"], "transpose (identity,transpose)")
end
function TestLookup:test_miss_and_explain()
  local r = db:lookup("MatMulV2", "100,512;1024,512", "INT8;INT8", { explain = true })
  lu.assertEquals(r.miss, "shape_mismatch")
  lu.assertNil(r.latency)
  lu.assertEquals(#r, 9)
  lu.assertStrContains(r[1]["rule or first failure"], "input 1: dtype INT8, row has DT_BF16")
  lu.assertStrContains(r[7]["rule or first failure"], "no valid latency")
  r = db:lookup("MatMulV2", "144,512;1024,512", "DT_BF16", { explain = true })
  lu.assertEquals(r[4].result, "CHOSEN")
  lu.assertStrContains(r[1]["rule or first failure"], "input 1: shape (144,512) vs row (100,512): no rule")
  lu.assertStrContains(tostring(r), "1 match")
end
function TestLookup:test_tc_input_count()
  local r = db:lookup("MatMulV2", "100,512;1024,512;1024", "DT_BF16", { n = 2 })
  lu.assertEquals(r.latency, 10.0)
  r = db:lookup("MatMulV2", "100,512;1024,512;1024", "DT_BF16")
  lu.assertEquals(r.miss, "shape_mismatch")
end

TestAnalysis = {}
function TestAnalysis:test_interp_one_axis()
  -- I1: M=100 -> 10 (median with the duplicate 14: 12), 200 -> 20, 400 -> 40
  local r = db:interp("MatMulV2", "300,512;1024,512", "DT_BF16")
  lu.assertAlmostEquals(r.latency, 30.0, 1e-9)
  lu.assertEquals(r.source, "INTERPOLATED")
  lu.assertEquals(r.bracket[1].v, 200)
  lu.assertEquals(r.bracket[2].v, 400)
  r = db:interp("MatMulV2", "200,512;1024,512", "DT_BF16")
  lu.assertEquals(r.latency, 20.0)
  lu.assertEquals(r[1].status, "exact_axis_value")
  r = db:interp("MatMulV2", "1000,512;1024,512", "DT_BF16")
  lu.assertNil(r.latency)
  lu.assertStrContains(r[1].status, "outside_axis_boundary [100, 800]")
  r = db:interp("MatMulV2", "50,512;1024,512", "DT_BF16")
  lu.assertNil(r.latency)  -- no extrapolation below the lowest point
  r = db:interp("RmsNorm", "150,64;64", "DT_BF16")
  lu.assertAlmostEquals(r.latency, 15.0, 1e-9)
  lu.assertEquals(r.axis, "tokens")
end
function TestAnalysis:test_nearest()
  local r = db:nearest("MatMulV2", "150,512;1024,512", 2)
  lu.assertEquals(#r, 2)
  lu.assertEquals(r[1].line, 5)
  lu.assertEquals(r[2].line, 9)  -- the FRACTAL_NZ row, restored to M=128
  lu.assertTrue(r[1].distance < r[2].distance)
end
function TestAnalysis:test_coverage()
  local r = db:coverage("MatMulV2", "M", { K = 512, N = 1024 })
  lu.assertEquals(r.values, { 100, 128, 136, 200, 400, 800 })
  lu.assertStrContains(r[6].gap, "gap 400 > 256")
  lu.assertEquals(r.grid, "M_GRID")
  local s = db:coverage("MatMulV2", "M")
  lu.assertEquals(#s, 2)  -- N=1024 and N=2048
  lu.assertEquals(s[1].points, 6)
  local all = db:coverage("MatMulV2", "N")
  lu.assertTrue(#all >= 2)  -- one bucket per M
end
function TestAnalysis:test_outliers()
  local r = db:outliers("MatMulV2")
  local kinds = {}
  for _, x in ipairs(r) do kinds[x.kind .. ":" .. tostring(x.line)] = x.ratio end
  lu.assertAlmostEquals(kinds["monotonicity:6"], 35 / 40, 1e-9)
  lu.assertAlmostEquals(kinds["microbench/profiling:3"], 20 / 30, 1e-9)
  lu.assertNil(kinds["microbench/profiling:2"])
end

TestQuality = {}
function TestQuality:test_dups()
  local r = db:dups("MatMulV2")
  lu.assertEquals(#r, 1)
  lu.assertEquals(r[1].lines, "2,7")
  lu.assertEquals(r[1]["first(us)"], 10.0)
  lu.assertEquals(r[1]["median(us)"], 12.0)
  lu.assertAlmostEquals(r[1]["spread(%)"], 40.0, 1e-9)
end
function TestQuality:test_dups_by_the_writers_signature()
  local d = h.tmpdir()
  -- the same matmul with the weight stored (n,k) and (k,n): one row for the write-back's
  -- signature (MatMul-family canonical form), two different rows for the consumer
  h.write(d .. "/MatMulV2.csv", HEAD .. mm(24, 512, 4096, "10", "") ..
    'dynamic,AI_CORE,"24,512;512,4096",DT_BF16;DT_BF16,ND;ND,"24,4096",DT_BF16,ND,12,\n')
  local x = assert(perf.open(d))
  lu.assertEquals(#x:dups("MatMulV2"), 0)
  local w = x:dups("MatMulV2", { writer = true })
  lu.assertEquals(#w, 1)
  lu.assertEquals(w[1].lines, "2,3")
  lu.assertStrContains(w.title, "write-back's signature")
  local diff = x:diff(dir, "MatMulV2", { writer = true })
  lu.assertStrContains(diff.title, "0 common signatures")
end

function TestQuality:test_lint()
  local r = db:lint()
  local found = {}
  for _, x in ipairs(r) do found[#found + 1] = x.severity .. " " .. x.kernel .. ":" .. tostring(x.line) .. " " .. x.problem end
  local text = table.concat(found, "\n")
  lu.assertStrContains(text, "error RmsNorm:4 empty Input Shapes")
  lu.assertStrContains(text, "error RmsNorm:5 malformed Input Shapes")
  lu.assertStrContains(text, "warning RmsNorm:5 0 (leave it blank")
  lu.assertStrContains(text, "error RmsNorm:6 unreachable: unknown dtype: unknown dtype spelling FOO in input slot 3")
  lu.assertStrContains(text, "error RmsNorm:6 unreachable: misaligned slots: empty shape slot before slot 3 (64)")
  lu.assertStrContains(text, "error DispatchFFNCombine:3 blank EP Size")
  -- line 7 repeats line 2's signature: the consumer answers it with line 2
  lu.assertStrContains(text, "error MatMulV2:7 unreachable: shadowed by line 2")
  lu.assertEquals(r.errors, 6)
  local one = db:lint("MatMulV2")
  lu.assertEquals(one.errors, 1)  -- line 7, shadowed by line 2
end
function TestQuality:test_diff()
  local d2 = h.tmpdir()
  h.write(d2 .. "/MatMulV2.csv", HEAD .. mm(100, 512, 1024, "20", "") .. mm(200, 512, 1024, "20", "") ..
                                 mm(999, 512, 1024, "5", ""))
  local r = db:diff(d2)
  lu.assertEquals(r[2].kernel, "MatMulV2")
  lu.assertEquals(r[2].common, 2)
  lu.assertEquals(r[2]["only B"], 1)
  lu.assertEquals(r[2].slower, 1)
  lu.assertEquals(r[1]["rows A"], "file only in A")
  local k = db:diff(d2, "MatMulV2")
  lu.assertEquals(k[1]["B/A"], 2.0)
  lu.assertEquals(k[1].change, "slower")
end

TestAxes = {}
function TestAxes:test_comm_bytes_and_attention_seq()
  local d = h.tmpdir()
  h.write(d .. "/hcom_allReduce_.csv", "message_bytes,num_devices,topology_tier,dtype,Duration(us)\n" ..
    "1024,16,1,DT_BF16,120.0\n4096,16,1,DT_BF16,120.0\n1048576,16,1,DT_BF16,130\n16777216,16,1,DT_BF16,288\n" ..
    "1024,8,1,DT_BF16,50\n")
  h.write(d .. "/FusedInferAttentionScore.csv",
    "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Runtime avg_seq_len,Average Duration(us)\n" ..
    '"1,512;1000,1,512",DT_BF16;DT_BF16,ND;ND,"1,512",DT_BF16,1000,100\n' ..
    '"1,512;1000,1,512",DT_BF16;DT_BF16,ND;ND,"1,512",DT_BF16,4000,1600\n' ..
    '"1,512;1000,1,512",DT_BF16;DT_BF16,ND;ND,"1,512",DT_BF16,3518.5,900\n')
  local x = assert(perf.open(d))
  local c = x:coverage("hcom_allReduce_", "bytes", { devices = 16 })
  lu.assertEquals(c.values, { 1024, 4096, 1048576, 16777216 })
  lu.assertEquals(c.grid, "COMM_BYTES")
  lu.assertStrContains(c[3].gap, "ratio 256 > 2")
  -- E25-like: exact, then the alpha-beta fit clamped to the bracket, no extrapolation
  local e = x:lookup("hcom_allReduce_", { bytes = 4096, devices = 16 })
  lu.assertEquals(e.latency, 120.0)
  lu.assertEquals(e.source, "MEASURED")
  e = x:lookup("hcom_allReduce_", { bytes = 2048, devices = 16 })
  lu.assertEquals(e.source, "INTERPOLATED")
  lu.assertEquals(e.latency, 120.0)  -- the fit is clamped to [120, 120]
  e = x:lookup("hcom_allReduce_", { bytes = 8388608, devices = 16 })
  lu.assertTrue(e.latency >= 130 and e.latency <= 288)
  lu.assertAlmostEquals(e.bracket_linear, 130 + 158 * (8388608 - 1048576) / (16777216 - 1048576), 1e-9)
  lu.assertEquals(x:lookup("hcom_allReduce_", { bytes = 1e9, devices = 16 }).miss, "shape_mismatch")
  -- comm has no shapes: the lint asks only for its own columns
  lu.assertEquals(x:lint("hcom_allReduce_").errors, 0)
  local r = x:interp("FusedInferAttentionScore", { shapes = "1,512;1000,1,512", dtypes = "DT_BF16", seq = 2000 })
  lu.assertEquals(r.axis, "seq")
  -- I19: seq 1000 -> 100, 4000 -> 1600, target 2000 -> 600 (linear); the fractional 3518.5 row
  -- is not an interpolation point, as in the consumer
  lu.assertAlmostEquals(r.latency, 600.0, 1e-9)
  -- I20: under the production policy axis_transform: sqrt_seq (op_mapping.yaml)
  h.write(d .. "/op_mapping.yaml", "interpolation_policy:\n  kernel_overrides:\n    FusedInferAttentionScore: {axis_transform: sqrt_seq}\noperator_mappings: {}\n")
  x = assert(perf.open(d))
  r = x:interp("FusedInferAttentionScore", { shapes = "1,512;1000,1,512", dtypes = "DT_BF16", seq = 2000 })
  lu.assertAlmostEquals(r.latency, 100 + 1500 * (math.sqrt(2000) - math.sqrt(1000)) / (math.sqrt(4000) - math.sqrt(1000)), 1e-9)
  lu.assertStrContains(r[1].status, "linear_1d_sqrt")
  r = x:interp("FusedInferAttentionScore", { shapes = "1,512;1000,1,512", dtypes = "DT_BF16", seq = 2000 }, { transform = "linear" })
  lu.assertAlmostEquals(r.latency, 600.0, 1e-9)
  local l = x:lint("FusedInferAttentionScore")
  lu.assertStrContains(l[1].problem, "fractional avg_seq_len 3518.5")
end

function TestAxes:test_comm_alpha_beta_E25()
  local d = h.tmpdir()
  local rows = { "message_bytes,num_devices,Duration(us)" }
  for _, p in ipairs { { 1024, 120.0 }, { 4096, 120.0 }, { 16384, 120.0 }, { 65536, 120.5 }, { 1048576, 130 },
                       { 16777216, 288 }, { 67108864, 791 }, { 268435456, 2804 } } do
    rows[#rows + 1] = string.format("%d,16,%s", p[1], p[2])
  end
  h.write(d .. "/hcom_allReduce_.csv", table.concat(rows, "\n") .. "\n")
  h.write(d .. "/op_mapping.yaml", "operator_mappings:\n  tensor_cast.all_reduce.default:\n    kernel_type: hcom_allReduce_\n    category: communication\n")
  local x = assert(perf.open(d))
  lu.assertEquals(x:lookup("tensor_cast.all_reduce.default", { bytes = 4096, devices = 16 }).latency, 120.0)
  local r = x:lookup("hcom_allReduce_", { bytes = 163840, devices = 16 })
  lu.assertAlmostEquals(r.latency, 121.54, 0.01)
  lu.assertAlmostEquals(r.bracket_linear, 121.45, 0.01)
  lu.assertAlmostEquals(r.alpha, 119.90, 0.01)
  lu.assertStrContains(tostring(r), "GB/s")
end

function TestAxes:test_attention_exact()
  local d = h.tmpdir()
  h.write(d .. "/FusedInferAttentionScore.csv",
    "Input Shapes,Input Data Types,Runtime avg_seq_len,Runtime sparse_mode,Runtime num_key_value_heads,Runtime input_layout,Average Duration(us)\n" ..
    '"""128,4,128;12307,128,128;;2048,2048""",DT_BF16;DT_BF16;;INT8,1000,3,1,TND,50\n' ..
    '"""144,4,128;12307,128,128""",DT_BF16;DT_BF16,1010,3,1,TND,55\n' ..
    '"""128,4,128;12307,128,128""",DT_BF16;DT_BF16,1012,0,1,TND,99\n' ..
    '"""128,8,128;12307,128,128""",DT_BF16;DT_BF16,1008,3,1,TND,77\n')
  h.write(d .. "/op_mapping.yaml", "operator_mappings:\n  tensor_cast.attention.default: {kernel_type: FusedInferAttentionScore, query_mode: attention_special}\n")
  local x = assert(perf.open(d))
  -- q T=136, seq 1009: line 3 (T 144 = 136 padded to 16, distance 1) wins; line 2 has T 128
  -- (not a padding of 136), line 4 sparse_mode 0 and line 5 N = 8
  local r = x:lookup("FusedInferAttentionScore", { q = "136,4,128", seq = 1009, dtype = "bfloat16", kv_heads = 1 })
  lu.assertEquals(r.latency, 55.0)
  lu.assertEquals(r.line, 3)
  lu.assertEquals(r.confidence, 0.9)
  r = x:lookup("tensor_cast.attention.default", { q = "128,512", head_dim = 128, seq = 1003 }, { explain = true })
  lu.assertEquals(r.line, 2)
  lu.assertStrContains(tostring(r), "Runtime sparse_mode 0")
  lu.assertEquals(x:lookup("FusedInferAttentionScore", { q = "128,4,128", seq = 1200 }).miss, "shape_mismatch")
end

function TestAxes:test_moe_ep_size()
  local r = db:lookup("DispatchFFNCombine", "120,7168;16,7168,4096", "DT_BF16;INT8", { ep = 16 })
  lu.assertEquals(r.latency, 10.0)
  r = db:lookup("DispatchFFNCombine", "240,7168;16,7168,4096", "DT_BF16;INT8", { ep = 16, explain = true })
  lu.assertEquals(r.miss, "shape_mismatch")  -- its EP Size is blank: never matches
  lu.assertStrContains(r[2]["rule or first failure"], "EP Size blank")
  r = db:lookup("DispatchFFNCombine", "120,7168;16,7168,4096", "DT_BF16;INT8")
  lu.assertEquals(r.miss, "ep_size_not_configured")
end

function TestRows:test_filter_errors_are_reported()
  local r = db:rows("MatMulV2", function(row) return row.inputs[3][1] > 0 end)
  lu.assertEquals(#r, 0)
  lu.assertStrContains(tostring(r), "the filter raised an error on 9 rows")
end

TestMapping = {}
function TestMapping:test_mapping_and_lookup_by_op()
  local d = h.tmpdir()
  h.write(d .. "/MatMulV3.csv", HEAD .. mm(100, 512, 1024, "7", "") .. mm(144, 512, 1024, "9", ""))
  h.write(d .. "/MatMulV2.csv", HEAD .. mm(136, 512, 1024, "14", "") .. mm(200, 512, 1024, "20", ""))
  h.write(d .. "/op_mapping.yaml", [[
version: 0.18.0
interpolation_policy:
  kernel_overrides:
    MatMulV2: {max_interpolation_dim: 1}
operator_mappings:
  aten.mm.default:
    kernel_type: MatMulV2
    alternate_kernel_types: [MatMulV3, MatMulCommon]
    notes: "[HIGH] decode GEMM"
  aten.view.default:
    zero_cost: true
  aten.add.Tensor:
    kernel_type: Add
    query_mode: elementwise
  static_quant_linear.default:
    kernel_type: MatMulV2
    tc_input_count: 2
]])
  local x = assert(perf.open(d))
  local m = x:mapping("aten.mm.default")
  lu.assertEquals(#m, 3)
  lu.assertEquals(m[3].csv, "missing")
  lu.assertStrContains(tostring(m), "interpolation_policy.MatMulV2")
  lu.assertEquals(#x:mapping(), 4)
  -- 144 pads to the MatMulV2 row 136 (distance 1) but is exact in the alternate MatMulV3:
  -- semantic matches beat padding across alternates; an exact row of the first kernel wins
  local r = x:lookup("aten.mm.default", "144,512;1024,512", "bfloat16")
  lu.assertEquals(r.kernel, "MatMulV3")
  lu.assertEquals(r.latency, 9.0)
  r = x:lookup("aten.mm.default", "136,512;1024,512", "bfloat16")
  lu.assertEquals(r.kernel, "MatMulV2")
  lu.assertEquals(r.latency, 14.0)
  r = x:lookup("aten.mm", "100,512;1024,512", "bfloat16")
  lu.assertEquals(r.kernel, "MatMulV3")
  lu.assertEquals(r.latency, 7.0)
  r = x:lookup("aten.view.default", "1,2")
  lu.assertEquals(r.latency, 0.0)
  lu.assertEquals(r.rule, "zero_cost")
  r = x:lookup("static_quant_linear.default", "200,512;1024,512;1024", "DT_BF16")
  lu.assertEquals(r.latency, 20.0)  -- tc_input_count 2 drops the bias slot
  local ok, err = pcall(x.lookup, x, "tensor_cast.attention.default", "1,2")
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "no kernel type 'tensor_cast.attention.default'")
end

function TestMapping:test_latency_policies()
  local d = h.tmpdir()
  local head = "Accelerator Core,Input Shapes,Input Data Types,Average Duration(us),Profiling Average Duration(us)," ..
               "Profiling Average aicore_time(us),Profiling Average aiv_time(us)\n"
  h.write(d .. "/LightningIndexer.csv", head .. '"AI_CORE","8,64",DT_BF16,10,,,\n"AI_CORE","8,64",DT_BF16,,12,,\n')
  h.write(d .. "/QuantBatchMatmulV3.csv", head .. '"MIX_AIC","8,64;64,64",INT8;INT8,,50,20,30\n')
  h.write(d .. "/op_mapping.yaml", [[
latency_policy:
  kernel_overrides:
    LightningIndexer: {prefer_profiling_rows: true}
    QuantBatchMatmulV3:
      profiling_core_envelope_fallback: {max_duration_to_core_ratio: 1.5}
query_selection_policy:
  kernel_overrides:
    KvRmsNormRopeCache: {require_semantic_unique: true}
operator_mappings: {}
]])
  h.write(d .. "/KvRmsNormRopeCache.csv", head .. '"AI_CORE","1,128,1,512",DT_BF16,5,,,\n"AI_CORE","1,128,1,512",DT_BF16,6,,,\n')
  h.write(d .. "/RmsNorm.csv", head .. '"AI_CORE","1,128,1,512",DT_BF16,5,,,\n"AI_CORE","1,128,1,512",DT_BF16,6,,,\n')
  local x = assert(perf.open(d))
  local r = x:lookup("LightningIndexer", "8,64", "DT_BF16")
  lu.assertEquals(r.latency, 12.0)  -- the profiling row ranks first
  lu.assertEquals(r.line, 3)
  r = x:lookup("QuantBatchMatmulV3", "8,64;64,64", "INT8")
  lu.assertEquals(r.latency, 30.0)  -- 50 / max(20, 30) > 1.5
  lu.assertEquals(r.latency_selection, "profiling_core_envelope_fallback")
  -- equally good rows that disagree: a miss for semantic-unique kernels, the first row otherwise
  r = x:lookup("KvRmsNormRopeCache", "1,128,1,512", "DT_BF16")
  lu.assertEquals(r.miss, "ambiguous_semantic_match:KvRmsNormRopeCache")
  lu.assertStrContains(x:dups("KvRmsNormRopeCache")[1].consumer, "ambiguous_semantic_match")
  lu.assertEquals(x:lookup("RmsNorm", "1,128,1,512", "DT_BF16").latency, 5.0)
end

function TestMapping:test_elementwise_by_output_shape()
  local d = h.tmpdir()
  h.write(d .. "/Add.csv", "Input Shapes,Input Data Types,Output Shapes,Output Data Types,Average Duration(us)\n" ..
    '"128,7168;128,7168",FLOAT;FLOAT,"128,7168",FLOAT,30\n' ..
    '"128,7168;128,7168",DT_BF16;DT_BF16,"128,7168",DT_BF16,16\n' ..
    '"136,1536;136,1536",DT_BF16;DT_BF16,"136,1536",DT_BF16,4\n' ..
    '"256,64;256,64",DT_BF16;DT_BF16,"256,64",DT_BF16,2\n')
  h.write(d .. "/op_mapping.yaml", "operator_mappings:\n  aten.add.Tensor: {kernel_type: Add, query_mode: elementwise}\n" ..
    "  aten.attention.default: {kernel_type: FIA, query_mode: attention_special}\n")
  local x = assert(perf.open(d))
  -- the FLOAT row comes first: a BF16 query gets its latency halved (docs/rules.md, Lookups)
  local r = x:lookup("aten.add.Tensor", nil, nil, { out = "1,128,7168", out_dtype = "bfloat16" })
  lu.assertEquals(r.latency, 15.0)
  lu.assertEquals(r.confidence, 0.9)
  lu.assertEquals(r.line, 2)
  r = x:lookup("aten.add.Tensor", nil, nil, { out = "144,1536", out_dtype = "bfloat16" })
  lu.assertEquals(r.latency, 4.0)
  lu.assertEquals(r.rule, "elementwise")
  lu.assertStrContains(r.title, "padded")
  r = x:lookup("aten.add.Tensor", nil, nil, { out = "4,64,64", out_dtype = "bfloat16" })
  lu.assertEquals(r.rule, "elementwise")
  lu.assertStrContains(r.title, "flattened")
  r = x:lookup("aten.add.Tensor", nil, nil, { out = "7,7", out_dtype = "bfloat16" })
  lu.assertEquals(r.miss, "elementwise_output_shape_mismatch")
  local ok, err = pcall(x.lookup, x, "aten.attention.default", "1,2")
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "query mode 'attention_special' is not reproduced")
end

function TestMapping:test_communication_data_ref_shadows()
  local root = h.tmpdir()
  local d = root .. "/DEV/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
  perf.fs.mkdir_p(d)
  perf.fs.mkdir_p(root .. "/DEV/hccl/v8.5")
  local head = "message_bytes,num_devices,Duration(us)\n"
  h.write(d .. "/hcom_allReduce_.csv", head .. "1310720,2,999.99\n")
  h.write(root .. "/DEV/hccl/v8.5/hcom_allReduce_.csv", head .. "1310720,2,100.00\n")
  h.write(root .. "/DEV/hccl/v8.5/hcom_alltoall_.csv", head .. "1024,2,10\n")
  h.write(d .. "/op_mapping.yaml", "communication_data_ref: ../../hccl/v8.5\noperator_mappings: {}\n")
  local x = assert(perf.open(d))
  lu.assertEquals(x:names(), { "hcom_allReduce_", "hcom_alltoall_" })
  local r = x:rows("hcom_allReduce_")
  lu.assertEquals(r[1]["latency(us)"], 100.0)  -- the hccl directory wins (docs/database.md, Layout)
  lu.assertStrContains(tostring(x:lint()), "hcom_allReduce_.csv here is shadowed")
end

TestSave = {}
function TestSave:test_save_result_columns_in_order()
  local repl = require "perfscript.repl"
  local out = h.tmpdir() .. "/k.csv"
  repl.save(db:kernels(), out)
  local text = h.read(out)
  lu.assertStrContains(text, "kernel,rows,valid,theory,latency column,KB\n")
  lu.assertStrContains(text, "MatMulV2,9,8,1,Average Duration(us),")
end

os.exit(lu.LuaUnit.run())
