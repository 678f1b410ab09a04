-- Shape grids for DeepSeek-V3 (lua/perfscript/models/deepseek_v3.lua).
-- With no arguments it runs on ./perfdb, a working copy of the bundled seed database.
require("perfscript.grid.cli").main(arg, {
  name = "dsv3_grid.lua",
  description = "Append DeepSeek-V3 shape-grid rows to a perf database.",
  models = { "deepseek-ai/DeepSeek-V3" },
})
