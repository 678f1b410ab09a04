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

-- Lua source of a compiled expression (M.source): CODE[f] = g(G) -> src, kind, safe for the
-- closures whose node can be written inline; kind "num" (never a boolean), "bool" or "any";
-- safe: it cannot raise an error. A checked operation is written as its helper, which returns
-- nil where the closure would raise, "or" the node's closure, which then raises the same error.
-- Any other node is its closure called (G.ref). G.bound: the variables the caller always sets.
local CODE = setmetatable({}, { __mode = "k" })
local function gen(f, g) CODE[f] = g; return f end
local function code(f, G)
  local g = CODE[f]
  if g then return g(G) end
  return G.ref(f) .. "(v)", "any", false
end
local function numsrc(s, k)
  if k == "any" then return "num(" .. s .. ")" elseif k == "bool" then return "(" .. s .. " and 1 or 0)" end
  return s
end
-- "(HELPER(a, b) or F(v))": the helper returns nil where f raises
local function checked_src(G, f, helper, ...)
  local args = {}
  for i, a in ipairs { ... } do
    local src, k = code(a, G)
    args[i] = numsrc(src, k)
  end
  return "(" .. helper .. "(" .. table.concat(args, ", ") .. ") or " .. G.ref(f) .. "(v))", "num", false
