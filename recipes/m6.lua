-- M6: the TensorCast trace's empirical (database-hit) time over one real forward pass
-- (replaces compute_m6.py).
--   perfscript recipes/m6.lua --tc-trace TC.json --prof-trace PROF.csv [--output M6.json]
-- The run is lua/perfscript/analysis/run/m6.lua.
require("perfscript.analysis.run.m6").main(arg)
