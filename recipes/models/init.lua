-- The built-in model presets, in registry order ("all models" walks them in this order).
-- A new model is one more file here (fields: lua/perfscript/grid/models.lua), or no file at
-- all: `--model-config path/to/config.json` reads a local HuggingFace config.
return {
  require "models.deepseek_v3",
  require "models.qwen3_32b",
  require "models.llama3_70b",
  require "models.glm_5_1",
  (require "models.glm_5_2"),
}
