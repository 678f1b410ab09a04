-- Shape grids for Qwen3-32B (lua/perfscript/models/qwen3_32b.lua).
require("perfscript.grid.cli").main(arg, {
  name = "qwen3_grid.lua",
  description = "Append Qwen3-32B shape-grid rows to a perf database.",
  models = { "Qwen/Qwen3-32B" },
})
