-- The Insight trace library (lua/perfscript/insight/): spec validation with each message, the
-- packing of scalars, the spec of a seed-database row, the workspace templates, the symbol
-- matching and the summary of instruction CSVs.
local lu = require "luaunit"
local h = require "tests.lua.helpers"
local spec = require "perfscript.insight.spec"
local fromdb = require "perfscript.insight.fromdb"
local workspace = require "perfscript.insight.workspace"
local symbols = require "perfscript.insight.symbols"
local summary = require "perfscript.insight.summary"
local run = require "perfscript.insight.run"

local SEED = "data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

local function T(index, name, extra)
  local a = { kind = "tensor", index = index, name = name, dtype = "DT_BF16", shape = { 4, 8 } }
  for k, v in pairs(extra or {}) do a[k] = v end
  return a
end
local function S(index, name, dtype, value, mode)
  return { kind = "scalar", index = index, name = name, dtype = dtype, value = value, pack_mode = mode }
end

local function rejects(args, want, raw)
  raw = raw or {}
  raw.args = args
  local s, err = spec.check(raw, "spec.lua")
  lu.assertNil(s, want)
  lu.assertEquals(err, want)
end

TestSpecInvalid = {}

function TestSpecInvalid:test_negative_index()
  rejects({ T(0, "x"), T(-1, "y") }, 'spec.lua: argument "y" (index -1): index -1 is negative (slots are 0..49)')
end

function TestSpecInvalid:test_index_outside_the_args_array()
  rejects({ T(50, "x") }, 'spec.lua: argument "x" (index 50): index 50 is outside the 50-slot args array (0..49)')
  rejects({ S(99, "n", "INT32", 3) },
    'spec.lua: argument "n" (index 99): index 99 is outside the 50-slot args array (0..49)')
end

function TestSpecInvalid:test_duplicate_index()
  rejects({ T(0, "x"), S(0, "alpha", "FLOAT32", 0.5) },
    'spec.lua: argument "alpha" (index 0): duplicate index 0 (also argument "x")')
end

function TestSpecInvalid:test_index_not_whole()
  rejects({ T(1.5, "x") }, 'spec.lua: argument "x" (index 1.5): index 1.5 is not a whole number')
end

function TestSpecInvalid:test_shape_dtype_mismatch()
  rejects({ T(0, "x", { nbytes = 100 }) },
    'spec.lua: argument "x" (index 0): shape/dtype mismatch: shape [4,8] of DT_BF16 is 64 bytes, the spec says nbytes = 100')
  rejects({ T(0, "x", { shape = { 4, -8 } }) },
    'spec.lua: argument "x" (index 0): shape/dtype mismatch: dimension 2 is -8, not a whole number >= 0')
  rejects({ T(0, "x", { dtype = "FLOAT32_BITS" }) },
    'spec.lua: argument "x" (index 0): shape/dtype mismatch: FLOAT32_BITS is a scalar packing, not a tensor dtype')
  rejects({ S(0, "n", "INT32", 2.5) },
    'spec.lua: argument "n" (index 0): value 2.5 is not a whole number (shape/dtype mismatch for INT32)')
  rejects({ S(0, "n", "DT_BF16", 1) },
    'spec.lua: argument "n" (index 0): shape/dtype mismatch: DT_BF16 has no scalar packing here (integers, BOOL, FLOAT32, FLOAT32_BITS)')
  rejects({ T(0, "x", { dtype = "DT_NOPE" }) }, "spec.lua: argument \"x\" (index 0): unknown tensor dtype 'DT_NOPE'")
end

function TestSpecInvalid:test_float_packed_as_value()
  rejects({ S(3, "scale", "FLOAT32", 0.125, "value") },
    'spec.lua: argument "scale" (index 3): a FLOAT32 scalar with pack_mode "value" would be truncated to '
    .. 'an integer in its int64 slot; use pack_mode = "bits" (its IEEE-754 bits)')
  rejects({ S(3, "scale", "FLOAT32_BITS", 0.125, "value") },
    'spec.lua: argument "scale" (index 3): a FLOAT32_BITS scalar with pack_mode "value" would be truncated to '
    .. 'an integer in its int64 slot; use pack_mode = "bits" (its IEEE-754 bits)')
  rejects({ S(3, "n", "INT32", 7, "bits") },
    'spec.lua: argument "n" (index 3): pack_mode "bits" applies to FLOAT32 scalars; INT32 is packed as its value')
  rejects({ S(3, "scale", "FLOAT32", 1e39) },
    'spec.lua: argument "scale" (index 3): value 1e+39 is outside the FLOAT32 range')
