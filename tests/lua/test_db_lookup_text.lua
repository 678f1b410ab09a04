-- A lookup asked with a shapes text and a dtypes text goes to the C exact match as texts
-- (issue 14: no query tables unless the answer's query is read). Its answers are the ones
-- the same query gives as tables (the general path): fields, record, title, notes and the
-- printed result; its query, made when first read, is Kmethods:_query's of the texts; a text
-- the parse refuses raises the same error; one dtype stands for every input.
local lu = require "luaunit"
local perf = require "perfscript"
local h = require "tests.lua.helpers"

local HEAD, mm = h.MM_HEAD, h.mm

local function make_db()
  local dir = h.tmpdir()
  local rows = { HEAD }
  for i = 1, 60 do rows[#rows + 1] = mm(16 * i, 512, 1024, tostring(i), tostring(i + 0.5)) end
  rows[#rows + 1] = mm(16, 512, 1024, "99", "")            -- a tie of line 2 (file order wins)
  rows[#rows + 1] = mm(1, 4096, 4096, "", "7")              -- profiling column only
  rows[#rows + 1] = mm(5, 64, 64, "3", "", "ND;ND", "FLOAT16;FLOAT16")
  rows[#rows + 1] = 'dynamic,AI_CORE,"""128,512;64,32,16,16""",DT_BF16;DT_BF16,ND;FRACTAL_NZ,"""128,1024""",DT_BF16,ND,77,\n'
  h.write(dir .. "/MatMulV2.csv", table.concat(rows))
  return dir
end

local function shapes_of(text)
  local out = {}
  for slot in text:gmatch("[^;]+") do
    local dims = {}
    for d in slot:gmatch("[^,]+") do dims[#dims + 1] = math.tointeger(tonumber(d)) end
    out[#out + 1] = dims
  end
  return out
end

local function answer(res)
  local rec = {}
  for k, v in pairs(res[1] or {}) do rec[k] = v end
  return { latency = res.latency, row = res.row, line = res.line, column = res.column, rule = res.rule,
           rules = res.rules, source = res.source, confidence = res.confidence, miss = res.miss,
           columns = res.columns, widths = res.widths, notes = res.notes, title = res.title, rec = rec,
           shown = tostring(res) }
end

TestLookupText = {}

function TestLookupText:test_texts_answer_as_tables()
  local db = assert(perf.open(make_db()))
  local K = db.MatMulV2
  local queries = {
    { "16,512;1024,512", "DT_BF16;DT_BF16" }, { "480,512;1024,512", "DT_BF16;DT_BF16" },
    { "17,512;1024,512", "DT_BF16;DT_BF16" },   -- padded: distance 1
    { "1,16,512;1024,512", "DT_BF16;DT_BF16" }, -- a leading 1
    { "16,512;512,1024", "DT_BF16;DT_BF16" },   -- transposed second input
    { "1,4096;4096,4096", "DT_BF16;DT_BF16" }, { "5,64;64,64", "FLOAT16;FLOAT16" },
    { "128,512;512,1024", "DT_BF16;DT_BF16" },  -- the FRACTAL_NZ row restored
    { "16,512;1024,512", "DT_BF16" },           -- one dtype for every input
    { "16,512;1024,512", "bfloat16;bfloat16" }, -- the consumer's names
    { "16,512;1024,512", "FLOAT;FLOAT" }, { "999,512;1024,512", "DT_BF16;DT_BF16" }, -- misses
  }
  local measured = 0
  for _, qd in ipairs(queries) do
    local text, dtypes = qd[1], qd[2]
    local a = K:lookup(text, dtypes)
    local q = a.query  -- made when first read
    lu.assertEquals(q, K:_query(text, dtypes))
    local list = {}
    for d in dtypes:gmatch("[^;]+") do list[#list + 1] = d end
    local b = K:lookup(shapes_of(text), list)
    lu.assertEquals(answer(a), answer(b), text .. " " .. dtypes)
    -- the title read before the query: the same
    local c = K:lookup(text, dtypes)
    lu.assertEquals(c.title, b.title)
    lu.assertEquals(c.query, q)
    if a.source == "MEASURED" then measured = measured + 1 end
  end
  lu.assertTrue(measured >= 8, "most queries answered: " .. measured)
  -- no query tables for an answer whose query is not read
  local made = 0
  K._query = function(self, ...) made = made + 1; return getmetatable(self).__index._query(self, ...) end
  local r = K:lookup("32,512;1024,512", "DT_BF16;DT_BF16")
  lu.assertEquals(r.latency, 2)
  lu.assertEquals(made, 0)
  lu.assertEquals(r.query.shapes, { { 32, 512 }, { 1024, 512 } })
  lu.assertEquals(made, 1)
  K._query = nil
  -- a text the parse refuses: the error of the general path
  local ok, err = pcall(K.lookup, K, "16,x;1024,512", "DT_BF16;DT_BF16")
  lu.assertFalse(ok)
  lu.assertStrContains(tostring(err), "query shapes '16,x;1024,512'")
end

os.exit(lu.LuaUnit.run())
