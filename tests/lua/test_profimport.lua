-- Helpers of the profile import (docs/rules.md, Import): the Python original's worked examples.
local lu = require "luaunit"
local imp = require "perfscript.profimport"
local profile = require "perfscript.profile"
local perf = require "perfscript"

TestHelpers = {}

function TestHelpers:test_sanitize()
  lu.assertEquals(imp.sanitize('A/B:*?"'), "A_B____")
  lu.assertEquals(imp.sanitize("A/B:C"), "A_B_C")
  lu.assertEquals(imp.sanitize("  MatMulV2 "), "MatMulV2")
  lu.assertEquals(imp.sanitize("a\tb"), "a_b")
  lu.assertEquals(imp.sanitize("   "), "UNKNOWN_TYPE")
end

function TestHelpers:test_kernel_names()
  lu.assertEquals(profile.kernel_type("muls_add_kernel_1"), "muls_add_kernel")
  lu.assertEquals(profile.kernel_type("split_qkv_rmsnorm_rope_kernel_0"), "split_qkv_rmsnorm_rope_kernel")
  lu.assertEquals(profile.kernel_type(" MatMulV2 "), "MatMulV2")
  lu.assertEquals(profile.kernel_type("muls_add_kernel_10"), "muls_add_kernel_10")
end

function TestHelpers:test_na_and_numbers()
  lu.assertTrue(profile.is_na('"N/A"'))
  lu.assertTrue(profile.is_na(" N/A "))
  lu.assertFalse(profile.is_na(""))
  lu.assertEquals(profile.number("1.25"), 1.25)
  lu.assertNil(profile.number("bad"))
  lu.assertEquals(profile.us_to_ns("1764246877073569.640"), 1764246877073569640)
  lu.assertEquals(profile.us_to_ns("1736413971558972.912\t"), 1736413971558972912)
end

