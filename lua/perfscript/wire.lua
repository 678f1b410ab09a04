-- Lua values as text and back, exactly: what one process hands another (a forked worker's
-- results to its parent, perfscript.proc.fork_map). Integers stay integers, floats keep every
-- bit (string.format's %q), strings any bytes; tables nest (no cycles, no metatables).
-- cjson would turn integers into floats and round past 14 digits.
local M = {}

local function put(out, v, depth)
  local t = type(v)
  if t == "string" or t == "number" then
    out[#out + 1] = string.format("%q", v)
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "table" then
    if depth > 64 then error("wire.encode: tables nested too deep (a cycle?)", depth + 2) end
    out[#out + 1] = "{"
    for k, x in pairs(v) do
      out[#out + 1] = "["
      put(out, k, depth + 1)
      out[#out + 1] = "]="
      put(out, x, depth + 1)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  else
    error("wire.encode: cannot pass a " .. t, depth + 2)
  end
end

-- encode(v) -> string (v: nil, a boolean, number, string or table of those).
function M.encode(v)
  if v == nil then return "return nil" end
  local out = { "return " }
  put(out, v, 0)
  return table.concat(out)
end

-- decode(s) -> the value; raises on text encode did not make.
function M.decode(s)
  local f, err = load(s, "=wire", "t", {})
  if not f then error("wire.decode: " .. err, 2) end
  return f()
end

return M
