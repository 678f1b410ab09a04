-- compute_m6 worked examples (docs/rules.md, Analysis: M6).
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local tctrace = require "perfscript.analysis.tctrace"
local m6 = require "perfscript.analysis.m6"
local pyfmt = require "perfscript.analysis.pyfmt"

local function near(a, b) lu.assertAlmostEquals(a, b, 1e-9) end

local function default_tc()
  local evs = {}
  for _ = 1, 64 do evs[#evs + 1] = fx.ev("npu.fia", 53, { source = "MEASURED", kernel_type = "FusedInferAttentionScore" }) end
  for _ = 1, 128 do evs[#evs + 1] = fx.ev("aten.mm.default", 20, { source = "MEASURED", kernel_type = "MatMulV2" }) end
  for _ = 1, 100 do evs[#evs + 1] = fx.ev("aten.view.default", 0, { source = "MEASURED", kernel_type = "zero_cost" }) end
  for _ = 1, 3 do evs[#evs + 1] = fx.ev("apply_rope", 2, {}) end
  return fx.trace(evs)
end

local function default_prof()
  local rows = {}
  for i = 1, 64 do rows[#rows + 1] = { "FusedInferAttentionScore", "50.0", 100000 + i * 1000 } end
  for i = 1, 128 do rows[#rows + 1] = { "MatMulV2", "25.0", 200000 + i * 1000 } end
  for i = 1, 64 do rows[#rows + 1] = { "hcom_allReduce_", "100.0", 400000 + i * 1000 } end
  rows[#rows + 1] = { "Sort", "200.0", 900000 }
  return fx.prof(rows)
end

local function run(tc_path, prof_path, filter_text)
  local tr = assert(tctrace.load(tc_path))
  local pid = tctrace.select_pid(tr)
  local filter = tctrace.source_filter(filter_text, m6.DEFAULT_SOURCES)
  local hit = m6.tc_side(tr, pid, filter)
  local p = assert(m6.prof_side(prof_path))
  return m6.result(hit, p, tc_path, prof_path, filter), hit, p
end

TestM6 = {}

function TestM6:test_default_fixture()
  local tc_path, prof_path = default_tc(), default_prof()
  local res = run(tc_path, prof_path)
  local v = res.values
  lu.assertEquals(v.empirical_hit_us, 5952.0)
  lu.assertEquals(v.real_per_fwd_us, 13000.0)
  lu.assertAlmostEquals(v.m6_ratio, 0.45785, 1e-5)
  lu.assertEquals(v.selected_fwd_compute_us, 6600.0)
  lu.assertEquals(v.selected_fwd_hcom_us, 6400.0)
  lu.assertEquals(res.keys, { "m6_ratio", "empirical_hit_us", "real_per_fwd_us", "selected_fwd_compute_us",
                              "selected_fwd_hcom_us", "tc_trace", "prof_trace", "source_filter" })
  local js = pyfmt.json(res)
  lu.assertStrContains(js, '"m6_ratio": 0.45784615384615385,')
  lu.assertStrContains(js, '"source_filter": [\n    "INTERPOLATED",\n    "MEASURED"\n  ]\n}')
  lu.assertNotStrContains(js, "per_kernel_delta")
  lu.assertNotStrContains(js, "n_forward_passes")
end

function TestM6:test_source_filter()
  local tc_path = fx.trace { fx.ev("a", 100, { source = "MEASURED", kernel_type = "K" }),
                             fx.ev("b", 50, { source = "INTERPOLATED", kernel_type = "K" }),
                             fx.ev("c", 70, { kernel_type = "K" }) }
  local prof_path = fx.prof { { "K", "100.0" } }
  lu.assertEquals(select(2, run(tc_path, prof_path)), 150.0)
  lu.assertEquals(select(2, run(tc_path, prof_path, "MEASURED")), 100.0)
  lu.assertEquals(select(2, run(tc_path, prof_path, "MEASURED,")), 100.0)  -- no source-less quirk
  lu.assertEquals(select(2, run(tc_path, prof_path, "*")), 220.0)
end

function TestM6:test_hcom_dedup_real()
  local prof_path = fx.prof { { "hcom_allReduce_", "100.0", "1000.0" }, { "hcom_allReduce_", "100.0", "1000.0" },
                              { "MatMulV2", "50.0", "1200.0" } }
  local _, _, p = run(fx.trace {}, prof_path)
  near(p.compute + p.hcom, 150.0)
end

function TestM6:test_prof_helper_vectors()
  local function side(rows) return assert(m6.prof_side(fx.prof(rows))) end
  local p = side { { "hcom", "10", "1000" }, { "hcom", "10", "1000" }, { "MatMulV2", "6", "2000" } }
  -- "hcom" is not an hcom_ type: the spec's helper vectors use hcom_ names
  p = side { { "hcom_x_", "10", "1000" }, { "hcom_x_", "10", "1000" }, { "MatMulV2", "6", "2000" } }
  near(p.hcom, 10); near(p.compute, 6); lu.assertEquals(p.kernel_count, 2)
  p = side { { "hcom_x_", "8", "1000" }, { "hcom_x_", "15", "1000" } }
  near(p.hcom, 15); lu.assertEquals(p.kernel_count, 1)
  p = side { { "allgatherAicpuKernel", "100", "100" }, { "MatMulV2", "100", "200" } }
  near(p.aicpu, 100); near(p.compute, 100); lu.assertNil(p.per_type.allgatherAicpuKernel)
  p = side {}
  near(p.compute, 0); near(p.hcom, 0); lu.assertEquals(p.kernel_count, 0)
  p = side { { "MatMulV2", "10", "1" }, { "RmsNorm", "5", "2" } }
  near(p.per_type.MatMulV2, 10); near(p.per_type.RmsNorm, 5)
end

function TestM6:test_duration_is_not_rebuilt_from_start()
  -- (start + dur) - start at 1.7e15 us turns 25.3 into 25.25 in doubles; the parsed value is used
  local p = assert(m6.prof_side(fx.prof { { "MatMulV2", "25.3", "1733971188345089.850" } }))
  lu.assertEquals(p.compute, 25.3)
end

function TestM6:test_report()
  local res = m6.result(5952.0, { compute = 6000.0, hcom = 265.3 }, "tc.json", "prof.csv",
                        tctrace.source_filter(nil, m6.DEFAULT_SOURCES))
  local text = m6.report(res, 5952.0, { compute = 6000.0, hcom = 265.3 })
  for _, s in ipairs { "M6", "0.950", "tc.json", "prof.csv", "MEASURED", "5,952.0", "6,265.3",
                       "Empirical HIT total:      5,952.0 us (6.0 ms)",
                       "Real per-fwd:             6,265.3 us (6.3 ms)",
                       "Source filter:   ['INTERPOLATED', 'MEASURED']",
                       "M6 = 0.950  (Empirical / Real)" } do
    lu.assertStrContains(text, s)
  end
  res = m6.result(1500.0, { compute = 1000.0, hcom = 0.0 }, "a", "b", tctrace.source_filter("X"))
  lu.assertStrContains(m6.report(res, 1500.0, { compute = 1000.0, hcom = 0.0 }), "1.500")
  local big = m6.result(1234567.89, { compute = 1.0, hcom = 0.0 }, "a", "b", tctrace.source_filter("X"))
  lu.assertStrContains(m6.report(big, 1234567.89, { compute = 1.0, hcom = 0.0 }),
                       "Empirical HIT total:  1,234,567.9 us (1,234.6 ms)")
  local zero = m6.result(10.0, { compute = 0.0, hcom = 0.0 }, "a", "b", tctrace.source_filter("X"))
  lu.assertEquals(zero.values.m6_ratio, 0.0)
end

os.exit(lu.LuaUnit.run())
