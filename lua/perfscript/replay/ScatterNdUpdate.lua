-- ScatterNdUpdate: torch_npu.npu_scatter_nd_update(data, indices, updates); indices (N,1) the
-- first N entries of a permutation of data's rows.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx == 3, "expects exactly 3 inputs, got %d", #idx)
    local data, ind = sl.shapes[idx[1]], sl.shapes[idx[2]]
    C.need(#ind == 2 and ind[2] == 1, "indices must be (N,1)")
    C.need(ind[1] <= data[1], "N=%d exceeds data rows %d", ind[1], data[1])
    return { api = "torch_npu.npu_scatter_nd_update", args = { C.must(C.tensor(sl, idx[1])),
      C.T({ ind[1], 1 }, "DT_INT32", "perm", { high = data[1] }), C.must(C.tensor(sl, idx[3])) } }
  end)
end
