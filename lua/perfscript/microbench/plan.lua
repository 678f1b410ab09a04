-- Replay plans: database rows -> replay cases through the per-operator builders of
-- lua/perfscript/replay/<Op>.lua, written as JSON lines for the executor. A row that cannot be
-- replayed is reported with its reason, never deleted.
--
--   local p = plan.build(files, {mode = "all", ep_size = 16, builder = function(op) ... end})
--   p.cases, p.unreplayable = {{op=, csv=, row=, shapes=, reason=}}, p.skipped[op] = n
--   plan.write(path, p, {repeat_count = 1, warmup = 1, seed = 0})
local perf = require "perfscript"
local schema = require "perfscript.microbench.schema"

local M = {}

-- The kernel types with a replay builder (perfscript/replay/registry.lua, the one home of
-- "can this row be replayed").
local registry = require "perfscript.replay.registry"
M.OPS = registry.KERNELS
M.IS_OP = registry.IS_KERNEL

-- Operators whose replay needs the vllm-ascend custom operator package (the Python original's list,
-- plus SparseFlashAttention and LightningIndexer which call the same library).
M.CUSTOM_OPP_OPS = { AddRmsNormBias = true, DispatchFFNCombine = true, KvRmsNormRopeCache = true,
  RINGMLAPrefillBF16Kernel = true, split_qkv_rmsnorm_rope_kernel = true,
  SparseFlashAttention = true, LightningIndexer = true }

-- Whether DispatchFFNCombine is left out (docs/rules.md, Replay): missing-only mode,
-- EP > 1, more local ranks needed than visible NPUs (and some visible), and either no --ops
-- or only DispatchFFNCombine selected.
function M.dfc_skip(ops, ep, nproc, visible, mode)
  if mode ~= "missing-only" or not ep or ep <= 1 then return false end
  local need = nproc or ep
  if not (visible > 0 and need > visible) then return false end
  if not ops then return true end
  for _, op in ipairs(ops) do if op ~= "DispatchFFNCombine" then return false end end
  return true
end

-- Visible NPUs without torch: the device nodes /dev/davinci<N>, narrowed by
-- ASCEND_RT_VISIBLE_DEVICES when set.
function M.visible_npus()
  local env = os.getenv("ASCEND_RT_VISIBLE_DEVICES")
  if env and env:match("%S") then
    local n = 0
    for _ in env:gmatch("[^,%s]+") do n = n + 1 end
    return n
  end
  local ok, lfs = pcall(require, "lfs")
  if not ok or lfs.attributes("/dev", "mode") ~= "directory" then return 0 end
  local n = 0
  for name in lfs.dir("/dev") do if name:match("^davinci%d+$") then n = n + 1 end end
  return n
end

-- Whether op (a kernel type) needs the vllm-ascend custom operator package.
function M.needs_custom_opp(op)
  return M.CUSTOM_OPP_OPS[registry.ALIAS[op] or op] == true
end

-- The builder of op (registry.builder): a function, or nil, reason.
M.builder = registry.builder

