-- The Lua pass of csv_bench.sh: every record handed to Lua as a table of strings
-- (a fresh table per record, or with "reuse" one table refilled).
local csv = require "perfscript.csv"
local t0 = os.clock()
local reuse = arg[2] == "reuse"
local r = assert(csv.open(arg[1], { header = false, reuse = reuse }))
local n, fields = 0, 0
for f in r:lines() do
  n = n + 1
  fields = fields + #f
end
local _, bytes = r:progress()
print(string.format("%s %d %.4f %d", reuse and "lua_reuse" or "lua", bytes, os.clock() - t0, n))
