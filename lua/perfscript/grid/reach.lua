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

M.misspelled, M.check_dtypes = answer.misspelled, answer.check_dtypes

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
  local set = answer.answer_set(kernel, mode)
  state.sets[kernel] = set
  for get in rows do
    local v = answer.view(get, mode, n)
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
  local v = answer.view(get, ctx.mode, ctx.n)
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
