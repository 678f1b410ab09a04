-- The collection planner: which new shapes to measure next. The needs are the rows the shape
-- grid targets for the given models (perfscript.grid.run's collect hook: its generators,
-- sampling, memory budget and replayable filter), each asked of the database as db:interp
-- asks (exact, interpolated, or no answer). The estimated error of an interpolated need is the
-- leave-one-out error (perfscript.db.accuracy) of its bracket's two points: each was predicted
-- across this gap. The plan, at most budget shapes, all of them needs themselves:
--   1. cover: per bucket of the first axis (M, tokens, seq ...), the needs outside the measured
--      range make it wider: the lowest need below it and the highest above it (both ends when
--      the bucket is empty), the buckets covering the most needs per measurement first;
--   2. error: while some need's estimate is above max_error, the gap with the largest
--      reduction of the error above max_error (summed over its needs) is split at the need
--      nearest its middle (log scale); the
--      halves' estimates are a quarter of the gap's (linear interpolation's error goes with
--      the square of the gap on a smooth curve).
-- The proposal is appended by the grid's own append (grid.run with pick: the same rows,
-- checks, order, lock and staged write), so microbench measures exactly those rows.
local perf = require "perfscript"
local A = require "perfscript.db.analysis"
local acc = require "perfscript.db.accuracy"
local D = require "perfscript.db"
local grid = require "perfscript.grid.run"
local gridcli = require "perfscript.grid.cli"

local M = {}

M.MAX_HBM_BYTES = 32 * 1024 ^ 3  -- the grid's default per-row budget

-- The grid's run options for models over dir (dry: collect only).
local function grid_opts(dir, models, opts)
  return { dir = dir, models = models, presets = opts.presets, rows = opts.rows or 1000, seed = opts.seed or 0,
           max_hbm_bytes = opts.max_hbm_bytes or M.MAX_HBM_BYTES, replayable_only = true,
           rules = gridcli.load_rules() }
end

-- The needed rows of db (opened on dir) for models: a list of {kernel, key, it, idt, ifm,
-- extra}, in grid order, one per kernel and row key. opts: rows, seed, kernels (a set: only those).
function M.needs_from_grid(db, dir, models, opts)
  opts = opts or {}
  local list, seen = {}, {}
  local o = grid_opts(dir, models, opts)
  o.dry_run = true
  o.collect = function(f, _, S, idx, keys)
    local k = db._kernels[f.kernel]
    if not k or (opts.kernels and not opts.kernels[f.kernel]) or not k:table():column(D.IS) then return end
    for _, i in ipairs(idx) do
      local id = f.kernel .. "\0" .. keys[i]
      if not seen[id] then
        seen[id] = true
        list[#list + 1] = { kernel = f.kernel, key = keys[i], it = S.it[i], idt = S.idt[i], ifm = S.ifm[i],
                            extra = S.extra[i] }
      end
    end
  end
  grid.run(o)
  return list
end

local query_of

