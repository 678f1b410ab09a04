-- The perfscript side of fuzz/num_diff.py: reads hex-encoded cells, one a line, and prints per
-- cell "<float as %a or nil> <int or nil>" from perfscript.num.parse and perfscript.num.int.
local num = require "perfscript.num"
for line in io.stdin:lines() do
  local cell = line:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
  local f, i = num.parse(cell), num.int(cell)
  local ftext = f == nil and "nil" or f ~= f and "nan" or string.format("%a", f)
  io.write(ftext, " ", i == nil and "nil" or tostring(i), "\n")
end
