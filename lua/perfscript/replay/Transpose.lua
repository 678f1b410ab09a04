-- Transpose: torch.transpose(x, d0, d1).contiguous(), (d0, d1) inferred from where the input
-- and output dims differ (D3).
local C = require "perfscript.replay.common"

local M = {}

function M.dims(inp, out)
  local diff = {}
  for i = 1, math.min(#inp, #out) do
    if inp[i] ~= out[i] then diff[#diff + 1] = i - 1 end
  end
  if #diff >= 2 then return diff[1], diff[2] end
  if #inp >= 2 then return 0, 1 end
  return 0, 0
end

function M.build(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    C.need(sl.shapes[1] and out.shapes[1], "Transpose needs an input and an output shape")
    local d0, d1 = M.dims(sl.shapes[1], out.shapes[1])
    return { api = "torch.transpose", args = { C.must(C.tensor(sl, 1)), d0, d1 }, post = "contiguous" }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
