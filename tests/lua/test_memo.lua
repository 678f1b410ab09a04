-- perfscript.memo.bounded: the one bounded memo of the replay checks' and the matching model's
-- cell texts.
local lu = require "luaunit"
local memo = require "perfscript.memo"

TestMemo = {}

function TestMemo:test_remembers_and_starts_over_in_place()
  local calls = 0
  local get, cache = memo.bounded(function(s) calls = calls + 1; return s:upper(), "dropped" end, 3)
  lu.assertEquals(get("a"), "A")
  lu.assertEquals(select("#", get("a")), 1)        -- the first value only
  lu.assertEquals(calls, 1)                        -- the second ask was remembered
  lu.assertEquals(cache.a, "A")                    -- readable inline
  get("b"); get("c")
  lu.assertEquals(calls, 3)
  lu.assertEquals(get("d"), "D")                   -- past the limit: emptied, then d
  lu.assertEquals(calls, 4)
  lu.assertNil(cache.a)
  lu.assertEquals(cache.d, "D")                    -- the same table, still the one to read
  lu.assertEquals(get("a"), "A")
  lu.assertEquals(calls, 5)
end

function TestMemo:test_shared_results_across_users()
  local common = require "perfscript.replay.common"
  lu.assertEquals(common.dtype("float16"), common.dtype("float16"))
  lu.assertEquals(common.dtype(" DT_BF16 "), require("perfscript.shape").dtype_normalize(" DT_BF16 "))
end

os.exit(lu.LuaUnit.run())
