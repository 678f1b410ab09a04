-- AddRmsNormBias: torch.ops._C_ascend.npu_add_rms_norm_bias(x1, x2, gamma, beta|None, 1e-6),
-- falling back to torch_npu.npu_add_rms_norm(x1, x2, gamma, 1e-6) when the kernel is missing.
-- Exactly 4 slots; x1 == x2 2-D; gamma (and beta when present) 1-D of x's last dim.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    C.need(sl.n == 4 and #sl.dtypes == 4 and #sl.formats == 4, "AddRmsNormBias expects exactly 4 slots")
    local x1, x2, g, b = sl.shapes[1], sl.shapes[2], sl.shapes[3], sl.shapes[4]
    C.need(x1 and x2 and g, "x1, x2 and gamma must be present")
    C.need(#x1 == 2 and table.concat(x1, ",") == table.concat(x2, ","), "x1 and x2 must be equal 2-D shapes")
    C.need(#g == 1 and g[1] == x1[2], "gamma must be 1-D of x's last dim")
    local beta = nil
    local d3, f3 = C.dtype(sl.dtypes[4]), C.trim(sl.formats[4])
    if b and d3 ~= "DT_UNDEFINED" and f3 ~= "NULL" then
      C.need(#b == 1 and b[1] == x1[2], "beta must be 1-D of x's last dim")
      beta = C.must(C.tensor(sl, 4))
    end
    local t = C.must(C.tensors(sl, { 1, 2, 3 }))
    return { api = "torch.ops._C_ascend.npu_add_rms_norm_bias", args = { t[1], t[2], t[3], beta or require("cjson").null, 1e-6 },
      fallback = { when = "does not support opType [AddRmsNormBias]", api = "torch_npu.npu_add_rms_norm",
                   args = { t[1], t[2], t[3], 1e-6 } } }
  end)
end
