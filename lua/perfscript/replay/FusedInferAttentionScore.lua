-- FusedInferAttentionScore: torch_npu.npu_fused_infer_attention_score(q, k, v, atten_mask=,
-- actual_seq_lengths=, actual_seq_lengths_kv=, block_table=, query_rope=, key_rope=, num_heads=,
-- scale=, input_layout=, num_key_value_heads=, sparse_mode=, block_size=, softmax_lse_flag=).
-- 31 slots (query 0, key 1, value 2, mask 4, seq lens 5/6, block table 14, rope 24/25), shapes
-- from `Runtime operator_input_shapes_raw` when present; Runtime columns override derivations.
local C = require "perfscript.replay.common"
local shape = require "perfscript.shape"

local M = {}
local NSLOTS = 31

local function ints(cell)
  local out = {}
  for v in tostring(cell or ""):gsub(";", ","):gmatch("[^,%s]+") do out[#out + 1] = math.tointeger(tonumber(v)) end
  return #out > 0 and out or nil
end
M.ints = ints

local function rt(row, k)
  local v = C.trim(row["Runtime " .. k] or "")
  return v ~= "" and v or nil
end

-- The query's actual_seq_lengths (D5).
function M.seq_q(q, batch)
  if not batch then return nil end
  if #q == 3 then return C.cumsum(C.distribute(q[1], batch, 1)) end
  C.need(q[1] == batch, "4-D query needs q[0] == batch")
  local out = {}
  for i = 1, batch do out[i] = q[3] end
  return out
end

-- actual_seq_lengths_kv (D8).
function M.seq_kv(key, batch, has_table, valid)
  if not batch then return nil end
  if has_table then
    local bs = #key == 3 and key[2] or key[3]
    local out = {}
    for i = 1, batch do out[i] = valid and math.max(1, valid[i]) * bs or bs end
    if valid then C.need(#valid == batch, "block_table_valid_blocks must have %d values", batch) end
    return out
  end
  if #key == 3 then return C.cumsum(C.distribute(key[1], batch, 1)) end
  C.need(key[1] == batch, "4-D key needs key[0] == batch")
  local out = {}
  for i = 1, batch do out[i] = key[3] end
  return out
end

-- The block table rows (D9, D10): (cursor + j) mod total blocks.
function M.block_table(rows, cols, seq_kv, block_size, total, valid)
  local data, cursor = {}, 0
  for r = 1, rows do
    local need = valid and math.max(1, valid[r]) or math.max(1, -(-seq_kv[r] // block_size))
    C.need(need <= cols, "row %d needs %d blocks, the table has %d", r, need, cols)
    for j = 1, cols do data[#data + 1] = j <= need and (cursor + j - 1) % total or 0 end
    cursor = cursor + need
  end
  return data
end

-- Parsed 31 slots: shapes (false when empty), dtypes, formats.
function M.slots(row)
  local raw = C.trim(row["Runtime operator_input_shapes_raw"] or "")
  local cell = raw ~= "" and raw or row["Input Shapes"] or ""
  local parsed = C.must(shape.parse(cell))
  local shapes = {}
  for i = 1, NSLOTS do shapes[i] = parsed[i] and #parsed[i] > 0 and parsed[i] or false end
  local dtypes, formats = C.split(row["Input Data Types"]), C.split(row["Input Formats"])
  C.need(#dtypes == NSLOTS and #formats == NSLOTS, "dtypes and formats must have exactly 31 slots (got %d, %d)",
    #dtypes, #formats)
  for i = 1, NSLOTS do if formats[i] == "" then formats[i] = "NULL" end end
  return { shapes = shapes, dtypes = dtypes, formats = formats, n = NSLOTS }, raw ~= ""
end

function M.build(row)
  return C.guard(function()
    local sl, from_raw = M.slots(row)
    local q, key = sl.shapes[1], sl.shapes[2]
    C.need(q and key and sl.shapes[3], "query, key and value must be present")
    local has_table = sl.shapes[15] and true or false
    local layout, heads, kv_heads, scale
    if #q == 3 then
      layout = rt(row, "input_layout") or "TND"
      heads = math.tointeger(tonumber(rt(row, "num_heads") or "")) or q[2]
      kv_heads = math.tointeger(tonumber(rt(row, "num_key_value_heads") or "")) or (has_table and 1 or key[2])
      scale = 1 / math.sqrt(q[3])
      C.need(not (#key == 3 and layout == "TND" and kv_heads ~= key[2] and not from_raw),
        "CSV row is not replayable exactly: Runtime operator_input_shapes_raw is missing")
    elseif #q == 4 and sl.shapes[25] then
      local rope = sl.shapes[25]
      layout = rt(row, "input_layout") or "BNSD_NBSD"
      heads = math.tointeger(tonumber(rt(row, "num_heads") or "")) or q[2]
      kv_heads = math.tointeger(tonumber(rt(row, "num_key_value_heads") or "")) or 1
      scale = 1 / math.sqrt(q[#q] + rope[#rope])
    else
      C.need(false, "Unsupported FusedInferAttentionScore shape pattern")
    end
    local null = require("cjson").null
    local mask = sl.shapes[5]
    local sparse = math.tointeger(tonumber(rt(row, "sparse_mode") or "")) or (mask and 3 or 0)
    local atten = null
    if mask and mask[#mask] == 2048 and mask[#mask - 1] == 2048 then
      local d = C.dtype(sl.dtypes[5])
      C.need(d == "DT_BOOL" or d == "DT_INT8" or d == "DT_UINT8", "causal mask dtype %s is not bool/int8/uint8", d)
      atten = C.T(mask, d, "triu")
    elseif mask then
      atten = C.T(mask, C.dtype(sl.dtypes[5]), "zeros")
    elseif sparse == 3 then
      atten = C.T({ 2048, 2048 }, "DT_INT8", "triu")
    end
    local batch = sl.shapes[6] and C.numel(sl.shapes[6]) or nil
    local sq = ints(rt(row, "actual_seq_lengths_values")) or M.seq_q(q, batch)
    local bkv = sl.shapes[7] and C.numel(sl.shapes[7]) or nil
    local valid = ints(rt(row, "block_table_valid_blocks"))
    local skv = ints(rt(row, "actual_seq_lengths_kv_values")) or M.seq_kv(key, bkv, has_table, valid)
    local bs = math.tointeger(tonumber(rt(row, "block_size") or "")) or (has_table and (#key == 3 and key[2] or key[3]) or 0)
    local table_ = null
    if has_table then
      local t = sl.shapes[15]
      C.need(skv and #skv == t[1], "seq_lens_kv must have one value per block-table row")
      table_ = C.T(t, "DT_INT32", "data", { data = M.block_table(t[1], t[2], skv, bs, key[1], valid) })
    end
    local out = C.must(C.slots(row, "out"))
    local t = C.must(C.tensors(sl, { 1, 2, 3 }))
    return { api = "torch_npu.npu_fused_infer_attention_score", args = t, kwargs = {
      atten_mask = atten, actual_seq_lengths = sq or null, actual_seq_lengths_kv = skv or null,
      block_table = table_, query_rope = sl.shapes[25] and C.must(C.tensor(sl, 25)) or null,
      key_rope = sl.shapes[26] and C.must(C.tensor(sl, 26)) or null, num_heads = heads, scale = scale,
      input_layout = layout, num_key_value_heads = kv_heads, sparse_mode = sparse, block_size = bs,
      softmax_lse_flag = out.n >= 2 and out.shapes[2] and true or false } }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
