-- LightningIndexer: torch_npu.npu_lightning_indexer(query, key, weights, actual_seq_lengths_query,
-- actual_seq_lengths_key, block_table, layout_query="TND", layout_key="PA_BSND", sparse_count,
-- sparse_mode=3)[0]. Six inputs: q (T,N,D), key (blocks, block, 1, D), weights, then slots
-- whose shapes give the batch (slot 4 dim 0) and the blocks per sequence (slot 6 last dim) (D15).
local C = require "perfscript.replay.common"

local M = {}

function M.lengths(T, batch, blocks, block_size)
  return C.cumsum(C.distribute(T, batch, 1)), C.distribute(blocks * block_size, batch, 0)
end

function M.build(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    local idx = C.present(sl)
    C.need(#idx == 6, "expects exactly 6 inputs, got %d", #idx)
    local q, k = sl.shapes[idx[1]], sl.shapes[idx[2]]
    local batch, maxb = sl.shapes[idx[4]][1], sl.shapes[idx[6]][#sl.shapes[idx[6]]]
    local ql, kl = M.lengths(q[1], batch, k[1], k[2])
    local table_ = {}
    for i = 0, batch * maxb - 1 do table_[#table_ + 1] = i % k[1] end
    local o = out.shapes[1]
    local t = C.must(C.tensors(sl, { idx[1], idx[2], idx[3] }))
    return { api = "torch_npu.npu_lightning_indexer", args = {}, result_index = 0, kwargs = {
      query = t[1], key = t[2], weights = t[3],
      actual_seq_lengths_query = C.T({ batch }, "DT_INT32", "data", { data = ql }),
      actual_seq_lengths_key = C.T({ batch }, "DT_INT32", "data", { data = kl }),
      block_table = C.T({ batch, maxb }, "DT_INT32", "data", { data = table_ }),
      layout_query = "TND", layout_key = "PA_BSND", sparse_count = o and o[#o] or 2048, sparse_mode = 3 } }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