end

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
    local f
    f = gen(function(v)
      local x = num(a(v))
      if x == MIN then P:fits(nil, "abs(%d)", x) end
      return x < 0 and -x or x
    end, function(G) return checked_src(G, f, "ABS", a) end)
    return f
  elseif name == "align" then
    local a, b = args[1], args[2]
    local f
    f = gen(function(v)
      local x, m = num(a(v)), num(b(v))
      if m == 0 then P:fail("align() to a multiple of 0") end
      local m1 = sub(m, 1)
      local up = m1 and add(x, m1)
      return P:fits(up and mul(up // m, m), "align(%d, %d)", x, m)
    end, function(G) return checked_src(G, f, "ALIGN", a, b) end)
    return f
  end
  local f, n = FUNCS[name], #args
  if n == 2 then
    local a, b = args[1], args[2]
    local function g(G)
      local sa, ka, fa = code(a, G)
      local sb, kb, fb = code(b, G)
      return (name == "max" and "MAX2(" or "MIN2(") .. numsrc(sa, ka) .. ", " .. numsrc(sb, kb) .. ")", "num",
             fa and fb
    end
    if name == "max" then
      return gen(function(v) local x, y = num(a(v)), num(b(v)); return x >= y and x or y end, g)
    else
      return gen(function(v) local x, y = num(a(v)), num(b(v)); return x <= y and x or y end, g)
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
  local f
  f = gen(function(v)
    local x = v[name]
    if x == nil then P:fail("unknown variable '%s'", name) end
    return x
  end, function(G)
    if G.bound[name] then return ("v[%q]"):format(name), "num", true end
    return G.ref(f) .. "(v)", "any", false
  end)
  return f
end

local function atom(P)
  local t = P:take()
  if t.k == "int" then
    local v = t.v
    return gen(function() return v end, function() return ("%d"):format(v), "num", true end), v
  elseif t.k == "True" then
    return gen(function() return true end, function() return "true", "bool", true end), true
  elseif t.k == "False" then
    return gen(function() return false end, function() return "false", "bool", true end), false
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
    local f
    f = gen(function(v)
      local a, b = num(base(v)), num(ex(v))
      if b < 0 then P:fail("negative exponent %d (integers only)", b) end
      return P:fits(ipow(a, b), "%d ** %d", a, b)
    end, function(G) return checked_src(G, f, "POW", base, ex) end)
    return f
  end
  return base
end

unary = function(P)
  local k = P:peek()
  if k == "-" then
    P:take()
    local e = unary(P)
    local f
    f = gen(function(v)
      local x = num(e(v))
      if x == MIN then P:fits(nil, "-(%d)", x) end
      return -x
    end, function(G) return checked_src(G, f, "NEG", e) end)
    return f
  elseif k == "+" then
    P:take()
    local e = unary(P)
    return gen(function(v) return num(e(v)) end, function(G)
      local src, kind, safe = code(e, G)
      return numsrc(src, kind), "num", safe
    end)
  end
  return power(P)
end

-- a <op> b through a checked operation (add, sub, mul): overflow is the rule's error.
local HELPER = { ["+"] = "ADD", ["-"] = "SUB", ["*"] = "MUL" }
local function checked(P, a, b, f, sym)
  local what = "%d " .. sym .. " %d"
  local c
  c = gen(function(v)
    local x, y = num(a(v)), num(b(v))
    return P:fits(f(x, y), what, x, y)
  end, function(G) return checked_src(G, c, HELPER[sym], a, b) end)
  return c
end

-- "//" and "%" read the divisor first: written inline only where the dividend cannot raise
-- (the closure's order of errors kept).
local function divide(f, helper, a, b)
  return gen(f, function(G)
    local _, _, safe = code(a, G)
    if not safe then return G.ref(f) .. "(v)", "any", false end
    return checked_src(G, f, helper, a, b)
  end)
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
      l = divide(function(v)
        local d = num(b(v))
        if d == 0 then P:fail("integer division by zero") end
        local x = num(a(v))
        if d == -1 and x == MIN then P:fits(nil, "%d // -1", x) end
        return x // d
      end, "IDIV", a, b)
    elseif k == "%" then
      P:take(); local a, b = l, unary(P)
      l = divide(function(v)
        local d = num(b(v))
        if d == 0 then P:fail("modulo by zero") end
        return num(a(v)) % d
      end, "MOD", a, b)
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

local LUA_CMP = { ["!="] = "~=" }

local function comparison(P)
  local first = sum(P)
  local ops, rhs, sym = {}, {}, nil
  while CMP[P:peek()] do
    sym = P:take().k
    ops[#ops + 1] = CMP[sym]
    rhs[#rhs + 1] = sum(P)
  end
  if #ops == 0 then return first end
  if #ops == 1 then
    local op, a, b = ops[1], first, rhs[1]
    return gen(function(v) return op(num(a(v)), num(b(v))) end, function(G)
      local sa, ka, fa = code(a, G)
      local sb, kb, fb = code(b, G)
      return "(" .. numsrc(sa, ka) .. " " .. (LUA_CMP[sym] or sym) .. " " .. numsrc(sb, kb) .. ")", "bool", fa and fb
    end)
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
    return gen(function(v) return not truthy(e(v)) end, function(G)
      local src, kind, safe = code(e, G)
      if kind == "bool" then return "(not " .. src .. ")", "bool", safe
      elseif kind == "num" then return "(" .. src .. " == 0)", "bool", safe end
      return "(not truthy(" .. src .. "))", "bool", safe
    end)
  end
  return comparison(P)
end

-- "and" / "or" as Lua's where the left operand is a boolean (0 is no false in Lua).
local function logic(f, op, a, b)
  return gen(f, function(G)
    local sa, ka, fa = code(a, G)
    if ka ~= "bool" then return G.ref(f) .. "(v)", "any", false end
    local sb, kb, fb = code(b, G)
    return "(" .. sa .. " " .. op .. " " .. sb .. ")", kb == "bool" and "bool" or "any", fa and fb
  end)
end

local function and_expr(P)
  local l = not_expr(P)
  while P:peek() == "and" do
    P:take(); local a, b = l, not_expr(P)
    l = logic(function(v) local x = a(v); if not truthy(x) then return x end; return b(v) end, "and", a, b)
  end
  return l
end

local function or_expr(P)
  local l = and_expr(P)
  while P:peek() == "or" do
    P:take(); local a, b = l, and_expr(P)
    l = logic(function(v) local x = a(v); if truthy(x) then return x end; return b(v) end, "or", a, b)
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
    return gen(function() return v end, function() return ("%d"):format(v), "num", true end)
  end
  return parse(text, ctx)
end

function M.truthy(v) return truthy(v) end

-- Compiles a boolean constraint: f(vars) -> true|false.
function M.constraint(text, ctx)
  local f = M.compile(text, ctx)
  return gen(function(v) return truthy(f(v)) end, function(G)
    local src, kind, safe = code(f, G)
    if kind == "num" then src = "(" .. src .. " ~= 0)" elseif kind == "any" then src = "truthy(" .. src .. ")" end
    return src, "bool", safe
  end)
end

-- The helpers of the generated source: each returns nil where the closure raises.
local HELPERS = {
  num = num, truthy = truthy, ADD = add, SUB = sub, MUL = mul,
  POW = function(a, b) if b < 0 then return nil end; return ipow(a, b) end,
  NEG = function(x) if x == MIN then return nil end; return -x end,
  ABS = function(x) if x == MIN then return nil end; return x < 0 and -x or x end,
  ALIGN = function(x, m)
    if m == 0 then return nil end
    local m1 = sub(m, 1)
    local up = m1 and add(x, m1)
    return up and mul(up // m, m)
  end,
  IDIV = function(x, d) if d == 0 or (d == -1 and x == MIN) then return nil end; return x // d end,
  MOD = function(x, d) if d == 0 then return nil end; return x % d end,
  MIN2 = function(x, y) return x <= y and x or y end,
  MAX2 = function(x, y) return x >= y and x or y end,
  DIM = function(x) if x == true then return 1 elseif x == false then return 0 end; return x end,
}
local HELPER_NAMES = {}
for k in pairs(HELPERS) do HELPER_NAMES[#HELPER_NAMES + 1] = k end
table.sort(HELPER_NAMES)

-- generator(bound) -> G: compiled expressions (M.compile, M.constraint, M.shape_parts' dims)
-- written as Lua source over a vars table `v`, for a caller that sets the variables of bound
-- (a set) before every call, so that many are evaluated in one function without a closure
-- call per node; the values and errors are the closures'. G.expr(f) -> source of f's value;
-- G.truthy(f) -> source of truthy(f(v)); G.dim(f) -> of a shape dim (a boolean as 1 or 0);
-- G.load(body, chunkname) -> what the chunk `body` returns (it sees v nowhere but in
-- functions it defines with a parameter v).
function M.generator(bound)
  local F, index, G = {}, {}, { bound = bound }
  function G.ref(f)
    local i = index[f]
    if not i then i = #F + 1; F[i] = f; index[f] = i end
    return "F[" .. i .. "]"
  end
  function G.expr(f) return (code(f, G)) end
  function G.truthy(f)
    local src, kind = code(f, G)
    if kind == "bool" then return src elseif kind == "num" then return "(" .. src .. " ~= 0)" end
    return "truthy(" .. src .. ")"
  end
  function G.dim(f)
    local src, kind = code(f, G)
    if kind == "num" then return src elseif kind == "bool" then return "(" .. src .. " and 1 or 0)" end
    return "DIM(" .. src .. ")"
  end
  function G.load(body, chunkname)
    local head = { "local F, H = ...\nlocal " .. table.concat(HELPER_NAMES, ", ") .. " = " }
    for i, k in ipairs(HELPER_NAMES) do head[#head + 1] = (i > 1 and ", H." or "H.") .. k end
    local chunk = assert(load(table.concat(head) .. "\n" .. body, chunkname, "t"))
    return chunk(F, HELPERS)
  end
  return G
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
