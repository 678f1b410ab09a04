-- Audits the grid axes against the axis-density standard (lua/perfscript/db/density.lua): required
-- anchors, range ends, maximum gaps and ratios. Exit status 1 when an axis falls short.
--   perfscript recipes/grid_density.lua
local perf = require "perfscript"
local parser = require("argparse")("grid_density.lua", "Check the grid axes against the axis-density standard.")
parser:parse(arg)
local density = require "perfscript.grid.density"
local results = density.audit(require "perfscript.grids.registry", (require "perfscript.grids.patterns"))
local failed = 0
for _, r in ipairs(results) do
  if #r.problems == 0 then
    print(("ok    %s"):format(r.axis))
  else
    failed = failed + 1
    for _, p in ipairs(r.problems) do print(("FAIL  %s: %s"):format(r.axis, p)) end
  end
end
print(("%d of %d axes comply."):format(#results - failed, #results))
if failed > 0 then perf.fail("%d axes fall short of the density standard", failed) end
