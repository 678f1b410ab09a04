-- Model versus profiling per kernel type (the Python original's generate_op_comparison.py;
-- docs/rules.md, Analysis), with its rounding and its int/float output forms. Fixed here:
-- op_mapping entries are found under operator_mappings; the trace's own zero_cost marks are
-- honoured; "?"/empty kernel types and accepted misses are not turned into pseudo kernel types;
-- an optional source filter decides what counts as a HIT.
local pyfmt = require "perfscript.analysis.pyfmt"
local tctrace = require "perfscript.analysis.tctrace"
local opmap = require "perfscript.analysis.opmap"

local M = {}

M.UNMODELLED = "TC\u{672a}\u{5efa}\u{6a21}"   -- "TC not modelled", as the original writes it (JSON)
M.UNMODELLED_TEXT = "not modelled"             -- the same status on the console and in pages

local function stat(stats, kt)
  local s = stats[kt]
  if not s then
    s = { total_us = 0.0, count = 0, hit_count = 0, miss_count = 0, func_names = {}, seen = {} }
    stats[kt] = s
  end
  return s
end

local function add_func(s, fn)
  if not s.seen[fn] then
    s.seen[fn] = true
    s.func_names[#s.func_names + 1] = fn
  end
end

-- Per kernel type TC statistics from the events of one pid.
-- opts.mapping (opmap), opts.source_filter (tctrace.source_filter; nil = any event with a
-- kernel type is a HIT, as the original). Returns stats, info {zero_cost, accepted_miss, events}.
function M.tc_stats(trace, pid, opts)
  opts = opts or {}
  local mapping = opts.mapping or opmap.empty()
  local filter = opts.source_filter
  local stats = {}
  local info = { events = 0, zero_cost = 0, accepted_miss = 0, skd_mismatch = 0 }
  for ev in tctrace.x_events(trace, pid) do
    info.events = info.events + 1
    local op = tostring(tctrace.val(ev.name) or "")
    local fn = tctrace.short_name(op)
    local args = tctrace.args(ev)
    local dur = tctrace.dur(ev)
    if mapping:zero_cost(op) or tctrace.trace_zero_cost(args) then
      info.zero_cost = info.zero_cost + 1
    elseif tctrace.accepted_miss(args) or mapping:accepted_miss(op) then
      info.accepted_miss = info.accepted_miss + 1
    else
      local kt = tctrace.kernel_type(args)
      local sub_kts = kt and tctrace.split_kernel_types(kt) or {}
      if #sub_kts > 0 then
        local hit = filter == nil or filter.admits(tctrace.source(args))
        local function count(s)
          if hit then s.hit_count = s.hit_count + 1 else s.miss_count = s.miss_count + 1 end
        end
        local skd = tctrace.sub_kernel_durations(args)
        if skd then
          for _, p in ipairs(skd) do
            local s = stat(stats, p[1])
            count(s)
            s.total_us = s.total_us + p[2]
            s.count = s.count + 1
            add_func(s, fn)
          end
        else
          local per = dur / #sub_kts
          for _, sk in ipairs(sub_kts) do
            local s = stat(stats, sk)
            count(s)
            s.total_us = s.total_us + per
            s.count = s.count + 1
            add_func(s, fn)
          end
          -- Legacy MC2 rule: an all_reduce op whose kernel list omits the collective still ran one.
          local listed = false
          for _, sk in ipairs(sub_kts) do listed = listed or sk == "hcom_allReduce_" end
          if op:lower():find("all_reduce", 1, true) and not listed then
            local s = stat(stats, "hcom_allReduce_")
            count(s)
            s.count = s.count + 1
            add_func(s, fn)
          end
        end
      else
        local s = stat(stats, mapping:kernel_type(op) or fn)
        s.miss_count = s.miss_count + 1
        s.total_us = s.total_us + dur
        s.count = s.count + 1
        add_func(s, fn)
      end
    end
  end
  for _, s in pairs(stats) do
    if s.miss_count > 0 and s.hit_count > 0 then
      s.status = "PARTIAL"
    elseif s.hit_count > 0 then
      s.status = "HIT"
    else
      s.status = "MISS"
    end
  end
  return stats, info
end

-- One row per kernel type of either side (the Python original's build_comparison).
-- n_fwd: the number of forward passes in the profiling slice (Lua number; int or float).
function M.rows(tc, prof, n_fwd)
  n_fwd = n_fwd or 1
  local kts, seen = {}, {}
  for kt in pairs(tc) do if not seen[kt] then seen[kt] = true; kts[#kts + 1] = kt end end
  for kt in pairs(prof) do if not seen[kt] then seen[kt] = true; kts[#kts + 1] = kt end end
  table.sort(kts)
  local rows = {}
  for i, kt in ipairs(kts) do
    local t = tc[kt]
    local p = prof[kt]
    local tc_total = t and t.total_us or 0
    local tc_count = t and t.count or 0
    local p_total = p and p.total_us or 0
    local p_count = p and p.count or 0
    local prof_per_fwd, prof_count_f = 0, 0
    if n_fwd > 0 then
      prof_per_fwd = p_total / n_fwd
      prof_count_f = p_count / n_fwd
    end
    local err = 0
    if prof_per_fwd > 0 then err = pyfmt.round((tc_total - prof_per_fwd) / prof_per_fwd * 100, 1) end
    local cnt_err = 0
    if prof_count_f > 0 then
      cnt_err = pyfmt.round((tc_count - prof_count_f) / prof_count_f * 100, 1)
    end
    local fnames = {}
    if t then for j = 1, math.min(3, #t.func_names) do fnames[j] = t.func_names[j] end end
    rows[#rows + 1] = {
      kernel_type = kt,
      tc_funcs = table.concat(fnames, ", "),
      tc_total_us = pyfmt.round(tc_total, 1),
      tc_count = tc_count,
      prof_per_fwd_us = pyfmt.round(prof_per_fwd, 1),
      prof_count = pyfmt.round_int(prof_count_f),
      error_pct = err,
      count_error_pct = cnt_err,
      status = t and t.status or M.UNMODELLED,
      order = i,
    }
  end
  -- Stable sort by the larger of the two (rounded) times, descending.
  table.sort(rows, function(a, b)
    local ka = math.max(a.tc_total_us, a.prof_per_fwd_us)
    local kb = math.max(b.tc_total_us, b.prof_per_fwd_us)
    if ka ~= kb then return ka > kb end
    return a.order < b.order
  end)
  for _, r in ipairs(rows) do r.order = nil end
  return rows
end

M.FIELDS = { "kernel_type", "tc_funcs", "tc_total_us", "tc_count", "prof_per_fwd_us",
             "prof_count", "error_pct", "count_error_pct", "status" }

-- {scenario name -> rows} in scenario order, as the original's JSON.
function M.json(results)
  local top = {}
  for _, res in ipairs(results) do
    local list = {}
    for i, r in ipairs(res.rows) do list[i] = pyfmt.object(M.FIELDS, r) end
    top[#top + 1] = { res.name, list }
  end
  return pyfmt.json(pyfmt.object(top))
end

-- Sums over all rows of the rounded values, as the original's TOTAL line.
function M.totals(rows)
  local tc, prof = 0, 0
  for _, r in ipairs(rows) do
    tc = tc + r.tc_total_us
    prof = prof + r.prof_per_fwd_us
  end
  return tc, prof
end

-- The console table of one scenario (top `limit` rows, default 15).
function M.table(name, rows, limit)
  limit = limit or 15
  local out = {}
  local function p(s) out[#out + 1] = s end
  local L, R = pyfmt.ljust, pyfmt.rjust
  p("")
  p(string.rep("=", 115))
  p(name .. " \u{2014} TC vs Profiling per-forward")
  p(string.rep("=", 115))
  -- English headers (the original's were Chinese: TC次数, Prof次数, 延迟误差, 次数误差, Prof占比, 状态)
  p(table.concat({ L("kernel_type", 35), R("TC(\u{3bc}s)", 12), R("TC n", 7),
                   R("Prof(\u{3bc}s)", 12), R("Prof n", 8),
                   R("time err", 9), R("count err", 9),
                   R("Prof %", 8), L("status", 6) }, " "))
  p(string.rep("-", 115))
  local total_tc, total_prof = M.totals(rows)
  for i = 1, math.min(limit, #rows) do
    local r = rows[i]
    local share = total_prof > 0 and r.prof_per_fwd_us / total_prof * 100 or 0
    p(table.concat({ L(r.kernel_type, 35), R(pyfmt.fixed(r.tc_total_us, 1), 12),
                     R(tostring(r.tc_count), 7), R(pyfmt.fixed(r.prof_per_fwd_us, 1), 12),
                     R(pyfmt.fixed(r.prof_count, 0), 8), R(pyfmt.fixed(r.error_pct, 1), 8) .. "%",
                     R(pyfmt.fixed(r.count_error_pct, 1), 8) .. "%",
                     R(pyfmt.fixed(share, 1), 7) .. "%",
                     L(r.status == M.UNMODELLED and M.UNMODELLED_TEXT or r.status, 6) }, " "))
  end
  p(table.concat({ L("TOTAL", 35), R(pyfmt.fixed(total_tc, 1), 12), R("", 7),
                   R(pyfmt.fixed(total_prof, 1), 12) }, " "))
  return table.concat(out, "\n") .. "\n"
end

return M
