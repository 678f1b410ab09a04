-- Interpolation accuracy, leave-one-out: every measured point (a distinct signature; its
-- duplicate rows leave with it, else they would answer it exactly) is predicted from the other
-- points exactly as db:interp answers a query (perfscript.db.analysis: the consumer's axes in
-- try order, its buckets, the bracket, the axis transform, never extrapolating), and the
-- prediction is compared with its measured latency. A point no axis brackets cannot be
-- predicted: the consumer would miss it if it were not measured.
-- The loop locates each point's bucket by identity (built once per axis) rather than by its
-- key text, so a 100k-row kernel takes seconds; A.solve is db:interp's own per-axis step.
local perf = require "perfscript"
local A = require "perfscript.db.analysis"
local R = require "perfscript.db.result"

local M = {}

-- |x| quantile q (0..1) of a sorted list: the nearest rank (no blending of two errors).
local function quantile(sorted, q)
  local n = #sorted
  if n == 0 then return nil end
  local k = math.max(1, math.min(n, math.ceil(q * n)))
  return sorted[k]
end
M.quantile = quantile

-- The points of K that filter keeps (db:rows' filter: a table of column values and axes, or a
-- function of a row); nil keeps all.
local function kept_points(K, filter)
  if filter == nil then return nil end
  local rows = K:rows(filter)
  local keep = {}
  for _, r in ipairs(rows) do keep[A.point_of_row(K, r.row)] = true end
  return keep
end

