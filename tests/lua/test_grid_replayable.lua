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

os.exit(lu.LuaUnit.run())
