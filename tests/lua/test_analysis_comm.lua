-- validate_comm_alignment and comm-bench planning examples (docs/rules.md, Analysis).
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local comm = require "perfscript.analysis.comm"
local cb = require "perfscript.analysis.commbench"

TestPredict = {}

function TestPredict:test_vectors()
  local cases = {
    { "all_reduce", 65536, 16, 1, 4.95533527696793 },
    { "all_reduce", 1310720, 16, 1, 23.1067055393586 },
    { "all_gather", 655360, 16, 1, 73.65014577259475 },
    { "all_reduce", 1024, 16, 1, 4.0149271137026235 },
    { "all_reduce", 128 * 1024 * 1024, 16, 1, 1849.2437317784259 },
    { "reduce_scatter", 1310720, 16, 1, 10.956268221574344 },
    { "all_to_all", 262144, 8, 1, 3.4106705539358604 },
    { "all_reduce", 65536, 2, 1, 1.4776676384839649 },
    { "all_reduce", 65536, 2, 2, 0.8179591836734694 },
    { "all_gather", 1024, 2, 2, 0.20653061224489797 },
    { "all_reduce", 1024, 32, 0, 55.01492711370262 },
  }
  for _, c in ipairs(cases) do
    lu.assertAlmostEquals(assert(comm.predict(c[1], c[2], c[3], c[4])), c[5], 1e-9 * c[5])
  end
  lu.assertEquals(comm.predict("all_reduce", 1024, 1, 1), 0.0)
  lu.assertTrue(comm.predict("all_reduce", 65536, 2, 2) < comm.predict("all_reduce", 65536, 2, 1))
  local p, err = comm.predict("broadcast", 1, 4, 1)
  lu.assertNil(p); lu.assertStrContains(err, "Unknown op_type: 'broadcast'")
  p, err = comm.predict("all_reduce", 1, 4, 7)
  lu.assertNil(p); lu.assertStrContains(err, "tier 7")
end

function TestPredict:test_ratio_and_status()
  lu.assertEquals(comm.ratio(100, 100), 1); lu.assertEquals(comm.ratio(200, 100), 2)
  lu.assertEquals(comm.ratio(50, 100), 0.5); lu.assertEquals(comm.ratio(5, 0), math.huge)
  local st = function(m) return comm.status(comm.ratio(m, 100), 2.0) end
  for m, want in pairs { [150] = "PASS", [60] = "PASS", [250] = "WARN", [30] = "WARN", [500] = "FAIL",
                         [10] = "FAIL", [200] = "PASS", [201] = "WARN", [50] = "PASS", [49] = "WARN",
                         [380] = "WARN", [400] = "WARN", [401] = "FAIL", [1000] = "FAIL", [24.9] = "FAIL" } do
    lu.assertEquals(st(m), want, tostring(m))
  end
  lu.assertEquals(comm.status(math.huge, 2.0), "FAIL")
end

function TestPredict:test_reports()
  local function rep(ratios)
    local rows = {}
    for i, r in ipairs(ratios) do
      local pred = comm.predict("all_reduce", 65536, 16, 1)
      rows[i] = { message_bytes = 65536, num_devices = 16, tier = 1, measured = r * pred }
    end
    return select(2, comm.validate("all_reduce", rows, 2.0))
  end
  local r = rep { 1, 1.5, 0.8 }
  lu.assertEquals({ r.PASS, r.WARN, r.FAIL, r.ok }, { 3, 0, 0, true })
  r = rep { 1, 2.5, 6 }
  lu.assertEquals({ r.PASS, r.WARN, r.FAIL, r.ok }, { 1, 1, 1, false })
  lu.assertAlmostEquals(rep({ 1, 2, 3 }).mean, 2, 1e-12)
  r = rep {}
  lu.assertTrue(r.ok); lu.assertTrue(r.mean ~= r.mean)
end

local function hcom_csv(rows, opts)
  return fx.csv({ "message_bytes", "num_devices", "dtype", "topology_tier", "Duration(us)", "bandwidth_gbps" },
                rows, opts)
end

TestReadRows = {}

