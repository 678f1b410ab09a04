-- An exact lookup's answer makes its record (res[1]) when first read (issue 14: most answers
-- are read for their latency only): no record before, the same record after, and # and
-- ipairs, tostring and save see it as if it had been there from the start.
local lu = require "luaunit"
local perf = require "perfscript"
local h = require "tests.lua.helpers"

local function make_db()
  local dir = h.tmpdir()
  local rows = { h.MM_HEAD }
  for i = 1, 40 do rows[#rows + 1] = h.mm(16 * i, 512, 1024, tostring(i), tostring(i + 0.5)) end
  rows[#rows + 1] = h.mm(16, 512, 1024, "99", "")  -- a tie of line 2 (file order wins)
  h.write(dir .. "/MatMulV2.csv", table.concat(rows))
  return dir
end

local function record_of(res)
  local rec = {}
  for k, v in pairs(res[1]) do rec[k] = v end
  return rec
end

TestLookupLazy = {}

function TestLookupLazy:test_record_made_when_read()
  local dir = make_db()
  local db = assert(perf.open(dir))
  local K = db.MatMulV2
  K:lookup("32,512;1024,512", "DT_BF16;DT_BF16")  -- the first lookup prepares the index
  local made = 0
  K._row_record = function(self, ...) made = made + 1; return getmetatable(self).__index._row_record(self, ...) end
  for _, q in ipairs { "48,512;1024,512", "16,512;1024,512", "1,640,512;1024,512" } do
    made = 0
    local r = K:lookup(q, "DT_BF16;DT_BF16")
    lu.assertEquals(r.source, "MEASURED", q)
    lu.assertNumber(r.latency)
    lu.assertEquals(made, 0, q .. ": no record until it is read")
    lu.assertEquals(#r, 1)
    lu.assertEquals(made, 1, q .. ": # makes it")
    local n = 0
    for _, rec in ipairs(r) do n = n + 1; lu.assertEquals(rec.row, r.row) end
    lu.assertEquals(n, 1)
    lu.assertEquals(made, 1, q .. ": made once")
  end
  K._row_record = nil
  -- the record, the title and the printed answer equal those of the table form (the general
  -- path), read in any order
  local db2 = assert(perf.open(dir))
  for _, q in ipairs { { "16,512;1024,512", { { 16, 512 }, { 1024, 512 } } },
                       { "1,48,512;1024,512", { { 1, 48, 512 }, { 1024, 512 } } } } do
    local a = K:lookup(q[1], "DT_BF16;DT_BF16")
    local b = db2.MatMulV2:lookup(q[2], { "DT_BF16", "DT_BF16" })
    lu.assertEquals(tostring(a), tostring(b))  -- # before [1], the title, the notes
    lu.assertEquals(record_of(a), record_of(b))
    local c = K:lookup(q[1], "DT_BF16;DT_BF16")
    lu.assertEquals(record_of(c), record_of(b))  -- [1] first
    lu.assertEquals(c.title, b.title)
    lu.assertEquals(c.rules, b.rules)
    lu.assertEquals(c:matrix(), b:matrix())
  end
  -- a record set by the caller before any read stays
  local r = K:lookup("48,512;1024,512", "DT_BF16;DT_BF16")
  r[1] = { mine = true }
  lu.assertEquals(r[1], { mine = true })
  lu.assertEquals(#r, 1)
end

-- ix:exact's tenth value is the row's line (what the answer's line field takes), and its
-- remembered dtypes key answers as a fresh index does: dtypes texts switched back and forth,
-- one of them no row has.
function TestLookupLazy:test_exact_line_and_dtypes_switch()
  local dir = h.tmpdir()
  local rows = { h.MM_HEAD }
  for i = 1, 30 do
    rows[#rows + 1] = h.mm(16 * i, 512, 1024, tostring(i), "", "ND;ND", i % 3 == 0 and "FLOAT16;FLOAT16" or "DT_BF16;DT_BF16")
  end
  h.write(dir .. "/MatMulV2.csv", table.concat(rows))
  local db = assert(perf.open(dir))
  local K = db.MatMulV2
  K:lookup("16,512;1024,512", "DT_BF16;DT_BF16")
  local L = K:_lookup_index(0)
  local t = K:table()
  local row, _, _, _, _, _, _, _, joined, line = L.ix:exact(L.sx, "32,512;1024,512", { "DT_BF16", "DT_BF16" }, L.kind, L.fg)
  lu.assertEquals(row, 2)
  lu.assertEquals(line, t:line(row))
  lu.assertEquals(joined, "identity,identity")
  local seq = { { "48,512;1024,512", "FLOAT16;FLOAT16" }, { "32,512;1024,512", "DT_BF16;DT_BF16" },
                { "32,512;1024,512", "INT8;INT8" }, { "96,512;1024,512", "FLOAT16;FLOAT16" },
                { "64,512;1024,512", "DT_BF16;DT_BF16" }, { "48,512;1024,512", "DT_BF16;DT_BF16" },
                { "32,512;1024,512", "INT8;INT8" }, { "80,512;1024,512", "DT_BF16;DT_BF16" } }
  for _, q in ipairs(seq) do
    local a = K:lookup(q[1], q[2])
    local fresh = assert(perf.open(dir)).MatMulV2:lookup(q[1], q[2])
    lu.assertEquals(tostring(a), tostring(fresh), q[1] .. " " .. q[2])
    lu.assertEquals(a.line, fresh.line)
  end
end

os.exit(lu.LuaUnit.run())
