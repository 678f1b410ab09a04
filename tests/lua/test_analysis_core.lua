-- Python-compatible text, Python literals, exact timestamps, trace reading errors.
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local pyfmt = require "perfscript.analysis.pyfmt"
local pylit = require "perfscript.analysis.pylit"
local numparse = require "perfscript.analysis.numparse"
local tctrace = require "perfscript.analysis.tctrace"

TestPyfmt = {}

function TestPyfmt:test_repr()
  local cases = { { 0.9917355371900827, "0.9917355371900827" }, { 20.0, "20.0" }, { 22.77, "22.77" },
                  { 1e-05, "1e-05" }, { 1e16, "1e+16" }, { 0.0001, "0.0001" }, { 123.0, "123.0" },
                  { -0.0, "-0.0" }, { 1 / 0, "inf" }, { 5952.0, "5952.0" }, { 7, "7" },
                  { 1234567890123456.0, "1234567890123456.0" }, { 0.1 + 0.2, "0.30000000000000004" } }
  for _, c in ipairs(cases) do lu.assertEquals(pyfmt.repr(c[1]), c[2]) end
end

function TestPyfmt:test_round()
  lu.assertEquals(pyfmt.round(2.675, 2), 2.67)
  lu.assertEquals(pyfmt.round(-8.04, 1), -8.0)
  lu.assertEquals(math.type(pyfmt.round(0, 1)), "integer")
  lu.assertEquals(math.type(pyfmt.round(0.0, 1)), "float")
  lu.assertEquals(pyfmt.round_int(2.5), 2)
  lu.assertEquals(pyfmt.round_int(3.5), 4)
  lu.assertEquals(pyfmt.round_int(1.4999), 1)
end

function TestPyfmt:test_fixed_grouping_and_padding()
  lu.assertEquals(pyfmt.fixed(1234567.89, 1, true), "1,234,567.9")
  lu.assertEquals(pyfmt.fixed(-1234.5, 1, true), "-1,234.5")
  lu.assertEquals(pyfmt.fixed(5.952, 1, true), "6.0")
  lu.assertEquals(pyfmt.fixed(0 / 0, 2), "nan")
  lu.assertEquals(pyfmt.rjust("TC(\u{3bc}s)", 8), "  TC(\u{3bc}s)")
  lu.assertEquals(pyfmt.ljust("\u{72b6}\u{6001}", 6), "\u{72b6}\u{6001}    ")
end

function TestPyfmt:test_json_like_python()
  local doc = pyfmt.object { { "a", { 1, 2.0, "x\"\n\u{3bc}" } }, { "b", pyfmt.object {} }, { "c", {} },
                             { "d", 1 / 0 } }
  lu.assertEquals(pyfmt.json(doc),
    '{\n  "a": [\n    1,\n    2.0,\n    "x\\"\\n\u{3bc}"\n  ],\n  "b": {},\n  "c": [],\n  "d": Infinity\n}')
end

function TestPyfmt:test_csv_minimal_quoting()
  lu.assertEquals(pyfmt.csv_line { "a", "b,c", 'd"e', "" }, 'a,"b,c","d""e",\r\n')
  -- Python's csv.writer writes a lone empty field as "" (bare, it would read back as no row)
  lu.assertEquals(pyfmt.csv_line { "" }, '""\r\n')
  lu.assertEquals(pyfmt.csv_field(2.5), "2.5")
end

TestPylit = {}

