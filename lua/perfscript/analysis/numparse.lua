-- Numbers in profiler cells. Durations follow Python's float() (the original's semantics);
-- absolute timestamps ("1736412474714258.990", 16 integer digits) become exact int64
-- nanoseconds, because a double only resolves 0.25 us at that magnitude.
local M = {}

local function strip(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function digits_ok(d)
  return d == "" or (d:match("^%d[%d_]*$") and not d:find("__") and not d:find("_$"))
end

-- Python float(text): surrounding whitespace, sign, underscores between digits, exponent,
-- nan/inf/infinity in any case; no hex. Returns a float or nil.
function M.float(s)
  if type(s) == "number" then return s + 0.0 end
  if type(s) ~= "string" then return nil end
  if s:find("^%-?%d+%.?%d*$") then return tonumber(s) + 0.0 end   -- the common case, fast
  s = strip(s)
  local sign, body = s:match("^([-+]?)(.*)$")
  local word = body:lower()
  if word == "inf" or word == "infinity" then return sign == "-" and -math.huge or math.huge end
  if word == "nan" then return 0 / 0 end
  local ip, fp, ex = body:match("^([%d_]*)%.?([%d_]*)([eE]?[-+]?[%d_]*)$")
  if not ip or (ip == "" and fp == "") then return nil end
  if not digits_ok(ip) or not digits_ok(fp) then return nil end
  if body:find("%.") == nil and fp ~= "" then return nil end
  if ex ~= "" then
    local ed = ex:match("^[eE][-+]?(.*)$")
    if ed == "" or not digits_ok(ed) then return nil end
  end
  local v = tonumber(((sign .. body):gsub("_", "")))
  return v and v + 0.0
end

-- Microsecond text -> integer nanoseconds: exact for decimals (perfscript.profile's C parser,
-- digits beyond the ns rounded half up); other forms Python's float() takes (exponents) go
-- through a double. nil when unparseable or beyond int64.
local us_to_ns_exact = require("perfscript.profile").us_to_ns

function M.us_to_ns(s)
  if math.type(s) == "integer" then return s * 1000 end
  if type(s) == "number" then s = string.format("%.17g", s) end
  if type(s) ~= "string" then return nil end
  local ns = us_to_ns_exact(s)
  if ns then return ns end
  local v = M.float(s)
  if not v or v ~= v or math.abs(v) >= 9e15 then return nil end
  return math.floor(v * 1000 + 0.5)
end

-- Integer nanoseconds -> "1736412474714258.990" (microseconds, three decimals).
function M.ns_text(ns)
  local sign = ns < 0 and "-" or ""
  ns = math.abs(ns)
  return string.format("%s%d.%03d", sign, ns // 1000, ns % 1000)
end

M.strip = strip

return M
