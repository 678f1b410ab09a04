-- The per-shape comparison run (recipes/per_shape_comparison.lua is its entry point): one row per
-- (kernel type, shape key) with the TC and profiled times, as CSV, largest first.
local argparse = require "argparse"
local cli = require "perfscript.analysis.cli"
local pershape = require "perfscript.analysis.pershape"

local M = {}

function M.parser()
  local parser = argparse("per_shape_comparison.lua",
    "One row per (kernel type, shape key) with the TC and profiled times (CSV, largest first).")
  cli.add_inputs(parser, true)
  require("perfscript.options").output(parser, "CSV output (default: standard output).", { argname = "<csv>" })
  parser:flag("--kernel-shapes", "Key TC kernels by the shapes their database lookup used " ..
              "(kernel_shapes / sub_kernel_shapes) when the trace has them, not the op's inputs.")
  cli.add_trace_options(parser)
  return parser
end

function M.main(argv)
  local args = M.parser():parse(argv)
  cli.require_file(args.prof_trace, "Prof trace")
  local tr, pid, pr = cli.load_sides(args.tc_trace, args.prof_trace, args, pershape.prof_side)
  local tc = pershape.tc_side(tr, pid, { kernel_shapes = args.kernel_shapes })

  local rows = pershape.rows(tc, pr)
  local text = pershape.csv(rows)
  if args.output then
    cli.write_file(args.output, text, "per-shape CSV")
    io.write(string.format("Generated %d per-shape comparison rows \u{2192} %s\n", #rows, args.output))
  else
    io.write(text)
  end
end

return M
