-- A row always finds itself (issue 12): every row of every kernel type of the bundled seed
-- database, and every row the DeepSeek-V3 grid grows into a scratch copy of it, looked up by
-- its own cells (the record db:rows() gives) is answered by itself, or by an earlier row the
-- consumer cannot tell from it. Theory rows get a latency first (the test is about shapes).
local lu = require "luaunit"
local h = require "helpers"
local perf = require "perfscript"
local path = require "perfscript.path"
local db_mod = require "perfscript.db"

local SEED = (os.getenv("PERFSCRIPT_SOURCE_DIR") or ".") ..
             "/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

-- The lines db:lint calls unreachable (the consumer itself never answers with them).
local function unreachable(db, name)
  local lines = {}
  for _, f in ipairs(db:lint(name)) do
    if f.kernel == name and f.line and tostring(f.problem):find("^unreachable") then lines[f.line] = true end
  end
  return lines
end

-- Looks every row of every kernel up by its record; returns the failures (kernel:line why),
-- the rows looked up and the rows the linter calls unreachable (their misses are expected).
local function self_lookups(dir)
  local db = assert(perf.open(dir))
  local bad, n, skipped = {}, 0, 0
  for _, name in ipairs(db:names()) do
    local K = db:kernel(name)
    local lint
    if K:table():column(db_mod.IS) then
      local rows = K:rows()
      for _, rec in ipairs(rows) do
        n = n + 1
        local ok, res = pcall(K.lookup, K, rec)
        local why
        if not ok then
          why = "error " .. tostring(type(res) == "table" and res.message or res)
        elseif not res.latency then
          why = res.title
        elseif res.row ~= rec.row then
          -- another row may answer only when it comes first and answers the same query
          local other = K:lookup(rows[res.row])
          if res.row > rec.row or other.row ~= res.row then why = res.title end
        end
        if why then
          lint = lint or unreachable(db, name)
          if lint[rec.line] then skipped = skipped + 1 else bad[#bad + 1] = string.format("%s:%d %s", name, rec.line, why) end
        end
      end
    end
  end
  return bad, n, skipped
end

TestSelfLookup = {}

function TestSelfLookup:test_seed_rows_find_themselves()
  local dir = h.tmpdir() .. "/db"
  assert(path.copy_tree(SEED, dir))
  local bad, n = self_lookups(dir)
  lu.assertTrue(n > 80)
  lu.assertEquals(bad, {})
end

function TestSelfLookup:test_grid_rows_find_themselves()
  local dir = h.tmpdir() .. "/db"
  assert(path.copy_tree(SEED, dir))
  local bin = assert(os.getenv("PERFSCRIPT"), "PERFSCRIPT (the binary) is set by ctest")
  local src = os.getenv("PERFSCRIPT_SOURCE_DIR") or "."
  local ok = os.execute(string.format("%q %q --database-path %q > %q 2>&1", bin, src .. "/recipes/dsv3_grid.lua",
                                      dir, dir .. "/../grid.log"))
  lu.assertTrue(ok, h.read(dir .. "/../grid.log"))
  -- a theory row of the grid misses for its latency, and says so
  local db = assert(perf.open(dir))
  local gm = db:kernel("GroupedMatmul")
  lu.assertTrue(#gm:table() > 100)
  local theory = gm:lookup(gm:rows()[#gm:table()])
  lu.assertStrContains(theory.reason or "", "no_valid_latency")
  h.fill_latencies(dir)
  local bad, n = self_lookups(dir)
  lu.assertTrue(n > 20000)
  lu.assertEquals(bad, {})
  -- the grid wrote no AddRmsNorm row that AddRmsNormBias (tried first) answers: their
  -- trailing DT_UNDEFINED is not compared by the consumer
  local measured = assert(perf.open(dir))
  lu.assertEquals(next(unreachable(measured, "AddRmsNorm")), nil)
end

-- The row's own cells as text with its formats find it; without the formats the miss names
-- the FRACTAL_NZ restore and the shapes to ask.
function TestSelfLookup:test_fractal_nz_text_query()
  local db = assert(perf.open(SEED))
  local rec = db:rows("GroupedMatmul")[1]
  local q = { shapes = rec["Input Shapes"], dtypes = rec["Input Data Types"], formats = rec["Input Formats"] }
  lu.assertEquals(db:lookup("GroupedMatmul", q).line, rec.line)
  local miss = db:lookup("GroupedMatmul", rec["Input Shapes"], rec["Input Data Types"])
  lu.assertEquals(miss.miss, "shape_mismatch")
  lu.assertStrContains(miss.reason, "FRACTAL_NZ tile layout")
  lu.assertStrContains(miss.reason, "16,7168;32,4096,7168;32,4096;32;16")
end

os.exit(lu.LuaUnit.run())
