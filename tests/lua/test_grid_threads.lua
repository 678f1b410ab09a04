-- The shape grid in forked workers (grid/run.lua's threads, perfscript.proc.fork_map): the same
-- files, stats, report and callbacks as one process; a failing worker leaves the database as
-- it was; the database lock stays the parent's; a worker's staged files move to the parent's
-- stage (st:detach, st:adopt); stats cross processes exactly (perfscript.wire).
local lu = require "luaunit"
local perf = require "perfscript"
local lfs = require "lfs"
local run = require "perfscript.grid.run"
local cli = require "perfscript.grid.cli"
local proc = require "perfscript.proc"
local wire = require "perfscript.wire"
local paths = require "perfscript.path"

local SRC = os.getenv("PERFSCRIPT_SOURCE_DIR") or "."
local SEED = SRC .. "/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
local TMP = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/grid_threads"
local DSV3 = "deepseek-ai/DeepSeek-V3"
-- MatMulV2 before MatMulV3 (one op), patterns shared by several files, and files alone
local KERNELS = { "MatMulV2", "MatMulV3", "BatchMatMulNd", "TransposeBatchMatMul", "Add", "Mul", "Equal",
                  "Less", "AddRmsNorm", "InplaceAddRmsNorm", "PadV3", "Index", "SwiGlu", "Cumsum",
                  "FusedInferAttentionScore", "GroupedMatmulSwigluQuant" }

local function read(path)
  local f = assert(io.open(path, "rb")); local t = f:read("a"); f:close(); return t
end

-- A database directory of the seed's files for KERNELS (and its op_mapping.yaml).
local function make_db(name)
  local dir = TMP .. "/" .. name
  paths.rmtree(dir)
  assert(perf.fs.mkdir_p(dir))
  for _, k in ipairs(KERNELS) do assert(perf.fs.write_atomic(dir .. "/" .. k .. ".csv", read(SEED .. "/" .. k .. ".csv"))) end
  assert(perf.fs.write_atomic(dir .. "/op_mapping.yaml", read(SEED .. "/op_mapping.yaml")))
  return dir
end

-- name -> bytes of every file in dir (temporary files included: none may be left)
local function snapshot(dir)
  local t = {}
  for name in lfs.dir(dir) do
    if name ~= "." and name ~= ".." and name ~= ".perfscript.lock" then t[name] = read(dir .. "/" .. name) end
  end
  return t
end

-- Two snapshots hold the same names and bytes (said briefly: luaunit's diff of big strings is slow).
local function assert_same(got, want)
  local names = {}
  for k in pairs(want) do names[#names + 1] = k end
  for k in pairs(got) do if want[k] == nil then names[#names + 1] = k end end
  table.sort(names)
  for _, k in ipairs(names) do
    lu.assertNotNil(got[k], "missing: " .. k)
    lu.assertNotNil(want[k], "unexpected: " .. k)
    lu.assertTrue(got[k] == want[k], "differs: " .. k)
  end
end

local RULES = cli.load_rules()

-- One run; returns its results, what print and progress saw, and the CSV report's bytes.
local function grow(dir, threads, rules)
  local printed, progressed = {}, {}
  local report = dir .. ".report.csv"
  os.remove(report)
  local res = run.run { dir = dir, models = { DSV3 }, rows = 40, seed = 7, rules = rules or RULES,
                        replayable_only = true, threads = threads,
                        print = function(st) printed[#printed + 1] = st.file end,
                        progress = function(n, total, name) progressed[#progressed + 1] = n .. "/" .. total .. " " .. name end,
                        also_stage = function(results, stage) cli.write_report(report, results, print, stage) end }
  return res, printed, progressed, read(report)
end

function test_workers_grow_what_one_process_grows()
  local one, three = make_db("one"), make_db("three")
  local r1, p1, g1, rep1 = grow(one, 1)
  local r3, p3, g3, rep3 = grow(three, 16)  -- more workers than groups: one group each, mostly
  lu.assertEquals(r3, r1)                    -- stats, in the same order, every field
  lu.assertEquals(p3, p1)
  lu.assertEquals(g3, g1)
  lu.assertTrue(rep3 == rep1, "the reports differ")
  local s1, s3 = snapshot(one), snapshot(three)
  assert_same(s3, s1)
  -- the run did grow, and MatMulV3 saw the rows MatMulV2 got (the reach state stayed together)
  local by = {}
  for _, r in ipairs(r3) do by[r.kernel] = r end
  lu.assertTrue(by.MatMulV2.appended > 0)
  lu.assertTrue(by.MatMulV3.shadowed > 0)
  lu.assertTrue(s3["MatMulV2.csv"] ~= read(SEED .. "/MatMulV2.csv"))
  -- integers stay integers through the workers (the summary prints them as such)
  lu.assertEquals(math.type(by.Add.candidates), "integer")
  -- a second run appends nothing either way
  local again = grow(three, 2)
  for _, r in ipairs(again) do lu.assertEquals(r.appended or 0, 0, r.file) end
end

function test_a_failing_worker_leaves_the_database_untouched()
  local dir = make_db("fail")
  local before = snapshot(dir)
  -- a rule that fails in the worker growing Cumsum (its pattern is alone in its group), while
  -- the other groups grow and stage their files first
  local patterns = setmetatable({ bad = { iterators = { { "M", { 8, -16 } } }, inputs = { "(M, 8)" }, outputs = { "(M, 8)" } } },
                                { __index = RULES.patterns })
  local assignments = setmetatable({ Cumsum = "bad" }, { __index = RULES.assignments })
  local rules = { patterns = patterns, assignments = assignments, grids = RULES.grids, scenes = RULES.scenes }
  for _, threads in ipairs { 2, 1 } do
    local ok, e = pcall(grow, dir, threads, rules)
    lu.assertFalse(ok)
    lu.assertTrue(perf.is_user_error(e), tostring(e))
    lu.assertStrContains(tostring(e), "pattern 'bad' (kernel Cumsum): generated dimension -16")
    assert_same(snapshot(dir), before)   -- no file changed, no temporary file left
    -- the lock was released
    local lock, err = perf.fs.lock(dir, { wait = false })
    lu.assertNotNil(lock, err)
    lock:release()
  end
end

-- An error here, in the parent, while the workers' results come in (an interrupt in the
-- progress callback): every file they staged is removed, the lock released.
function test_an_error_in_the_parent_removes_what_the_workers_staged()
  local dir = make_db("parent_error")
  local before = snapshot(dir)
  local ok, e = pcall(run.run, { dir = dir, models = { DSV3 }, rows = 40, seed = 7, rules = RULES, threads = 2,
                                progress = function(n) if n == 3 then error("interrupted!") end end })
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(e), "interrupted!")
  assert_same(snapshot(dir), before)
  local lock, err = perf.fs.lock(dir, { wait = false })
  lu.assertNotNil(lock, err)
  lock:release()
end

-- A worker shares the parent's lock (one flock, inherited): ending it must not release it.
function test_workers_never_release_the_lock()
  local dir = make_db("lock")
  local lock = assert(perf.fs.lock(dir))
  local function try_lock()
    local got = {}
    assert(proc.fork_map({ 1 }, function()
      local l, err = perf.fs.lock(dir, { wait = false, quiet = true })
      return l and "taken" or ("refused: " .. tostring(err))
    end, function(_, _, s) got[1] = s end, 1))
    return got[1]
  end
  -- workers that end normally, by os.exit and by an error
  assert(proc.fork_map({ 1, 2 }, function(j) return tostring(j) end, function() end, 2))
  proc.fork_map({ 1 }, function() os.exit(3) end, function() end, 1)
  proc.fork_map({ 1 }, function() error("boom") end, function() end, 1)
  lu.assertStrContains(try_lock(), "refused")
  -- the grid's workers too: while the parent stages its report the lock is still held
  lock:release()
  local seen
  run.run { dir = dir, models = { DSV3 }, rows = 5, seed = 1, rules = RULES, threads = 2, dry_run = false,
            also_stage = function() seen = try_lock() end }
  lu.assertStrContains(seen, "refused")
  lu.assertStrContains(try_lock(), "taken")
end

function test_fork_map_reports_failures()
  local got = {}
  local ok, err = proc.fork_map({ 3, 1, 2 }, function(j)
    if j == 2 then perf.fail("file %d.csv: bad", j) end
    return ("r%d"):format(j)
  end, function(j, good, s) got[j] = { good, s } end, 1)
  lu.assertNil(ok)
  lu.assertEquals(err, "job 2: file 2.csv: bad")
  lu.assertEquals(got, { [3] = { true, "r3" }, [1] = { true, "r1" }, [2] = { false, "file 2.csv: bad" } })
  ok, err = proc.fork_map({ 1 }, function() return {} end, function() end)
  lu.assertNil(ok)
  lu.assertStrContains(err, "returned a table, not a string")
  -- an error in done is raised here, once the workers are gone
  local calls = 0
  lu.assertErrorMsgContains("in done", proc.fork_map, { 1, 2, 3 }, function() return "x" end,
                            function() calls = calls + 1; error("in done") end, 2)
  -- what arrived after the error still reached done (it may hold what must be released)
  lu.assertTrue(calls >= 1)
  lu.assertTrue(proc.cores() >= 1)
end

function test_stage_detach_and_adopt()
  local dir = TMP .. "/stage"
  paths.rmtree(dir)
  assert(perf.fs.mkdir_p(dir))
  assert(perf.fs.write_atomic(dir .. "/a.csv", "old\n"))
  local w, p = perf.fs.stage(), perf.fs.stage()
  assert(perf.fs.write_atomic(dir .. "/a.csv", "new\n", { stage = w }))
  assert(perf.fs.write_atomic(dir .. "/b.csv", "b\n", { stage = w }))
  local list = w:detach()
  lu.assertEquals(#list, 2)
  lu.assertEquals(list[1].status, "replaced")
  lu.assertEquals(list[2].status, "created")
  lu.assertEquals(#w:files(), 0)
  w:abort()                       -- the detached files are not the worker's to remove
  local back = wire.decode(wire.encode(list))
  lu.assertTrue(p:adopt(back))
  lu.assertEquals(read(dir .. "/a.csv"), "old\n")
  local done = assert(p:commit())
  lu.assertEquals(#done, 2)
  lu.assertEquals(read(dir .. "/a.csv"), "new\n")
  lu.assertEquals(read(dir .. "/b.csv"), "b\n")
  -- a list naming a file that is not a temporary file of its target is refused
  local q = perf.fs.stage()
  local ok, err = q:adopt { { path = dir .. "/a.csv", tmp = dir .. "/b.csv", status = "replaced" } }
  lu.assertNil(ok)
  lu.assertStrContains(err, "is not a temporary file of it")
  lu.assertEquals(#q:files(), 0)
  lu.assertErrorMsgContains("needs path, tmp and status", q.adopt, q, { { path = "x" } })
  q:abort()
  lu.assertEquals(read(dir .. "/b.csv"), "b\n")
end

function test_wire_round_trip()
  local v = { 1, 2.0, -0.0, 1 / 3, math.maxinteger, math.mininteger, 2 ^ 53 + 0.0, "a\0b\n\"", {}, true, false,
              why = { ["no builder for X"] = 4 }, [1.5] = "k", nested = { { {} } } }
  local back = wire.decode(wire.encode(v))
  lu.assertEquals(back, v)
  for i = 1, 7 do lu.assertEquals(math.type(back[i]), math.type(v[i]), i) end
  lu.assertEquals(1 / back[3], -math.huge)
  lu.assertNil(wire.decode(wire.encode(nil)))
  lu.assertErrorMsgContains("cannot pass a function", wire.encode, { print })
end

os.exit(lu.LuaUnit.run())
