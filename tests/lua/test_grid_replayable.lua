-- The grid's --replayable-only (lua/perfscript/grid/run.lua with the replay registry): rows no
-- builder replays are left out and counted with their reason; where every row replays the
-- sample is the one of a run without the check.
local lu = require "luaunit"
local run = require "perfscript.grid.run"

TestSampleWhere = {}

function TestSampleWhere:test_same_draws_when_every_row_passes()
  for _, n in ipairs { 10, 1000, 6253 } do
    lu.assertEquals(run.sample_where(n, 7, 3, "K", function() return true end), run.sample(n, 7, 3, "K"))
    lu.assertEquals(run.sample_where(n, 7, 3, "K", nil), run.sample(n, 7, 3, "K"))
  end
end

function TestSampleWhere:test_refused_rows_replaced_by_later_draws()
  local odd = function(i) return i % 2 == 1 end
  local got = run.sample_where(100, 10, 0, "K", odd)
  lu.assertEquals(#got, 10)
  for _, i in ipairs(got) do lu.assertTrue(odd(i)) end
  -- fewer passing rows than asked: all of them
  lu.assertEquals(#run.sample_where(10, 8, 0, "K", odd), 5)
  lu.assertEquals(#run.sample_where(10, 8, 0, "K", function() return false end), 0)
end

-- The builders' verdicts are asked once for the files of a pattern whose templates differ only
-- in the cells every candidate overwrites (MatMulV2 and MatMulV3: one builder, templates with
-- other shapes): the second file's rows come from the memo, with the same counts.
TestVerdictMemo = {}

function TestVerdictMemo:test_matmul_files_share_the_verdicts()
  local perf = require "perfscript"
  local reg = require "perfscript.replay.registry"
  lu.assertEquals(reg.builder("MatMulV3"), reg.builder("MatMulV2"))
  local dir = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/grid_verdict_memo." .. tostring(os.time())
  assert(perf.fs.mkdir_p(dir))
  local header = "OP State,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,"
    .. "Output Formats,Duration(us)\n"
  for k, shapes in pairs { MatMulV2 = '"64,128;256,128","64,256"', MatMulV3 = '"32,128;512,128","32,512"' } do
    local f = assert(io.open(dir .. "/" .. k .. ".csv", "wb"))
    local is, os_ = shapes:match('^("[^"]*"),(".*")$')
    f:write(header, "dynamic,", is, ",DT_BF16;DT_BF16,ND;ND,", os_, ",DT_BF16,ND,12.5\n")
    f:close()
  end
  local calls = 0
  local counting = { builder = reg.builder, verdict = function(...) calls = calls + 1; return reg.verdict(...) end }
  local function generate(emit)
    for _, m in ipairs { 1, 8, 64 } do
      for _, k in ipairs { 64, 128 } do
        emit { inputs = { { m, k }, { 256, k } }, outputs = { { m, 256 } } }
        emit { inputs = { { m, k }, { 256, k + 1 } }, outputs = { { m, 256 } } }  -- k disagrees: refused
      end
    end
  end
  local cache, stats = {}, {}
  for _, k in ipairs { "MatMulV2", "MatMulV3" } do
    stats[k] = run.process { path = dir .. "/" .. k .. ".csv", name = k .. ".csv", kernel = k, rows = 0, seed = 0,
                             replayable = counting, dry_run = true, pattern = "matmul", generate = generate,
                             cache = cache }
  end
  lu.assertEquals(calls, 12)  -- the first file's candidates only
  for _, k in ipairs { "MatMulV2", "MatMulV3" } do
    lu.assertEquals(stats[k].unreplayable, 6, k)
    lu.assertEquals(stats[k].appended + stats[k].present, 6, k)  -- MatMulV2's template is a candidate
  end
  require("perfscript.path").rmtree(dir)
end

os.exit(lu.LuaUnit.run())
