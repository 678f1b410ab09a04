-- generate_op_comparison worked examples (docs/rules.md, Analysis: op comparison).
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local tctrace = require "perfscript.analysis.tctrace"
local opcmp = require "perfscript.analysis.opcmp"
local opmap = require "perfscript.analysis.opmap"
local prof = require "perfscript.analysis.prof"
local pyfmt = require "perfscript.analysis.pyfmt"

local function tc(events, opts)
  local tr = assert(tctrace.load(fx.trace(events)))
  local pid = assert(tctrace.select_pid(tr))
  return (opcmp.tc_stats(tr, pid, opts))
end

local function near(a, b) lu.assertAlmostEquals(a, b, 1e-9) end

TestTcStats = {}

function TestTcStats:test_mla_composite_uses_sub_kernel_durations()
  local s = tc { fx.ev("tensor_cast.mla.default", 77, {
    kernel_type = "BatchMatMulV2,FusedInferAttentionScore,TransposeBatchMatMul",
    sub_kernel_durations = "[('BatchMatMulV2', 9.0), ('FusedInferAttentionScore', 55.0), ('TransposeBatchMatMul', 13.0)]",
    source = "MEASURED" }) }
  near(s.BatchMatMulV2.total_us, 9)
  near(s.FusedInferAttentionScore.total_us, 55)
  near(s.TransposeBatchMatMul.total_us, 13)
  lu.assertEquals(s.FusedInferAttentionScore.status, "HIT")
  lu.assertEquals(s.FusedInferAttentionScore.func_names, { "tensor_cast.mla.default" })
end

function TestTcStats:test_mc2_and_standalone_allreduce()
  local mc2 = fx.ev("tensor_cast.matmul_all_reduce.default", 31, { kernel_type = "QuantBatchMatmulV3",
    sub_kernel_durations = "[('QuantBatchMatmulV3', 22.77), ('hcom_allReduce_', 8.29)]" })
  local s = tc { mc2 }
  near(s.QuantBatchMatmulV3.total_us, 22.77)
  near(s.hcom_allReduce_.total_us, 8.29)
  local standalone = fx.ev("tensor_cast.all_reduce.default", 8, { kernel_type = "hcom_allReduce_" })
  s = tc { standalone }
  near(s.hcom_allReduce_.total_us, 8.0)
  s = tc { mc2, standalone }
  near(s.hcom_allReduce_.total_us, 16.29)
  lu.assertEquals(s.hcom_allReduce_.count, 2)
end

function TestTcStats:test_legacy_mc2_rule_counts_without_time()
  local s = tc { fx.ev("tensor_cast.matmul_all_reduce.default", 30, { kernel_type = "MatMulV2" }) }
  near(s.MatMulV2.total_us, 30)
  lu.assertEquals(s.hcom_allReduce_.count, 1)
  near(s.hcom_allReduce_.total_us, 0)
end

function TestTcStats:test_miss_keeps_op_name()
  local s = tc { fx.ev("aten.add.Tensor", 5, {}) }
  lu.assertTrue(s["aten.add.Tensor"].miss_count >= 1)
  lu.assertEquals(s["aten.add.Tensor"].status, "MISS")
end

function TestTcStats:test_quantize_kernel_type()
  local s = tc { fx.ev("tensor_cast.quantize.default", 4, { kernel_type = "DynamicQuant" }) }
  near(s.DynamicQuant.total_us, 4.0)
  lu.assertNil(s.AscendQuantV2)
end

function TestTcStats:test_bad_sub_kernel_durations_split_equally()
  local s = tc { fx.ev("op.a", 90, { kernel_type = "A,B,C", sub_kernel_durations = "[10, 20, 60]" }) }
  near(s.A.total_us, 30); near(s.B.total_us, 30); near(s.C.total_us, 30)
  s = tc { fx.ev("op.b", 60, { kernel_type = "X,Y", sub_kernel_durations = "garbage" }) }
  near(s.X.total_us, 30); near(s.Y.total_us, 30)
  s = tc { fx.ev("op.c", 60, { kernel_type = "X,Y", sub_kernel_durations = "[]" }) }
  near(s.X.total_us, 30)
  -- a pair whose duration is not a number is rejected, not crashed on
  s = tc { fx.ev("op.d", 60, { kernel_type = "X,Y", sub_kernel_durations = "[('X', 'a'), ('Y', 1)]" }) }
  near(s.X.total_us, 30)
