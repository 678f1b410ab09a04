-- Python's number and text output, reproduced so that the analysis reports read the same as the
-- Python original's (docs/rules.md, Numbers and cells): repr of floats, round(x, n), format specs
-- with thousands separators, padding counted in code points, and json.dump(indent=2).
-- Lua integers stand for Python ints and Lua floats for Python floats, so `0` and `0.0` stay apart.
local csv = require "perfscript.csv"

local M = {}

local INF = math.huge

-- Shortest text that reads back as the same double, laid out as Python's repr.
function M.repr(x)
  if math.type(x) == "integer" then return tostring(x) end
  if x ~= x then return "nan" end
  if x == INF then return "inf" end
  if x == -INF then return "-inf" end
  local sign = ""
  if x < 0 or (x == 0 and 1 / x < 0) then sign, x = "-", -x end
  if x == 0 then return sign .. "0.0" end
  local s
  for p = 0, 16 do
    s = string.format("%." .. p .. "e", x)
    if tonumber(s) == x then break end
  end
  local d1, rest, e = s:match("^(%d)%.?(%d*)e([-+]%d+)$")
  local digits = (d1 .. rest):gsub("0+$", "")
  if digits == "" then digits = "0" end
  local exp = tonumber(e)
  if exp >= -4 and exp < 16 then
    if exp >= 0 then
      local ip = digits:sub(1, exp + 1)
      ip = ip .. string.rep("0", exp + 1 - #ip)
      local fp = digits:sub(exp + 2)
      return sign .. ip .. "." .. (fp == "" and "0" or fp)
    end
    return sign .. "0." .. string.rep("0", -exp - 1) .. digits
  end
  local m = digits:sub(1, 1)
  if #digits > 1 then m = m .. "." .. digits:sub(2) end
  return string.format("%s%se%s%02d", sign, m, exp < 0 and "-" or "+", math.abs(exp))
end

-- Python round(x, n): the exact binary value rounded half-to-even, which is what C's "%.nf" does.
function M.round(x, n)
  if math.type(x) == "integer" then return x end
  if x ~= x or x == INF or x == -INF then return x end
  return tonumber(string.format("%." .. n .. "f", x)) + 0.0
end

-- Python round(x) without digits: an int, ties to even.
function M.round_int(x)
  if math.type(x) == "integer" then return x end
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f) or f
end

local function group_thousands(s)
  local sign, ip, rest = s:match("^([-]?)(%d+)(.*)$")
  if not ip then return s end
  ip = ip:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return sign .. ip .. rest
end

-- Fixed-point text as Python's "{:.nf}" ("{:,.nf}" with grouping): inf and nan without a sign
-- quirk of C ("-nan").
function M.fixed(x, n, grouping)
  if x ~= x then return "nan" end
  if x == INF then return "inf" end
  if x == -INF then return "-inf" end
  local s = string.format("%." .. n .. "f", x)
  if grouping then s = group_thousands(s) end
  return s
end

-- Width of a string in code points (Python's len), bytes when it is not valid UTF-8.
function M.width(s)
  return utf8.len(s) or #s
end

-- "{:<w}" / "{:>w}": padding counted in code points, as Python does.
function M.ljust(s, w)
  s = tostring(s)
  local n = w - M.width(s)
  return n > 0 and s .. string.rep(" ", n) or s
end

function M.rjust(s, w)
  s = tostring(s)
  local n = w - M.width(s)
  return n > 0 and string.rep(" ", n) .. s or s
end

-- Python str() of a value coming from JSON or Python literals.
function M.str(v)
  local t = type(v)
  if t == "number" then return M.repr(v) end
  if t == "boolean" then return v and "True" or "False" end
  if v == nil then return "None" end
  return tostring(v)
end

------------------------------------------------------------------------------------------------
-- JSON output as Python's json.dump(obj, f, indent=2, ensure_ascii=False).
-- Objects keep their key order: build them with M.object{ {"k", v}, ... } or M.object(keys, t).

local ORDERED = {}

function M.object(a, b)
  local o = { keys = {}, values = {} }
  if b then
    for _, k in ipairs(a) do
      o.keys[#o.keys + 1] = k
      o.values[k] = b[k]
    end
  else
    for _, kv in ipairs(a) do
      o.keys[#o.keys + 1] = kv[1]
      o.values[kv[1]] = kv[2]
    end
  end
  return setmetatable(o, ORDERED)
end

function M.is_object(v)
  return getmetatable(v) == ORDERED
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
              ["\b"] = "\\b", ["\f"] = "\\f" }

function M.json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or (c:byte() < 32 and string.format("\\u%04x", c:byte()) or c)
  end) .. '"'
end

local function json_number(x)
  if math.type(x) == "integer" then return tostring(x) end
  if x ~= x then return "NaN" end
  if x == INF then return "Infinity" end
  if x == -INF then return "-Infinity" end
  return M.repr(x)
end

local function encode(v, ind, out)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = M.json_string(v)
  elseif t == "number" then
    out[#out + 1] = json_number(v)
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif v == nil then
    out[#out + 1] = "null"
  elseif M.is_object(v) then
    if #v.keys == 0 then out[#out + 1] = "{}"; return end
    local inner = ind .. "  "
    out[#out + 1] = "{"
    for i, k in ipairs(v.keys) do
      out[#out + 1] = (i > 1 and ",\n" or "\n") .. inner .. M.json_string(tostring(k)) .. ": "
      encode(v.values[k], inner, out)
    end
    out[#out + 1] = "\n" .. ind .. "}"
  elseif t == "table" then
    if #v == 0 then out[#out + 1] = "[]"; return end
    local inner = ind .. "  "
    out[#out + 1] = "["
    for i = 1, #v do
      out[#out + 1] = (i > 1 and ",\n" or "\n") .. inner
      encode(v[i], inner, out)
    end
    out[#out + 1] = "\n" .. ind .. "]"
  else
    error("cannot encode a " .. t .. " as JSON", 2)
  end
end

-- The document text, without a trailing newline (as json.dump writes it).
function M.json(v)
  local out = {}
  encode(v, "", out)
  return table.concat(out)
end

------------------------------------------------------------------------------------------------
-- CSV text as Python's csv module writes it (excel dialect, QUOTE_MINIMAL, "\r\n"): the
-- quoter of perfscript.csv (src/io/csvwrite.c), which quotes the same way.

M.csv_field = csv.quote

function M.csv_line(fields) return csv.format_row(fields, "\r\n") end

return M
