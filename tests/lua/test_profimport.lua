-- Helpers of the profile import: spec parsers_analysis.md 7.4 vectors (parse_kernel_details).
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