-- The leave-one-out records of kernel K (cached per kernel; a filter selects the targets,
-- every point stays a possible neighbour). Each record: p (the point), line, rows, actual,
-- and either predicted, err (signed relative error), axis, value, lo, hi (the bracket's
-- bucket points), w; or miss (the first axis's reason; "no axis value" when none applies).
function M.records(K, filter)
  local s = K._
  if filter == nil and s.accuracy then return s.accuracy end
  local keep = kept_points(K, filter)
  -- a longer collector pause while the points, buckets and records are built: most objects
  -- made here are kept, and each cycle would walk them again (a third of the time at 100k rows)
  local pause = collectgarbage("setpause", 400)
  local _ <close> = setmetatable({}, { __close = function() collectgarbage("setpause", pause) end })
  local points = A.points(K)
  local axes = A.default_axes(K)
  local where, value, fs = {}, {}, {}
  for ai, axis in ipairs(axes) do
    local at, v = {}, {}
    for _, b in ipairs(A.buckets(K, axis).list) do
      local pts = b.pts
      for _, pt in ipairs(pts) do
        if pt.members then
          for _, p in ipairs(pt.members) do at[p], v[p] = pts, pt.v end
        else
          at[pt.p], v[pt.p] = pts, pt.v
        end
      end
    end
    where[ai], value[ai], fs[ai] = at, v, A.transform(K, axis)
  end
  local t = K:table()
  local out = {}
  local solve = A.solve
  for _, p in ipairs(points) do
    if p.lat and (not keep or keep[p]) then
      local rec = { p = p, line = t:line(p.first), rows = p.size, actual = p.lat }
      for ai, axis in ipairs(axes) do
        local pts = where[ai][p]
        if pts then
          local v = value[ai][p]
          local r, lo, hi, w = solve(pts, v, fs[ai], p, v)
          local pred = r["latency(us)"]
          if pred then
            rec.predicted, rec.axis, rec.value, rec.lo, rec.hi, rec.w = pred, axis, v, lo, hi, w
            rec.err = (pred - p.lat) / p.lat
            rec.miss = nil
            break
          end
          rec.miss = rec.miss or (axis .. ": " .. r.status)
        end
      end
      if not rec.predicted and not rec.miss then rec.miss = "no axis value (" .. table.concat(axes, ", ") .. ")" end
      out[#out + 1] = rec
    end
  end
  if filter == nil then s.accuracy = out end
  return out
end

-- Summary of records: n, predicted, missed, p50, p90, max of |err| (nil when none predicted),
-- and misses by reason (the reason text without the bracket's values).
function M.summary(recs)
  local errs, why = {}, {}
  local missed = 0
  for _, r in ipairs(recs) do
    if r.err then errs[#errs + 1] = math.abs(r.err)
    else
      missed = missed + 1
      local reason = r.miss:gsub(" %[.*$", "")
      why[reason] = (why[reason] or 0) + 1
    end
  end
  table.sort(errs)
  return { n = #recs, predicted = #errs, missed = missed, p50 = quantile(errs, 0.5), p90 = quantile(errs, 0.9),
           max = errs[#errs], why = why, errs = errs }
end

local function neighbour(pt)
  if not pt then return nil end
  return string.format("%s (line %d, %s us)", tostring(pt.v), pt.line, R.fmt(pt.lat))
end

-- A record as a row of a result.
function M.row(K, r)
  local p = r.p
  local row = { line = r.line, rows = r.rows, shapes = require("perfscript.db").shapes_label(p.shapes),
                dtypes = p.dtypes, ["actual(us)"] = r.actual, ["predicted(us)"] = r.predicted,
                ["error%"] = r.err and r.err * 100 or nil, axis = r.axis, value = r.value,
                lower = r.lo and r.lo ~= r.hi and neighbour(r.lo) or nil,
                upper = r.hi and r.lo ~= r.hi and neighbour(r.hi) or nil,
                status = r.err and (r.lo == r.hi and "exact (a duplicate)" or "interpolated") or r.miss }
  if r.lo == r.hi and r.lo then row.lower = neighbour(r.lo) end
  return row
end

M.TOP = 200  -- rows of a result: the worst predictions and as many misses

M.COLUMNS = { "line", "rows", "shapes", "dtypes", "actual(us)", "predicted(us)", "error%", "axis", "value",
              "lower", "upper", "status" }

local function pct(x) return x and string.format("%.2f%%", x * 100) or "-" end
M.pct = pct

-- Predicted records first, the largest |error| first; then by line.
function M.worse(a, b)
  local x, y = a.err, b.err
  if (x ~= nil) ~= (y ~= nil) then return x ~= nil end
  if x then
    x, y = x < 0 and -x or x, y < 0 and -y or y
    if x ~= y then return x > y end
  end
  return a.line < b.line
end

-- db:accuracy(kernel [, filter]): the worst predicted rows first with their neighbours, then
-- the rows no axis brackets; the title has p50 / p90 / max.
function M.accuracy(K, filter)
  local t0 = os.clock()
  local recs = M.records(K, filter)
  local sum = M.summary(recs)
  local order = {}
  for _, r in ipairs(recs) do order[#order + 1] = r end
  table.sort(order, M.worse)
  -- rows for the worst predictions and the misses (all records stay in res.records)
  local res = R.new(nil, M.COLUMNS)
  local top, nmiss = M.TOP, 0
  for _, r in ipairs(order) do
    if r.err then
      if #res < top then res[#res + 1] = M.row(K, r) end
    elseif nmiss < top then
      nmiss = nmiss + 1
      res[#res + 1] = M.row(K, r)
    end
  end
  res.title = string.format("accuracy %s (leave-one-out, as db:interp): %d signatures, %d predicted, %d cannot be; "
                            .. "|error| p50 %s p90 %s max %s", K.name, sum.n, sum.predicted, sum.missed,
                            pct(sum.p50), pct(sum.p90), pct(sum.max))
  local reasons = {}
  for k in pairs(sum.why) do reasons[#reasons + 1] = k end
  table.sort(reasons)
  for _, k in ipairs(reasons) do res:note("cannot be predicted: %d by %s", sum.why[k], k) end
  res:note("a signature measured in several rows is left out whole (its duplicates would answer it exactly); "
           .. "1-D as db:interp (the consumer's 2-D/3-D griddata fallback is not modelled)")
  res:note("%.2f s", os.clock() - t0)
  res.summary, res.records = sum, recs
  return res
end

function M.install(db)
  db.Kmethods.accuracy = function(self, filter) return M.accuracy(self, filter) end
  db.DBmethods.accuracy = function(self, kernel, ...)
    local k = self:kernel(kernel)
    return M.accuracy(k, ...)
  end
end

return M