end

function TestTcStats:test_partial_status_and_question_mark()
  local s = tc { fx.ev("aten.mm.default", 10, { kernel_type = "MatMulV2" }),
                 fx.ev("aten.mm.default", 5, { kernel_type = "?" }) }
  lu.assertEquals(s["aten.mm.default"].status, "MISS")
  local m = opmap.from_doc { operator_mappings = { ["aten.mm.default"] = { kernel_type = "MatMulV2" } } }
  s = tc({ fx.ev("aten.mm.default", 10, { kernel_type = "MatMulV2" }),
           fx.ev("aten.mm.default", 5, { kernel_type = "?" }) }, { mapping = m })
  lu.assertEquals(s.MatMulV2.status, "PARTIAL")
  near(s.MatMulV2.total_us, 15)
end

function TestTcStats:test_empty_kernel_list_is_a_miss_not_lost()
  local s = tc { fx.ev("op.e", 7, { kernel_type = "," }) }
  near(s["op.e"].total_us, 7)
end

function TestTcStats:test_zero_cost_from_mapping_and_trace()
  local m = opmap.from_doc { operator_mappings = { ["aten.view.default"] = { zero_cost = true } } }
  local s = tc({ fx.ev("torch.ops.aten.view.default", 0, {}),
                 fx.ev("aten.t.default", 0, { zero_cost = "True", source = "MEASURED", kernel_type = "" }),
                 fx.ev("aten.x.default", 0, { shape_match_rule = "zero_cost" }),
                 fx.ev("aten.y.default", 0, { kernel_type = "accepted_miss" }) }, { mapping = m })
  lu.assertEquals(next(s), nil)
end

function TestTcStats:test_source_filter_makes_unadmitted_events_misses()
  local f = tctrace.source_filter("MEASURED")
  local s = tc({ fx.ev("a", 10, { kernel_type = "K", source = "MEASURED" }),
                 fx.ev("a", 10, { kernel_type = "K", source = "EXTRAPOLATED" }) }, { source_filter = f })
  lu.assertEquals(s.K.status, "PARTIAL")
end

function TestTcStats:test_pid_selection()
  -- process_name "profiling" on pid 1 + X on pid 1 -> count 1; pid 2 ignored
  local evs = { fx.meta(2, "analytic (PID: 2)"), fx.meta(1, "profiling"),
                fx.ev("aten.mm.default", 5, { kernel_type = "MatMulV2" }, 1),
                fx.ev("aten.mm.default", 7, { kernel_type = "MatMulV2" }, 2) }
  local tr = assert(tctrace.load(fx.trace(evs, false)))
  local pid = tctrace.select_pid(tr)
  lu.assertEquals(pid, 1)
  local s = opcmp.tc_stats(tr, pid)
  lu.assertEquals(s.MatMulV2.count, 1)
  lu.assertEquals(tctrace.select_pid(tr, { model = "analytic" }), 2)
  lu.assertEquals(tctrace.select_pid(tr, { pid = 2 }), 2)
  local ok, err = tctrace.select_pid(tr, { pid = 9 })
  lu.assertFalse(ok); lu.assertStrContains(err, "no events with pid 9")
  -- no names, one pid: used with a note; two pids: an error naming both
  tr = assert(tctrace.load(fx.trace({ fx.ev("a", 1, {}, 4) }, false)))
  local p, note = tctrace.select_pid(tr)
  lu.assertEquals(p, 4); lu.assertStrContains(note, "using sole PID 4")
  tr = assert(tctrace.load(fx.trace({ fx.ev("a", 1, {}, 4), fx.ev("a", 1, {}, 5) }, false)))
  ok, err = tctrace.select_pid(tr)
  lu.assertFalse(ok); lu.assertStrContains(err, "4, 5")
  -- an empty trace has no pid but is no error
  tr = assert(tctrace.load(fx.write("e.json", "{}")))
  lu.assertNil((tctrace.select_pid(tr)))
end

TestOpMapping = {}

