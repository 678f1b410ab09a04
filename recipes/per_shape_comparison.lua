-- TensorCast model versus profiling per (kernel type, input shapes)
-- (replaces generate_per_shape_comparison.py).
--   perfscript recipes/per_shape_comparison.lua --tc-trace TC.json --prof-trace PROF.csv [--output OUT.csv]
-- The run is lua/perfscript/analysis/run/per_shape_comparison.lua.
require("perfscript.analysis.run.per_shape_comparison").main(arg)