end

function TestSpecInvalid:test_other()
  rejects({ S(0, "n", "INT8", 200) }, 'spec.lua: argument "n" (index 0): value 200 does not fit INT8')
  rejects({ S(0, "n", "UINT32", -1) }, 'spec.lua: argument "n" (index 0): value -1 does not fit UINT32')
  rejects({ { kind = "blob", index = 0, name = "b" } }, "spec.lua: argument \"b\" (index 0): kind 'blob' is not tensor or scalar")
  rejects({ T(0, "x y") }, 'spec.lua: argument "x y" (index 0): name must be an identifier (letters, digits, _), got x y')
  rejects({ T(0, "x"), T(1, "x") }, 'spec.lua: argument "x" (index 1): duplicate name (also index 0)')
  rejects({ T(0, "x", { value = 1 }) }, 'spec.lua: argument "x" (index 0): a tensor takes no value or pack_mode (is it a scalar?)')
  rejects({ S(0, "n", "INT32", nil) }, 'spec.lua: argument "n" (index 0): scalar value missing')
  rejects({ T(0, "x") }, "spec.lua: block_dim 0 is not a whole number >= 1", { block_dim = 0 })
  local s, err = spec.check({ args = {} }, "spec.lua")
  lu.assertNil(s)
  lu.assertEquals(err, "spec.lua: no arguments (args, or tensors and scalars)")
end

TestSpecPacking = {}

function TestSpecPacking:test_float_bits()
  -- 0.5 = 0x3f000000, -2.25 = 0xc0100000, 1e-45 rounds to the smallest subnormal (1)
  local s = assert(spec.check { args = { S(0, "a", "FLOAT32", 0.5), S(1, "b", "FLOAT32_BITS", -2.25),
    S(2, "c", "FLOAT", 1e-45, "bits"), S(3, "d", "DT_FLOAT", 3) } })
  lu.assertEquals(s.args[1].packed, 0x3f000000)
  lu.assertEquals(s.args[2].packed, 0xc0100000)
  lu.assertEquals(s.args[3].packed, 1)
  lu.assertEquals(s.args[4].packed, 0x40400000)
  lu.assertEquals(s.args[4].pack_mode, "bits")
  lu.assertEquals(s.args[4].dtype, "FLOAT32")
end

function TestSpecPacking:test_integers_and_order()
  local s = assert(spec.check { tensors = { T(7, "x"), T(49, "y", { role = "output" }) },
    scalars = { S(2, "n", "INT32", -3), S(0, "flag", "BOOL", true) } })
  local idx = {}
  for i, a in ipairs(s.args) do idx[i] = a.index end
  lu.assertEquals(idx, { 0, 2, 7, 49 })
  lu.assertEquals(s.args[1].packed, 1)
  lu.assertEquals(s.args[2].packed, -3)
  lu.assertEquals(s.args[3].nbytes, 64)
  lu.assertEquals(s.args[4].role, "output")
end

function TestSpecPacking:test_json_round_trip()
  local dir = h.tmpdir()
  local s = assert(spec.check { kernel = "K", block_dim = 4,
    args = { T(0, "x"), S(1, "eps", "FLOAT32", 1e-6), S(2, "n", "INT64", 5) } })
  local path = h.write(dir .. "/s.json", spec.to_json(s))
  local back = assert(spec.load(path))
  lu.assertEquals(back, s)
  local lua_path = h.write(dir .. "/s.lua", "return { args = { { kind = 'tensor', index = 60, name = 'q', "
    .. "dtype = 'DT_BF16', shape = {1} } } }")
  local none, err = spec.load(lua_path)
  lu.assertNil(none)
  lu.assertEquals(err, lua_path .. ': argument "q" (index 60): index 60 is outside the 50-slot args array (0..49)')
  local bad = h.write(dir .. "/bad.json", '{"args": [')
  none, err = spec.load(bad)
  lu.assertNil(none)
  lu.assertStrContains(err, bad .. ": not valid JSON")
end

TestFromDb = {}