function TestOpMapping:test_flat_mapping()
  local m = opmap.from_doc { ["aten.mm"] = { kernel_type = "MatMulV2" }, ["aten.view"] = { zero_cost = true },
                             ["aten.add"] = {} }
  lu.assertEquals(m:kernel_type("aten.mm"), "MatMulV2")
  lu.assertNil(m:kernel_type("aten.unknown"))
  lu.assertTrue(m:zero_cost("aten.view"))
  lu.assertFalse(m:zero_cost("aten.add"))
  lu.assertFalse(m:zero_cost("aten.unknown"))
end

function TestOpMapping:test_wrapped_mapping_is_found()
  local m = assert(opmap.load_text([[
version: "0.18.0"
operator_mappings:
  "aten.mm.default":
    kernel_type: MatMulV2
  "aten.view.default":
    zero_cost: true
]], "x.yaml"))
  lu.assertEquals(m:kernel_type("aten.mm.default"), "MatMulV2")
  lu.assertEquals(m:kernel_type("torch.ops.aten.mm.default"), "MatMulV2")
  lu.assertTrue(m:zero_cost("aten.view.default"))
  lu.assertNil(m:kernel_type("version"))
end

function TestOpMapping:test_missing_and_malformed_files()
  local m, note = opmap.load_dir(fx.path("nodir"))
  lu.assertEquals(m:count(), 0); lu.assertStrContains(note, "no op_mapping.yaml")
  local dir = fx.path("mapdir")
  require("perfscript").fs.mkdir_p(dir)
  local f = io.open(dir .. "/op_mapping.yaml", "w"); f:write("a: [1, 2\nb: c\n"); f:close()
  local bad, err = opmap.load_dir(dir)
  lu.assertNil(bad); lu.assertStrContains(err, dir .. "/op_mapping.yaml")
end

function TestOpMapping:test_real_mapping_file()
  local dir = fx.real_data("msmodeling/tensor_cast/performance_model/profiling_database/data/" ..
                           "ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5")
  if not dir then lu.skip("real op_mapping.yaml not found (set PERFSCRIPT_REAL_DATA)") end
  local m = assert(opmap.load_dir(dir))
  lu.assertEquals(m:count(), 147)
  lu.assertEquals(m:kernel_type("aten.mm.default"), "MatMulV2")
  lu.assertTrue(m:zero_cost("aten.view.default"))
end

TestProfByType = {}

function TestProfByType:test_sums_and_counts()
  local p = fx.prof { { "MatMulV2", "50.0", "1000" }, { "MatMulV2", "30.0", "2000" },
                      { "RmsNorm", "10.0", "3000" }, { "allgatherAicpuKernel", "99", "4000" } }
  local s = assert(prof.by_type(p))
  near(s.MatMulV2.total_us, 80.0); lu.assertEquals(s.MatMulV2.count, 2)
  near(s.RmsNorm.total_us, 10.0); lu.assertEquals(s.RmsNorm.count, 1)
  lu.assertNil(s.allgatherAicpuKernel)
end

function TestProfByType:test_hcom_copies_merge_on_their_exact_start()
  -- a collective's two copies share their exact start; one starting 105 ns later is another
  -- collective (the old 1 us window merged it)
  local p = fx.prof { { "hcom_allReduce_", "12.0", "1733971188345289.995" },
                      { "hcom_allReduce_", "12.0", "1733971188345289.995" },
                      { "hcom_allReduce_", "11.0", "1733971188345290.100" } }
  local s = assert(prof.by_type(p))
  near(s.hcom_allReduce_.total_us, 23.0); lu.assertEquals(s.hcom_allReduce_.count, 2)
end

function TestProfByType:test_bom_is_stripped()
  local p = fx.prof({ { "MatMulV2", "50.0", "1000" } }, { bom = true })
  local s = assert(prof.by_type(p))
  near(s.MatMulV2.total_us, 50.0)
end

function TestProfByType:test_bad_duration_skipped_with_line()
  local p = fx.prof { { "MatMulV2", "50.0", "1000" }, { "MatMulV2", "abc", "2000" } }
  local s, summary = prof.by_type(p)
  near(s.MatMulV2.total_us, 50.0)
  lu.assertEquals(summary.nskipped, 1)
  lu.assertEquals(summary.skipped[1][1], 3)
  lu.assertStrContains(summary.skipped[1][2], "Duration(us)")