function TestReadRows:test_parsing()
  local p = hcom_csv { { 65536, 16, "DT_BF16", 1, "5.50", "1" }, { "not_a_number", 16, "DT_BF16", 1, "5", "1" },
                       { 65536, 16, "DT_BF16", 9, "5", "1" } }
  local rows, dropped = assert(comm.read_rows(p))
  lu.assertEquals(#rows, 1); lu.assertEquals(rows[1].measured, 5.5); lu.assertEquals(rows[1].tier, 1)
  lu.assertEquals(#dropped, 2); lu.assertEquals(dropped[1][1], 3)
  lu.assertStrContains(dropped[2][2], "unknown topology tier 9")
  -- BOM-prefixed files keep their rows (the Python original silently dropped them all)
  rows = assert(comm.read_rows(hcom_csv({ { 65536, 16, "DT_BF16", 1, "5.50", "1" } }, { bom = true })))
  lu.assertEquals(#rows, 1)
  -- Average Duration(us) wins when present; no topology_tier column -> tier 1
  p = fx.csv({ "message_bytes", "num_devices", "Duration(us)", "Average Duration(us)" }, { { 1024, 2, "9", "3" } })
  rows = assert(comm.read_rows(p))
  lu.assertEquals(rows[1].measured, 3.0); lu.assertEquals(rows[1].tier, 1)
  -- empty file: no rows
  rows = assert(comm.read_rows(fx.write("empty.csv", "")))
  lu.assertEquals(#rows, 0)
end

TestCommBench = {}

function TestCommBench:test_tiers_and_groups()
  local function range(a, b) local t = {} for i = a, b do t[#t + 1] = i end return t end
  lu.assertEquals(cb.tier_of(range(0, 15)), 1)
  lu.assertEquals(cb.tier_of(range(0, 7)), 1)
  lu.assertEquals(cb.tier_of { 0, 1 }, 2)
  lu.assertEquals(cb.tier_of(range(0, 3)), 1)
  lu.assertEquals(cb.tier_of(range(0, 127)), 0)
  lu.assertEquals(cb.tier_of { 5 }, 2)
  lu.assertEquals(cb.group_for_tier(0, 16, 1), range(0, 15))
  lu.assertEquals(cb.group_for_tier(0, 8, 1), range(0, 7))
  lu.assertEquals(cb.group_for_tier(0, 2, 2), { 0, 1 })
  local g, err = cb.group_for_tier(0, 4, 2)
  lu.assertNil(g)
  lu.assertEquals(err, "num_devices=4 exceeds span size 2 for tier=2, grid_shape=[48, 8, 2]")
  lu.assertEquals(cb.group_for_tier(21, 4, 1), range(16, 19))
end

function TestCommBench:test_overheads_and_iterations()
  lu.assertEquals(cb.overhead("all_reduce", 16), 7.7)
  lu.assertEquals(cb.overhead("all_gather", 8), 1.2)
  lu.assertNil(cb.overhead("all_to_all", 16))
  lu.assertEquals(cb.active_iters(65536), 10)
  lu.assertEquals(cb.active_iters(cb.LARGE_MSG_THRESHOLD - 1), 10)
  lu.assertEquals(cb.active_iters(cb.LARGE_MSG_THRESHOLD), 1)
  lu.assertEquals(cb.active_iters(4 * cb.LARGE_MSG_THRESHOLD), 1)
  lu.assertEquals(#cb.DEFAULT_BYTES, 20)
  lu.assertEquals(#cb.SCRIPT_BYTES, 23)
end

function TestCommBench:test_plan()
  local s, w = cb.plan { ops = { "all_reduce", "all_gather" }, devices = { 16, 8, 4, 2 },
                         bytes = { 1024, 2048 }, script = "bench.py", out_dir = "out dir" }
  lu.assertEquals(#s, 8); lu.assertEquals(#w, 0)
  lu.assertEquals({ s[1].op, s[1].num_devices, s[1].tier, s[1].port }, { "all_reduce", 16, 1, 29700 })
  lu.assertEquals({ s[4].num_devices, s[4].tier }, { 2, 2 })
  lu.assertEquals(s[8].port, 29707)
  lu.assertEquals(s[1].argv[1], "torchrun")
  lu.assertEquals(s[1].argv[2], "--nproc_per_node=16")
  lu.assertStrContains(cb.command_line(s[1].argv), "--bytes-grid 1024 2048 --database-path 'out dir'")
  s, w = cb.plan { ops = { "all_reduce" }, devices = { 4 }, tiers = { 2, 1 }, bytes = { 1 }, script = "b",
                   out_dir = "o" }
  lu.assertEquals(#s, 1); lu.assertEquals(s[1].tier, 1)
  lu.assertStrContains(w[1], "skipping tier=2, num_devices=4")
end

os.exit(lu.LuaUnit.run())
