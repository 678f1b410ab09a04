-- The trace flattening run (recipes/trace_to_csv.lua is its entry point): one CSV row per complete
-- event (ph "X") of a Chrome trace, with the Python original's 11 columns (docs/rules.md,
-- Trace to CSV), streaming; values are copied as written, timestamps with all their digits.
local perf = require "perfscript"
local argparse = require "argparse"
local trace = require "perfscript.trace"
local progress = require "perfscript.progress"

local M = {}

M.COLUMNS = { "op_name", "kernel_type", "simulation_shapes", "dur_us", "source", "confidence",
              "composite", "sub_kernel_durations", "kernel_shapes", "shape_match_rule",
              "sub_kernel_shapes" }
-- The event args behind the columns (the first two follow op_name; dur_us comes between).
local ARGS = { "kernel_type", "simulation_shapes", "source", "confidence", "composite",
               "sub_kernel_durations", "kernel_shapes", "shape_match_rule", "sub_kernel_shapes" }

function M.parser()
  local parser = argparse("trace_to_csv",
    "Flatten the complete (ph = X) events of a Chrome trace into CSV rows.")
  parser:option("--trace", "Chrome trace JSON: {\"traceEvents\": [...]} or a bare array of events.")
    :count(1)
  require("perfscript.options").output(parser, "CSV file to write (atomically); standard output when absent.",
    { argname = "<csv>" })
  return parser
end

-- The row of a complete event.
local function row_of(ev)
  local a = ev.args or {}
  local row = { ev.name or "", a.kernel_type or "", a.simulation_shapes or "", ev.dur or "0" }
  for i = 3, #ARGS do row[#row + 1] = a[ARGS[i]] or "" end
  return row
end
M.row = row_of

-- A writer on standard output with the file writer's quoting (perf.csv.format_row, the one
-- CSV quoter, in C) and CRLF.
function M.stdout_writer()
  io.stdout:setvbuf("full")
  return { write = function(_, row)
    io.stdout:write(perf.csv.format_row(row, "\r\n"))
  end }
end

-- Copies r's complete events to out; returns events read and rows written, or fails (after
-- aborting a file output) on a read error. first: an event already read (or nil).
function M.copy(r, out, is_file, first)
  local size = select(2, r:progress())
  local bar = progress.new("Trace", size, { min_total = 32 << 20 })
  local n, rows = 0, 0
  while true do
    local ev, rerr
    if first then ev, first = first, nil else ev, rerr = r:read() end
    if not ev then
      if rerr then
        if is_file then out:abort() end
        perf.fail("%s", rerr)
      end
      break
    end
    n = n + 1
    if ev.ph == "X" then
      out:write(row_of(ev))
      rows = rows + 1
    end
    if n % 4096 == 0 then bar:update((r:progress())) end
  end
  bar:finish()
  return n, rows
end

function M.main(argv)
  local args = M.parser():parse(argv)
  local r, err = trace.open(args.trace)
  if not r then perf.fail("%s", err) end
  -- a trace first (an array of events, or an object with traceEvents): an empty file, other
  -- JSON or a Git LFS pointer fails here, before the output is touched
  local first, ferr = r:read()
  if not first and ferr then perf.fail("%s", ferr) end
  local out = args.output and assert(perf.csv.writer(args.output, { eol = "\r\n", bom = false }))
              or M.stdout_writer()
  out:write(M.COLUMNS)
  local n, rows = M.copy(r, out, args.output ~= nil, first)
  local truncated = r:truncated()
  r:close()
  if args.output then
    local status = out:commit()
    io.stderr:write(string.format("%s %s: %d row(s) from %d event(s)%s\n", status, args.output, rows, n,
      truncated and " (the trace ends without its closing ']': every event before the cut was read)" or ""))
  elseif truncated then
    io.stderr:write("note: the trace ends without its closing ']': every event before the cut was read\n")
  end
end

return M
