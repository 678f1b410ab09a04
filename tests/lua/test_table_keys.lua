-- The keys of a table's index on a plain (mostly distinct) shapes column, which the index holds
-- as hashes (issue 14: a row's hash is made from its parsed slots, a query's from its canonical
-- text): every row is found by the canonical text of its own cells, whatever its shapes
-- (scalars, a leading 1 stripped, negative, zero, 17- and 18-digit and extreme dimensions,
-- FRACTAL_NZ restored, many slots), texts that are not canonical find nothing, and a group's
-- key reads back as that text.
local lu = require "luaunit"
local h = require "tests.lua.helpers"
local T = require "perfscript.table"

local SHAPES = {
  "128,4096;4096,4096", "1,128;128,128", "1,1,128;128", "();4096", "();()", "0,5;7", "-3,4;5",
  "99999999999999999,2;3", "100000000000000000,2;3", "9223372036854775807;1", "-9223372036854775807,1",
  "1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1",
  "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16;2", "1,1", "7", "32,7168,128,16;4,5", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
}

TestTableKeys = {}

function TestTableKeys:test_every_row_finds_itself()
  local dir = h.tmpdir()
  local lines = { "Input Shapes,Input Formats,Input Data Types,Duration(us)" }
  local n = 0
  for rep = 1, 300 do  -- distinct cells: the shapes column goes plain (hashed keys)
    for j, s in ipairs(SHAPES) do
      n = n + 1
      local fmt = (j == 16 and rep % 2 == 0) and "FRACTAL_NZ;ND" or "ND;ND"
      lines[#lines + 1] = string.format('"""%s;%d""",%s,DT_BF16;DT_BF16,%d', s, 1000 + rep, fmt, n)
    end
  end
  local path = h.write(dir .. "/K.csv", table.concat(lines, "\n") .. "\n")
  local t = assert(T.load(path))
  lu.assertEquals(#t, n)
  local _, nstrings = t:memory()
  lu.assertTrue(nstrings < n // 2, "the shapes column is plain (its keys hashed)")
  for _, nslots in ipairs { 0, 2 } do
    local comp = { col = "Input Shapes", kind = "shapes", formats = "Input Formats", strip1 = true, n = nslots }
    local ix = t:index { comp, { col = "Input Data Types", kind = "list", n = nslots } }
    local found, skipped = 0, {}
    for _, r in ipairs(ix:skipped()) do skipped[r] = true; found = found + 1 end
    for i = 1, n do
      local key = t:key(comp, t:cell(i, "Input Shapes"), t:cell(i, "Input Formats"))
      if not key then  -- a cell the consumer cannot parse: the index skips the row
        lu.assertTrue(skipped[i], "row " .. i .. " has no key and is not skipped")
        goto continue
      end
      local rows = ix:find(key, "DT_BF16;DT_BF16")
      local hit = false
      for _, r in ipairs(rows) do
        if r == i then hit = true end
        lu.assertEquals(t:key(comp, t:cell(r, "Input Shapes"), t:cell(r, "Input Formats")), key)
      end
      lu.assertTrue(hit, string.format("row %d (%s, key %s) not found by its key", i, t:cell(i, "Input Shapes"), key))
      found = found + 1
      -- texts that are not the canonical text find nothing
      for _, other in ipairs { " " .. key, key .. ";", '"' .. key .. '"', key:gsub("(%d+)", "0%1", 1) } do
        if other ~= key then lu.assertEquals(#ix:find(other, "DT_BF16;DT_BF16"), 0, other) end
      end
      ::continue::
    end
    lu.assertEquals(found, n)
    for g = 1, ix:ngroups() do
      local _, first, k1 = ix:group(g)
      lu.assertEquals(k1, t:key(comp, t:cell(first, "Input Shapes"), t:cell(first, "Input Formats")))
      local rows = ix:find(k1, "DT_BF16;DT_BF16")
      lu.assertEquals(rows[1], first)
    end
  end
end

os.exit(lu.LuaUnit.run())
