-- ReshapeAndCacheNdKernel: torch_npu._npu_reshape_and_cache(key, value, key_cache, value_cache,
-- slot_mapping), slot_mapping the first T entries of a permutation of the cache slots.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx == 5, "expects exactly 5 inputs, got %d", #idx)
    local kc, sm = sl.shapes[idx[3]], sl.shapes[idx[5]]
    C.need(#sm == 1, "slot_mapping must be 1-D")
    C.need(#kc >= 2, "key_cache rank must be >= 2")
    C.need(sm[1] <= kc[1] * kc[2], "%d tokens exceed the %d cache slots", sm[1], kc[1] * kc[2])
    local t = C.must(C.tensors(sl, { idx[1], idx[2], idx[3], idx[4] }))
    t[5] = C.T({ sm[1] }, "DT_INT32", "perm", { high = kc[1] * kc[2] })
    return { api = "torch_npu._npu_reshape_and_cache", args = t }
  end)
end
