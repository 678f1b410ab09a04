-- The profile import run (recipes/parse_profile.lua is its entry point): profiler exports into the
-- operator database, one <KernelType>.csv per kernel type, through perfscript.profimport;
-- this module reads the flags, drives the steps and prints the summary.
local perf = require "perfscript"
local argparse = require "argparse"
local lfs = require "lfs"
local options = require "perfscript.options"
local imp = require "perfscript.profimport"
local progress = require "perfscript.progress"
local pyfmt = require "perfscript.analysis.pyfmt"

local M = {}

function M.parser()
  local parser = argparse("parse_profile",
    "Aggregate profiler kernel tables (kernel_details*.csv, op_summary_*.csv) into one row per "
    .. "kernel (type, shapes, dtypes and formats as the export wrote them) and merge them into a "
    .. "database directory, one <KernelType>.csv per kernel type.")
  parser:option("--profiling-path",
    "A kernel_details*.csv or op_summary_*.csv file, or a directory scanned recursively "
    .. "(multi-rank *_ascend_pt/ASCEND_PROFILER_OUTPUT trees, PROF_*/mindstudio_profiler_output).")
    :count(1)
  options.database(parser, { write = true, help = "Database directory to merge into (used as "
    .. "given; wins over the version flags)." })
  parser:option("--update-mode",
    "What happens to database rows whose kernel was measured again:\n"
    .. "new-only: keep them (only new kernels are appended);\n"
    .. "missing-only: fill the statistics of rows without a Profiling Average Duration;\n"
    .. "all: replace their profiling statistics and counters.")
    :choices(imp.UPDATE_MODES):default("new-only")
  parser:flag("--require-counters",
    "Reject files without the 25 PipeUtilization counters (the original's rule); by default "
    .. "they import with empty counter cells.")
  parser:flag("--dry-run", "Report what would change; write nothing.")
  options.threads(parser,
    "Threads reading a big input file (32 MiB and more), each a chunk of it (default: one per "
    .. "core; 1: one thread).")
  return parser
end

-- 1234567 -> "1,234,567"
local function group_digits(n) return pyfmt.fixed(n, 0, true) end

-- The input files (found, usable, empty); fails on problems or when every file is empty.
function M.inputs(path, require_counters)
  local found, err = imp.discover(path)
  if not found then perf.fail("%s", err) end
  local problems, files, empty = imp.check(found.files, { require_counters = require_counters })
  if #problems > 0 then
    perf.fail("%s\nnothing was written", table.concat(problems, "\n"))
  end
  if #files == 0 then
    perf.fail("no data: every input file is empty (no header): %s", table.concat(empty, ", "))
  end
  return found, files, empty
end

-- imp.aggregate over files with a progress bar on their total size.
function M.aggregate(files, threads, hash)
  local total_size = 0
  for _, f in ipairs(files) do total_size = total_size + (lfs.attributes(f, "size") or 0) end
  local bar = progress.new("Aggregate", total_size, { min_total = 8 << 20 })
  local agg, per_file = imp.aggregate(files, {
    threads = threads,
    hash = hash,
    progress = function(done, total, file) bar:update(done, file:match("([^/]+/[^/]+)$")) end,
  })
  bar:finish()
  return agg, per_file
end

