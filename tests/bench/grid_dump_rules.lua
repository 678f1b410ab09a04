-- Writes the grid rules and the complex generators' candidates (all presets) as JSON, for
-- the Python baseline of grid_bench.sh: perfscript grid_dump_rules.lua OUT.json
local cjson = require "cjson"
local models = require "perfscript.grid.models"
local patterns = require "perfscript.grids.patterns"
local grids = require "perfscript.grids.registry"
local env = { grids = grids, scenes = require "perfscript.grids.fia_scenes", is_mla = models.is_mla,
              moe_configs = models.moe_configs }
local out = { patterns = {}, assignments = require "perfscript.grids.assignments", grids = grids, generated = {},
              nk_pairs = {} }
local configs = models.resolve(nil)
for name, p in pairs(patterns) do
  if p.generator then
    local rows = {}
    require("perfscript.grid.generators." .. p.generator).generate(configs, function(c)
      rows[#rows + 1] = { i = c.inputs, o = c.outputs, e = c.extra or { _ = "" } }
    end, env)
    out.generated[name] = rows
    out.patterns[name] = { generator = p.generator }
  else
    out.patterns[name] = p
  end
end
local f = assert(io.open(arg[1], "w"))
f:write(cjson.encode(out))
f:close()