function TestFromDb:test_add_row()
  local row, n, file = fromdb.row(SEED, "Add", "16,7168;16,7168 -> 16,7168")
  lu.assertEquals(n, 1)
  local raw = assert(fromdb.spec("Add", row, { number = n, file = file }))
  local s = assert(spec.check(raw))
  lu.assertEquals(#s.args, 3)
  lu.assertEquals({ s.args[1].name, s.args[1].nbytes, s.args[3].role }, { "arg0", 16 * 7168 * 2, "output" })
end

function TestFromDb:test_scalars_from_the_builder()
  -- Muls replays as torch.mul(x, 2.0): the float becomes a FLOAT32 slot packed as bits
  local row, n = assert(fromdb.row(SEED, "Muls", 1))
  local raw = assert(fromdb.spec("Muls", row, { number = n }))
  local s = assert(spec.check(raw))
  lu.assertEquals({ s.args[2].kind, s.args[2].dtype, s.args[2].packed }, { "scalar", "FLOAT32", 0x40000000 })
end

function TestFromDb:test_errors()
  local _, err = fromdb.row(SEED, "Add", 9)
  lu.assertStrContains(err, "Add.csv: no data row 9 (it has 1)")
  _, err = fromdb.row(SEED, "Add", "1,2 -> 3")
  lu.assertStrContains(err, "Add.csv: no row with signature 1,2 -> 3")
  _, err = fromdb.row(SEED, "NoSuchKernel", 1)
  lu.assertStrContains(err, "NoSuchKernel.csv: no such file")
  local row = assert(fromdb.row(SEED, "AttentionUpdate", 1))
  _, err = fromdb.spec("AttentionUpdate", row, { number = 1 })
  lu.assertStrContains(err, "AttentionUpdate row 1 cannot be replayed")
end

TestWorkspace = {}

function TestWorkspace:test_render()
  lu.assertEquals(workspace.render("a @X@ b @Y_Z@", { X = 1, Y_Z = "q" }), "a 1 b q")
  local ok, err = pcall(workspace.render, "@NOPE@", {})
  lu.assertFalse(ok)
  lu.assertStrContains(err, "template placeholder @NOPE@ has no value")
  lu.assertEquals(workspace.c_string('a"b\\c\n'), '"a\\"b\\\\c\\012"')
end

function TestWorkspace:test_files_and_write()
  local s = assert(spec.check { kernel = "K", args = { T(0, "x"), S(1, "eps", "FLOAT32", 0.5) } })
  local files = workspace.files(s, { kernel_lib = "/lib/k.so", entry = "replay_entry" })
  lu.assertEquals({ files[1][1], files[2][1], files[3][1] }, { "host_runner.cpp", "CMakeLists.txt", "insight_spec.json" })
  lu.assertStrContains(files[1][2], '{1, "eps", UINT64_C(0x000000003f000000)},  // FLOAT32 0.5 (bits)')
  lu.assertStrContains(files[1][2], '{0, "x", UINT64_C(64), false},  // DT_BF16 [4,8] input')
  lu.assertNotStrContains(files[1][2], "@")
  local dir = h.tmpdir() .. "/ws"
  local w = assert(workspace.write(s, dir, {}))
  lu.assertEquals(#w, 3)
  lu.assertEquals(w[1].status, "created")
  w = assert(workspace.write(s, dir, {}))
  lu.assertEquals(w[1].status, "unchanged")
end

TestSymbols = {}

function TestSymbols:test_parse_and_match()
  local syms = symbols.parse_nm("0000000000001129 T _Z3addjPvPl\n0000000000001140 W _ZN2ns3addEv\n"
    .. "                 U printf\n0000000000004010 B counter\n0000000000001150 T replay_entry\n")
  lu.assertEquals(syms, { "_Z3addjPvPl", "_ZN2ns3addEv", "replay_entry" })
  local got, dem = symbols.match(syms, { "add(unsigned int, void*, long*)", "ns::add()", "replay_entry" }, "add")
  lu.assertEquals(got, { "_Z3addjPvPl", "_ZN2ns3addEv" })
  lu.assertEquals(dem[2], "ns::add()")
  got = symbols.match(syms, { "add_tail(int)", "x::add_more()", "replay_entry" }, "add")
  lu.assertEquals(got, {})
  local none, err = symbols.match(syms, { "add()" }, "add")
  lu.assertNil(none)
  lu.assertEquals(err, "c++filt returned 1 names for 3 symbols: cannot pair them")
end

TestSummary = {}

local HEADER = "instr,addr,pipe,call_count,cycles,running_time(us),detail\n"

local function package(dir, cores)
  local sim = dir .. "/OPPROF_20260101000000_ABCDEF/simulator"
  for name, text in pairs(cores) do
    assert(require("perfscript.fs").mkdir_p(sim .. "/" .. name))
    h.write(sim .. "/" .. name .. "/" .. name .. "_instr_exe.csv", text)
    h.write(sim .. "/" .. name .. "/trace.json", "{}")
  end
  h.write(sim .. "/trace.json", "{}")
  h.write(sim .. "/visualize_data.bin", "x")
  return sim
end

function TestSummary:test_pipes_and_top()
  local dir = h.tmpdir()
  package(dir, {
    ["core0.cubecore0"] = HEADER .. "MMAD,0x10,CUBE,4,800,0.5,\"m=16, n=16\"\nMOV_OUT_TO_L1,0x18,MTE2,2,200,0.1,\n",
    ["core0.veccore0"] = HEADER .. "VADD,0x20,VECTOR,10,100,0.05,\nMOV_UB_TO_OUT,0x28,MTE3,1,50,0.02,\n"
      .. "LD_XD,0x30,SCALAR,3,30,0.01,\nWAIT_FLAG,0x38,FLOWCTRL,2,20,0.01,\n",
    ["core1.veccore0"] = HEADER .. "VADD,0x20,VECTOR,10,100,0.07,\n",
  })
  local sim = assert(run.find_package(dir))
  local pkg = assert(run.check_package(sim))
  lu.assertEquals(#pkg.cores, 3)
  local s = assert(summary.read(pkg))
  lu.assertEquals(s.total_cycles, 1300)
  local by = {}
  for _, p in ipairs(s.pipes) do by[p.pipe] = p end
  lu.assertEquals(s.pipes[1].pipe, "cube")
  lu.assertEquals(s.pipes[7].pipe, "flowctrl")
  lu.assertEquals(by.vector.cycles, 200)
  lu.assertAlmostEquals(by.vector.time_us, 0.12, 1e-12)
  lu.assertAlmostEquals(by.vector.max_core_us, 0.07, 1e-12)
  lu.assertEquals(by.mte1.cycles, 0)
  lu.assertEquals({ s.top[1].instr, s.top[2].instr, s.top[2].cycles, s.top[2].calls }, { "MMAD", "MOV_OUT_TO_L1", 200, 2 })
  lu.assertEquals(s.top[3].instr, "VADD")  -- 200 cycles as MOV_OUT_TO_L1: equal cycles go by name
  local pipes, top = summary.tables(s, 2)
  lu.assertEquals(#top, 2)
  lu.assertStrContains(tostring(pipes), "cube         800")
  local page = summary.page(s, { kernel = "K<1>" })
  lu.assertStrContains(page, "<title>Insight trace: K&lt;1&gt;</title>")
  lu.assertStrContains(page, 'data-pipe="cube" data-value="61.5"')
end

function TestSummary:test_bad_files()
  local dir = h.tmpdir()
  local sim = package(dir, { ["core0.veccore0"] = HEADER .. "VADD,0x20,VECTOR,1,lots,0.1,\n" })
  local s, err = summary.read(assert(run.check_package(sim)))
  lu.assertNil(s)
  lu.assertEquals(err, sim .. "/core0.veccore0/core0.veccore0_instr_exe.csv:2: cycles 'lots' is not a number >= 0")
  local dir2 = h.tmpdir()
  local sim2 = package(dir2, { ["core0.veccore0"] = "instr,addr,call_count\n" })
  s, err = summary.read(assert(run.check_package(sim2)))
  lu.assertNil(s)
  lu.assertStrContains(err, "core0.veccore0_instr_exe.csv: no pipe column")
  os.remove(sim2 .. "/visualize_data.bin")
  os.remove(sim2 .. "/core0.veccore0/trace.json")
  local pkg, perr = run.check_package(sim2)
  lu.assertNil(pkg)
  lu.assertEquals(perr, sim2 .. ": incomplete simulator package, missing " .. sim2 .. "/visualize_data.bin, "
    .. sim2 .. "/core0.veccore0/trace.json")
end

os.exit(lu.LuaUnit.run())
