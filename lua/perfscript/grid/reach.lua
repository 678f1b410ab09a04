-- Keeps the grid from appending rows the consumer (TensorCast's profiling-database reader,
-- spec database_consumer.md) could never answer with: a row is only useful if the query made
-- from its own shapes finds that row. Per query mode of the kernel's op_mapping.yaml route:
--   elementwise  the first row whose first output shape matches (identity, leading-1 strip,
--                block padding, 3-D flatten) answers, whatever its dtype (spec 2.4);
--   moe_fused    the first row whose inputs match (any rule) with the same EP Size (2.6);
--   attention    the nearest avg_seq_len among rows with the same dtype, heads, head dim,
--                sparse mode and KV heads and a T equal or block-padded either way; equally
--                near rows with other latencies make the lookup miss (require_semantic_unique,
--                2.5 and 1.6);
--   compute      the nearest rule distance, the first row of the earliest kernel of the
--                candidate list among equals (2.3), on the first tc_input_count inputs.
-- A candidate that an earlier row (existing rows, rows of kernels earlier in the candidate
-- list, rows accepted before it) would answer instead is dropped and counted as shadowed.
-- Elementwise and MoE lookups read only the mapping's kernel_type, so their alternates get
-- no rows. Rows of first-match kernels are appended largest shape first, so a smaller row
-- never pads up to answer for a larger one. The matching rules are perfscript.db.match's (the
-- REPL's copy of the consumer's).
local shape = require "perfscript.shape"
local match = require "perfscript.db.match"

local M = {}

-- The consumer's spelling of each dtype it maps from torch (DT_BF16, INT8, FLOAT, ...).
local CONSUMER = {}
for _, v in pairs(match.DTYPE_MAP) do CONSUMER[v] = true end

-- misspelled(name) -> the consumer's spelling when `name` is another spelling of a dtype the
-- consumer knows (DT_INT8 for INT8, BF16 for DT_BF16), else nil.
function M.misspelled(name)
  if CONSUMER[name] then return nil end
  local bare = name:match("^DT_(.+)$")
  if bare and CONSUMER[bare] then return bare end
  if CONSUMER["DT_" .. name] then return "DT_" .. name end
  return nil
end

-- First misspelled dtype in a ';' list cell: name, fix; or nil.
function M.check_dtypes(cell)
  for _, d in ipairs(shape.split(cell or "")) do
    d = d:gsub("^[%s\"]+", ""):gsub("[%s\"]+$", "")
    local fix = d ~= "" and M.misspelled(d)
    if fix then return d, fix end
  end
  return nil
end

---------------------------------------------------------------------------------------------
-- Rows as the consumer parses them: empty shape slots and empty names dropped, "()" a scalar.

local function clean(cell)
  cell = cell or ""
  if cell:find('[%s"]') then cell = cell:gsub('^[%s"]+', ""):gsub('[%s"]+$', "") end
  return cell
end

