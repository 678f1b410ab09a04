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

local M = {}

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

-- Starts a kernel's file: existing rows (an iterator of get(column) functions) go in first;
-- ckeys: the compute keys of the others (perfscript.gridscan's set, made with M.key_n).
function M.begin(state, kernel, rows, ckeys)
  local mode, n = mode_of(state, kernel)
  local set = answer.answer_set(kernel, mode)
  set.ckeys = ckeys
  state.sets[kernel] = set
  for get in rows do
    local v = answer.view(get, mode, n)
    if v then set:add(v) end
  end
  return { state = state, kernel = kernel, mode = mode, n = n, set = set }
end

-- The cells of a row view reads besides the shape, dtype and format cells (the template's or
-- a generator's extra cells).
M.VIEW_EXTRA = { "EP Size", "Runtime avg_seq_len", "avg_seq_len", "Runtime sparse_mode",
                 "Runtime num_key_value_heads" }

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
