-- M6: the TensorCast trace's empirical (database-hit) time over one real forward pass
-- (replaces compute_m6.py).
--   perfscript recipes/m6.lua --tc-trace TC.json --prof-trace PROF.csv [--json-output M6.json]
local perf = require "perfscript"
local argparse = require "argparse"
local cli = require "perfscript.analysis.cli"
local m6 = require "perfscript.analysis.m6"
local prof = require "perfscript.analysis.prof"
local tctrace = require "perfscript.analysis.tctrace"
local pyfmt = require "perfscript.analysis.pyfmt"
local html = require "perfscript.analysis.html"

local parser = argparse("m6.lua",
  "M6 = (sum of the TensorCast events answered from the database) / (compute + hcom time of " ..
  "one profiled forward pass).")
parser:option("--tc-trace", "TensorCast Chrome trace (JSON)."):argname("<json>"):count(1)
parser:option("--prof-trace", "Forward-pass trace CSV (kernel_details columns)."):argname("<csv>")
  :count(1)
parser:option("--source-filter", "Sources that count as empirical (comma list; '*' = any).",
              m6.DEFAULT_SOURCES):argname("<list>")
parser:option("--json-output", "Write the result object as JSON."):argname("<json>")
parser:option("--html", "Write a self-contained HTML page with per-kernel charts."):argname("<html>")
cli.add_trace_options(parser)
local args = parser:parse(arg)

do
  local f = io.open(args.tc_trace, "rb")
  if not f then perf.fail("TC trace not found: %s", args.tc_trace) end
  f:close()
  f = io.open(args.prof_trace, "rb")
  if not f then perf.fail("Prof trace not found: %s", args.prof_trace) end
  f:close()
end

local filter = tctrace.source_filter(args.source_filter, m6.DEFAULT_SOURCES)
local tr, pid = cli.trace_and_pid(args.tc_trace, args)
local hit, tc_per = m6.tc_side(tr, pid, filter)
local p, summary = m6.prof_side(args.prof_trace, { window_ns = cli.window_ns(args) })
if not p then perf.fail("%s", summary) end
prof.report_warnings(args.prof_trace, summary)

local res = m6.result(hit, p, args.tc_trace, args.prof_trace, filter)
io.write(m6.report(res, hit, p))
if args.json_output then
  cli.write_file(args.json_output, pyfmt.json(res), "M6 JSON")
  io.write("\nJSON output written to: " .. args.json_output .. "\n")
end

if args.html then
  local names, seen = {}, {}
  for kt in pairs(tc_per) do if not seen[kt] then seen[kt] = true; names[#names + 1] = kt end end
  for kt in pairs(p.per_type) do if not seen[kt] then seen[kt] = true; names[#names + 1] = kt end end
  local kernels = {}
  for _, kt in ipairs(names) do
    local t, q = tc_per[kt] or 0.0, p.per_type[kt] or 0.0
    kernels[#kernels + 1] = { name = kt, tc_us = t, prof_us = q,
                              error_pct = q > 0 and (t - q) / q * 100 or nil }
  end
  table.sort(kernels, function(a, b)
    local ka, kb = math.max(a.tc_us, a.prof_us), math.max(b.tc_us, b.prof_us)
    if ka ~= kb then return ka > kb end
    return a.name < b.name
  end)
  local v = res.values
  local section = {
    title = "M6 = " .. pyfmt.fixed(v.m6_ratio, 3) .. " (Empirical / Real)",
    summary = {
      { "TC trace", args.tc_trace }, { "Prof trace", args.prof_trace },
      { "Source filter", table.concat(filter.names, ", ") },
      { "Empirical HIT total (\u{3bc}s)", pyfmt.fixed(hit, 1, true) },
      { "Real per forward (\u{3bc}s)", pyfmt.fixed(p.compute + p.hcom, 1, true) },
      { "Compute / hcom (\u{3bc}s)", pyfmt.fixed(p.compute, 1, true) .. " / " .. pyfmt.fixed(p.hcom, 1, true) },
    },
    kernels = kernels,
  }
  cli.write_file(args.html, html.page("M6: empirical end-to-end prediction ratio", { section }), "HTML page")
end
