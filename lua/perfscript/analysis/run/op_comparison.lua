-- The op comparison run (recipes/op_comparison.lua is its entry point): TensorCast model versus
-- profiling, per kernel type, for one scenario or a scenario file; console table, JSON, HTML.
local perf = require "perfscript"
local argparse = require "argparse"
local cjson = require "cjson"
local cli = require "perfscript.analysis.cli"
local options = require "perfscript.options"
local opcmp = require "perfscript.analysis.opcmp"
local opmap = require "perfscript.analysis.opmap"
local prof = require "perfscript.analysis.prof"
local tctrace = require "perfscript.analysis.tctrace"
local html = require "perfscript.analysis.html"

local M = {}

function M.parser()
  local parser = argparse("op_comparison.lua",
    "Per kernel type: the TensorCast trace's time and count (HIT database lookups and MISS " ..
    "analytic fallbacks) against one profiled forward pass.")
  cli.add_inputs(parser, false)
  parser:option("--name", "Scenario name in the output (default: the TC trace's file name)."):argname("<name>")
  parser:option("--n-forward", "Forward passes in the profiling slice (profiling totals are divided by it).")
    :argname("<n>"):convert(tonumber)
  parser:option("--m6", "Read n_forward_passes from this M6 JSON (default 1)."):argname("<json>")
  parser:option("--scenarios", "Lua file returning a list of scenarios {name, tc_trace, " ..
                "prof_trace, n_forward?, m6?}; runs them all."):argname("<file>")
  options.database(parser, { required_path = true, aliases = { "--data-dir" },
    help = "Database directory whose op_mapping.yaml maps ops to kernel types.",
    default = "Default: the scenario file's data_dir, else none (ops keep their own names)." })
  options.list(parser, "--source-filter", "Only events with these sources count as HIT (comma list, " ..
               "repeatable, e.g. MEASURED,INTERPOLATED); default: any event with a kernel type, as the original.")
  options.output(parser, "Write the rows as JSON {scenario: [rows]}.", { argname = "<json>" })
  parser:option("--html", "Write a self-contained HTML page with the charts."):argname("<html>")
  parser:option("--top", "Rows shown in the console table.", "15"):convert(tonumber)
  cli.add_trace_options(parser)
  return parser
end

-- The scenarios to run (from --scenarios or the single-scenario flags) and the database
-- directory the scenario file names, if any.
function M.scenarios(parser, args)
  if args.scenarios then
    if args.tc_trace or args.prof_trace then
      parser:error("--scenarios and --tc-trace/--prof-trace are alternatives")
    end
    return cli.load_scenarios(args.scenarios)
  end
  if not args.tc_trace or not args.prof_trace then
    parser:error("give --tc-trace and --prof-trace, or --scenarios FILE")
  end
  return { { name = args.name or (args.tc_trace:match("([^/]+)$"):gsub("%.json$", "")),
             tc_trace = args.tc_trace, prof_trace = args.prof_trace, m6 = args.m6,
             n_forward = args.n_forward } }
end

-- The op -> kernel type mapping of data_dir's op_mapping.yaml (empty without data_dir).
function M.mapping(data_dir)
  if not data_dir then return opmap.empty() end
  local m, err = opmap.load_dir(data_dir)
  if not m then perf.fail("%s", err) end
  if err then io.stderr:write("note: " .. err .. " (ops keep their own names)\n") end
  return m
end

-- n_forward_passes of an M6 JSON (1 when absent), or nil and why.
function M.read_n_forward(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, "M6 JSON not found: " .. path .. " (" .. err .. ")" end
  local text = f:read("a")
  f:close()
  local ok, doc = pcall(cjson.decode, text)
  if not ok or type(doc) ~= "table" then return nil, path .. ": malformed JSON: " .. tostring(doc) end
  local n = doc.n_forward_passes
  if n == nil or n == cjson.null then return 1 end
  if type(n) ~= "number" then return nil, path .. ": n_forward_passes is not a number" end
  return math.tointeger(n) or n
end

-- One scenario -> rows, or nil and the reason it was skipped.
function M.run_scenario(sc, args, mapping, filter)
  for _, p in ipairs { sc.tc_trace, sc.prof_trace } do
    local f = io.open(p, "rb")
    if not f then return nil, "No such file: " .. p end
    f:close()
  end
  local n_fwd = sc.n_forward
  if n_fwd == nil and sc.m6 then
    local n, err = M.read_n_forward(sc.m6)
    if not n then return nil, err end
    n_fwd = n
  end
  local tr, pid, pstats = cli.load_sides(sc.tc_trace, sc.prof_trace, args, prof.by_type)
  local tc, info = opcmp.tc_stats(tr, pid, { mapping = mapping, source_filter = filter })
  if info.zero_cost + info.accepted_miss > 0 then
    io.stderr:write(string.format("%s: left out %d zero-cost and %d accepted-miss events\n",
                                  sc.name, info.zero_cost, info.accepted_miss))
  end
  return opcmp.rows(tc, pstats, n_fwd or 1)
end

-- The page's section for one scenario's rows.
function M.section(res)
  local kernels = {}
  for _, r in ipairs(res.rows) do
    kernels[#kernels + 1] = {
      name = r.kernel_type, tc_us = r.tc_total_us, prof_us = r.prof_per_fwd_us,
      error_pct = r.prof_per_fwd_us > 0 and r.error_pct or nil,
      not_modelled = r.status == opcmp.UNMODELLED,
      status = r.status == opcmp.UNMODELLED and opcmp.UNMODELLED_TEXT or r.status,
      tc_count = tostring(r.tc_count), prof_count = tostring(r.prof_count),
    }
  end
  local tc_total, prof_total = opcmp.totals(res.rows)
  return {
    title = res.name .. " \u{2014} TC vs Profiling per-forward",
    summary = { { "TC total (\u{3bc}s)", string.format("%.1f", tc_total) },
                { "Profiling total per forward (\u{3bc}s)", string.format("%.1f", prof_total) },
                { "Kernel types", tostring(#res.rows) } },
    kernels = kernels,
    extra_cols = { { "TC count", "tc_count" }, { "Prof count", "prof_count" }, { "status", "status" } },
  }
end

function M.main(argv)
  local parser = M.parser()
  local args = parser:parse(argv)
  local scenarios, dd = M.scenarios(parser, args)
  local mapping = M.mapping(args.database_path or dd)
  local filter = args.source_filter and tctrace.source_filter(table.concat(args.source_filter, ",")) or nil

  local results = {}
  for _, sc in ipairs(scenarios) do
    local rows, why = M.run_scenario(sc, args, mapping, filter)
    if not rows then
      if not args.scenarios then perf.fail("%s", why) end
      io.stderr:write(string.format("SKIP %s: %s\n", sc.name, why))
    else
      results[#results + 1] = { name = sc.name, rows = rows }
      io.write(opcmp.table(sc.name, rows, args.top))
    end
  end
  if #results == 0 then perf.fail("no scenario could be run") end

  if args.output then
    cli.write_file(args.output, opcmp.json(results), "op comparison JSON")
    io.write("\nSaved to " .. args.output .. "\n")
  end
  if args.html then
    local sections = {}
    for _, res in ipairs(results) do sections[#sections + 1] = M.section(res) end
    cli.write_file(args.html, html.page("TensorCast vs profiling per kernel type", sections), "HTML page")
  end
end

return M
