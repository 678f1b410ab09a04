-- Numbers in profiler cells. Durations follow Python's float() (the Python original's semantics);
-- absolute timestamps ("1736412474714258.990", 16 integer digits) become exact int64
-- nanoseconds, because a double only resolves 0.25 us at that magnitude.
local M = {}

local function strip(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Python float(text) (src/schema/num.c, the one cell parser): surrounding whitespace, sign,
-- underscores between digits, exponent, nan/inf/infinity in any case; no hex. Returns a float
-- or nil.
M.float = require("perfscript.num").parse

-- Microsecond text -> integer nanoseconds: exact for decimals (src/schema/num.c's us_to_ns,
-- digits beyond the ns rounded half up); other forms Python's float() takes (exponents) go
-- through a double. nil when unparseable or beyond int64.
local us_to_ns_exact = require("perfscript.num").us_to_ns

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
