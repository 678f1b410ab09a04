-- The grid expression language (docs/rules.md, Shape grids: expressions).
local lu = require "luaunit"
local expr = require "perfscript.expr"

local V1 = { tokens = 128, D = 5120, tp = 4 }
local V2 = { a = 7, b = 2 }

local function ev(text, vars) return expr.compile(text)(vars) end
local function shape(text, vars) return expr.shape(text)(vars) end
local function err(f, ...)
  local ok, e = pcall(f, ...)
  lu.assertFalse(ok)
  return tostring(e)
end

function test_arithmetic()
  lu.assertEquals(ev("D // tp", V1), 1280)
  lu.assertEquals(ev("tokens * 2", V1), 256)
  lu.assertEquals(ev("max(1, tokens // 256)", V1), 1)
  lu.assertEquals(ev("abs(-10)", V1), 10)
  lu.assertEquals(ev("align(tokens, 8)", V1), 128)
  lu.assertEquals(ev("align(1, 8)", V1), 8)
  lu.assertEquals(ev("align(7,8)", V1), 8)
  lu.assertEquals(ev("align(8,8)", V1), 8)
  lu.assertEquals(ev("align(9,8)", V1), 16)
  lu.assertEquals(ev("a//b", V2), 3)
  lu.assertEquals(ev("a%b", V2), 1)
  lu.assertEquals(ev("-a//b", V2), -4)
  lu.assertEquals(ev("-7 % 2", V2), 1)
  lu.assertEquals(ev("a**b", V2), 49)
  lu.assertEquals(ev("2**3**2", V2), 512)
  lu.assertEquals(ev("-2**2", V2), -4)
  lu.assertEquals(ev("a if a>b else b", V2), 7)
  lu.assertEquals(ev("min(a,b,3)", V2), 2)
  lu.assertEquals(ev("a>b and b>1", V2), true)
  lu.assertEquals(ev("a-10", V2), -3)
  lu.assertEquals(ev("1_000 + a", V2), 1007)
  lu.assertEquals(ev("1 < a < 8", V2), true)
  lu.assertEquals(ev("1 < a < 5", V2), false)
  lu.assertEquals(ev("not a == 7 or b", V2), 2)
  lu.assertEquals(ev("True + 1", V2), 2)
end

function test_errors_name_the_pattern_and_expression()
  lu.assertStrContains(err(expr.compile, "().__class__"), "'.' is not allowed")
  lu.assertStrContains(err(expr.compile, "1.5*a"), "integers only")
  lu.assertStrContains(err(expr.compile, "a.real"), "'.' is not allowed")
  lu.assertStrContains(err(expr.compile, "__import__"), "'__'")
  lu.assertStrContains(err(expr.compile, "a/b"), "'/' is true division")
  local e = err(expr.compile, "N >= x", { where = "pattern 'quant_matmul'", names = { N = true } })
  lu.assertStrContains(e, "pattern 'quant_matmul'")
  lu.assertStrContains(e, "expression 'N >= x'")
  lu.assertStrContains(e, "unknown variable 'x'")
  lu.assertStrContains(err(expr.compile, "foo(1)"), "unknown function 'foo'")
  lu.assertStrContains(err(expr.compile, "(a"), "expected ')'")
  lu.assertStrContains(err(expr.compile, "a b"), "unexpected 'b'")
  lu.assertStrContains(err(expr.compile("a // (b - 2)"), V2), "division by zero")
  lu.assertStrContains(err(expr.compile("a ** -1"), V2), "negative exponent")
end

function test_split_dims()
  lu.assertEquals(expr.split_dims("128, 512"), { "128", "512" })
  lu.assertEquals(expr.split_dims("max(1, D//tp), 16"), { "max(1, D//tp)", "16" })
  lu.assertEquals(expr.split_dims("(batch, heads), 128"), { "(batch, heads)", "128" })
  lu.assertEquals(expr.split_dims("a, (b, c), d,,"), { "a", "(b, c)", "d" })
end

function test_shape_templates()
  lu.assertEquals(shape("(tokens, D//tp)", V1), { 128, 1280 })
  lu.assertEquals(shape("(1,)", V1), { 1 })
  lu.assertEquals(shape("()", V1), {})
  lu.assertEquals(shape("( )", V1), {})
  lu.assertEquals(shape("M,K", { M = 1, K = 4 }), { 1, 4 })
  lu.assertEquals(shape("(-a, 0)", V2), { -7, 0 })
  lu.assertEquals(shape("(a, b,)", V2), { 7, 2 })
  lu.assertEquals(shape("(1_000,a)", V2), { 1000, 7 })
  -- the Python original's paren-strip bug is fixed
  lu.assertEquals(shape("((a+b), b)", V2), { 9, 2 })
  lu.assertEquals(shape("(a, (a+b))", V2), { 7, 9 })
  lu.assertEquals(shape("(a, max(1, b))", V2), { 7, 2 })
  lu.assertEquals(shape("(max(1,b), a)", V2), { 2, 7 })
  lu.assertEquals(shape("(a+b)*(b)", V2), { 18 })
  -- bare variables (read inline): booleans as 1/0, a missing one the same error at run time
  lu.assertEquals(shape("M,K", { M = true, K = false }), { 1, 0 })
  lu.assertEquals(shape("M, K", { M = 3, K = -2 }), { 3, -2 })
  lu.assertStrContains(err(function() return shape("(M, N)", { M = 1 }) end), "unknown variable 'N'")
  lu.assertStrContains(err(function() return shape("(N, M)", { M = 1 }) end), "unknown variable 'N'")
end

function test_pad_logic()
  local v = { tokens = 127, D = 7168 }
  lu.assertEquals(shape("(tokens, D)", v), { 127, 7168 })
  lu.assertEquals(shape("(4,)", v), { 4 })
  lu.assertEquals(shape("(align(tokens, 8), D)", v), { 128, 7168 })
  local c = expr.constraint("tokens % 8 != 0")
  lu.assertTrue(c(v))
  lu.assertFalse(c({ tokens = 128 }))
end

-- Results that do not fit in 64 bits are errors naming the rule and the expression (Python's
-- integers would grow; a wrapped value would be an impossible dimension).
function test_overflow_is_an_error()
  local ctx = { where = "pattern 'big'" }
  for _, text in ipairs { "M*2**62", "2**63", "9223372036854775807 + 1", "-M - 9223372036854775807",
                          "3**40", "abs(-9223372036854775807 - 1)", "align(9223372036854775807, 8)",
                          "(-9223372036854775807 - 1) // -1", "-(-9223372036854775807 - 1)",
                          "M * 4611686018427387904 > 0" } do
    local msg = err(function() return expr.compile(text, ctx)({ M = 4 }) end)
    lu.assertStrContains(msg, "pattern 'big': expression '" .. text .. "': integer overflow")
  end
  lu.assertStrContains(err(function() return expr.shape("(M*2**62, 8)", ctx)({ M = 4 }) end),
                       "expression 'M*2**62': integer overflow: 4 * 4611686018427387904 does not fit in 64 bits")
  -- the edges that fit, as in Python
  lu.assertEquals(ev("-(2**62)*2", {}), math.mininteger)
  lu.assertEquals(ev("(-2)**63", {}), math.mininteger)
  lu.assertEquals(ev("2**62 - 1 + 2**62", {}), math.maxinteger)
  lu.assertEquals(ev("3**39", {}), 4052555153018976267)
  lu.assertEquals(ev("(-9223372036854775807 - 1) // 1", {}), math.mininteger)
  lu.assertEquals(ev("0**0", {}), 1)
end

os.exit(lu.LuaUnit.run())
