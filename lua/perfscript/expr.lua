-- The integer expression language of the grid rules: constraints and shape templates.
-- Text is tokenized and parsed once into a tree of closures; data text is never handed to
-- `load`. Semantics follow Python's on integers: `+ - * // % **`, unary minus, chained
-- comparisons, `and`/`or`/`not`, `a if c else b`, min/max/abs/align, floor `//` and `%`.
-- `/` (true division) and any `.` are errors, so results are always exact integers. A result
-- that does not fit in 64 bits is an error naming the rule and the expression (Python's
-- integers would grow; wrapping around would write an impossible dimension).
local perf = require "perfscript"

local M = {}

local KEYWORDS = { ["and"] = true, ["or"] = true, ["not"] = true, ["if"] = true,
                   ["else"] = true, ["True"] = true, ["False"] = true }
local OPS3 = {}
local OPS2 = { ["//"] = true, ["**"] = true, ["<="] = true, [">="] = true, ["=="] = true,
               ["!="] = true }
local OPS1 = { ["+"] = true, ["-"] = true, ["*"] = true, ["%"] = true, ["("] = true,
               [")"] = true, [","] = true, ["<"] = true, [">"] = true, ["/"] = true }

local function fail(ctx, text, fmt, ...)
  local where = ctx and ctx.where and (ctx.where .. ": ") or ""
  perf.fail("%sexpression '%s': " .. fmt, where, text, ...)
end

