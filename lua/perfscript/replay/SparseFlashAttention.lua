-- SparseFlashAttention: torch.ops._C_ascend.npu_sparse_flash_attention(query, key, value,
-- sparse_indices, block_table, actual_seq_lengths_query, actual_seq_lengths_kv, query_rope,
-- key_rope, scale_value, sparse_block_size=1, layout_query="TND", layout_kv="PA_BSND",
-- sparse_mode=3). Nine inputs: q (T,N,R), key/value caches, topk (T,1,topk), block tables
-- (batch, max_blocks), two ignored, q_pe, k_pe cache (D16).
local C = require "perfscript.replay.common"

local M = {}

function M.topk(topk, max_seq)
  local e = math.min(topk, max_seq)
  local out = {}
  for i = 1, topk do out[i] = math.min(i - 1, e - 1) end
  return out
end

function M.build(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx == 9, "expects exactly 9 inputs, got %d", #idx)
    local S = function(k) return sl.shapes[idx[k]] end
    local q, kc, tk, bt, kpe = S(1), S(2), S(4), S(5), S(9)
    local R, rope, block = kc[#kc], kpe[#kpe], kc[2]
    local batch, maxb = bt[1], bt[2]
    local max_seq = maxb * block
    local tab = {}
    for i = 0, batch * maxb - 1 do tab[#tab + 1] = i % kc[1] end
    local topk = tk[#tk]
    local ids = {}
    local one = M.topk(topk, max_seq)
    for _ = 1, q[1] do for _, v in ipairs(one) do ids[#ids + 1] = v end end
    local kv = {}
    for i = 1, batch do kv[i] = max_seq end
    local t = C.must(C.tensors(sl, { idx[1], idx[2], idx[3], idx[8], idx[9] }))
    return { api = "torch.ops._C_ascend.npu_sparse_flash_attention", args = {}, kwargs = {
      query = t[1], key = t[2], value = t[3],
      sparse_indices = C.T({ q[1], 1, topk }, "DT_INT32", "data", { data = ids }),
      block_table = C.T({ batch, maxb }, "DT_INT32", "data", { data = tab }),
      actual_seq_lengths_query = C.T({ batch }, "DT_INT32", "data", { data = C.cumsum(C.distribute(q[1], batch, 1)) }),
      actual_seq_lengths_kv = C.T({ batch }, "DT_INT32", "data", { data = kv }),
      query_rope = t[4], key_rope = t[5], scale_value = 1 / math.sqrt(R + rope), sparse_block_size = 1,
      layout_query = "TND", layout_kv = "PA_BSND", sparse_mode = 3 } }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
