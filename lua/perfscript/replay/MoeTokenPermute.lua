-- MoeTokenPermute: torch_npu.npu_moe_token_permute(tokens, indices); the indices are drawn in
-- range of the token count.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx >= 2, "MoeTokenPermute needs at least 2 inputs")
    local tokens = C.must(C.tensor(sl, idx[1]))
    local ind = C.must(C.tensor(sl, idx[2], { init = "randint", high = math.max(1, tokens.tensor.shape[1] or 1) }))
    return { api = "torch_npu.npu_moe_token_permute", args = { tokens, ind } }
  end)
end
