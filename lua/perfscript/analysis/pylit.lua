-- A reader for the small Python literals the TensorCast trace puts in its args
-- (docs/rules.md, Analysis): lists, tuples, strings, ints, floats, True/False/None.
-- `sub_kernel_durations` = "[('QuantBatchMatmulV3', 22.77), ('hcom_allReduce_', 8.29)]" and
-- `simulation_shapes` = "[[16, 5120], [5120, 768]]". Sequences come back as tables with
-- .kind = "list" | "tuple"; None is M.None. Data is parsed, never executed.
local M = {}

M.None = setmetatable({}, { __tostring = function() return "None" end })

local ESCAPES = { n = "\n", t = "\t", r = "\r", ["\\"] = "\\", ["'"] = "'", ['"'] = '"',
                  a = "\a", b = "\b", f = "\f", v = "\v", ["0"] = "\0", ["\n"] = "" }

local Parser = {}
Parser.__index = Parser

function Parser:fail(why)
  error({ pylit = true, msg = string.format("position %d: %s", self.i, why) }, 0)
end

function Parser:skip()
  self.i = self.s:find("[^ \t\r\n]", self.i) or #self.s + 1
end

function Parser:peek()
  return self.s:sub(self.i, self.i)
end

function Parser:string()
  local q = self:peek()
  local i, s, out = self.i + 1, self.s, {}
  while true do
    local c = s:sub(i, i)
    if c == "" then self.i = i; self:fail("unterminated string") end
    if c == q then break end
    if c == "\\" then
      local e = s:sub(i + 1, i + 1)
      if ESCAPES[e] then
        out[#out + 1] = ESCAPES[e]; i = i + 2
      elseif e == "x" and s:sub(i + 2, i + 3):match("^%x%x$") then
        out[#out + 1] = string.char(tonumber(s:sub(i + 2, i + 3), 16)); i = i + 4
      elseif e == "u" and s:sub(i + 2, i + 5):match("^%x%x%x%x$") then
        out[#out + 1] = utf8.char(tonumber(s:sub(i + 2, i + 5), 16)); i = i + 6
      else
        out[#out + 1] = "\\"; i = i + 1   -- Python keeps unknown escapes as written
      end
    else
      out[#out + 1] = c; i = i + 1
    end
  end
  self.i = i + 1
  return table.concat(out)
end

function Parser:number()
  local s, i = self.s, self.i
  local sign = s:match("^[-+]", i) or ""
  local j = i + #sign
  local num = s:match("^%d[%d_]*%.?[%d_]*", j) or s:match("^%.%d[%d_]*", j)
  if not num then self:fail("expected a value") end
  j = j + #num
  local ex = s:match("^[eE][-+]?%d[%d_]*", j)
  if ex then j = j + #ex; num = num .. ex end
  if num:find("__") or num:find("_$") or num:find("_[%.eE]") or num:find("[%.eE]_") then
    self:fail("bad number")
  end
  self.i = j
  local text = (sign .. num):gsub("_", "")
  if num:find("[%.eE]") then return tonumber(text) + 0.0 end
  return math.tointeger(tonumber(text)) or tonumber(text)
end

function Parser:sequence(close, kind)
  self.i = self.i + 1
  local t = { kind = kind }
  local commas = 0
  while true do
    self:skip()
    if self:peek() == close then self.i = self.i + 1; break end
    t[#t + 1] = self:value()
    self:skip()
    local c = self:peek()
    if c == "," then
      self.i = self.i + 1; commas = commas + 1
    elseif c ~= close then
      self:fail("expected ',' or '" .. close .. "'")
    end
  end
  -- "(x)" is just x in Python; "(x,)" and "()" are tuples.
  if kind == "tuple" and #t == 1 and commas == 0 then return t[1] end
  t.n = #t
  return t
end

local WORDS = { True = true, False = false }

function Parser:value()
  self:skip()
  local c = self:peek()
  if c == "[" then return self:sequence("]", "list") end
  if c == "(" then return self:sequence(")", "tuple") end
  if c == "'" or c == '"' then
    local parts = { self:string() }
    self:skip()   -- adjacent literals concatenate: 'a' 'b'
    while self:peek() == "'" or self:peek() == '"' do
      parts[#parts + 1] = self:string(); self:skip()
    end
    return table.concat(parts)
  end
  local w = self.s:match("^%a+", self.i)
  if w then
    self.i = self.i + #w
    if WORDS[w] ~= nil then return WORDS[w] end
    if w == "None" then return M.None end
    self.i = self.i - #w
    self:fail("unknown name '" .. w .. "'")
  end
  return self:number()
end

-- Returns the value, or nil and "position N: why".
function M.parse(s)
  if type(s) ~= "string" then return nil, "not a string" end
  local p = setmetatable({ s = s, i = 1 }, Parser)
  local ok, v = pcall(function()
    local v = p:value()
    p:skip()
    if p.i <= #s then p:fail("unexpected text after the value") end
    return v
  end)
  if ok then return v end
  if type(v) == "table" and v.pylit then return nil, v.msg end
  error(v, 0)
end

function M.is_seq(v)
  return type(v) == "table" and (v.kind == "list" or v.kind == "tuple")
end

-- Python repr() and str() of parsed values.
local pyfmt = require "perfscript.analysis.pyfmt"

local function repr_str(s)
  local q = (s:find("'", 1, true) and not s:find('"', 1, true)) and '"' or "'"
  return q .. s:gsub("[\\\n\r\t" .. q .. "]", function(c)
    return ({ ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" })[c] or "\\" .. c
  end) .. q
end

function M.repr(v)
  if type(v) == "string" then return repr_str(v) end
  if M.is_seq(v) then
    local parts = {}
    for i = 1, #v do parts[i] = M.repr(v[i]) end
    if v.kind == "tuple" then
      return "(" .. table.concat(parts, ", ") .. (#v == 1 and ",)" or ")")
    end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  if v == M.None then return "None" end
  return pyfmt.str(v)
end

function M.str(v)
  if type(v) == "string" then return v end
  return M.repr(v)
end

return M
