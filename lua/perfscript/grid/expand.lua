-- Template expansion of a grid pattern (docs/rules.md, Shape grids: patterns): the cartesian
-- product of its iterators (first = outermost), constants merged in (they win over an
-- iterator of the same name), constraints checked (also on the model (N, K)-pair path,
-- which the Python original skipped), shape templates evaluated. Compiled once per pattern.
local perf = require "perfscript"
local expr = require "perfscript.expr"

local M = {}

local META = { input_dtypes = "Input Data Types", input_formats = "Input Formats",
               output_dtypes = "Output Data Types", output_formats = "Output Formats" }

local function grid_values(name, spec, var, grids)
  if type(spec) == "string" then
    local g = grids[spec]
    if not g then perf.fail("pattern '%s': iterator '%s' names unknown grid '%s'", name, var, spec) end
    return g
  elseif type(spec) == "table" then
    for i, v in ipairs(spec) do
      if math.type(v) ~= "integer" then
        perf.fail("pattern '%s': iterator '%s' value %d is not an integer", name, var, i)
      end
    end
    return spec
  end
  perf.fail("pattern '%s': invalid grid spec for iterator '%s' (a grid name or a list of integers)",
            name, var)
end

local function iterator_list(name, list, grids)
  local out = {}
  for _, pair in ipairs(list or {}) do
    out[#out + 1] = { var = pair[1], values = grid_values(name, pair[2], pair[1], grids) }
  end
  return out
end

-- compile(name, pattern, grids) -> compiled pattern for M.each.
function M.compile(name, p, grids)
  local c = { name = name, iterators = iterator_list(name, p.iterators, grids),
              fallback = iterator_list(name, p.fallback_iterators, grids),
              model_nk_pairs = p.model_nk_pairs, constants = {}, extra = nil }
  if not p.inputs or not p.outputs then
    perf.fail("pattern '%s': needs both inputs and outputs", name)
  end
  local names = {}
  for _, it in ipairs(c.iterators) do names[it.var] = true end
  for _, it in ipairs(c.fallback) do names[it.var] = true end
  if p.model_nk_pairs then names.N, names.K = true, true end
  for k, v in pairs(p.constants or {}) do
    local iv = math.tointeger(v)
    if not iv then perf.fail("pattern '%s': constant '%s' is not an integer", name, k) end
    c.constants[k] = iv
    names[k] = true
  end
  local where = "pattern '" .. name .. "'"
  local ctx = { where = where, names = names }
  c.constraints = {}
  for i, text in ipairs(p.constraints or {}) do c.constraints[i] = expr.constraint(text, ctx) end
  c.inputs, c.outputs = {}, {}
  c.inputs_parts, c.outputs_parts = {}, {}
  for i, t in ipairs(p.inputs) do
    c.inputs[i] = expr.shape(t, ctx)
    c.inputs_parts[i] = { expr.shape_parts(t, ctx) }
  end
  for i, t in ipairs(p.outputs) do
    c.outputs[i] = expr.shape(t, ctx)
    c.outputs_parts[i] = { expr.shape_parts(t, ctx) }
  end
  for key, col in pairs(META) do
    if p[key] and #p[key] > 0 then
      c.extra = c.extra or {}
      c.extra[col] = table.concat(p[key], ";")
    end
  end
  return c
end

-- The iterators of a walk, outermost first, and the model pairs it takes (nil: none).
local function path(c, nk_pairs)
  local its = {}
  if c.model_nk_pairs and nk_pairs then
    for _, it in ipairs(c.iterators) do
      if it.var ~= "N" and it.var ~= "K" then its[#its + 1] = it end
    end
  else
    for _, it in ipairs(c.iterators) do its[#its + 1] = it end
    if c.model_nk_pairs then
      for _, it in ipairs(c.fallback) do its[#its + 1] = it end
    end
    nk_pairs = nil
  end
  return its, nk_pairs
end

-- The variables a walk sets before every leaf: its iterators, the constants, N and K.
local function bound(c, nk_pairs)
  local its, pairs_ = path(c, nk_pairs)
  local set = {}
  for _, it in ipairs(its) do set[it.var] = true end
  for k in pairs(c.constants) do set[k] = true end
  if pairs_ then set.N, set.K = true, true end
  return set
end

-- walk(c, nk_pairs, leaf): calls leaf(vars) for every candidate, in order; vars is one table,
-- refilled (pairs is the list of model (N, K) pairs or nil).
local function walk(c, nk_pairs, leaf)
  local its
  its, nk_pairs = path(c, nk_pairs)
  local vars, consts = {}, c.constants
  -- constants win over an iterator (or model pair) of the same name: set once, never overwritten
  for k, v in pairs(consts) do vars[k] = v end
  local set_n, set_k = consts.N == nil, consts.K == nil
  local depth = #its
  local function level(l)
    if l > depth then
      if nk_pairs then
        for _, nk in ipairs(nk_pairs) do
          if set_n then vars.N = nk[1] end
          if set_k then vars.K = nk[2] end
          leaf(vars)
        end
      else
        leaf(vars)
      end
      return
    end
    local it = its[l]
    local var, values = it.var, it.values
    if consts[var] ~= nil then  -- the constant wins: the iterator only repeats the candidates
      for _ = 1, #values do level(l + 1) end
      return
    end
    for i = 1, #values do
      vars[var] = values[i]
      level(l + 1)
    end
  end
  level(1)
end

-- each(c, pairs, emit, stats): emit gets {inputs, outputs, extra}; stats.candidates and
-- stats.rejected are counted.
function M.each(c, nk_pairs, emit, stats)
  local cons, ins, outs, extra = c.constraints, c.inputs, c.outputs, c.extra
  local ncons, nin, nout = #cons, #ins, #outs
  walk(c, nk_pairs, function(vars)
    stats.candidates = stats.candidates + 1
    for i = 1, ncons do
      if not cons[i](vars) then
        stats.rejected = stats.rejected + 1
        return
      end
    end
    local i_sh, o_sh = {}, {}
    for i = 1, nin do i_sh[i] = ins[i](vars) end
    for i = 1, nout do o_sh[i] = outs[i](vars) end
    emit { inputs = i_sh, outputs = o_sh, extra = extra }
  end)
end

-- The leaf of a walk, made once per pattern as Lua source (perfscript.expr's generator: no
-- closure call per expression node): leaf(vars, out, m) -> m + stride after storing every
-- shape's dims, inputs then outputs, at out[m + 1 ..] in M.each's order and values, or nil
-- when a constraint rejects the candidate (checked in order, the first false one stops).
-- Also the stride and the slot layouts.
local function leaf_of(c, nk_pairs)
  local G = expr.generator(bound(c, nk_pairs))
  local src = { "return function(v, out, m)\n" }
  for _, f in ipairs(c.constraints) do src[#src + 1] = "  if not " .. G.truthy(f) .. " then return nil end\n" end
  local slots_in, slots_out, k = {}, {}, 0
  for _, side in ipairs { { c.inputs_parts, slots_in }, { c.outputs_parts, slots_out } } do
    for s, part in ipairs(side[1]) do
      local dims = part[1]
      side[2][s] = { k, #dims }
      for j = 1, #dims do
        k = k + 1
        src[#src + 1] = ("  out[m + %d] = %s\n"):format(k, G.dim(dims[j]))
      end
    end
  end
  src[#src + 1] = ("  return m + %d\nend\n"):format(k)
  return G.load(table.concat(src), "=pattern '" .. c.name .. "'"), k, slots_in, slots_out
end

-- flat(c, pairs) -> the candidates M.each would emit, as one array of integers:
-- {dims = {...}, count = n, stride = dims a candidate, inputs = {{offset, rank}, ...},
--  outputs = {...}, extra = c.extra, candidates = n, rejected = n}; candidate i's input slot s
-- is dims[(i - 1) * stride + offset + 1 .. + rank] (offsets 0-based within the candidate).
function M.flat(c, nk_pairs)
  local leaf, stride, slots_in, slots_out = leaf_of(c, nk_pairs)
  local dims, m, candidates, rejected = {}, 0, 0, 0
  walk(c, nk_pairs, function(vars)
    candidates = candidates + 1
    local r = leaf(vars, dims, m)
    if r then m = r else rejected = rejected + 1 end
  end)
  return { dims = dims, count = candidates - rejected, stride = stride,
           inputs = slots_in, outputs = slots_out, extra = c.extra, candidates = candidates, rejected = rejected }
end

return M