-- The needs of a TensorCast trace: each (kernel type, shapes) its ops looked up (the lookup's
-- own shapes where the trace has them: perfscript.analysis.pershape), for the kernel types the
-- database has with shapes; no dtypes (a trace has none: the first bucket with the same other
-- axes answers, as db:interp without dtypes). opts: pid, model (which process of the trace).
function M.needs_from_trace(db, path, opts)
  local tr, pid = require("perfscript.analysis.cli").trace_and_pid(path, opts or {})
  local _, order = require("perfscript.analysis.pershape").tc_side(tr, pid, { kernel_shapes = true })
  local list, skipped = {}, {}
  for _, e in ipairs(order) do
    local k = db._kernels[e.kernel_type]
    if k and e.shape_key ~= "" and k:table():column(D.IS) then
      list[#list + 1] = { kernel = e.kernel_type, it = e.shape_key, idt = "", ifm = "", extra = {}, count = e.count }
    else
      skipped[e.kernel_type] = (skipped[e.kernel_type] or 0) + 1
    end
  end
  return list, skipped
end

-- The identity of a need across sources (a trace's lookup and a grid row): kernel, the first
-- axis it has, the other axes (rest) and its value, without dtypes (a trace has none).
function M.twin_key(db, n)
  local K = db:kernel(n.kernel)
  local ok, p = pcall(A.query_point, K, query_of(K, n))
  if not ok then return nil end
  for _, axis in ipairs(A.default_axes(K)) do
    local v, rest = A.split(K, p, axis)
    if v then return table.concat({ n.kernel, axis, rest, tostring(v) }, "\0") end
  end
  return nil
end

-- The query of a need: its shapes, dtypes, formats and the runtime axes the kernel's file has.
function query_of(K, n)
  local q = { shapes = n.it, dtypes = n.idt ~= "" and n.idt or nil, formats = n.ifm ~= "" and n.ifm or nil }
  local t = K:table()
  for _, e in ipairs(D.EXTRAS) do
    for _, c in ipairs(e.cols) do
      if t:column(c) then
        local v = n.extra and n.extra[c]
        if v ~= nil and v ~= "" then q[e.name] = tonumber(v) end
        break
      end
    end
  end
  return q
end

-- Leave-one-out error by point, the kernel's p90 (the prior of a gap whose ends have none).
local function loo(K)
  local by = {}
  local recs = acc.records(K)
  for _, r in ipairs(recs) do if r.err then by[r.p] = math.abs(r.err) end end
  return by, acc.summary(recs).p90
end

local function gap_est(by, prior, a, b)
  local x, y = a and by[a.p], b and by[b.p]
  if x or y then return math.max(x or 0, y or 0) end
  return prior
end

-- Classifies each need against db (fields added): status "exact" | "interpolated" | "missing";
-- axis, value, line (the bucket's key on that axis: the first axis with a value for a
-- missing need), est (interpolated: the estimated error, nil when unknown).
function M.classify(db, needs)
  local cache = {}
  for _, n in ipairs(needs) do
    local K = db:kernel(n.kernel)
    local c = cache[K]
    if not c then
      local by, prior = loo(K)
      c = { by = by, prior = prior, axes = A.default_axes(K) }
      cache[K] = c
    end
    n.prior = c.prior
    local q = query_of(K, n)
    local ok, res = pcall(A.interp, K, q)
    if not ok then
      if not perf.is_user_error(res) then error(res, 0) end
      n.status, n.why = "missing", res.message
    else
      local p = A.query_point(K, q)
      local dt = p.dtypes and K:table():key({ kind = "list" }, p.dtypes) or ""
      local function line_of(axis)
        local v, rest = A.split(K, p, axis)
        if v then return v, n.kernel .. "\0" .. axis .. "\0" .. rest .. "|" .. dt end
      end
      if res.latency then
        n.axis = res.axis
        n.value, n.line = line_of(res.axis)
        if res.source == "MEASURED" then
          n.status, n.est = "exact", 0
        else
          n.status = "interpolated"
          n.est = gap_est(c.by, c.prior, res.bracket[1], res.bracket[2])
        end
      else
        n.status = "missing"
        for _, axis in ipairs(c.axes) do
          local v, line = line_of(axis)
          if v then n.axis, n.value, n.line = axis, v, line; break end
        end
        n.why = res[1] and res[1].status
      end
    end
  end
  return needs
end

-- The measured values of a need's line (its bucket's points), with the estimated error of each gap.
local function line_state(db, n, by_kernel)
  local K = db:kernel(n.kernel)
  local q = query_of(K, n)
  local p = A.query_point(K, q)
  local _, rest = A.split(K, p, n.axis)
  local bks = A.buckets(K, n.axis)
  local dt = p.dtypes and K:table():key({ kind = "list" }, p.dtypes)
  local b
  if dt then b = bks.map[rest .. "|" .. dt]
  else for _, x in ipairs(bks.list) do if x.rest == rest then b = x; break end end end
  local c = by_kernel[K]
  if not c then
    local by, prior = loo(K)
    c = { by = by, prior = prior }
    by_kernel[K] = c
  end
  local L = { vals = {}, gest = {}, needs = {}, kernel = n.kernel, axis = n.axis, prior = c.prior }
  for j, pt in ipairs(b and b.pts or {}) do
    L.vals[j] = pt.v
    if j > 1 then L.gest[j - 1] = gap_est(c.by, c.prior, b.pts[j - 1], pt) end
  end
  return L
end

-- Index of the gap holding v (vals[j] < v < vals[j+1]); 0 below, #vals above; exact: -j.
local function where(vals, v)
  for j, x in ipairs(vals) do
    if x == v then return -j end
    if x > v then return j - 1 end
  end
  return #vals
end

local function insert(L, v, est)
  local j = where(L.vals, v)
  if j < 0 then return end
  table.insert(L.vals, j + 1, v)
  -- gap j (vals[j]..old vals[j+1]) becomes j and j+1
  if j >= 1 and j < #L.vals - 1 then
    local g = L.gest[j]
    local half = g and g / 4
    L.gest[j] = half
    table.insert(L.gest, j + 1, half)
  elseif j == 0 then
    table.insert(L.gest, 1, est)
  else
    L.gest[#L.vals - 1] = est
  end
end

-- The estimate of need n on its line now: 0 measured, the gap's estimate (nil: unknown), or
-- false (outside the measured range: no answer).
local function current(L, n)
  local j = where(L.vals, n.value)
  if j < 0 then return 0 end
  if j == 0 or j == #L.vals then return false end
  return L.gest[j]
end

-- The plan: opts.budget (shapes at most, default 50), opts.max_error (default 0.05).
-- Returns {chosen = needs to measure (n.reason "cover" | "error"), lines, left = needs still
-- without an answer}; each need gets n.after (its estimate after the plan; false: no answer).
function M.plan(db, needs, opts)
  opts = opts or {}
  local budget, maxe = opts.budget or 50, opts.max_error or 0.05
  local lines, order, by_kernel = {}, {}, {}
  local chosen, loose = {}, {}
  for _, n in ipairs(needs) do
    if n.line then
      local L = lines[n.line]
      if not L then
        L = line_state(db, n, by_kernel)
        lines[n.line] = L
        order[#order + 1] = n.line
      end
      L.needs[#L.needs + 1] = n
    elseif n.status == "missing" then
      loose[#loose + 1] = n  -- no axis value: only measuring it answers it
    end
  end
  local function take(n, L, reason)
    if #chosen >= budget then return false end
    n.reason = reason
    chosen[#chosen + 1] = n
    if L then insert(L, n.value, L.prior) end
    n.planned = true
    return true
  end
  -- 1. cover: per line, the extreme needs outside the measured range
  local cover = {}
  for _, key in ipairs(order) do
    local L = lines[key]
    local lo, hi, missing = nil, nil, 0
    for _, n in ipairs(L.needs) do
      if current(L, n) == false then
        missing = missing + 1
        if #L.vals == 0 or n.value < L.vals[1] then
          if not lo or n.value < lo.value then lo = n end
        end
        if #L.vals == 0 or n.value > L.vals[#L.vals] then
          if not hi or n.value > hi.value then hi = n end
        end
      end
    end
    if missing > 0 then
      local picks = {}
      if lo then picks[#picks + 1] = lo end
      if hi and hi ~= lo and not (lo and hi.value == lo.value) then picks[#picks + 1] = hi end
      if #L.vals + #picks < 2 then picks = {} end  -- one point answers only itself: measured singly below
      cover[#cover + 1] = { L = L, picks = picks, missing = missing, key = key }
    end
  end
  table.sort(cover, function(a, b)
    local x, y = a.missing / math.max(#a.picks, 1), b.missing / math.max(#b.picks, 1)
    if x ~= y then return x > y end
    return a.key < b.key
  end)
  for _, c in ipairs(cover) do
    if #c.picks > 0 and #chosen + #c.picks <= budget then
      for _, n in ipairs(c.picks) do take(n, c.L, "cover") end
    end
  end
  -- needs still without an answer that one measurement of their own answers
  for _, c in ipairs(cover) do
    for _, n in ipairs(c.L.needs) do
      if not n.planned and current(c.L, n) == false and #c.L.vals < 2 then take(n, c.L, "cover") end
    end
  end
  for _, n in ipairs(loose) do take(n, nil, "cover") end
  -- 2. error: split the gap that lowers the estimated errors above max_error the most (each
  -- line's best split is remembered until a measurement lands on that line)
  local function best_of(L)
    local gaps = {}
    for _, n in ipairs(L.needs) do
      local j = where(L.vals, n.value)
      if j > 0 and j < #L.vals and L.gest[j] and L.gest[j] > maxe then
        gaps[j] = gaps[j] or {}
        table.insert(gaps[j], n)
      end
    end
    local best, bestgain = nil, 0
    for j, list in pairs(gaps) do
      local g = L.gest[j]
      local mid = (math.log(L.vals[j]) + math.log(L.vals[j + 1])) / 2
      local pick, pd
      for _, n in ipairs(list) do
        local d = math.abs(math.log(n.value) - mid)
        if not pick or d < pd or (d == pd and n.value < pick.value) then pick, pd = n, d end
      end
      -- the error above max_error that goes: the picked need is measured (0), the others'
      -- estimates fall to a quarter
      local gain = g - maxe + (#list - 1) * (g - math.max(g / 4, maxe))
      if gain > bestgain or (gain == bestgain and best and pick.value < best.value) then best, bestgain = pick, gain end
    end
    return best, bestgain
  end
  local cand = {}
  for _, key in ipairs(order) do cand[key] = { best_of(lines[key]) } end
  while #chosen < budget do
    local bkey, bgain = nil, 0
    for _, key in ipairs(order) do
      local c = cand[key]
      if c[1] and c[2] > bgain then bkey, bgain = key, c[2] end
    end
    if not bkey then break end
    take(cand[bkey][1], lines[bkey], "error")
    cand[bkey] = { best_of(lines[bkey]) }
  end
  local left = {}
  for _, n in ipairs(needs) do
    if n.planned then n.after = 0
    elseif n.line then n.after = current(lines[n.line], n)
    else n.after = n.status == "exact" and 0 or false end
    if n.after == false then left[#left + 1] = n end
  end
  return { chosen = chosen, lines = lines, left = left, budget = budget, max_error = maxe }
end

-- Appends the chosen needs to the database dir through the grid's append (lock, staged write,
-- the same rows and order); returns the grid's per-file results.
function M.append(dir, models, chosen, opts)
  local pick = {}
  for _, n in ipairs(chosen) do
    pick[n.kernel] = pick[n.kernel] or {}
    pick[n.kernel][n.key] = true
  end
  local o = grid_opts(dir, models, opts or {})
  o.rows = 0
  o.pick = pick
  return grid.run(o)
end

-- Per kernel: needs, exact, interpolated, missing, the p90 of the interpolated needs' estimates
-- (before and, with field = "after", after the plan), planned.
function M.table(needs, field)
  local by, order = {}, {}
  for _, n in ipairs(needs) do
    local s = by[n.kernel]
    if not s then
      s = { kernel = n.kernel, needs = 0, exact = 0, interpolated = 0, missing = 0, unknown = 0, ests = {}, planned = 0 }
      by[n.kernel] = s
      order[#order + 1] = n.kernel
    end
    s.needs = s.needs + 1
    local e
    if field == "after" then e = n.after elseif n.status == "missing" then e = false else e = n.est end
    if e == 0 then s.exact = s.exact + 1
    elseif e == false then s.missing = s.missing + 1
    else
      s.interpolated = s.interpolated + 1
      if e then s.ests[#s.ests + 1] = e else s.unknown = s.unknown + 1 end
    end
    if n.planned then s.planned = s.planned + 1 end
  end
  local out = {}
  for _, k in ipairs(order) do
    local s = by[k]
    table.sort(s.ests)
    s.p90 = acc.quantile(s.ests, 0.9)
    out[#out + 1] = s
  end
  return out
end

return M
