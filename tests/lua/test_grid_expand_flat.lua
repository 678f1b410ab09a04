-- The shape grid's fast candidate path gives what the per-candidate path gave: expressions
-- written as Lua source (perfscript.expr's generator) evaluate to the closures' values and
-- raise their errors; expand.flat lists M.each's candidates; shape.rows makes the text, the
-- memory filter and the order that cells.text, mem.row_bytes, cells.sort_key and
-- gridscan.order made one candidate at a time.
local lu = require "luaunit"
local expr = require "perfscript.expr"
local expand = require "perfscript.grid.expand"
local shape = require "perfscript.shape"
local mem = require "perfscript.mem"
local gridscan = require "perfscript.gridscan"

local MAXI, MINI = math.maxinteger, math.mininteger

-- the closure's outcome and the generated source's, as comparable strings
local function outcome(f, v)
  local ok, r = pcall(f, v)
  if not ok then return "error: " .. tostring(r) end
  return math.type(r) and (math.type(r) .. " " .. tostring(r)) or (type(r) .. " " .. tostring(r))
end

local EXPRS = {
  "a", "b", "7", "True", "False", "a + b", "a - b", "a * b", "a // b", "a % b", "a ** b", "-a", "+a",
  "abs(a)", "align(a, b)", "max(a, b)", "min(a, b)", "min(a, b, 3)", "max(a, True)", "min(a > b, 3)",
  "a < b", "a <= b", "a > b", "a >= b", "a == b", "a != b", "1 < a < 5", "not a", "not (a > b)",
  "not a == 7 or b", "a and b", "(a > b) and b", "(a > b) or 0", "True and a", "False or a",
  "a > b and b > 1", "a if a > b else b", "-True", "+False", "True + 1", "a * 4611686018427387904",
  "-(a - a - 9223372036854775807 - 1)", "abs(a - a - 9223372036854775807 - 1)", "align(a, 0)",
  "a // (b - b)", "a % (b - b)", "(a * 9223372036854775807) // (b - b)", "(a * 2) // b", "(a * 2) % b",
  "a ** (b - 10)", "x + 1", "max(x, 1)", "a > 0 and x", "x // a", "a // x", "a % 8 == 0",
  "max(1, a // 128)", "2**62 - 1 + 2**62", "(-2)**63", "a // -1", "b ** 70",
}
local VARS = {
  { a = 7, b = 2 }, { a = -3, b = 5 }, { a = 0, b = 0 }, { a = MAXI, b = -1 }, { a = MINI, b = -1 },
  { a = 128, b = 3 }, { a = 1024, b = 8 },
}

function test_generated_source_matches_the_closures()
  local ctx = { where = "pattern 'p'", names = { a = true, b = true, x = true } }
  local G = expr.generator({ a = true, b = true })  -- x is a known name the caller never sets
  local fs, gs = {}, {}
  local body = { "return {\n" }
  for i, text in ipairs(EXPRS) do
    fs[i] = expr.compile(text, ctx)
    gs[i] = expr.constraint(text, ctx)
    body[#body + 1] = ("  function(v) return %s end,\n  function(v) return %s end,\n  function(v) return %s end,\n")
      :format(G.expr(fs[i]), G.truthy(gs[i]), G.dim(fs[i]))
  end
  body[#body + 1] = "}\n"
  local made = G.load(table.concat(body), "=test")
  local function dim(v, f) local x = f(v); if x == true then return 1 elseif x == false then return 0 end; return x end
  for i, text in ipairs(EXPRS) do
    for _, v in ipairs(VARS) do
      local what = text .. " with a=" .. v.a .. ", b=" .. v.b
      lu.assertEquals(outcome(made[3 * i - 2], v), outcome(fs[i], v), what)
      lu.assertEquals(outcome(made[3 * i - 1], v), outcome(gs[i], v), what .. " (constraint)")
      lu.assertEquals(outcome(made[3 * i], v), outcome(function(w) return dim(w, fs[i]) end, v), what .. " (dim)")
    end
  end
end

-- expand.flat against M.each, candidate by candidate
local function each_flat(c, nk)
  local st, out = { candidates = 0, rejected = 0 }, {}
  expand.each(c, nk, function(cand)
    for _, side in ipairs { cand.inputs, cand.outputs } do
      for _, d in ipairs(side) do for _, x in ipairs(d) do out[#out + 1] = x end end
    end
  end, st)
  return out, st
end

local function assert_flat_is_each(name, p, grids, nk)
  local c = expand.compile(name, p, grids)
  local want, st = each_flat(c, nk)
  local X = expand.flat(c, nk)
  lu.assertEquals(X.candidates, st.candidates, name)
  lu.assertEquals(X.rejected, st.rejected, name)
  lu.assertEquals(X.count, st.candidates - st.rejected, name)
  lu.assertEquals(#X.dims, #want, name)
  for i = 1, #want do
    if X.dims[i] ~= want[i] or math.type(X.dims[i]) ~= math.type(want[i]) then
      lu.fail(("%s: value %d is %s, M.each gave %s"):format(name, i, tostring(X.dims[i]), tostring(want[i])))
    end
  end
end

function test_flat_lists_the_candidates_of_every_pattern()
  local patterns, grids = require "perfscript.grids.patterns", require "perfscript.grids.registry"
  local nk = { { 4096, 7168 }, { 7168, 2048 }, { 256, 128 } }
  for name, p in pairs(patterns) do
    if not p.generator then
      assert_flat_is_each(name, p, grids, nil)
      assert_flat_is_each(name, p, grids, nk)
    end
  end
  -- constants over iterators, booleans as dims, a rejected majority
  assert_flat_is_each("mixed", {
    iterators = { { "a", { 1, 2, 3, 4, 5, 6 } }, { "b", { 8, 16 } }, { "k", { 1, 2 } } }, constants = { k = 9 },
    constraints = { "a % 2 == 0 or b > 8", "not (a == 6)" },
    inputs = { "(a, b > 8, k)", "(align(a, 4) * b,)", "()" }, outputs = { "(max(a, b) // 2, a if a > 2 else b)" },
  }, {}, nil)
end

function test_flat_raises_the_closures_errors()
  local p = { iterators = { { "a", { 1, 0 } } }, inputs = { "(8 // a,)" }, outputs = { "(a,)" } }
  local c = expand.compile("div", p, {})
  local ok1, e1 = pcall(expand.flat, c, nil)
  local ok2, e2 = pcall(each_flat, c, nil)
  lu.assertFalse(ok1)
  lu.assertFalse(ok2)
  lu.assertEquals(tostring(e1), tostring(e2))
  lu.assertStrContains(tostring(e1), "integer division by zero")
end

-- shape.rows against the per-candidate functions
local function per_candidate(dims, count, stride, lin, lout, budget)
  local it, ot, keys, n, memory, src = {}, {}, {}, 0, 0, {}
  for c = 0, count - 1 do
    local function slots(lay)
      local out, dts = {}, {}
      for s = 1, #lay, 3 do
        local d = {}
        for j = 1, lay[s + 1] do d[j] = dims[c * stride + lay[s] + j] end
        out[#out + 1] = d
        dts[#dts + 1] = ({ [1] = "INT8", [2] = "FLOAT16", [4] = "FLOAT", [8] = "INT64" })[lay[s + 2]]
      end
      return out, dts
    end
    local ins, idt = slots(lin)
    local outs, odt = slots(lout)
    if budget and mem.row_bytes(ins, idt, outs, odt) > budget then
      memory = memory + 1
    else
      n = n + 1
      it[n], ot[n], keys[n], src[n] = shape.format(ins), shape.format(outs), shape.sort_key(ins, n), c + 1
    end
  end
  return it, ot, gridscan.order(keys, n), n, memory, nil, memory > 0 and src or nil
end

function test_rows_matches_the_per_candidate_functions()
  local seed = 12345
  local function rand(k) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % k end
  local stride, count, dims = 7, 400, {}
  for i = 1, stride * count do dims[i] = ({ 1, 2, 3, 16, 4096, 65536, 1 << 40 })[rand(7) + 1] end
  local lin = { 0, 2, 2, 2, 0, 2, 2, 3, 4, 5, 1, 1 }  -- a cleared slot (rank 0) in the middle
  local lout = { 0, 3, 2, 6, 1, 8 }
  for _, budget in ipairs { false, 1 << 20, 1 << 45 } do
    local want = { per_candidate(dims, count, stride, lin, lout, budget or nil) }
    local got = { shape.rows(dims, count, stride, lin, lout, budget or nil) }
    lu.assertEquals(got[4], want[4])
    lu.assertEquals(got[5], want[5])
    lu.assertEquals(got[1], want[1])
    lu.assertEquals(got[2], want[2])
    lu.assertEquals(got[3], want[3])
    lu.assertNil(got[6])
    lu.assertEquals(got[7], want[7])  -- the candidate behind each row, where some were dropped
    if budget == 1 << 20 then lu.assertTrue(got[5] > 0 and got[4] > 0, "the test needs both") end
  end
  -- the first candidate with a dim <= 0 (or not an integer) in a slot that is read stops the work
  local bad = { 1, 2, 3, 0, 5, 6, -1, 8, 9 }
  local _, _, _, n, _, at = shape.rows(bad, 3, 3, { 0, 2, 2 }, { 2, 1, 2 })
  lu.assertEquals(at, 2)
  lu.assertEquals(n, 1)
  local _, _, _, n2, _, at2 = shape.rows({ 1, 2, 0, 4, 5, 6 }, 2, 3, { 0, 2, 2 }, {})  -- 0 never read
  lu.assertNil(at2)
  lu.assertEquals(n2, 2)
end

os.exit(lu.LuaUnit.run())