function TestHelpers:test_columns()
  lu.assertEquals(#profile.columns, 36)
  lu.assertEquals(profile.columns[9], "Profiling Average Duration(us)")
  lu.assertEquals(profile.columns[12], "Profiling Average aicore_time(us)")
  lu.assertEquals(profile.columns[36], "Profiling Average cube_utilization(%)")
  lu.assertEquals(#imp.FIA_COLUMNS, 16)
  lu.assertEquals(imp.FIA_COLUMNS[16], "Runtime metadata_completeness")
end

function TestHelpers:test_fia_slots()
  -- a 31-slot text with slot 5 = 5, slot 6 = 5, slot 14 = 5,512
  local s = {}
  for i = 0, 30 do s[i + 1] = "" end
  s[1], s[6], s[7], s[15] = "5,16,1,512", "5", "5", "5,512"
  local seq, kv, block = imp.fia_shapes('"' .. table.concat(s, ";") .. '"')
  lu.assertEquals({ seq, kv, block }, { "5", "5", "5,512" })
  -- unparsable slots are empty, not fatal
  seq, kv, block = imp.fia_shapes("1;2;3;4;5;N/A;1.5")
  lu.assertEquals({ seq, kv, block }, { "", "", "" })
end

-- The import's group key (issue 10 item 1): what the export wrote, trimmed; not the
-- write-back signature (which ignores a MatMulV2's third input).
function TestHelpers:test_import_key()
  local bias = profile.import_key("MatMulV2", '"32,4096;4096,4096;4096"', "FLOAT;FLOAT;FLOAT",
    "ND;ND;ND", '"32,4096"', "FLOAT")
  local plain, h = profile.import_key("MatMulV2", '"32,4096;4096,4096"', "FLOAT;FLOAT", "ND;ND",
    '"32,4096"', "FLOAT")
  lu.assertNotEquals(bias, plain)
  lu.assertEquals(plain, "MatMulV2\31" .. "32,4096;4096,4096\31FLOAT;FLOAT\31ND;ND\31" .. "32,4096\31FLOAT")
  local again, h2 = profile.import_key("MatMulV2", ' 32,4096;4096,4096 ', " FLOAT;FLOAT", "ND;ND ",
    '"""32,4096"""', "FLOAT")
  lu.assertEquals(again, plain)
  lu.assertEquals(h2, h)
  lu.assertNotEquals(profile.import_key("Cast", "8,8", "BOOL", "ND", "8,8", "FLOAT"),
    profile.import_key("Cast", "8,8", "INT64", "ND", "8,8", "INT32"))
  -- a group's key is the key of its cells
  local tmp = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/profimport_key.csv"
  assert(perf.fs.write_atomic(tmp, "Type,Duration(us),Input Shapes,Input Data Types,Input Formats,"
    .. "Output Shapes,Output Data Types,Output Formats\n"
    .. 'MatMulV2,1.5,"""32,4096;4096,4096""",FLOAT;FLOAT,ND;ND,"""32,4096""",FLOAT,ND\n'))
  local agg = profile.new()
  assert(agg:add_file(tmp))
  local g = agg:group(1, false)
  lu.assertEquals(g.import_key, profile.import_key(g.type, g.in_shapes, g.in_dtypes, g.in_formats,
    g.out_shapes, g.out_dtypes))
  lu.assertEquals(g.import_key, plain)
  os.remove(tmp)
end

-- agg:types() groups the groups by kernel type in C (first-seen type order, group order within),
-- agg:keys() gives their import keys: the same as agg:group one group at a time.
function TestHelpers:test_types_and_keys()
  local tmp = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/profimport_types.csv"
  local lines = { "Type,Duration(us),Input Shapes,Input Data Types,Input Formats,"
    .. "Output Shapes,Output Data Types,Output Formats" }
  local types = { "MatMulV2", "Add", "MatMulV2", "Cast", "Add", "Add", "MatMulV2", "Add" }
  for i, t in ipairs(types) do
    lines[#lines + 1] = string.format('%s,1.5,"%d,8",FLOAT,ND,"%d,8",FLOAT,ND', t, i % 5, i % 5)
  end
  assert(perf.fs.write_atomic(tmp, table.concat(lines, "\n") .. "\n"))
  local agg = profile.new()
  assert(agg:add_file(tmp))
  local want, by = {}, {}
  for i = 1, #agg do
    local g = agg:group(i, false)
    if not by[g.type] then
      by[g.type] = { type = g.type, groups = {}, keys = {} }
      want[#want + 1] = by[g.type]
    end
    table.insert(by[g.type].groups, i)
    table.insert(by[g.type].keys, g.import_key)
  end
  local got = agg:types()
  lu.assertEquals(#got, 3)
  for k, t in ipairs(got) do
    lu.assertEquals(t.type, want[k].type)
    lu.assertEquals(t.groups, want[k].groups)
    lu.assertEquals(agg:keys(t.groups), want[k].keys)
  end
  lu.assertEquals(got[1].type, "MatMulV2")
  lu.assertEquals(got[2].groups, { 2, 5, 6, 8 })
  lu.assertErrorMsgContains("out of range", function() agg:keys { #agg + 1 } end)
  -- tables() builds on them: files, columns and rows per type
  local tables = imp.tables(agg)
  lu.assertEquals(tables[2].file, "Add.csv")
  lu.assertEquals(tables[2].rows, 4)
  lu.assertEquals(tables[2].row(1).key, want[2].keys[1])
  lu.assertEquals(tables[2].row(1).cells, agg:row(2))
  os.remove(tmp)
end

-- agg:csv_text writes what perf.csv.format_row writes of agg:row (and the extra cells): minimal
-- quoting, %.6f statistics however long, empty cells for missing counters.
function TestHelpers:test_csv_text_is_format_row()
  local tmp = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/profimport_csvtext.csv"
  assert(perf.fs.write_atomic(tmp, "Type,OP State,Duration(us),Input Shapes,Input Data Types,"
    .. "Input Formats,Output Shapes,Output Data Types,Output Formats,aicore_time(us)\n"
    .. 'Add,"dy,""n""",1e300,"4,8",FLOAT,ND,"4,8",FLOAT,ND,1.5\n'
    .. 'Add,dyn,3e300,"4,8",FLOAT,ND,"4,8",FLOAT,ND,\n'
    .. 'Mul,,0.0000004,"2,2",FLOAT,ND,"2,2",FLOAT,ND,-2.25\n'))
  local agg = profile.new()
  assert(agg:add_file(tmp))
  local extra = { [2] = { "a,b", "", 'q"' } }
  local want = {}
  for i = 1, #agg do
    local cells = agg:row(i)
    for _, v in ipairs(extra[i] or {}) do cells[#cells + 1] = v end
    want[i] = perf.csv.format_row(cells, "\n")
  end
  lu.assertEquals(agg:csv_text({ 1, 2 }, extra, "\n"), table.concat(want))
  lu.assertEquals(agg:csv_text({ 2, 1 }, nil, "\r\n"),
    perf.csv.format_row(agg:row(2), "\r\n") .. perf.csv.format_row(agg:row(1), "\r\n"))
  lu.assertStrContains(want[1], string.format("%.6f", 2e300))
  lu.assertEquals(agg:csv_text({}), "")
  os.remove(tmp)
end

function TestHelpers:test_source_profile()
  lu.assertEquals(imp.source_profile("/x/profile_a/kernel_details.csv"), "profile_a")
  lu.assertEquals(imp.source_profile("/x/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"),
    "rank0_ascend_pt")
end

function TestHelpers:test_discovery()
  local tmp = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/profimport_lua"
  os.execute("rm -rf '" .. tmp .. "'")
  for _, d in ipairs { "/b_ascend_pt/ASCEND_PROFILER_OUTPUT", "/a_ascend_pt/ASCEND_PROFILER_OUTPUT",
                       "/a_ascend_pt/PROF_1/mindstudio_profiler_output", "/PROF_2/mindstudio_profiler_output" } do
    assert(perf.fs.mkdir_p(tmp .. d))
  end
  for _, f in ipairs { "/b_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
                       "/a_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
                       "/a_ascend_pt/ASCEND_PROFILER_OUTPUT/operator_details.csv",
                       "/a_ascend_pt/PROF_1/mindstudio_profiler_output/op_summary_0_1.csv",
                       "/PROF_2/mindstudio_profiler_output/op_summary_0_1.csv",
                       "/PROF_2/mindstudio_profiler_output/op_statistic_0_1.csv" } do
    assert(perf.fs.write_atomic(tmp .. f, "x\n"))
  end
  local found = assert(imp.discover(tmp))
  lu.assertEquals(found.files, {
    tmp .. "/PROF_2/mindstudio_profiler_output/op_summary_0_1.csv",
    tmp .. "/a_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
    tmp .. "/b_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
  })
  lu.assertEquals(found.left_out, { tmp .. "/a_ascend_pt/PROF_1/mindstudio_profiler_output/op_summary_0_1.csv" })
  lu.assertEquals(found.operator_details, { tmp .. "/a_ascend_pt/ASCEND_PROFILER_OUTPUT/operator_details.csv" })
  local none, err = imp.discover(tmp .. "/a_ascend_pt/PROF_1/nothing")
  lu.assertNil(none)
  lu.assertStrContains(err, "profiling path not found")
  os.execute("rm -rf '" .. tmp .. "'")
end

os.exit(lu.LuaUnit.run())
