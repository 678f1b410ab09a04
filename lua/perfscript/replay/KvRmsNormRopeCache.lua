-- KvRmsNormRopeCache: torch_npu.npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache,
-- ckv_cache, k_rope_scale=None, c_kv_scale=None, k_rope_offset=None, c_kv_offset=None, v=None,
-- epsilon=1e-5, cache_mode="PA_BNSD", is_output_kv=True). Exactly 12 slots; index = arange(T)
-- with T = slot 5's length, which must fit the cache (slot 6: blocks x block size).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    C.need(sl.n == 12 and #sl.dtypes == 12 and #sl.formats == 12, "KvRmsNormRopeCache expects exactly 12 slots")
    local idx, kc = sl.shapes[5], sl.shapes[6]
    C.need(idx and #idx == 1, "slot 5 (index) must be 1-D")
    C.need(kc and #kc >= 2, "slot 6 (k_cache) must have rank >= 2")
    C.need(idx[1] <= kc[1] * kc[2], "%d tokens exceed the cache", idx[1])
    C.need(#kc == 4, "Unsupported k_cache shape for cache_mode inference")
    local t = C.must(C.tensors(sl, { 1, 2, 3, 4, 6, 7 }))
    local null = require("cjson").null
    return { api = "torch_npu.npu_kv_rmsnorm_rope_cache",
      args = { t[1], t[2], t[3], t[4], C.T({ idx[1] }, "DT_INT64", "arange"), t[5], t[6] },
      kwargs = { k_rope_scale = null, c_kv_scale = null, k_rope_offset = null, c_kv_offset = null, v = null,
                 epsilon = 1e-5, cache_mode = "PA_BNSD", is_output_kv = true } }
  end)
end
