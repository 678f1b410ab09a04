-- Keeps the grid from appending rows the consumer (TensorCast's profiling-database reader,
-- docs/database.md) could never answer with: a row is only useful if the query made
-- from its own shapes finds that row (per query mode, as perfscript.db.reach describes).
-- A candidate that an earlier row (existing rows, rows of kernels earlier in the candidate
-- list, rows accepted before it) would answer instead is dropped and counted as shadowed.
-- Elementwise and MoE lookups read only the mapping's kernel_type, so their alternates get
-- no rows. Rows of first-match kernels are appended largest shape first, so a smaller row
-- never pads up to answer for a larger one. Which row answers a query is perfscript.db.reach's
-- (the consumer's matching model, shared with db_lint); this module keeps the per-directory
-- state of the append: the kernels' modes, the kernels tried first, the rows accepted so far.
local answer = require "perfscript.db.reach"
local match = require "perfscript.db.match"
local gridscan = require "perfscript.gridscan"

local M = {}
local fast_sets

M.misspelled = answer.misspelled

-- check_dtypes(cell) -> name, fix | nil (perfscript.db.reach's), remembered per cell: a grid
-- asks it of every candidate, and a kernel's candidates share a handful of dtype cells.
local dtype_memo = {}
local NONE = {}
function M.check_dtypes(cell)
  cell = cell or ""
  local r = dtype_memo[cell]
  if not r then
    local name, fix = answer.check_dtypes(cell)
    r = name and { name, fix } or NONE
    dtype_memo[cell] = r
  end
  if r == NONE then return nil end
  return r[1], r[2]
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

-- The tc_input_count perfscript.gridscan makes a kernel's existing rows' compute keys with
-- (-1: every slot), or nil when the kernel is not read in compute mode (its rows then go
-- through view in Lua).
function M.key_n(state, kernel)
  local mode, n = mode_of(state, kernel)
  if mode ~= "compute" then return nil end
  if n == nil then return -1 end
  if math.type(n) == "integer" and n >= 0 then return n end
  return nil
end

-- The cells of an existing row that begin's views read (perfscript.db.reach's VIEW_COLS).
function M.view_cols(state, kernel)
  return answer.VIEW_COLS[(mode_of(state, kernel))]
end

-- Starts a kernel's file: existing rows (an iterator of get(column) functions) go in first;
-- ckeys: the compute keys of the others (perfscript.gridscan's set, made with M.key_n).
function M.begin(state, kernel, rows, ckeys)
  local mode, n = mode_of(state, kernel)
  local set = answer.answer_set(kernel, mode)
  set.ckeys = ckeys
  state.sets[kernel] = set
  -- an elementwise view is its row's Output Shapes cell alone: a cell seen before makes the
  -- same view, which adds nothing to what the set answers (the others' rows are read whole)
  local one = mode == "elementwise" and answer.VIEW_COLS.elementwise[1]
  local seen = {}
  for get in rows do
    local cell = one and (get(one) or false)
    if not (one and seen[cell]) then
      if one then seen[cell] = true end
      local v = answer.view(get, mode, n)
      if v then set:add(v) end
    end
  end
  return { state = state, kernel = kernel, mode = mode, n = n, set = set }
end

-- The cells of a row view reads besides the shape, dtype and format cells (the template's or
-- a generator's extra cells).
M.VIEW_EXTRA = { "EP Size", "Runtime avg_seq_len", "avg_seq_len", "Runtime sparse_mode",
                 "Runtime num_key_value_heads" }

-- The class of a kernel's query variants (match.variants) as perfscript.gridscan's flags.
function M.variant_flags(kernel)
  return (match.MATMUL[kernel] and 1 or 0) | (match.FLATTEN_3D[kernel] and 2 or 0)
    | (match.MERGE_LAST[kernel] and 4 or 0) | (kernel == "Index" and 8 or 0)
end
local variant_flags = M.variant_flags

-- For a compute-mode file whose sets (the kernels tried before it and its own) all hold their
-- keys in C (gridscan's): {set, ..., n = key n, args = gridscan.keep's sets and flags}; false
-- otherwise. The sets' Lua keys must stay empty for the C answer to be whole (keep checks).
fast_sets = function(ctx)
  if ctx.mode ~= "compute" or not ctx.set.ckeys then return false end
  local n = M.key_n(ctx.state, ctx.kernel)
  if not n then return false end
  local km = ctx.state.meta[ctx.kernel] or {}
  local fast, args = { n = n }, { ctx.set.ckeys, variant_flags(ctx.kernel) }
  fast[1], fast[2] = ctx.set, true
  for _, k in ipairs(km.before or {}) do
    local s = ctx.state.sets[k]
    if s and s.mode == ctx.mode then
      if not s.ckeys then return false end
      fast[#fast + 1], fast[#fast + 2] = s, true
      args[#args + 1], args[#args + 2] = s.ckeys, variant_flags(k)
    end
  end
  fast.args = args
  return fast
end

-- keep_cells(ctx, is, idt, ifm, ep) -> keep's answer for a compute-mode candidate from its
-- Input Shapes, Input Data Types, Input Formats and EP Size cells, decided in C (gridscan.keep)
-- where every set it asks holds its keys there; nil when keep must take the Lua path.
function M.keep_cells(ctx, is, idt, ifm, ep)
  local fast = ctx.fast
  if fast == nil then fast = fast_sets(ctx); ctx.fast = fast end
  if not fast then return nil end
  for j = 1, #fast, 2 do if next(fast[j].keys) ~= nil then return nil end end
  local a = fast.args
  if #a == 2 then return gridscan.keep(is, idt, ifm, ep, fast.n, a[1], a[2]) end
  if #a == 4 then return gridscan.keep(is, idt, ifm, ep, fast.n, a[1], a[2], a[3], a[4]) end
  return gridscan.keep(is, idt, ifm, ep, fast.n, table.unpack(a))
end

-- keep_rows(ctx, cells, idx, from, idt, ifm, ep, out) -> shadowed [, stop]: keep_cells for the
-- candidates idx[from..] in order, whose Input Shapes are cells[idx[p]] and whose other cells
-- are the same, in one C call (gridscan.keep_rows): the kept indices appended to out, the
-- others counted; stop: the first position keep_cells would answer nil for. nil when keep_cells
-- takes the Lua path.
function M.keep_rows(ctx, cells, idx, from, idt, ifm, ep, out)
  local fast = ctx.fast
  if fast == nil then fast = fast_sets(ctx); ctx.fast = fast end
  if not fast then return nil end
  for j = 1, #fast, 2 do if next(fast[j].keys) ~= nil then return nil end end
  return gridscan.keep_rows(cells, idx, from, idt, ifm, ep, fast.n, out, table.unpack(fast.args))
end

-- keep(ctx, get [, views, i]) -> true to append the candidate (get(column) -> its cell), false
-- when an earlier row would answer its query instead, nil, why when no query can reach it.
-- views: a table of the views already made of candidates with the same cells but their shapes,
-- dtypes and formats (views[i], false for none), shared by the files a grid's rows go to.
function M.keep(ctx, get, views, i)
  local km = ctx.state.meta[ctx.kernel] or {}
  -- elementwise and MoE lookups read only the mapping's kernel_type, never its alternates
  if km.alternates_of and (ctx.mode == "elementwise" or ctx.mode == "moe_fused") then
    return nil, "alternate of a first-match lookup"
  end
  if ctx.mode == "compute" then
    local r = M.keep_cells(ctx, get("Input Shapes"), get("Input Data Types"), get("Input Formats"), get("EP Size"))
    if r ~= nil then return r end
  end
  local v
  if views then
    v = views[i]
    if v == nil then v = answer.view(get, ctx.mode, ctx.n) or false; views[i] = v end
  else
    v = answer.view(get, ctx.mode, ctx.n)
  end
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
