-- The FusedInferAttentionScore runtime columns (lua/perfscript/fia/init.lua; fia.fill is the back-fill): the one list, and the three views of it that
-- the database's writers emit (docs/rules.md, Import: FIA pairing):
--   IMPORT   the profile import's 16 columns (attn_state and kv_cache_mode, no raw shapes),
--   GRID     the grid generator's 15 header columns, appended in this order when missing,
--   BACKFILL the 12 columns fill_fia_metadata.lua writes from a runtime dump.
local M = {}

local function R(name) return "Runtime " .. name end

-- The 13 columns every view shares, in the order the files carry them.
M.BASE = {
  R"source_profile", R"actual_seq_lengths_shape", R"actual_seq_lengths_values",
  R"actual_seq_lengths_kv_shape", R"actual_seq_lengths_kv_values", R"avg_seq_len",
  R"block_table_shape", R"block_table_valid_blocks", R"num_heads", R"num_key_value_heads",
  R"sparse_mode", R"input_layout", R"block_size",
}

local function view(extra, without)
  local out, skip = {}, {}
  for _, c in ipairs(without or {}) do skip[c] = true end
  for _, c in ipairs(M.BASE) do if not skip[c] then out[#out + 1] = c end end
  for _, c in ipairs(extra) do out[#out + 1] = c end
  return out
end

M.IMPORT = view { R"attn_state", R"kv_cache_mode", R"metadata_completeness" }
M.GRID = view { R"metadata_completeness", R"operator_input_shapes_raw" }
M.BACKFILL = view({ R"metadata_completeness" }, { R"source_profile", R"block_table_shape" })

return M
