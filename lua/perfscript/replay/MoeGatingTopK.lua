-- MoeGatingTopK: torch_npu.npu_moe_gating_top_k(x, k, bias=, k_group=, group_count=,
-- group_select_mode=1, renorm=0, norm_type=1) with k the output's last dim. The grouping is
-- not recorded: group_count 8 and k_group 4 (DeepSeek-V3's) where the expert count allows
-- them (k <= E / group_count * k_group, and each group holds more than the 1 expert that
-- group_select_mode 1's top-2 sum needs), else one group.
local C = require "perfscript.replay.common"

local M = {}

function M.groups(E, k)
  if E % 8 == 0 and E // 8 > 1 and k <= E // 8 * 4 then return 8, 4 end
  return 1, 1
end

function M.build(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    local x = sl.shapes[1]
    C.need(x and #x == 2, "x must be 2-D (tokens, experts)")
    local y = out.shapes[1]
    C.need(y and #y == 2 and y[1] == x[1], "output 1 must be (tokens, k)")
    local E, k = x[2], y[2]
    C.need(k >= 1 and k <= E, "k = %d is outside [1, %d]", k, E)
    local gc, kg = M.groups(E, k)
    local kw = { k_group = kg, group_count = gc, group_select_mode = 1, renorm = 0, norm_type = 1 }
    if sl.shapes[2] and C.dtype(sl.dtypes[2] or "") ~= "DT_UNDEFINED" then
      C.need(#sl.shapes[2] == 1 and sl.shapes[2][1] == E, "bias must be (%d,)", E)
      kw.bias = C.must(C.tensor(sl, 2))
    end
    return { api = "torch_npu.npu_moe_gating_top_k", args = { C.must(C.tensor(sl, 1)), k }, kwargs = kw }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