function TestPylit:test_values()
  local v = assert(pylit.parse("[('QuantBatchMatmulV3', 22.77), (\"hcom_allReduce_\", 8.29)]"))
  lu.assertEquals(v.kind, "list")
  lu.assertEquals(v[1].kind, "tuple")
  lu.assertEquals(v[1][1], "QuantBatchMatmulV3")
  lu.assertEquals(v[2][2], 8.29)
  v = assert(pylit.parse(" [1, -2, 3.5e1, True, False, None, (7,), (), 'a\\'b', [],] "))
  lu.assertEquals(v[2], -2); lu.assertEquals(math.type(v[2]), "integer")
  lu.assertEquals(v[3], 35.0)
  lu.assertTrue(v[4]); lu.assertFalse(v[5]); lu.assertEquals(v[6], pylit.None)
  lu.assertEquals(v[7].kind, "tuple"); lu.assertEquals(#v[7], 1); lu.assertEquals(#v[8], 0)
  lu.assertEquals(v[9], "a'b")
  lu.assertEquals(pylit.parse("(5)"), 5)
  lu.assertEquals(pylit.repr(assert(pylit.parse("[[1.0, 2], (3,), 'x']"))), "[[1.0, 2], (3,), 'x']")
end

function TestPylit:test_rejects()
  for _, s in ipairs { "garbage", "inf", "[1, 2", "[1 2]", "1__0", "", "[1] x", "{'a': 1}" } do
    lu.assertNil(pylit.parse(s), s)
  end
end

TestNumparse = {}

function TestNumparse:test_float_is_python_float()
  lu.assertEquals(numparse.float(" 1.25 "), 1.25)
  lu.assertEquals(numparse.float("1_000"), 1000.0)
  lu.assertEquals(math.type(numparse.float("15")), "float")
  lu.assertEquals(numparse.float("-Infinity"), -math.huge)
  lu.assertEquals(numparse.float(".5"), 0.5)
  for _, s in ipairs { "bad", "0x10", "", "1__0", "_1", "1_", "e5", ".", "N/A" } do
    lu.assertNil(numparse.float(s), s)
  end
end

function TestNumparse:test_timestamps_are_exact_nanoseconds()
  lu.assertEquals(numparse.us_to_ns("1764246877073569.640"), 1764246877073569640)
  lu.assertEquals(numparse.us_to_ns("1736412474730135.222\t"), 1736412474730135222)
  lu.assertEquals(numparse.us_to_ns("1000"), 1000000)
  lu.assertEquals(numparse.us_to_ns("-2.5"), -2500)
  lu.assertEquals(numparse.us_to_ns("1.0005"), 1001)     -- beyond the ns: half up
  lu.assertEquals(numparse.us_to_ns("1.0015"), 1002)
  lu.assertEquals(numparse.us_to_ns("1.00051"), 1001)
  lu.assertEquals(numparse.us_to_ns("1.5e3"), 1500000)
  lu.assertNil(numparse.us_to_ns("abc"))
  lu.assertNil(numparse.us_to_ns("99999999999999999"))
  lu.assertEquals(numparse.ns_text(1764246877073569640), "1764246877073569.640")
  -- a double cannot tell these apart; the nanoseconds can
  lu.assertTrue(numparse.us_to_ns("1764246877073569.640") ~= numparse.us_to_ns("1764246877073569.700"))
end

TestTraceRead = {}

function TestTraceRead:test_missing_file()
  local t, err = tctrace.load(fx.path("nope.json"))
  lu.assertNil(t); lu.assertStrContains(err, "TC trace not found: ")
end

function TestTraceRead:test_malformed_json_names_line_and_column()
  local p = fx.write("bad.json", '{"traceEvents": [\n  {"ph": "X", "dur": 1},\n  {"ph": "X" "dur": 2}\n]}')
  local t, err = tctrace.load(p)
  lu.assertNil(t)
  lu.assertStrContains(err, p .. ":3:")
  lu.assertStrContains(err, "malformed JSON")
end

function TestTraceRead:test_roots_and_repair()
  local t = assert(tctrace.load(fx.write("arr.json", '[{"ph":"X","name":"a","pid":1,"dur":3}]')))
  lu.assertEquals(#t.events, 1)
  t = assert(tctrace.load(fx.write("cut.json", '[{"ph":"X","name":"a","pid":1,"dur":3},\n')))
  lu.assertTrue(t.repaired); lu.assertEquals(#t.events, 1)
  t = assert(tctrace.load(fx.write("noev.json", '{"otherData": {}}')))
  lu.assertEquals(#t.events, 0)
  local _, err = tctrace.load(fx.write("num.json", "42"))
  lu.assertStrContains(err, "neither an object nor an array")
  _, err = tctrace.load(fx.write("empty.json", ""))
  lu.assertStrContains(err, "empty file")
  _, err = tctrace.load(fx.write("lfs.json", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 5\n"))
  lu.assertStrContains(err, "Git LFS pointer")
  local dir = fx.path("adir")
  require("perfscript").fs.mkdir_p(dir)
  _, err = tctrace.load(dir)
  lu.assertStrContains(err, dir .. ": Is a directory")
end

function TestTraceRead:test_args_helpers()
  lu.assertEquals(tctrace.kernel_type { kernel_type = "?" }, nil)
  lu.assertEquals(tctrace.kernel_type { kernel_type = "" }, nil)
  lu.assertEquals(tctrace.kernel_type { kernel_type = "MatMulV2" }, "MatMulV2")
  lu.assertEquals(tctrace.split_kernel_types(" A, B,,C ,"), { "A", "B", "C" })
  lu.assertEquals(tctrace.pystr { { 16, 5120 }, { 5120, 768 } }, "[[16, 5120], [5120, 768]]")
  local f = tctrace.source_filter("MEASURED,,INTERPOLATED,")
  lu.assertEquals(f.names, { "INTERPOLATED", "MEASURED" })
  lu.assertFalse(f.admits(""))
  lu.assertTrue(tctrace.source_filter("*").admits(""))
  lu.assertEquals(tctrace.source_filter("", "MEASURED").names, { "MEASURED" })
end

-- The streaming reader (perfscript.trace, for traces larger than memory) gives the same answers.
TestTraceStream = {}

local function streaming()
  local ok, m = pcall(require, "perfscript.trace")
  if not ok or type(m) ~= "table" then lu.skip("this build has no perfscript.trace") end
end

function TestTraceStream:test_same_stats_as_in_memory()
  streaming()
  local opcmp = require "perfscript.analysis.opcmp"
  local src = (os.getenv("PERFSCRIPT_SOURCE_DIR") or ".") .. "/tests/fixtures/analysis/tc_trace.json"
  local mem = assert(tctrace.load(src))
  local str = assert(tctrace.load(src, { stream_bytes = 0 }))
  lu.assertNil(mem.stream); lu.assertNotNil(str.stream)
  lu.assertEquals(tctrace.select_pid(str), tctrace.select_pid(mem))
  local a = opcmp.tc_stats(mem, (tctrace.select_pid(mem)))
  local b = opcmp.tc_stats(str, (tctrace.select_pid(str)))
  for _, s in pairs(a) do s.seen = nil end
  for _, s in pairs(b) do s.seen = nil end
  lu.assertEquals(b, a)
end

function TestTraceStream:test_errors_and_interrupted_exports()
  streaming()
  local p = fx.write("bad.json", '{"traceEvents": [\n  {"ph": "X", "dur": 1},\n  {"ph": "X" "dur": 2}\n]}')
  local t, err = tctrace.load(p, { stream_bytes = 0 })
  lu.assertNil(t)
  lu.assertStrContains(err, p .. ":3:")
  lu.assertStrContains(err, "malformed JSON")
  t = assert(tctrace.load(fx.write("cut.json", '[{"ph":"X","name":"a","pid":1,"dur":3},\n'), { stream_bytes = 0 }))
  lu.assertTrue(t.repaired)
  local n = 0
  for ev in tctrace.each(t) do n = n + 1; lu.assertEquals(ev.dur, 3) end
  lu.assertEquals(n, 1)
end

os.exit(lu.LuaUnit.run())
