-- Audits the grid axes against the axis-density standard (lua/perfscript/db/density.lua): required
-- anchors, range ends, maximum gaps and ratios. Exit status 1 when an axis falls short.
--   perfscript recipes/grid_density.lua
-- The run is main in lua/perfscript/grid/density.lua.
require("perfscript.grid.density").main(arg)
