-- TensorCast model versus profiling, per kernel type (replaces generate_op_comparison.py).
--   perfscript recipes/op_comparison.lua --tc-trace TC.json --prof-trace PROF.csv --output OUT.json
--   perfscript recipes/op_comparison.lua --scenarios scenarios.lua --output OUT.json --html OUT.html
-- The run is lua/perfscript/analysis/run/op_comparison.lua.
require("perfscript.analysis.run.op_comparison").main(arg)
