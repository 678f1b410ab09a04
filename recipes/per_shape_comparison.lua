-- TensorCast model versus profiling per (kernel type, input shapes)
-- (replaces generate_per_shape_comparison.py).
--   perfscript recipes/per_shape_comparison.lua --tc-trace TC.json --prof-trace PROF.csv [--output OUT.csv]
local perf = require "perfscript"
local argparse = require "argparse"
local cli = require "perfscript.analysis.cli"
local pershape = require "perfscript.analysis.pershape"
local prof = require "perfscript.analysis.prof"

local parser = argparse("per_shape_comparison.lua",
  "One row per (kernel type, shape key) with the TC and profiled times (CSV, largest first).")
parser:option("--tc-trace", "TensorCast Chrome trace (JSON)."):argname("<json>"):count(1)
parser:option("--prof-trace", "Forward-pass trace CSV (kernel_details columns)."):argname("<csv>")
  :count(1)
parser:option("--output", "CSV output (default: standard output)."):argname("<csv>")
parser:flag("--kernel-shapes", "Key TC kernels by the shapes their database lookup used " ..
            "(kernel_shapes / sub_kernel_shapes) when the trace has them, not the op's inputs.")
cli.add_trace_options(parser)
local args = parser:parse(arg)

do
  local f = io.open(args.prof_trace, "rb")
  if not f then perf.fail("Prof trace not found: %s", args.prof_trace) end
  f:close()
end
local tr, pid = cli.trace_and_pid(args.tc_trace, args)
local tc = pershape.tc_side(tr, pid, { kernel_shapes = args.kernel_shapes })
local pr, summary = pershape.prof_side(args.prof_trace, { window_ns = cli.window_ns(args) })
if not pr then perf.fail("%s", summary) end
prof.report_warnings(args.prof_trace, summary)

local rows = pershape.rows(tc, pr)
local text = pershape.csv(rows)
if args.output then
  cli.write_file(args.output, text, "per-shape CSV")
  io.write(string.format("Generated %d per-shape comparison rows \u{2192} %s\n", #rows, args.output))
else
  io.write(text)
end
