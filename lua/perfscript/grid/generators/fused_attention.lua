-- FusedInferAttentionScore rows from attention scenes (docs/rules.md, Shape grids: patterns):
-- dense prefill/decode per TP head variant, MLA prefill/decode, 31 input slots, runtime
-- columns for replay. One dedup set across all models.
local M = {}

local SLOTS = 31
local BLOCK = 128
local MIN_BLOCKS = 16

M.columns = require("perfscript.fia").GRID

local SLOT_META = {  -- 0-based slot -> dtype, format (when the slot has a shape)
  [0] = { "DT_BF16", "ND" }, [1] = { "DT_BF16", "ND" }, [2] = { "DT_BF16", "ND" },
  [24] = { "DT_BF16", "ND" }, [25] = { "DT_BF16", "ND" },
  [4] = { "INT8", "ND" }, [5] = { "INT64", "ND" }, [6] = { "INT64", "ND" }, [14] = { "INT32", "ND" },
}

-- {[0]=shape, ...} -> array of SLOTS shapes (absent slots empty); extra slots are cut.
local function slots(filled)
  local out = {}
  for i = 0, SLOTS - 1 do out[i + 1] = filled[i] or {} end
  return out
end
M.slots = slots

local function text(shapes)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = table.concat(s, ",") end
  return table.concat(parts, ";")
end

