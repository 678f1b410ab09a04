-- The comparison pages and console table (op_comparison, m6): a kernel TC does not model is
-- its own category (colour, legend entry, table text), never drawn as a -100 % error; the
-- console headers are English.
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local tctrace = require "perfscript.analysis.tctrace"
local opcmp = require "perfscript.analysis.opcmp"
local prof = require "perfscript.analysis.prof"
local html = require "perfscript.analysis.html"

-- Rows of a comparison where "Other" is profiled but has no TC event (not modelled).
local function rows()
  local tr = assert(tctrace.load(fx.trace { fx.ev("aten.mm.default", 21.4, { kernel_type = "MatMulV2" }) }))
  local pid = assert(tctrace.select_pid(tr))
  local tc = opcmp.tc_stats(tr, pid, {})
  local p = assert(prof.by_type(fx.prof { { "MatMulV2", "23.25" }, { "Other", "14.0" } }))
  return opcmp.rows(tc, p, 1)
end

TestNotModelled = {}

function TestNotModelled:test_op_comparison_page()
  local r = rows()
  local section = require("perfscript.analysis.run.op_comparison").section({ name = "s", rows = r })
  local other
  for _, k in ipairs(section.kernels) do if k.name == "Other" then other = k end end
  lu.assertTrue(other.not_modelled)
  local page = html.section(section)
  lu.assertStrContains(page, 'class="bar not-modelled" data-kernel="Other" data-value="not modelled"')
  lu.assertStrContains(page, 'fill="' .. html.COLORS.unmodelled .. '"')
  lu.assertNotStrContains(page, 'class="bar error-bar" data-kernel="Other"')
  lu.assertNotStrContains(page, 'data-value="-100.0"')
  lu.assertStrContains(page, 'background:' .. html.COLORS.unmodelled .. '"></span>not modelled by TC')
  lu.assertStrContains(page, "<td>Other</td><td>0.0</td><td>14.0</td><td>not modelled</td>")
  -- a real under-prediction keeps its bar and colour
  lu.assertStrContains(page, 'class="bar error-bar" data-kernel="MatMulV2" data-value="-8.0"')
end

function TestNotModelled:test_own_colour()
  for name, c in pairs(html.COLORS) do
    if name ~= "unmodelled" then lu.assertNotEquals(c, html.COLORS.unmodelled, name) end
  end
end

function TestNotModelled:test_no_legend_entry_without_such_kernel()
  local page = html.section { title = "t", kernels = { { name = "A", tc_us = 1, prof_us = 2, error_pct = -50 } } }
  lu.assertNotStrContains(page, "not modelled")
end

function TestNotModelled:test_m6_page()
  local ks = require("perfscript.analysis.run.m6").kernels({ A = 1.0 }, { A = 2.0, B = 3.0 })
  local by = {}
  for _, k in ipairs(ks) do by[k.name] = k end
  lu.assertTrue(by.B.not_modelled)
  lu.assertFalse(by.A.not_modelled)
  lu.assertStrContains(html.section { title = "m6", kernels = ks }, 'data-kernel="B" data-value="not modelled"')
end

TestConsole = {}

function TestConsole:test_english_headers_and_status()
  local text = opcmp.table("s", rows())
  -- no CJK characters (UTF-8 lead bytes 0xE3-0xE9 cover the CJK blocks)
  lu.assertNil(text:find("[\xe3-\xe9]"), text)
  lu.assertStrContains(text, "TC n")
  lu.assertStrContains(text, "time err")
  lu.assertStrContains(text, "status")
  lu.assertStrContains(text, "not modelled")
  -- the JSON keeps the original's status text (its readers match on it)
  lu.assertStrContains(opcmp.json { { name = "s", rows = rows() } }, opcmp.UNMODELLED)
end

os.exit(lu.LuaUnit.run())
