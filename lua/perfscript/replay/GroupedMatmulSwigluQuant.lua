-- GroupedMatmulSwigluQuant: torch_npu.npu_grouped_matmul_swiglu_quant(x=, weight=, group_list=,
-- weight_scale=, x_scale=). The slots are told apart by role, not position, since the seed
-- rows and the grid lay them out differently (a GroupedMatmul-style layout leaves slot 3
-- empty): x the first 2-D input, the weight the FRACTAL_NZ (or 3-D) one, group_list the 1-D
-- integer one, x_scale the 1-D float one of x's rows, weight_scale the remaining 2-D one. A
-- 5-D FRACTAL_NZ weight (E, n1, k1, k0, n0) has the logical shape (E, k1*k0, n1*n0).
local C = require "perfscript.replay.common"

local INT = { DT_INT32 = true, DT_INT64 = true }

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx == 5, "expects 5 non-empty inputs (x, weight, weight_scale, x_scale, group_list), got %d", #idx)
    local role = {}
    for _, i in ipairs(idx) do
      local d, dt = sl.shapes[i], C.dtype(sl.dtypes[i] or "")
      local nz = C.trim(sl.formats[i] or "") == "FRACTAL_NZ"
      if not role.weight and (nz or #d >= 3) then role.weight = i
      elseif not role.x and #d == 2 then role.x = i
      elseif not role.group_list and #d == 1 and INT[dt] then role.group_list = i
      elseif not role.x_scale and #d == 1 then role.x_scale = i
      elseif not role.weight_scale and #d == 2 then role.weight_scale = i
      else C.need(false, "cannot tell the role of input %d (%s, %s)", i, table.concat(d, ","), dt) end
    end
    for _, r in ipairs { "x", "weight", "weight_scale", "x_scale", "group_list" } do
      C.need(role[r], "no input has the shape of %s", r)
    end
    local x = C.must(C.tensor(sl, role.x))
    local m = x.tensor.shape[1]
    C.need(sl.shapes[role.x_scale][1] == m, "x_scale must have one entry per row of x (%d)", m)
    local w = C.must(C.tensor(sl, role.weight))
    local ws = sl.shapes[role.weight_scale]
    local g = sl.shapes[role.group_list][1]
    return { api = "torch_npu.npu_grouped_matmul_swiglu_quant", args = {}, kwargs = {
      x = x, weight = w,
      group_list = C.T({ g }, C.dtype(sl.dtypes[role.group_list]), "data", { data = C.group_list(m, g) }),
      weight_scale = C.T(ws, C.dtype(sl.dtypes[role.weight_scale]), "ones"),
      x_scale = C.T(sl.shapes[role.x_scale], C.dtype(sl.dtypes[role.x_scale]), "ones") } }
  end)
end