local function ints(list) return table.concat(list, ",") end
local function rep(v, n) local t = {}; for i = 1, n do t[i] = v end; return t end
local function cumulative(v, n) local t, s = {}, 0; for i = 1, n do s = s + v; t[i] = s end; return t end
local function nblocks(L) return math.max(1, (L + BLOCK - 1) // BLOCK) end

local function meta(shapes)
  local dt, fm = {}, {}
  for i = 0, SLOTS - 1 do
    local m = #shapes[i + 1] > 0 and SLOT_META[i]
    dt[i + 1] = m and m[1] or "DT_UNDEFINED"
    fm[i + 1] = m and m[2] or "NULL"
  end
  return table.concat(dt, ";"), table.concat(fm, ";")
end

-- Builds one candidate: {inputs, outputs, extra}.
local function row(scene, filled, out, r)
  local inputs = slots(filled)
  local dt, fm = meta(inputs)
  local extra = {
    ["Input Data Types"] = dt, ["Input Formats"] = fm,
    ["Runtime source_profile"] = scene,
    ["Runtime actual_seq_lengths_shape"] = #r.actual > 0 and tostring(#r.actual) or "",
    ["Runtime actual_seq_lengths_values"] = ints(r.actual),
    ["Runtime actual_seq_lengths_kv_shape"] = #r.kv > 0 and tostring(#r.kv) or "",
    ["Runtime actual_seq_lengths_kv_values"] = ints(r.kv),
    ["Runtime avg_seq_len"] = string.format("%.6f", r.avg),
    ["Runtime block_table_shape"] = r.block_table or "",
    ["Runtime block_table_valid_blocks"] = r.valid and ints(r.valid) or "",
    ["Runtime num_heads"] = tostring(r.heads),
    ["Runtime num_key_value_heads"] = tostring(r.kv_heads),
    ["Runtime sparse_mode"] = tostring(r.sparse),
    ["Runtime input_layout"] = r.layout,
    ["Runtime block_size"] = tostring(BLOCK),
    ["Runtime metadata_completeness"] = "shape_grid_scene_generated",
    ["Runtime operator_input_shapes_raw"] = text(inputs),
  }
  return { inputs = inputs, outputs = { out }, extra = extra }
end

function M.dense_prefill(scene, batch, seq, h, kv, d)
  local T = batch * seq
  return row(scene, { [0] = { T, h, d }, [1] = { T, kv, d }, [2] = { T, kv, d }, [4] = { 2048, 2048 },
                      [5] = { batch }, [6] = { batch } }, { T, h, d },
             { actual = cumulative(seq, batch), kv = cumulative(seq, batch), avg = seq,
               heads = h, kv_heads = kv, sparse = 3, layout = "TND" })
end

function M.dense_decode(scene, batch, avg, h, kv, d)
  local nb = nblocks(avg)
  local TB = math.max(MIN_BLOCKS, batch * nb)
  return row(scene, { [0] = { batch, h, d }, [1] = { TB, kv, BLOCK, d }, [2] = { TB, kv, BLOCK, d },
                      [4] = { 2048, 2048 }, [5] = { batch }, [6] = { batch }, [14] = { batch, nb } },
             { batch, h, d },
             { actual = cumulative(1, batch), kv = rep(avg, batch), avg = avg,
               block_table = batch .. "," .. nb, valid = rep(nb, batch),
               heads = h, kv_heads = kv, sparse = 3, layout = "TND" })
end

-- MLA prefill as the consumer's MLA decomposer asks for it (docs/rules.md, Lookups): TND, the
-- no-PE query (T, H, qk_nope) with its rope part in query_rope, K decompressed to H heads,
-- sparse mode 3.
-- A 4-D BNSD query with S > 1 cannot be read by the consumer (q_shape_normalize_failed).
function M.mla_prefill(scene, batch, seq, H, nope, rope, v)
  local T = batch * seq
  v = v or nope
  return row(scene, { [0] = { T, H, nope }, [1] = { T, H, nope }, [2] = { T, H, v }, [4] = { 2048, 2048 },
                      [5] = { batch }, [6] = { batch }, [24] = { T, H, rope }, [25] = { T, H, rope } },
             { T, H, v },
             { actual = cumulative(seq, batch), kv = cumulative(seq, batch), avg = seq,
               heads = H, kv_heads = H, sparse = 3, layout = "TND" })
end

function M.mla_decode(scene, batch, avg, H, kvr, rope)
  local nb = nblocks(avg)
  local TB = math.max(MIN_BLOCKS, batch * nb)
  return row(scene, { [0] = { batch, H, 1, kvr }, [1] = { TB, 1, BLOCK, kvr }, [2] = { TB, 1, BLOCK, kvr },
                      [5] = { batch }, [6] = { batch }, [14] = { batch, nb },
                      [24] = { batch, H, 1, rope }, [25] = { TB, 1, BLOCK, rope } },
             { H, batch, 1, kvr },
             { actual = rep(1, batch), kv = rep(avg, batch), avg = avg,
               block_table = batch .. "," .. nb, valid = rep(nb, batch),
               heads = H, kv_heads = 1, sparse = 0, layout = "BNSD_NBSD" })
end

-- (local heads, local kv heads, tp) per TP size, first TP wins for a repeated pair.
function M.dense_variants(c)
  local out, seen = {}, {}
  local local_heads = require("perfscript.grid.models").local_heads
  for _, tp in ipairs(c.tp_sizes) do
    local lh, lkv = local_heads(c, tp)
    if lkv and not seen[lh .. "," .. lkv] then
      seen[lh .. "," .. lkv] = true
      out[#out + 1] = { lh, lkv, tp }
    end
  end
  return out
end

-- generate(configs, emit, env): env.scenes is perfscript/grids/fia_scenes.lua, env.is_mla the model test.
function M.generate(configs, emit, env)
  local scenes, seen = env.scenes, {}
  local function put(cand)
    local key = text(cand.inputs) .. "|" .. cand.extra["Input Data Types"] .. "|"
                .. cand.extra["Input Formats"] .. "|" .. text(cand.outputs)
    if seen[key] then return end
    seen[key] = true
    emit(cand)
  end
  for _, c in ipairs(configs) do
    local key = c.model_key
    if env.is_mla(c) then
      local g = scenes[key] or scenes.generic_mla
      local H, kvr, rope = c.num_attention_heads, c.kv_lora_rank, c.qk_rope_head_dim
      for _, b in ipairs(g.prefill.batches) do
        for _, s in ipairs(g.prefill.seqs) do
          put(M.mla_prefill(key .. "_mla_prefill", b, s, H, c.qk_nope_head_dim, rope, require("perfscript.grid.models").value_head_dim(c)))
        end
      end
      for _, b in ipairs(g.decode.batches) do
        for _, s in ipairs(g.decode.seqs) do put(M.mla_decode(key .. "_mla_decode", b, s, H, kvr, rope)) end
      end
    else
      local g = scenes[key] or scenes.generic_dense
      for _, v in ipairs(M.dense_variants(c)) do
        local lh, lkv, tp = v[1], v[2], v[3]
        for _, b in ipairs(g.prefill.batches) do
          for _, s in ipairs(g.prefill.seqs) do
            put(M.dense_prefill(key .. "_dense_prefill_tp" .. tp, b, s, lh, lkv, c.head_dim))
          end
        end
        for _, b in ipairs(g.decode.batches) do
          for _, s in ipairs(g.decode.seqs) do
            put(M.dense_decode(key .. "_dense_decode_tp" .. tp, b, s, lh, lkv, c.head_dim))
          end
        end
      end
    end
  end
end

return M
