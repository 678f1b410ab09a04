-- The perfscript side of fuzz/expr_diff.py: reads lines "name=value,...<TAB>expression" from
-- stdin and prints, per line, "ok <integer>" (booleans as 1 and 0) or "err <message>".
local expr = require "perfscript.expr"
for line in io.stdin:lines() do
  local vars_text, text = line:match("^([^\t]*)\t(.*)$")
  local vars = {}
  for k, v in vars_text:gmatch("(%w+)=(-?%d+)") do vars[k] = math.tointeger(tonumber(v)) end
  local ok, r = pcall(function() return expr.compile(text)(vars) end)
  if not ok then
    io.write("err ", (tostring(r):gsub("\n", " ")), "\n")
  elseif type(r) == "boolean" then
    io.write("ok ", r and 1 or 0, "\n")
  elseif math.type(r) == "integer" then
    io.write("ok ", r, "\n")
  else
    io.write("err not an integer: ", tostring(r), "\n")
  end
end
