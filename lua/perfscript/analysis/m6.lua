-- M6: the end-to-end ratio of the model's empirical (database-hit) time to one real forward
-- pass (the Python original's compute_m6.py; docs/rules.md, Analysis).
-- Fixed here: the parsed duration is used as is (the original rebuilt it as (start+dur)-start
-- and lost precision at 1.7e15 us); the events of one model (pid) only; empty source-filter
-- items are dropped.
local pyfmt = require "perfscript.analysis.pyfmt"
local tctrace = require "perfscript.analysis.tctrace"
local prof = require "perfscript.analysis.prof"

local M = {}

M.DEFAULT_SOURCES = "MEASURED,INTERPOLATED"

-- TC side: the sum of durations of admitted events that carry a kernel type, plus the same
-- split per kernel type (for pictures; composites split by sub_kernel_durations or equally).
function M.tc_side(trace, pid, filter)
  local total, per = 0.0, {}
  local n = 0
  for ev in tctrace.x_events(trace, pid) do
    local args = tctrace.args(ev)
    local dur = tctrace.dur(ev)
    if filter.admits(tctrace.source(args)) and dur > 0 then
      local kt = tctrace.kernel_type(args)
      if kt then
        total = total + dur
        n = n + 1
        local skd = tctrace.sub_kernel_durations(args)
        if skd then
          for _, p in ipairs(skd) do per[p[1]] = (per[p[1]] or 0.0) + p[2] end
        else
          local subs = tctrace.split_kernel_types(kt)
          for _, sk in ipairs(subs) do per[sk] = (per[sk] or 0.0) + dur / #subs end
        end
      end
    end
  end
  return total, per, n
end

-- Profiling side: compute + deduplicated hcom per forward, AICPU apart.
function M.prof_side(path, opts)
  local r = { compute = 0.0, hcom = 0.0, aicpu = 0.0, kernel_count = 0, per_type = {} }
  local function add_type(kt, d) r.per_type[kt] = (r.per_type[kt] or 0.0) + d end
  local summary, err = prof.scan(path, opts, function(kind, kt, dur)
    if kind == "aicpu" then
      r.aicpu = r.aicpu + dur
    else
      r.compute = r.compute + dur
      add_type(kt, dur)
    end
    r.kernel_count = r.kernel_count + 1
  end)
  if not summary then return nil, err end
  for _, g in summary.hcom:groups() do
    r.hcom = r.hcom + g.dur
    add_type(g.key, g.dur)
    r.kernel_count = r.kernel_count + 1
  end
  return r, summary
end

-- The result object in the original's key order.
function M.result(hit, p, tc_path, prof_path, filter)
  local real = p.compute + p.hcom
  local ratio = real > 0 and hit / real or 0.0
  return pyfmt.object {
    { "m6_ratio", ratio + 0.0 },
    { "empirical_hit_us", pyfmt.round(hit + 0.0, 2) },
    { "real_per_fwd_us", pyfmt.round(real + 0.0, 2) },
    { "selected_fwd_compute_us", pyfmt.round(p.compute + 0.0, 2) },
    { "selected_fwd_hcom_us", pyfmt.round(p.hcom + 0.0, 2) },
    { "tc_trace", tc_path },
    { "prof_trace", prof_path },
    { "source_filter", filter.names },
  }
end

local function pylist(names)
  local t = {}
  for i, n in ipairs(names) do t[i] = "'" .. n:gsub("\\", "\\\\"):gsub("'", "\\'") .. "'" end
  return "[" .. table.concat(t, ", ") .. "]"
end

function M.report(res, hit, p)
  local v = res.values
  local real = p.compute + p.hcom
  local F = pyfmt.fixed
  local lines = {
    string.rep("=", 60),
    "M6: Empirical E2E Prediction Ratio",
    string.rep("=", 60),
    "",
    "TC trace:        " .. v.tc_trace,
    "Prof trace:      " .. v.prof_trace,
    "Source filter:   " .. pylist(v.source_filter),
    "",
    string.format("Empirical HIT total: %s us (%s ms)", pyfmt.rjust(F(hit, 1, true), 12),
                  F(hit / 1e3, 1, true)),
    string.format("Real per-fwd:        %s us (%s ms)", pyfmt.rjust(F(real, 1, true), 12),
                  F(real / 1e3, 1, true)),
    string.format("  Compute:           %s us", pyfmt.rjust(F(p.compute, 1, true), 12)),
    string.format("  hcom:              %s us", pyfmt.rjust(F(p.hcom, 1, true), 12)),
    "",
    string.format("M6 = %s  (Empirical / Real)", F(v.m6_ratio, 3)),
  }
  return table.concat(lines, "\n") .. "\n"
end

return M
