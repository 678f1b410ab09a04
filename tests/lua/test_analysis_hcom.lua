-- hcom de-duplication in the three analysis tools (issue 10, item 8): a collective is its Type
-- and its exact int64-ns start. The fixture is a DeepSeek-V3 decode slice in which two
-- different hcom_allReduce_ collectives (streams 5 and 9, 17.02 and 9.30 us) start 0.24 us
-- apart; each collective, like the hcom_allGather_, has two copies (stream N/A and its
-- hardware stream) with the same start and duration.
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local prof = require "perfscript.analysis.prof"
local m6 = require "perfscript.analysis.m6"
local pershape = require "perfscript.analysis.pershape"
local cli = require "perfscript.analysis.cli"

local function near(a, b) lu.assertAlmostEquals(a, b, 1e-9) end

local DSV3 = (os.getenv("PERFSCRIPT_SOURCE_DIR") or ".") ..
             "/tests/fixtures/analysis/prof_dsv3_decode_hcom.csv"

-- The per-shape profiling entries of one kernel type, summed.
local function pershape_type(map, kt)
  local dur, count = 0.0, 0
  for _, e in pairs(map) do
    if e.kernel_type == kt then dur = dur + e.dur; count = count + e.count end
  end
  return dur, count
end

TestHcomDsv3 = {}

function TestHcomDsv3:test_m6_counts_both_all_reduces()
  local p = assert(m6.prof_side(DSV3))
  near(p.hcom, 17.02 + 9.30 + 12.50)                  -- 38.82; the 1 us window gave 29.52
  near(p.per_type.hcom_allReduce_, 26.32)
  near(p.compute, 148.78)
  near(p.aicpu, 86.5)
  lu.assertEquals(p.kernel_count, 6 + 1 + 3)         -- compute, AICPU, three collectives
end

function TestHcomDsv3:test_op_comparison_counts_both_all_reduces()
  local s = assert(prof.by_type(DSV3))
  near(s.hcom_allReduce_.total_us, 26.32); lu.assertEquals(s.hcom_allReduce_.count, 2)
  near(s.hcom_allGather_.total_us, 12.50); lu.assertEquals(s.hcom_allGather_.count, 1)
  lu.assertNil(s.allreduceAicpuKernel)
end

function TestHcomDsv3:test_per_shape_counts_both_all_reduces()
  local map = assert(pershape.prof_side(DSV3))
  local rows = pershape.rows({}, map)
  local ar
  for _, r in ipairs(rows) do if r.kernel_type == "hcom_allReduce_" then ar = r end end
  lu.assertEquals(ar.shape_key, "N/A")
  lu.assertEquals(ar.prof_dur_us, 26.32); lu.assertEquals(ar.prof_count, 2)
end

function TestHcomDsv3:test_the_three_tools_agree()
  local p = assert(m6.prof_side(DSV3))
  local s = assert(prof.by_type(DSV3))
  local map = assert(pershape.prof_side(DSV3))
  for _, kt in ipairs { "hcom_allReduce_", "hcom_allGather_" } do
    local d, n = pershape_type(map, kt)
    near(s[kt].total_us, p.per_type[kt]); near(d, p.per_type[kt])
    lu.assertEquals(n, s[kt].count)
  end
end

function TestHcomDsv3:test_a_window_still_merges_on_request()
  -- --hcom-window-us 1 keeps the old behaviour for whoever needs it (and warns: the merged
  -- copies differ in duration)
  local p, summary = assert(m6.prof_side(DSV3, { window_ns = 1000 }))
  near(p.hcom, 17.02 + 12.50)
  lu.assertEquals(summary.hcom.mixed, 1)
  local s = assert(prof.by_type(DSV3, { window_ns = 1000 }))
  lu.assertEquals(s.hcom_allReduce_.count, 1)
end

TestHcomRule = {}

function TestHcomRule:test_default_window_is_zero()
  lu.assertEquals(prof.DEFAULT_WINDOW_NS, 0)
  lu.assertEquals(cli.window_ns({}), 0)
  lu.assertEquals(cli.window_ns({ hcom_window_us = 0.24 }), 240)
end

function TestHcomRule:test_exact_start_and_type()
  local p = fx.prof { { "hcom_allReduce_", "10.0", "1736412474714104.990" },
                      { "hcom_allReduce_", "10.0", "1736412474714104.990" },   -- the copy
                      { "hcom_allReduce_", "4.0", "1736412474714104.991" },    -- 1 ns later
                      { "hcom_allGather_", "5.0", "1736412474714104.990" },    -- other type
                      { "hcom_allGather_", "5.0", "1736412474714104.990" } }
  local s, summary = assert(prof.by_type(p))
  near(s.hcom_allReduce_.total_us, 14.0); lu.assertEquals(s.hcom_allReduce_.count, 2)
  near(s.hcom_allGather_.total_us, 5.0); lu.assertEquals(s.hcom_allGather_.count, 1)
  lu.assertEquals(summary.hcom.mixed, 0)
end

function TestHcomRule:test_copies_of_different_durations_counted_once_and_flagged()
  local p = fx.prof { { "hcom_allReduce_", "8.0", "1000.5" }, { "hcom_allReduce_", "15.0", "1000.5" },
                      { "hcom_allReduce_", "3.0", "2000.5" }, { "hcom_allReduce_", "3.0", "2000.5" } }
  local pr, summary = assert(m6.prof_side(p))
  near(pr.hcom, 18.0)                                 -- the longest copy of each
  lu.assertEquals(summary.hcom.mixed, 1)
end

function TestHcomRule:test_dedup_refuses_bad_windows()
  lu.assertErrorMsgContains("non-negative integer", prof.dedup, -1)
  lu.assertErrorMsgContains("non-negative integer", prof.dedup, 0.5)
  lu.assertEquals(prof.dedup(0).window, 0)
  lu.assertEquals(prof.dedup().window, 0)
end

os.exit(lu.LuaUnit.run())
