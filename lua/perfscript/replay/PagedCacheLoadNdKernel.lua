-- PagedCacheLoadNdKernel: torch_npu.atb.npu_paged_cache_load(key_cache, value_cache,
-- block_table, context_lens, seq_starts=, key=, value=). Slots: 1 key_cache (blocks,
-- block_size, heads, dk), 2 value_cache, 3 block_table (batch, max_blocks), 4 context_lens
-- (batch), 5 key (tokens, heads, dk), 6 value, 7 seq_starts (batch). The tokens are spread
-- over the batch; block ids are drawn among the cache's blocks.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    C.need(sl.n == 7, "expects 7 input slots, got %d", sl.n)
    for i = 1, 6 do C.need(sl.shapes[i], "input slot %d is empty", i) end
    local kc, bt, key = sl.shapes[1], sl.shapes[3], sl.shapes[5]
    C.need(#kc == 4 and #bt == 2 and #key == 3, "key_cache must be 4-D, block_table 2-D, key 3-D")
    local batch, tokens = bt[1], key[1]
    C.need(sl.shapes[4][1] == batch, "context_lens must have one entry per block_table row")
    C.need(tokens <= batch * bt[2] * kc[2], "%d tokens exceed the %d blocks of %d slots per sequence",
      tokens, bt[2], kc[2])
    local lens = C.distribute(tokens, batch, 0)
    local t = C.must(C.tensors(sl, { 1, 2 }))
    local null = require("cjson").null
    return { api = "torch_npu.atb.npu_paged_cache_load", args = { t[1], t[2],
        C.must(C.tensor(sl, 3, { init = "randint", high = kc[1] })),
        C.T({ batch }, "DT_INT32", "data", { data = lens }) },
      kwargs = { seq_starts = sl.shapes[7] and C.T({ batch }, "DT_INT32", "zeros") or null,
                 key = C.must(C.tensor(sl, 5)), value = C.must(C.tensor(sl, 6)) } }
  end)
end
