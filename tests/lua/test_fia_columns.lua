-- The FIA runtime columns have one home (perfscript.fia); the import, the grid generator and
-- fill_fia_metadata.lua take their lists from it (docs/rules.md, Import: FIA pairing).
local lu = require "luaunit"
local fia = require "perfscript.fia"

local function R(list) local out = {} for i, c in ipairs(list) do out[i] = "Runtime " .. c end return out end

function test_views()
  local base = { "source_profile", "actual_seq_lengths_shape", "actual_seq_lengths_values",
                 "actual_seq_lengths_kv_shape", "actual_seq_lengths_kv_values", "avg_seq_len",
                 "block_table_shape", "block_table_valid_blocks", "num_heads", "num_key_value_heads",
                 "sparse_mode", "input_layout", "block_size" }
  local import = { table.unpack(base) }
  for _, c in ipairs { "attn_state", "kv_cache_mode", "metadata_completeness" } do import[#import + 1] = c end
  lu.assertEquals(fia.IMPORT, R(import))
  local grid = { table.unpack(base) }
  for _, c in ipairs { "metadata_completeness", "operator_input_shapes_raw" } do grid[#grid + 1] = c end
  lu.assertEquals(fia.GRID, R(grid))
  lu.assertEquals(fia.BACKFILL, R { "actual_seq_lengths_shape", "actual_seq_lengths_values",
    "actual_seq_lengths_kv_shape", "actual_seq_lengths_kv_values", "avg_seq_len",
    "block_table_valid_blocks", "num_heads", "num_key_value_heads", "sparse_mode", "input_layout",
    "block_size", "metadata_completeness" })
end

function test_callers_use_it()
  lu.assertIs(require("perfscript.profimport").FIA_COLUMNS, fia.IMPORT)
  lu.assertIs(require("perfscript.grid.generators.fused_attention").columns, fia.GRID)
end

os.exit(lu.LuaUnit.run())
