-- Shared helpers of the replay builders (perfscript/replay/<Op>.lua).
--
-- A builder is `function(row, ctx) -> case | nil, reason` where row is the database row
-- keyed by column name. A case says what the executor (perfscript/replay/executor.py) calls:
--   {api = "torch.add", args = {...}, kwargs = {...}, post = "contiguous" | nil,
--    method = "masked_fill_" | nil (call args[1]:method(args[2..])), index = true | nil}
-- Arguments are plain JSON values or tensor specs made with T{...}:
--   {tensor = {shape = {..}, dtype = "DT_BF16", format = "ND", init = "empty" | "randint" |
--    "ones" | "zeros" | "arange" | "perm" | "data" | "triu", high =, data =, transpose =,
--    transpose_last2 =, nz = true (cast to FRACTAL_NZ after building)}}
-- Slots are always parsed with holes kept, by index in shapes, dtypes and formats together
-- (the Python original's compact parser let a later dtype slide onto the wrong tensor).
local shape = require "perfscript.shape"
local memo = require "perfscript.memo"

local M = {}

local trim = require("perfscript.path").trim
M.trim = trim

-- split-keep: strip the cell, split on ';', strip each item, keep empty items ("" -> {}).
function M.split(cell) return shape.split(cell or "") end

-- The input/output slot lists of a row: {shapes = {dims|false}, dtypes = {...}, formats = {...}}
-- shapes[i] is false for an empty slot; a slot that is not integers is an error. dtypes and
-- formats are shared between calls: builders read them, never write them.
local CELLS = { ["in"] = { "Input Shapes", "Input Data Types", "Input Formats" },
                 out = { "Output Shapes", "Output Data Types", "Output Formats" } }
local parse, split = shape.parse, shape.split
-- The dtype and format lists of slots, split once per cell text (a grid asks every builder
-- about thousands of rows sharing a handful of these cells): shared, so read only.
local split_cell, split_memo = memo.bounded(split)
function M.slots(row, side)
  local names = side == "out" and CELLS.out or CELLS["in"]
  local parsed, err = parse(row[names[1]] or "")
  if not parsed then return nil, err end
  -- the parsed slots become the shapes list (an empty slot false)
  local n = #parsed
  for i = 1, n do if #parsed[i] == 0 then parsed[i] = false end end
  local dc, fc = row[names[2]] or "", row[names[3]] or ""
  return { shapes = parsed, dtypes = split_memo[dc] or split_cell(dc), formats = split_memo[fc] or split_cell(fc),
           n = n }
end

-- Non-empty slot indices (the compact view, aligned across the three lists).
function M.present(sl)
  -- four array places made at once: no regrowth for the usual one to four slots
  local idx, n, shapes = { nil, nil, nil, nil }, 0, sl.shapes
  for i = 1, sl.n do if shapes[i] then n = n + 1; idx[n] = i end end
  return idx
end

-- dtype(name) -> "DT_..." (perfscript.shape.dtype_normalize), remembered per spelling: a grid
-- asks each builder about thousands of rows sharing a handful of dtype names. Anything but a
-- string goes to the C function as it is (the same result or the same argument error).
local NORM = { dtype = shape.dtype_normalize }
local dtype_of, dtype_memo = memo.bounded(function(name) return NORM.dtype(name) end)
function M.dtype(name)
  if type(name) ~= "string" then return (NORM.dtype(name)) end
  return dtype_memo[name] or dtype_of(name)
end

M.TORCH_DTYPES = { DT_FLOAT = true, DT_FLOAT16 = true, DT_BF16 = true, DT_DOUBLE = true,
  DT_INT8 = true, DT_UINT8 = true, DT_INT16 = true, DT_INT32 = true, DT_INT64 = true, DT_BOOL = true }

-- A tensor spec from slot i (shape, dtype, format), with the FRACTAL_NZ expansion of a 4-D
-- recorded shape to its logical 2-D shape. opts: dtype (override), init, transpose, ...
-- trim, skipped where neither end is whitespace (a split item, the usual case)
-- (remembered per text: a grid's rows share a handful of format names)
local strip, strip_memo = memo.bounded(function(s)
  local b, e = s:byte(1), s:byte(-1)
  if b and (b == 32 or (b >= 9 and b <= 13) or e == 32 or (e >= 9 and e <= 13)) then return trim(s) end
  return s
end)

local NO_OPTS = {}
-- The checks of M.tensor (its one home): the shape (FRACTAL_NZ's logical one), dtype and format
-- of slot i, or nil, reason.
local function tensor_parts(sl, i, opts)
  local dims = sl.shapes[i]
  if not dims then
    return nil, ("input slot %d has no shape (a theory row with an empty slot?)"):format(i)
  end
  -- the memos read here first: this runs for every slot of every candidate a grid asks about
  local raw = sl.dtypes[i] or ""
  local dt = opts.dtype or dtype_memo[raw] or M.dtype(raw)
  if dt == "DT_UNDEFINED" and opts.default_dtype then dt = opts.default_dtype end
  if not M.TORCH_DTYPES[dt] then return nil, "Unsupported dtype: " .. dt end
  raw = sl.formats[i] or ""
  local fmt = strip_memo[raw] or strip(raw)
  if fmt == "" then fmt = opts.default_format or "ND" end
  if fmt == "FRACTAL_NZ" and not opts.no_nz_expand then
    local logical, err = shape.nz_logical(dims)  -- batch dims kept
    if not logical then return nil, err end
    dims = logical
  end
  return dims, dt, fmt
end

-- Whether M.tensor(sl, i, opts) builds (a check-only builder's question): dims (the tensor's
-- shape), or nil, reason.
function M.tensor_ok(sl, i, opts)
  return tensor_parts(sl, i, opts or NO_OPTS)
end

function M.tensor(sl, i, opts)
  opts = opts or NO_OPTS
  local dims, dt, fmt = tensor_parts(sl, i, opts)
  if not dims then return nil, dt end
  local t = { shape = dims, dtype = dt, format = fmt }
  if fmt == "FRACTAL_NZ" then t.nz = true end
  if opts ~= NO_OPTS then for k, v in pairs(opts) do
    if k ~= "dtype" and k ~= "default_dtype" and k ~= "default_format" and k ~= "no_nz_expand" then t[k] = v end
  end end
  return { tensor = t }
end

-- A tensor with an explicit shape (synthesised arguments).
function M.T(dims, dtype, init, extra)
  local t = { shape = dims, dtype = dtype, format = "ND", init = init or "empty" }
  for k, v in pairs(extra or {}) do t[k] = v end
  return { tensor = t }
end

-- Several tensors from slots; returns the list or nil, reason.
function M.tensors(sl, idx, opts)
  local out = {}
  for k, i in ipairs(idx) do
    local t, err = M.tensor(sl, i, opts and opts[i])
    if not t then return nil, err end
    out[k] = t
  end
  return out
end

-- Whether M.tensors(sl, idx, opts) builds: true, or nil, reason (the first slot that fails).
function M.tensors_ok(sl, idx, opts)
  for _, i in ipairs(idx) do
    local ok, err = tensor_parts(sl, i, opts and opts[i] or NO_OPTS)
    if not ok then return nil, err end
  end
  return true
end

-- must(v, err): v, or a replay refusal with err (for functions returning nil, message).
function M.must(v, err)
  if v == nil then error({ reason = tostring(err) }, 0) end
  return v
end

function M.need(cond, fmt, ...)
  if not cond then error({ reason = string.format(fmt, ...) }, 0) end
end

-- Runs a builder body, turning need() failures into nil, reason.
function M.guard(f, ...)
  local ok, res, extra = pcall(f, ...)
  if ok then return res, extra end
  if type(res) == "table" and res.reason then return nil, res.reason end
  error(res, 0)
end

-- builder(body, ok [, into]) -> a builder as a callable table: build(row) runs body(row) (the
-- case), check(row) runs ok(row) (build's checks only, true; perfscript.replay.registry.verdict),
-- both through guard; into: a table of the builder's other fields to fill.
function M.builder(body, ok, into)
  local B = into or {}
  function B.build(row) return M.guard(body, row) end
  function B.check(row) return M.guard(ok, row) end
  return setmetatable(B, { __call = function(_, row) return B.build(row) end })
end

-- distribute_total: b buckets of at least min, the remainder spread over the first ones.
function M.distribute(total, b, min)
  min = min or 1
  M.need(total >= b * min, "cannot distribute %d over %d buckets of at least %d", total, b, min)
  local base, extra = (total - b * min) // b, (total - b * min) % b
  local out = {}
  for i = 1, b do out[i] = min + base + (i <= extra and 1 or 0) end
  return out
end

function M.cumsum(list)
  local out, s = {}, 0
  for i, v in ipairs(list) do s = s + v; out[i] = s end
  return out
end

function M.numel(dims) return shape.numel(dims) end

-- The near-even split of total into g groups, cumulative (group_list of grouped matmuls).
function M.group_list(total, g)
  local sizes = {}
  for i = 1, g do sizes[i] = total // g + (i <= total % g and 1 or 0) end
  return M.cumsum(sizes)
end

function M.first_nonblank(...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if v and trim(v) ~= "" then return trim(v) end
  end
  return nil
end

-- A generic "exactly n inputs, call api(t1..tn, kwargs)" builder.
function M.simple(api, n, kwargs, extra)
  return function(row)
    return M.guard(function()
      local sl = M.must(M.slots(row, "in"))
      local idx = M.present(sl)
      M.need(n == nil or #idx == n, "expects exactly %d inputs, got %d", n or 0, #idx)
      M.need(#idx >= 1, "no input shapes")
      local args = M.must(M.tensors(sl, idx))
      local case = { api = api, args = args, kwargs = kwargs }
      for k, v in pairs(extra or {}) do case[k] = v end
      return case
    end)
  end
end

return M
