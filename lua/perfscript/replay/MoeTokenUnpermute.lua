-- MoeTokenUnpermute: torch_npu.npu_moe_token_unpermute(*tensors) over every non-empty slot whose
-- dtype is not DT_UNDEFINED (missing dtype -> DT_BF16, missing format -> ND); the sorted indices
-- are a permutation (the Python original drew them from [0, 8)).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local args = {}
    for i = 1, sl.n do
      local raw = C.trim(sl.dtypes[i] or "")
      if sl.shapes[i] and raw ~= "DT_UNDEFINED" and raw ~= "UNDEFINED" then
        local opts = { default_dtype = "DT_BF16" }
        if #args == 1 then opts.init = "perm"; opts.high = C.numel(sl.shapes[i]) end
        args[#args + 1] = C.must(C.tensor(sl, i, opts))
      end
    end
    C.need(#args >= 2, "MoeTokenUnpermute needs at least 2 tensors")
    return { api = "torch_npu.npu_moe_token_unpermute", args = args }
  end)
end
