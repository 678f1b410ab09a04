-- AddRmsNormDynamicQuant: torch_npu.npu_add_rms_norm_dynamic_quant(x1, x2, gamma,
-- smooth_scale1=, smooth_scale2=, epsilon=1e-6, output_mask=): slots x1, x2, gamma and up to
-- two smooth scales (1-D of x's last dim); one quantised output per smooth scale given, one
-- without any.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx >= 3 and #idx <= 5, "expects 3 to 5 inputs, got %d", #idx)
    local x1, x2, g = sl.shapes[idx[1]], sl.shapes[idx[2]], sl.shapes[idx[3]]
    C.need(table.concat(x1, ",") == table.concat(x2, ","), "x1 and x2 must have equal shapes")
    local h = x1[#x1]
    C.need(#g == 1 and g[1] == h, "gamma must be (%d,)", h)
    local t = C.must(C.tensors(sl, idx))
    local kw = { epsilon = 1e-6, output_mask = { true, #idx >= 5 } }
    for j = 4, #idx do
      local s = sl.shapes[idx[j]]
      C.need(#s == 1 and s[1] == h, "smooth scale %d must be (%d,)", j - 3, h)
      kw["smooth_scale" .. (j - 3)] = t[j]
    end
    return { api = "torch_npu.npu_add_rms_norm_dynamic_quant", args = { t[1], t[2], t[3] }, kwargs = kw }
  end)
end
