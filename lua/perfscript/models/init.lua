-- The built-in model presets, in registry order ("all models" walks them in this order).
-- A new model is one more file here (fields: lua/perfscript/grid/models.lua), or no file at
-- all: `--model-config path/to/config.json` reads a local HuggingFace config.
return {
  require "perfscript.models.deepseek_v3",
  require "perfscript.models.qwen3_32b",
  require "perfscript.models.llama3_70b",
  require "perfscript.models.glm_5_1",
  (require "perfscript.models.glm_5_2"),
}