end

function TestProfByType:test_missing_file_and_columns()
  local s, err = prof.by_type(fx.path("none.csv"))
  lu.assertNil(s); lu.assertStrContains(err, "Prof trace not found")
  local p = fx.csv({ "Name", "Duration(us)" }, { { "x", "1" } })
  s, err = prof.by_type(p)
  lu.assertNil(s); lu.assertStrContains(err, "Type")
  p = fx.csv({ "Type", "Duration(us)" }, { { "hcom_allReduce_", "1" } })
  s, err = prof.by_type(p)
  lu.assertNil(s); lu.assertStrContains(err, ":2: hcom rows need the Start Time(us) column")
end

TestRows = {}

function TestRows:test_build_comparison()
  local s = tc { fx.ev("aten.mm.default", 20, { kernel_type = "MatMulV2", source = "MEASURED" }) }
  local p = assert(prof.by_type(fx.prof { { "MatMulV2", "50.0" }, { "RmsNorm", "10.0" } }))
  local rows = opcmp.rows(s, p, 1)
  lu.assertTrue(#rows >= 2)
  lu.assertEquals(rows[1].kernel_type, "MatMulV2")
  lu.assertEquals(rows[1].tc_total_us, 20.0)
  lu.assertEquals(rows[1].prof_per_fwd_us, 50.0)
  lu.assertEquals(rows[1].error_pct, -60.0)
  lu.assertEquals(rows[2].kernel_type, "RmsNorm")
  lu.assertEquals(rows[2].status, opcmp.UNMODELLED)
  lu.assertEquals(math.type(rows[2].tc_total_us), "integer")   -- Python's 0, not 0.0
  lu.assertEquals(math.type(rows[2].error_pct), "float")
  lu.assertEquals(math.type(rows[2].prof_per_fwd_us), "float")
end

function TestRows:test_example_table_line_and_json()
  local s = tc { fx.ev("aten.mm.default", 21.4, { kernel_type = "MatMulV2" }),
                 fx.ev("aten.mm.default", 21.4, { kernel_type = "MatMulV2" }),
                 fx.ev("aten.x", 5, {}) }
  local p = assert(prof.by_type(fx.prof { { "MatMulV2", "23.25" }, { "MatMulV2", "23.25" },
                                          { "Other", "14.0" } }))
  local rows = opcmp.rows(s, p, 1)
  local text = opcmp.table("Qwen3 DC", rows)
  lu.assertStrContains(text, "MatMulV2                                    42.8       2         46.5        2     -8.0%      0.0%    76.9% HIT   ")
  lu.assertStrContains(text, "Qwen3 DC \u{2014} TC vs Profiling per-forward")
  lu.assertStrContains(text, "TOTAL" .. string.rep(" ", 30) .. " " .. string.rep(" ", 8) .. "47.8 " ..
                             string.rep(" ", 7) .. " " .. string.rep(" ", 8) .. "60.5\n")
  local js = opcmp.json { { name = "Qwen3 DC", rows = rows } }
  lu.assertStrContains(js, '"kernel_type": "aten.x",\n      "tc_funcs": "aten.x",\n      "tc_total_us": 5.0,')
  lu.assertStrContains(js, '"status": "TC\u{672a}\u{5efa}\u{6a21}"')
  lu.assertStrContains(js, '"error_pct": 0,')
end

function TestRows:test_n_forward_and_stable_ties()
  local p = { B = { total_us = 20.0, count = 4 }, A = { total_us = 20.0, count = 3 } }
  local rows = opcmp.rows({}, p, 2)
  lu.assertEquals(rows[1].kernel_type, "A")   -- equal keys keep alphabetical order
  lu.assertEquals(rows[1].prof_per_fwd_us, 10.0)
  lu.assertEquals(rows[1].prof_count, 2)       -- round(1.5) = 2 (half to even)
  lu.assertEquals(rows[2].prof_count, 2)
  rows = opcmp.rows({}, p, 0)
  lu.assertEquals(rows[1].prof_per_fwd_us, 0)
  lu.assertEquals(math.type(rows[1].prof_per_fwd_us), "integer")
end

os.exit(lu.LuaUnit.run())