-- Writes the replay executor (perfscript/replay/executor.py: the user's own under --lua-dir,
-- else the copy embedded in the binary) to path, so that an installed binary needs no source
-- tree and the executor always matches the plan format of this binary.
-- opts.golden: also the golden package (perfscript/replay/golden/*.py, the live tree's files
-- and the embedded ones) into golden/ beside it, for --device cpu|meta.
function M.write_executor(path, opts)
  local library = require "perfscript.library"
  local text, origin = library.read("perfscript/replay/executor.py")
  if not text then return nil, origin end
  local ok, err = perf.fs.write_atomic(path, text)
  if not ok or not (opts and opts.golden) then return ok, err end
  local rel = "perfscript/replay/golden"
  local names, seen = {}, {}
  local function add(n)
    if n:match("^[%w_]+%.py$") and not seen[n] then seen[n] = true; names[#names + 1] = n end
  end
  for _, n in ipairs(library.list(rel)) do add(n) end
  local live = library.dir()
  if live and require("perfscript.path").isdir(live .. "/" .. rel) then
    for n in require("lfs").dir(live .. "/" .. rel) do add(n) end
  end
  if not seen["__init__.py"] then return nil, rel .. "/__init__.py: not in the perfscript library" end
  table.sort(names)
  local dir = path:gsub("[^/]*$", "") .. "golden"
  ok, err = perf.fs.mkdir_p(dir)
  if not ok then return nil, err end
  for _, n in ipairs(names) do
    local t, why = library.read(rel .. "/" .. n)
    if not t then return nil, why end
    ok, err = perf.fs.write_atomic(dir .. "/" .. n, t)
    if not ok then return nil, err end
  end
  return true
end

local RECORD = { "OP State", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                 "Output Data Types", "Output Formats", "EP Size" }

-- The columns every builder reads its inputs from: a header without them makes every row
-- unreplayable for that reason (not the builder's "needs at least one input").
local INPUT_COLUMNS = { "Input Shapes", "Input Data Types" }

local function missing_inputs(header)
  local have, miss = {}, {}
  for _, c in ipairs(header) do have[c] = true end
  for _, c in ipairs(INPUT_COLUMNS) do if not have[c] then miss[#miss + 1] = "'" .. c .. "'" end end
  if #miss == 0 then return nil end
  return ("the header has no %s column%s"):format(table.concat(miss, " or "), #miss > 1 and "s" or "")
end

-- The row's output slots as the executor's golden check reads them: {{shape = {..}, dtype =
-- "DT_.."}, ...} (an empty slot has no shape: not checked), or nil, reason.
function M.outputs(row)
  local shape = require "perfscript.shape"
  local slots, err = shape.parse(row["Output Shapes"] or "")
  if not slots then return nil, "Output Shapes: " .. tostring(err) end
  local dtypes = shape.split(row["Output Data Types"] or "")
  local out = {}
  for i, dims in ipairs(slots) do
    local o = { dtype = shape.dtype_normalize(dtypes[i] or "") }
    if #dims > 0 then o.shape = dims end
    out[i] = o
  end
  return out
end

-- files: list of {op=, path=}. opts: mode, ep_size (DispatchFFNCombine's EP where a row
-- records none), builder (op -> builder | nil, reason), say, outputs (each case carries its
-- row's parsed output slots, M.outputs, for the golden check of --validate).
-- p.no_builder[op] = {rows = n, reason = why}: the rows to measure of a kernel type no builder
-- replays (counted, not listed row by row).
-- p.warnings: files with nothing to read (empty), as "path: why".
function M.build(files, opts)
  opts = opts or {}
  local getb = opts.builder or M.builder
  local p = { cases = {}, unreplayable = {}, skipped = {}, rows = {}, ops = {}, no_builder = {},
              warnings = {} }
  for _, f in ipairs(files) do
    local op, path = f.op, f.path
    local builder, berr = getb(op)
    local r, err = perf.csv.open(path)
    if not r then return nil, err end
    local header = r:header()
    if #header == 0 then
      p.warnings[#p.warnings + 1] = ("%s: empty file (no header, no rows): nothing to replay"):format(path)
    end
    local no_inputs = #header > 0 and missing_inputs(header)
    p.skipped[op], p.rows[op] = 0, 0
    local ncase = 0
    while true do
      local fields, rerr = r:read()   -- bad data: nil, "file:line: reason" (not a traceback)
      if not fields then
        if rerr then r:close(); return nil, rerr end
        break
      end
      p.rows[op] = p.rows[op] + 1
      local row = {}
      for i, c in ipairs(header) do row[c] = fields[i] or "" end
      local line = r:line()
      local mb = row[schema.MB_DUR] or row[schema.LEGACY_MB_DUR]
      if opts.mode == "missing-only" and schema.has_valid_duration(mb, row[schema.PROF_AVG]) then
        p.skipped[op] = p.skipped[op] + 1
      elseif not builder then
        local nb = p.no_builder[op] or { rows = 0, reason = tostring(berr or "no replay builder"), csv = path }
        nb.rows = nb.rows + 1
        p.no_builder[op] = nb
      else
        local case, reason
        if no_inputs then
          reason = no_inputs
        else
          local ok, c, why = pcall(builder, row, { op = op, ep_size = opts.ep_size })
          if ok then case, reason = c, why else reason = "builder error: " .. tostring(c) end
        end
        if case then
          case.id = ("%s:%d"):format(op, line)
          case.op, case.csv, case.row = op, path, line
          local rec = {}
          for _, c in ipairs(RECORD) do rec[c] = row[c] end
          case.record = rec
          if opts.outputs then case.outputs, case.outputs_error = M.outputs(row) end
          p.cases[#p.cases + 1] = case
          ncase = ncase + 1
        else
          p.unreplayable[#p.unreplayable + 1] = { op = op, csv = path, row = line,
            shapes = row["Input Shapes"], reason = reason or "not replayable", kind = "invalid" }
        end
      end
    end
    r:close()
    if ncase > 0 then p.ops[#p.ops + 1] = op end
  end
  return p
end

-- The plan split by DispatchFFNCombine's EP size: {{ep = default, p = ...}, {ep = 32, p = ...}},
-- the default group first (every other operator's cases, and DispatchFFNCombine rows of the
-- default EP), then one group per other EP size, ascending. Each group runs and is written
-- back on its own, so that its samples carry their EP Size.
function M.split_ep(p, default)
  local groups, by = {}, {}
  local function group(ep)
    if not by[ep] then
      by[ep] = { ep = ep, p = { cases = {}, ops = {}, unreplayable = {}, no_builder = {} }, seen = {} }
      groups[#groups + 1] = by[ep]
    end
    return by[ep]
  end
  group(default)
  for _, c in ipairs(p.cases) do
    local g = group(c.distributed and c.distributed.ep_size or default)
    g.p.cases[#g.p.cases + 1] = c
    if not g.seen[c.op] then g.seen[c.op] = true; g.p.ops[#g.p.ops + 1] = c.op end
  end
  table.sort(groups, function(a, b)
    if (a.ep == default) ~= (b.ep == default) then return a.ep == default end
    return a.ep < b.ep
  end)
  for _, g in ipairs(groups) do g.seen = nil end
  return groups
end

-- Writes the plan: a header line, then one case per line.
function M.write(path, p, opts)
  opts = opts or {}
  local cjson = require "cjson"
  local header = { kind = "perfscript-replay-plan", version = 1,
    repeat_count = opts.repeat_count or 1, warmup = opts.warmup or 1, seed = opts.seed or 0,
    ops = p.ops, cases = #p.cases }
  -- Operators that run on several ranks (torchrun): DispatchFFNCombine with its EP flags.
  for _, c in ipairs(p.cases) do
    if c.distributed then
      header.distributed = header.distributed or {}
      local d = {}
      for k, v in pairs(opts.distributed or {}) do d[k] = v end
      d.ep_size = c.distributed.ep_size
      header.distributed[c.op] = d
    end
  end
  local out = { cjson.encode(header) }
  for _, c in ipairs(p.cases) do out[#out + 1] = cjson.encode(c) end
  return perf.fs.write_atomic(path, table.concat(out, "\n") .. "\n", { if_changed = false })
end

-- Reads a plan back: header, cases.
function M.read(path)
  local cjson = require "cjson"
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local header, cases = nil, {}
  local n = 0
  for line in f:lines() do
    n = n + 1
    if line:match("%S") then
      local ok, v = pcall(cjson.decode, line)
      if not ok then f:close(); return nil, ("%s:%d: %s"):format(path, n, v) end
      if not header then header = v else cases[#cases + 1] = v end
    end
  end
  f:close()
  if not header or header.kind ~= "perfscript-replay-plan" then
    return nil, path .. ":1: not a perfscript replay plan"
  end
  return header, cases
end

return M