-- What was read and what was skipped.
function M.print_totals(agg, files, tables, empty, found)
  local t = agg:totals()
  print(string.format("Read %d file(s), %s rows; %s aggregated into %s database row(s) of %d kernel type(s)",
    #files, group_digits(t.rows), group_digits(t.used), group_digits(#agg), #tables))
  local skipped = {}
  if t.na_shapes > 0 then skipped[#skipped + 1] = group_digits(t.na_shapes) .. " with N/A shapes" end
  if t.duplicates > 0 then skipped[#skipped + 1] = group_digits(t.duplicates) .. " exact duplicate rows (same Task ID and start time)" end
  if t.no_shapes > 0 then skipped[#skipped + 1] = group_digits(t.no_shapes) .. " without input dims (scalar-only kernels)" end
  if t.no_type > 0 then skipped[#skipped + 1] = group_digits(t.no_type) .. " without a Type" end
  if t.bad_duration > 0 then skipped[#skipped + 1] = group_digits(t.bad_duration) .. " without a numeric duration" end
  print("Skipped rows: " .. (#skipped > 0 and table.concat(skipped, ", ") or "none"))
  for _, f in ipairs(empty) do print("Skipped empty file: " .. f) end
  for _, f in ipairs(found.left_out) do
    print("Left out (its capture's kernel_details holds the same kernels): " .. f)
  end
end

-- One note per file that lacks columns (counters counted, Device_id not mentioned).
function M.print_absent(per_file)
  local n_metrics = #require("perfscript.profile").metrics
  for _, pf in ipairs(per_file) do
    if pf.absent ~= "" then
      local counters, others = 0, {}
      for name in pf.absent:gmatch("[^,]+") do
        name = name:gsub("^%s+", "")
        if name:find("^ai[cv]_") or name == "cube_utilization(%)" then counters = counters + 1
        elseif name ~= "Device_id" then others[#others + 1] = name end
      end
      local parts = {}
      if #others > 0 then parts[#parts + 1] = table.concat(others, ", ") end
      if counters > 0 then parts[#parts + 1] = string.format("%d of %d counters", counters, n_metrics) end
      if #parts > 0 then
        print(string.format("Note: %s has no %s (left empty)", pf.file, table.concat(parts, "; ")))
      end
    end
  end
end

-- What the merge did (or would do) to each database file.
function M.print_results(results, dir, args)
  local verb = args.dry_run and "would be " or ""
  print(string.format("Database %s (update mode %s)%s:", dir, args.update_mode,
    args.dry_run and ", dry run" or ""))
  local written = 0
  for _, r in ipairs(results) do
    if r.status == "created" then
      written = written + 1
      print(string.format("  %screated  %s: %d rows", verb, r.file, r.added))
    elseif r.status == "updated" then
      written = written + 1
      local extra = r.columns_added > 0 and string.format(", %d column(s) added", r.columns_added) or ""
      print(string.format("  %supdated  %s: %d added, %d replaced, %d kept%s", verb, r.file,
        r.added, r.replaced, r.kept, extra))
    else
      print(string.format("  unchanged %s: %d kept", r.file, r.kept))
    end
  end
  if not args.dry_run then
    print(string.format("Generated %d csv file(s) under %s from %s", written, dir, args.profiling_path))
  end
end

function M.main(argv)
  local args = M.parser():parse(argv)
  local found, files, empty = M.inputs(args.profiling_path, args.require_counters)
  local dir = options.database_dir(args, { write = not args.dry_run })
  -- the inputs' XXH3s (provenance) are taken while they are read, not in a pass after it
  local agg, per_file = M.aggregate(files, args.threads, not args.dry_run)
  local tables = imp.tables(agg)
  local warnings = imp.attach_fia(agg, tables, files, per_file)
  -- every written row is logged in <dir>/.perfscript/provenance.jsonl as imported
  local prov = { run = require("perfscript.microbench.journal").new_id() }
  local hashes = {}
  for i, pf in ipairs(per_file) do hashes[i] = pf.xxh3 end
  prov.input, prov.xxh3 = require("perfscript.microbench.provenance").inputs(files, args.profiling_path, hashes)
  local results = imp.merge(dir, tables, { mode = args.update_mode, dry_run = args.dry_run, provenance = prov })

  M.print_totals(agg, files, tables, empty, found)
  M.print_absent(per_file)
  for _, w in ipairs(warnings) do print("Warning: " .. w) end
  print("Database rows per kernel type:")
  for _, tb in ipairs(tables) do print(string.format("  %-40s %d", tb.type, tb.rows)) end
  M.print_results(results, dir, args)
  if prov.written and prov.written > 0 then
    print(string.format("Provenance of %d row(s) (imported, run %s) appended to %s", prov.written, prov.run,
      require("perfscript.microbench.provenance").path(dir)))
  end
end

return M
