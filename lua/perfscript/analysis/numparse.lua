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

-- Microsecond text -> integer nanoseconds, exact for plain decimals (digits beyond the ns are
-- rounded half to even). Other forms (exponents) go through a double. nil when unparseable.
function M.us_to_ns(s)
  if type(s) ~= "string" then
    if math.type(s) == "integer" then return s * 1000 end
    if type(s) == "number" and s == s and math.abs(s) < 9e15 then
      return math.floor(s * 1000 + 0.5)
    end
    return nil
  end
  s = strip(s)
  local sign, ip, fp = s:match("^([-+]?)(%d*)%.?(%d*)$")
  if not sign or (ip == "" and fp == "") or (fp ~= "" and not s:find(".", 1, true)) then
    local v = M.float(s)
    if not v or v ~= v or math.abs(v) >= 9e15 then return nil end
    return math.floor(v * 1000 + 0.5)
  end
  ip = ip:gsub("^0+", "")
  if #ip > 16 or (#ip == 16 and ip > "9223372036854774") then return nil end  -- beyond int64 ns
  local ns = (tonumber(ip) or 0) * 1000
  local f3 = (fp .. "000"):sub(1, 3)
  ns = ns + tonumber(f3)
  local rest = fp:sub(4)
  if rest:find("[1-9]") then
    local first = tonumber(rest:sub(1, 1))
    local tail_nonzero = rest:sub(2):find("[1-9]") ~= nil
    if first > 5 or (first == 5 and (tail_nonzero or ns % 2 == 1)) then ns = ns + 1 end
  end
  return sign == "-" and -ns or ns
end

-- Integer nanoseconds -> "1736412474714258.990" (microseconds, three decimals).
function M.ns_text(ns)
  local sign = ns < 0 and "-" or ""
  ns = math.abs(ns)
  return string.format("%s%d.%03d", sign, ns // 1000, ns % 1000)
end

M.strip = strip

return M