local function shapes_of(cell)
  local out = {}
  for _, part in ipairs(shape.split(clean(cell))) do
    part = part:gsub("^%s+", ""):gsub("%s+$", "")
    if part == "()" then
      out[#out + 1] = { scalar = true }
    elseif part ~= "" then
      local dims = {}
      for d in part:gmatch("[^,]+") do
        local v = math.tointeger(tonumber(d))
        if not v then return nil end
        dims[#dims + 1] = v
      end
      out[#out + 1] = dims
    end
  end
  return out
end

local function names_of(cell)
  local out = {}
  for _, p in ipairs(shape.split(clean(cell))) do
    p = p:gsub("^%s+", ""):gsub("%s+$", "")
    if p ~= "" then out[#out + 1] = p end
  end
  return out
end

-- FRACTAL_NZ [..., H, W, bh, bw] -> [..., H*bw, W*bh] (4-D and more; the consumer's restore).
local function nz_restore(s)
  if s.scalar or #s < 4 then return s end
  local n, out = #s, {}
  for i = 1, n - 4 do out[i] = s[i] end
  out[#out + 1] = s[n - 3] * s[n]
  out[#out + 1] = s[n - 2] * s[n - 1]
  return out
end

-- view(get, mode, n) -> the parts of a row a lookup compares; get(column) -> cell text.
local function view(get, mode, n)
  local v = {}
  if mode == "elementwise" then
    local outs = shapes_of(get("Output Shapes"))
    v.out = outs and outs[1]
    return v.out and v or nil
  end
  local ins = shapes_of(get("Input Shapes"))
  if not ins then return nil end
  local dts, fms = names_of(get("Input Data Types")), names_of(get("Input Formats"))
  if mode == "attention" then
    local q = ins[1]
    if not q or q.scalar then return nil end
    if #q == 4 and q[3] == 1 then q = { q[1], q[2], q[4] } end
    if #q ~= 3 then return nil end  -- the consumer cannot read it: no query finds the row
    local avg = tonumber(clean(get("Runtime avg_seq_len"))) or tonumber(clean(get("avg_seq_len")))
    if not avg then return nil end
    v.T = q[1]
    v.key = table.concat({ dts[1] or "", q[2], q[3], clean(get("Runtime sparse_mode")),
                           clean(get("Runtime num_key_value_heads")), math.floor(avg) }, "|")
    return v
  end
  if n then
    for i = #ins, n + 1, -1 do ins[i] = nil end
    for i = #dts, n + 1, -1 do dts[i] = nil end
  end
  for i = 1, #ins do
    if fms[i] == "FRACTAL_NZ" then ins[i] = nz_restore(ins[i]) end
  end
  v.shapes, v.dtypes, v.ep = ins, dts, clean(get("EP Size"))
  return v
end

local function key_of(shapes, dtypes)
  return match.shapes_text(shapes) .. "|" .. table.concat(dtypes, ";")
end

---------------------------------------------------------------------------------------------
-- Whether an earlier row answers a candidate's query

local function eq(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

local function padded_dims(tc, csv)
  if #tc ~= #csv then return false end
  local any = false
  for i = 1, #tc do
    if tc[i] ~= csv[i] then
      if not match.padded(tc[i], csv[i]) then return false end
      any = true
    end
  end
  return any
end

-- spec 2.4: does a row with first output `csv` answer a query with output `q`?
local function out_answers(q, csv)
  if q.scalar or csv.scalar then return false end
  q = match.strip1(q)
  local cs = match.strip1(csv)
  if eq(q, csv) or eq(q, cs) or padded_dims(q, csv) or padded_dims(q, cs) then return true end
  if #q == 3 and #csv == 2 then
    local f = { q[1] * q[2], q[3] }
    return eq(f, csv) or eq(f, cs) or padded_dims(f, csv) or padded_dims(f, cs)
  end
  return false
end

local function t_compatible(a, b)
  return a == b or match.padded(a, b) or match.padded(b, a)
end

-- A set of the rows a lookup can return, for one kernel.
local Set = {}
Set.__index = Set

local function new_set(kernel, mode)
  return setmetatable({ kernel = kernel, mode = mode, list = {}, keys = {} }, Set)
end

function Set:add(v)
  local list = self.list
  list[#list + 1] = v
  if v.key then
    local b = self.keys[v.key]
    if not b then b = {}; self.keys[v.key] = b end
    b[#b + 1] = v.T
  elseif v.shapes then
    self.keys[key_of(v.shapes, v.dtypes) .. "|" .. v.ep] = true
  end
end

-- answers(v) -> true when a row of this set is returned for v's own query (v loses).
function Set:answers(v, kernel)
  local mode = self.mode
  if mode == "elementwise" then
    for _, r in ipairs(self.list) do
      if out_answers(v.out, r.out) then return true end
    end
    return false
  elseif mode == "attention" then
    local b = self.keys[v.key]
    if b then
      for _, t in ipairs(b) do if t_compatible(v.T, t) then return true end end
    end
    return false
  elseif mode == "moe_fused" then
    local q = { shapes = v.shapes, dtypes = v.dtypes }
    for _, r in ipairs(self.list) do
      if r.ep == v.ep and match.row(kernel, q, r.shapes, r.dtypes) then return true end
    end
    return false
  end
  -- compute: an equally good (distance 0) row found first; index lookups over the rule variants
  for _, shapes in ipairs(match.variants(kernel, v.shapes)) do
    if self.keys[key_of(shapes, v.dtypes) .. "|" .. v.ep] then return true end
    local stripped = {}
    for i, s in ipairs(shapes) do stripped[i] = match.strip1(s) end
    if self.keys[key_of(stripped, v.dtypes) .. "|" .. v.ep] then return true end
  end
  return false
end

---------------------------------------------------------------------------------------------
-- One database directory's reach state

-- new(meta) -> state; meta: route.load_meta's table (query_mode, tc_input_count, before).
function M.new(meta)
  return { meta = meta or {}, sets = {} }
end

local function mode_of(state, kernel)
  local km = state.meta[kernel] or {}
  local qm = km.query_mode
  if qm == "elementwise" then return "elementwise" end
  if qm == "attention_special" or kernel == "FusedInferAttentionScore" then return "attention" end
  if qm == "moe_fused" then return "moe_fused" end
  return "compute", km.tc_input_count
end

-- first_match(state, kernel) -> true when the first matching row wins (append largest first).
function M.first_match(state, kernel)
  local m = mode_of(state, kernel)
  return m == "elementwise" or m == "moe_fused"
end

-- Starts a kernel's file: existing rows (an iterator of get(column) functions) go in first.
function M.begin(state, kernel, rows)
  local mode, n = mode_of(state, kernel)
  local set = new_set(kernel, mode)
  state.sets[kernel] = set
  for get in rows do
    local v = view(get, mode, n)
    if v then set:add(v) end
  end
  return { state = state, kernel = kernel, mode = mode, n = n, set = set }
end

-- keep(ctx, get) -> true to append the candidate (get(column) -> its cell), false when an
-- earlier row would answer its query instead, nil, why when no query can reach it.
function M.keep(ctx, get)
  local km = ctx.state.meta[ctx.kernel] or {}
  -- elementwise and MoE lookups read only the mapping's kernel_type, never its alternates
  if km.alternates_of and (ctx.mode == "elementwise" or ctx.mode == "moe_fused") then
    return nil, "alternate of a first-match lookup"
  end
  local v = view(get, ctx.mode, ctx.n)
  if not v then return nil, "unreadable" end
  for _, k in ipairs(km.before or {}) do
    local s = ctx.state.sets[k]
    if s and s.mode == ctx.mode and s:answers(v, k) then return false end
  end
  if ctx.set:answers(v, ctx.kernel) then return false end
  ctx.set:add(v)
  return true
end

return M
