-- trace_to_csv: one CSV row per complete event (ph "X") of a Chrome trace, with the original's
-- 11 columns (replaces parsers/trace_to_csv.py). Reads `{"traceEvents": [...]}` simulator
-- traces and bare-array Ascend trace_view.json files alike, streaming (an 870 MB trace needs
-- no 870 MB of memory); values are copied as written, timestamps with all their digits.
--   perfscript recipes/trace_to_csv.lua --trace T [--output O]
local perf = require "perfscript"
local argparse = require "argparse"
local trace = require "perfscript.trace"
local progress = require "perfscript.progress"

local parser = argparse("trace_to_csv",
  "Flatten the complete (ph = X) events of a Chrome trace into CSV rows.")
parser:option("--trace", "Chrome trace JSON: {\"traceEvents\": [...]} or a bare array of events.")
  :count(1)
parser:option("--output", "CSV file to write (atomically); standard output when absent.")
local args = parser:parse(arg)

local COLUMNS = { "op_name", "kernel_type", "simulation_shapes", "dur_us", "source", "confidence",
                  "composite", "sub_kernel_durations", "kernel_shapes", "shape_match_rule",
                  "sub_kernel_shapes" }
local ARGS = { "kernel_type", "simulation_shapes", "source", "confidence", "composite",
               "sub_kernel_durations", "kernel_shapes", "shape_match_rule", "sub_kernel_shapes" }

local r, err = trace.open(args.trace)
if not r then perf.fail("%s", err) end

-- stdout: the file writer's quoting (perf.csv.format_row) and CRLF
local out
if args.output then
  out = assert(perf.csv.writer(args.output, { eol = "\r\n", bom = false }))
else
  io.stdout:setvbuf("full")
  out = { write = function(_, row)
    io.stdout:write(perf.csv.format_row(row, "\r\n"))
  end }
end
out:write(COLUMNS)

local size = select(2, r:progress())
local bar = progress.new("Trace", size, { min_total = 32 << 20 })
local n, rows = 0, 0
while true do
  local ev, rerr = r:read()
  if not ev then
    if rerr then
      if args.output then out:abort() end
      perf.fail("%s", rerr)
    end
    break
  end
  n = n + 1
  if ev.ph == "X" then
    local a = ev.args or {}
    local row = { ev.name or "", a.kernel_type or "", a.simulation_shapes or "", ev.dur or "0" }
    for i = 3, #ARGS do row[#row + 1] = a[ARGS[i]] or "" end
    out:write(row)
    rows = rows + 1
  end
  if n % 4096 == 0 then bar:update((r:progress())) end
end
bar:finish()
local truncated = r:truncated()
r:close()
if args.output then
  local status = out:commit()
  io.stderr:write(string.format("%s %s: %d row(s) from %d event(s)%s\n", status, args.output, rows, n,
    truncated and " (the trace ends without its closing ']': every event before the cut was read)" or ""))
elseif truncated then
  io.stderr:write("note: the trace ends without its closing ']': every event before the cut was read\n")
end
