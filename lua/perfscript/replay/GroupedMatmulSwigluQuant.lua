-- GroupedMatmulSwigluQuant: torch_npu.npu_grouped_matmul_swiglu_quant(x=, weight=, group_list=,
-- weight_scale=, x_scale=); a 5-D FRACTAL_NZ weight (*b, h, w, bh, bw) has the logical shape
-- (*b, w*bh, h*bw).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    C.need(sl.n >= 5, "expects at least 5 slots")
    for i = 1, 5 do C.need(sl.shapes[i], "slot %d is empty", i) end
    local x = C.must(C.tensor(sl, 1))
    local w
    local ws = sl.shapes[2]
    if C.trim(sl.formats[2]) == "FRACTAL_NZ" and #ws == 5 then
      w = C.T({ ws[1], ws[3] * ws[4], ws[2] * ws[5] }, C.dtype(sl.dtypes[2]), "empty", { nz = true })
    else
      w = C.must(C.tensor(sl, 2))
    end
    local g = sl.shapes[5][1]
    return { api = "torch_npu.npu_grouped_matmul_swiglu_quant", args = {}, kwargs = {
      x = x, weight = w,
      group_list = C.T({ g }, C.dtype(sl.dtypes[5]), "data", { data = C.group_list(x.tensor.shape[1], g) }),
      weight_scale = C.T(sl.shapes[3], C.dtype(sl.dtypes[3]), "ones"),
      x_scale = C.T(sl.shapes[4], C.dtype(sl.dtypes[4]), "ones") } }
  end)
end
