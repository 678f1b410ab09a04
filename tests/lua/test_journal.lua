-- perfscript.microbench.journal: create / join / open, plan and marks in the shard's own file,
-- the union read back with each case's status and the counts per shard, list and resolve,
-- and a bad line named with its file and line.
local lu = require "luaunit"
local h = require "helpers"
local journal = require "perfscript.microbench.journal"

local function cases(n, shards)
  local out = {}
  for i = 0, n - 1 do
    out[#out + 1] = { id = "Add:" .. (i + 2), op = "Add", sig = "8,8 -> 8,8", device = "0",
      shard = shards and (i % shards) + 1 or 1, index = i }
  end
  return out
end

TestJournal = {}

function TestJournal:test_create_plan_mark_read()
  local db = h.tmpdir()
  local j = assert(journal.create(db, { id = "r1", version = "0.1.0", database = db }))
  lu.assertTrue(j.created)
  lu.assertEquals(j.dir, db .. "/.perfscript/runs/r1")
  assert(j:plan(cases(4)))
  assert(j:mark("Add:2", "done", nil, "b1"))
  assert(j:marks({ { case = "Add:3", status = "failed", reason = "boom" },
                   { case = "Add:4", status = "timeout", reason = "a timeout" } }))
  local info = assert(journal.read(j.dir))
  lu.assertEquals(info.totals, { total = 4, done = 1, failed = 1, timeout = 1, left = 1 })
  lu.assertEquals(info.cases["Add:3"].reason, "boom")
  lu.assertEquals(info.order, { "Add:2", "Add:3", "Add:4", "Add:5" })
  lu.assertTrue(info.batches.b1)
  -- a done case stays done; a later failure of it changes nothing
  assert(j:mark("Add:2", "failed", "late"))
  assert(j:mark("Add:3", "done", nil, "b2"))
  info = assert(journal.read(j.dir))
  lu.assertEquals(info.cases["Add:2"].status, "done")
  lu.assertEquals(info.totals, { total = 4, done = 2, failed = 0, timeout = 1, left = 1 })
  lu.assertStrContains(journal.summary(info)[1], "run r1: 4 case(s): 2 done, 0 failed, 1 timed out, 1 left")
  lu.assertErrorMsgContains("bad status", function() j:mark("Add:2", "ok") end)
end

function TestJournal:test_shards_union_and_join()
  local db = h.tmpdir()
  local all = cases(6, 3)
  for k = 1, 3 do
    local j = assert(journal.create(db, { id = "R", version = "0.1.0" }, { k = k, n = 3 }))
    lu.assertEquals(j.created, k == 1)  -- the others join
    local mine = {}
    for _, c in ipairs(all) do if c.shard == k then mine[#mine + 1] = c end end
    assert(j:plan(mine))
    assert(j:mark(mine[1].id, "done", nil, "s" .. k))
  end
  local info = assert(journal.read(db .. "/.perfscript/runs/R"))
  lu.assertEquals(info.totals.total, 6)
  for k = 1, 3 do lu.assertEquals(info.shards[k], { total = 2, done = 1, failed = 0, timeout = 0, left = 1 }) end
  local lines = journal.summary(info)
  lu.assertEquals(#lines, 4)
  lu.assertStrContains(lines[3], "shard 2: 2 case(s): 1 done")
  local files = {}
  for name in require("lfs").dir(info.dir) do if name:match("^journal") then files[#files + 1] = name end end
  table.sort(files)
  lu.assertEquals(files, { "journal-shard1.jsonl", "journal-shard2.jsonl", "journal-shard3.jsonl" })
end

function TestJournal:test_list_resolve_and_errors()
  local db = h.tmpdir()
  lu.assertNil(journal.resolve(db, "last"))
  assert(journal.create(db, { id = "old", created_epoch = 100 }))
  assert(journal.create(db, { id = "new", created_epoch = 200 }))
  local runs = journal.list(db)
  lu.assertEquals({ runs[1].id, runs[2].id }, { "new", "old" })
  lu.assertEquals(select(2, journal.resolve(db, "last")), "new")
  lu.assertEquals(journal.resolve(db, "old"), db .. "/.perfscript/runs/old")
  local none, why = journal.resolve(db, "nope")
  lu.assertNil(none)
  lu.assertStrContains(why, "no run nope")
  lu.assertStrContains(why, "new, old")
  lu.assertErrorMsgContains("bad run id", function() journal.resolve(db, "../x") end)
  local dir = db .. "/.perfscript/runs/new"
  h.write(dir .. "/journal.jsonl", '{"ev":"plan","case":"Add:2"}\n{oops\n')
  local info, err = journal.read(dir)
  lu.assertNil(info)
  lu.assertStrContains(err, dir .. "/journal.jsonl:2: not a journal record")
end

-- --shard K/N takes index % N == K-1 (0-based index, 1-based shard)
function TestJournal:test_shard_of()
  lu.assertEquals({ journal.shard_of(0, 3), journal.shard_of(1, 3), journal.shard_of(2, 3), journal.shard_of(3, 3) },
    { 1, 2, 3, 1 })
  lu.assertEquals(journal.shard_of(5, 1), 1)
end

os.exit(lu.LuaUnit.run())