local function tokenize(text, ctx)
  local toks, i, n = {}, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c:match("%d") then
      local s, e = text:find("^[%d_]+", i)
      local lit = text:sub(s, e)
      if lit:find("__", 1, true) or lit:sub(-1) == "_" then
        fail(ctx, text, "bad integer literal '%s'", lit)
      end
      if text:sub(e + 1, e + 1):match("[%a_.]") then
        fail(ctx, text, "bad number at '%s' (integers only)", text:sub(s, e + 1))
      end
      toks[#toks + 1] = { k = "int", v = math.tointeger(tonumber((lit:gsub("_", "")))) }
      if not toks[#toks].v then fail(ctx, text, "integer literal '%s' out of range", lit) end
      i = e + 1
    elseif c:match("[%a_]") then
      local s, e = text:find("^[%w_]+", i)
      local name = text:sub(s, e)
      if name:sub(1, 2) == "__" then fail(ctx, text, "names starting with '__' are not allowed") end
      toks[#toks + 1] = KEYWORDS[name] and { k = name } or { k = "name", v = name }
      i = e + 1
    elseif c == "." then
      fail(ctx, text, "'.' is not allowed (integers only, no attributes)")
    else
      local two = text:sub(i, i + 1)
      if OPS2[two] then
        toks[#toks + 1] = { k = two }
        i = i + 2
      elseif OPS1[c] then
        toks[#toks + 1] = { k = c }
        i = i + 1
      else
        fail(ctx, text, "unexpected character '%s'", c)
      end
    end
  end
  toks[#toks + 1] = { k = "eof" }
  return toks
end

local function num(v)
  if v == true then return 1 elseif v == false then return 0 end
  return v
end

local function truthy(v)
  return v ~= false and v ~= 0
end

-- Checked 64-bit arithmetic: nil when the exact result does not fit.
local MIN = math.mininteger
local function add(x, y)
  local r = x + y
  if (x ~ r) & (y ~ r) < 0 then return nil end  -- operands of one sign, result of the other
  return r
end
local function sub(x, y)
  local r = x - y
  if (x ~ y) & (x ~ r) < 0 then return nil end
  return r
end
local function mul(x, y)
  local r = x * y
  if x ~= 0 and (r // x ~= y or (x == -1 and y == MIN)) then return nil end
  return r
end

local function ipow(a, b)
  local r = 1
  while b > 0 do
    if b & 1 == 1 then r = mul(r, a); if not r then return nil end end
    b = b >> 1
    if b > 0 then a = mul(a, a); if not a then return nil end end
  end
  return r
end

local FUNCS = {
  min = function(args)
    local m = num(args[1])
    for i = 2, #args do local x = num(args[i]); if x < m then m = x end end
    return m
  end,
  max = function(args)
    local m = num(args[1])
    for i = 2, #args do local x = num(args[i]); if x > m then m = x end end
    return m
  end,
}
local ARITY = { min = { 1, math.huge }, max = { 1, math.huge }, abs = { 1, 1 }, align = { 2, 2 } }

-- Parser: one function per precedence level, each takes the parser state P and returns a
-- closure f(vars) -> value. P: toks, pos, text, ctx.
local Parser = {}
Parser.__index = Parser

function Parser:peek() return self.toks[self.pos].k end

function Parser:take(k)
  local t = self.toks[self.pos]
  if k and t.k ~= k then
    fail(self.ctx, self.text, "expected '%s' but found '%s'", k, t.v or t.k)
  end
  self.pos = self.pos + 1
  return t
end

function Parser:fail(fmt, ...) fail(self.ctx, self.text, fmt, ...) end

-- v, or the overflow error of `what` (an operation with its operands).
function Parser:fits(v, fmt, ...)
  if v == nil then
    self:fail("integer overflow: " .. fmt .. " does not fit in 64 bits", ...)
  end
  return v
end

local cond, unary

-- name(args...): one of FUNCS, arity checked at compile time.
local function call(P, name, args)
  local ar = ARITY[name]
  if not ar then P:fail("unknown function '%s' (min, max, abs, align)", name) end
  if #args < ar[1] or #args > ar[2] then
    P:fail("%s() takes %s argument(s), got %d", name,
           ar[2] == math.huge and ("at least " .. ar[1]) or tostring(ar[1]), #args)
  end
  if name == "abs" then
    local a = args[1]
    return function(v)
      local x = num(a(v))
      if x == MIN then P:fits(nil, "abs(%d)", x) end
      return x < 0 and -x or x
    end
  elseif name == "align" then
    local a, b = args[1], args[2]
    return function(v)
      local x, m = num(a(v)), num(b(v))
      if m == 0 then P:fail("align() to a multiple of 0") end
      local m1 = sub(m, 1)
      local up = m1 and add(x, m1)
      return P:fits(up and mul(up // m, m), "align(%d, %d)", x, m)
    end
  end
  local f, n = FUNCS[name], #args
  if n == 2 then
    local a, b = args[1], args[2]
    if name == "max" then
      return function(v) local x, y = num(a(v)), num(b(v)); return x >= y and x or y end
    else
      return function(v) local x, y = num(a(v)), num(b(v)); return x <= y and x or y end
    end
  end
  return function(v)
    local vals = {}
    for i = 1, n do vals[i] = args[i](v) end
    return f(vals)
  end
end

-- The argument list after a function name: "(" [cond {"," cond} [","]] ")".
local function arguments(P)
  P:take("(")
  local args = {}
  if P:peek() ~= ")" then
    args[#args + 1] = cond(P)
    while P:peek() == "," do
      P:take(",")
      if P:peek() == ")" then break end
      args[#args + 1] = cond(P)
    end
  end
  P:take(")")
  return args
end

-- A variable, checked against ctx.names at compile time when given.
local function variable(P, name)
  local ctx = P.ctx
  if ctx and ctx.names and ctx.names[name] == nil then
    P:fail("unknown variable '%s'", name)
  end
  return function(v)
    local x = v[name]
    if x == nil then P:fail("unknown variable '%s'", name) end
    return x
  end
end

local function atom(P)
  local t = P:take()
  if t.k == "int" then
    local v = t.v
    return function() return v end, v
  elseif t.k == "True" then
    return function() return true end, true
  elseif t.k == "False" then
    return function() return false end, false
  elseif t.k == "name" then
    if P:peek() == "(" then return call(P, t.v, arguments(P)) end
    return variable(P, t.v)
  elseif t.k == "(" then
    local e = cond(P)
    P:take(")")
    return e
  elseif t.k == "/" then
    P:fail("unexpected '/'")
  end
  P:fail("unexpected '%s'", t.v or t.k)
end

local function power(P)
  local base = atom(P)
  if P:peek() == "**" then
    P:take("**")
    local ex = unary(P)
    return function(v)
      local a, b = num(base(v)), num(ex(v))
      if b < 0 then P:fail("negative exponent %d (integers only)", b) end
      return P:fits(ipow(a, b), "%d ** %d", a, b)
    end
  end
  return base
end

unary = function(P)
  local k = P:peek()
  if k == "-" then
    P:take()
    local e = unary(P)
    return function(v)
      local x = num(e(v))
      if x == MIN then P:fits(nil, "-(%d)", x) end
      return -x
    end
  elseif k == "+" then
    P:take()
    local e = unary(P)
    return function(v) return num(e(v)) end
  end
  return power(P)
end

-- a <op> b through a checked operation (add, sub, mul): overflow is the rule's error.
local function checked(P, a, b, f, sym)
  local what = "%d " .. sym .. " %d"
  return function(v)
    local x, y = num(a(v)), num(b(v))
    return P:fits(f(x, y), what, x, y)
  end
end

local function term(P)
  local l = unary(P)
  while true do
    local k = P:peek()
    if k == "*" then
      P:take()
      l = checked(P, l, unary(P), mul, "*")
    elseif k == "//" then
      P:take(); local a, b = l, unary(P)
      l = function(v)
        local d = num(b(v))
        if d == 0 then P:fail("integer division by zero") end
        local x = num(a(v))
        if d == -1 and x == MIN then P:fits(nil, "%d // -1", x) end
        return x // d
      end
    elseif k == "%" then
      P:take(); local a, b = l, unary(P)
      l = function(v)
        local d = num(b(v))
        if d == 0 then P:fail("modulo by zero") end
        return num(a(v)) % d
      end
    elseif k == "/" then
      P:fail("'/' is true division and gives fractions; use '//' (floor division)")
    else
      return l
    end
  end
end

local function sum(P)
  local l = term(P)
  while true do
    local k = P:peek()
    if k == "+" then
      P:take()
      l = checked(P, l, term(P), add, "+")
    elseif k == "-" then
      P:take()
      l = checked(P, l, term(P), sub, "-")
    else
      return l
    end
  end
end

local CMP = {
  ["<"] = function(a, b) return a < b end, ["<="] = function(a, b) return a <= b end,
  [">"] = function(a, b) return a > b end, [">="] = function(a, b) return a >= b end,
  ["=="] = function(a, b) return a == b end, ["!="] = function(a, b) return a ~= b end,
}

local function comparison(P)
  local first = sum(P)
  local ops, rhs = {}, {}
  while CMP[P:peek()] do
    ops[#ops + 1] = CMP[P:take().k]
    rhs[#rhs + 1] = sum(P)
  end
  if #ops == 0 then return first end
  if #ops == 1 then
    local op, a, b = ops[1], first, rhs[1]
    return function(v) return op(num(a(v)), num(b(v))) end
  end
  return function(v)  -- chained: a < b < c means a < b and b < c
    local left = num(first(v))
    for i = 1, #ops do
      local right = num(rhs[i](v))
      if not ops[i](left, right) then return false end
      left = right
    end
    return true
  end
end

local function not_expr(P)
  if P:peek() == "not" then
    P:take()
    local e = not_expr(P)
    return function(v) return not truthy(e(v)) end
  end
  return comparison(P)
end

local function and_expr(P)
  local l = not_expr(P)
  while P:peek() == "and" do
    P:take(); local a, b = l, not_expr(P)
    l = function(v) local x = a(v); if not truthy(x) then return x end; return b(v) end
  end
  return l
end

local function or_expr(P)
  local l = and_expr(P)
  while P:peek() == "or" do
    P:take(); local a, b = l, and_expr(P)
    l = function(v) local x = a(v); if truthy(x) then return x end; return b(v) end
  end
  return l
end

-- x if c else y (Python's conditional expression, right-associative).
cond = function(P)
  local yes = or_expr(P)
  if P:peek() == "if" then
    P:take()
    local c = or_expr(P)
    P:take("else")
    local no = cond(P)
    return function(v) if truthy(c(v)) then return yes(v) end; return no(v) end
  end
  return yes
end

local function parse(text, ctx)
  local P = setmetatable({ toks = tokenize(text, ctx), pos = 1, text = text, ctx = ctx }, Parser)
  local f = cond(P)
  if P:peek() ~= "eof" then
    local t = P.toks[P.pos]
    fail(ctx, text, "unexpected '%s' after the end of the expression", t.v or t.k)
  end
  return f
end

-- compile(text, ctx) -> f(vars) -> integer | boolean.
-- ctx.where names the rule in errors ("pattern 'pad'"); ctx.names (a set) makes an unknown
-- variable a compile-time error.
function M.compile(text, ctx)
  if type(text) == "number" then
    local v = math.tointeger(text)
    if not v then fail(ctx, tostring(text), "not an integer") end
    return function() return v end
  end
  return parse(text, ctx)
end

function M.truthy(v) return truthy(v) end

-- Compiles a boolean constraint: f(vars) -> true|false.
function M.constraint(text, ctx)
  local f = M.compile(text, ctx)
  return function(v) return truthy(f(v)) end
end

-- Splits "a, (b, c), d,," at depth-0 commas, dropping empty pieces.
function M.split_dims(s)
  local out, depth, start = {}, 0, 1
  for i = 1, #s do
    local c = s:sub(i, i)
    if c == "(" then depth = depth + 1
    elseif c == ")" then if depth > 0 then depth = depth - 1 end
    elseif c == "," and depth == 0 then
      local piece = s:sub(start, i - 1):match("^%s*(.-)%s*$")
      if piece ~= "" then out[#out + 1] = piece end
      start = i + 1
    end
  end
  local piece = s:sub(start):match("^%s*(.-)%s*$")
  if piece ~= "" then out[#out + 1] = piece end
  return out
end

-- True when text[1] is "(" and its matching ")" is the last character.
local function wrapped(s)
  if s:sub(1, 1) ~= "(" or s:sub(-1) ~= ")" then return false end
  local depth = 0
  for i = 1, #s do
    local c = s:sub(i, i)
    if c == "(" then depth = depth + 1
    elseif c == ")" then
      depth = depth - 1
      if depth == 0 then return i == #s end
    end
  end
  return false
end

-- The dim closures of a shape template "(tokens, D*2)" / "M,K" / "(N,)" / "()", and the
-- variable name of each dim that is a bare variable (the usual dim, read inline: its closure
-- is still compiled (compile-time errors) and called when the value is not a plain one).
-- Only one matching outer pair of parentheses is removed (the Python original stripped every
-- leading "(" and trailing ")", which broke "((a+b), b)" and "(a, max(1, b))").
local function shape_dims(text, ctx)
  local s = text:match("^%s*(.-)%s*$")
  if wrapped(s) then s = s:sub(2, -2):match("^%s*(.-)%s*$") end
  local pieces = M.split_dims(s)
  local dims, names = {}, {}
  for i, p in ipairs(pieces) do
    dims[i] = M.compile(p, ctx and { where = ctx.where, names = ctx.names } or nil)
    if p:match("^[%a_][%w_]*$") and not KEYWORDS[p] then names[i] = p end
  end
  return dims, names
end

local function dim(f, v)
  local x = f(v)
  if x == true then return 1 elseif x == false then return 0 end
  return x
end

-- Compiles a shape template into f(vars) -> {dims}.
function M.shape(text, ctx)
  local dims, names = shape_dims(text, ctx)
  local n = #dims
  if n == 0 then return function() return {} end end
  if n == 1 then
    local a = dims[1]
    return function(v) return { dim(a, v) } end
  elseif n == 2 then
    local a, b, na, nb = dims[1], dims[2], names[1], names[2]
    if na and nb then
      return function(v)
        local x, y = v[na], v[nb]
        if x == nil or x == true or x == false then x = dim(a, v) end
        if y == nil or y == true or y == false then y = dim(b, v) end
        return { x, y }
      end
    end
    return function(v) return { dim(a, v), dim(b, v) } end
  end
  return function(v)
    local out = {}
    for i = 1, n do out[i] = dim(dims[i], v) end
    return out
  end
end

-- shape_parts(text, ctx) -> dims, names: the template's dim closures f(vars) -> value (a
-- boolean stands for 1 or 0, as in M.shape) and, for a dim that is a bare variable, its name
-- (M.shape's values are v[name] where that is an integer, else the closure's).
function M.shape_parts(text, ctx)
  return shape_dims(text, ctx)
end

return M
