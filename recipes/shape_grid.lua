-- Shape grids for every model preset (or --target-models): appends theory rows to the
-- database's <KernelType>.csv files, to be measured later by a missing-only replay.
--   perfscript recipes/shape_grid.lua [--database-path DIR] [--target-models a,b] [--rows N] ...
require("perfscript.grid.cli").main(arg, {
  name = "shape_grid.lua",
  description = "Append shape-grid (theory) rows to a perf database from grid rules and model presets.",
})
