-- The M6 run (recipes/m6.lua is its entry point): the TensorCast trace's empirical
-- (database-hit) time over one real forward pass; console report, JSON, HTML.
local argparse = require "argparse"
local cli = require "perfscript.analysis.cli"
local options = require "perfscript.options"
local m6 = require "perfscript.analysis.m6"
local tctrace = require "perfscript.analysis.tctrace"
local pyfmt = require "perfscript.analysis.pyfmt"
local html = require "perfscript.analysis.html"

local M = {}

function M.parser()
  local parser = argparse("m6.lua",
    "M6 = (sum of the TensorCast events answered from the database) / (compute + hcom time of " ..
    "one profiled forward pass).")
  cli.add_inputs(parser, true)
  options.list(parser, "--source-filter", "Sources that count as empirical (comma list, repeatable; '*' = any).",
               { default = m6.DEFAULT_SOURCES })
  options.output(parser, "Write the result object as JSON.", { aliases = { "--json-output" }, argname = "<json>" })
  parser:option("--html", "Write a self-contained HTML page with per-kernel charts."):argname("<html>")
  cli.add_trace_options(parser)
  return parser
end

-- Per-kernel rows of the page (every kernel type either side has), largest first.
function M.kernels(tc_per, prof_per)
  local names, seen = {}, {}
  for kt in pairs(tc_per) do if not seen[kt] then seen[kt] = true; names[#names + 1] = kt end end
  for kt in pairs(prof_per) do if not seen[kt] then seen[kt] = true; names[#names + 1] = kt end end
  local kernels = {}
  for _, kt in ipairs(names) do
    local t, q = tc_per[kt] or 0.0, prof_per[kt] or 0.0
    kernels[#kernels + 1] = { name = kt, tc_us = t, prof_us = q,
                              error_pct = q > 0 and (t - q) / q * 100 or nil,
                              not_modelled = tc_per[kt] == nil and q > 0 }
  end
  table.sort(kernels, function(a, b)
    local ka, kb = math.max(a.tc_us, a.prof_us), math.max(b.tc_us, b.prof_us)
    if ka ~= kb then return ka > kb end
    return a.name < b.name
  end)
  return kernels
end

-- The HTML page of one M6 result.
function M.page(args, res, hit, tc_per, p, filter)
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
    kernels = M.kernels(tc_per, p.per_type),
  }
  return html.page("M6: empirical end-to-end prediction ratio", { section })
end

function M.main(argv)
  local args = M.parser():parse(argv)
  cli.require_file(args.tc_trace, "TC trace")
  cli.require_file(args.prof_trace, "Prof trace")

  local filter = tctrace.source_filter(table.concat(args.source_filter, ","), m6.DEFAULT_SOURCES)
  local tr, pid, p = cli.load_sides(args.tc_trace, args.prof_trace, args, m6.prof_side)
  local hit, tc_per = m6.tc_side(tr, pid, filter)

  local res = m6.result(hit, p, args.tc_trace, args.prof_trace, filter)
  io.write(m6.report(res, hit, p))
  if args.output then
    cli.write_file(args.output, pyfmt.json(res), "M6 JSON")
    io.write("\nJSON output written to: " .. args.output .. "\n")
  end
  if args.html then
    cli.write_file(args.html, M.page(args, res, hit, tc_per, p, filter), "HTML page")
  end
end

return M
