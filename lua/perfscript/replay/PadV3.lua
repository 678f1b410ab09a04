-- PadV3: torch.nn.functional.pad(x, pad=P, mode="constant", value=0.0), P from the input and
-- output shapes: walking from the last dim, [0, out - in] per dim (D2).
local C = require "perfscript.replay.common"

local M = {}

function M.pads(inp, out)
  local pads = {}
  local n = math.min(#inp, #out)
  for k = 0, n - 1 do
    pads[#pads + 1] = 0
    pads[#pads + 1] = out[#out - k] - inp[#inp - k]
  end
  return pads
end

function M.build(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    C.need(sl.shapes[1] and out.shapes[1], "PadV3 needs an input and an output shape")
    local x = C.must(C.tensor(sl, 1, { default_dtype = "DT_FLOAT" }))
    return { api = "torch.nn.functional.pad", args = { x },
             kwargs = { pad = M.pads(sl.shapes[1], out.shapes[1]), mode = "constant", value = 0.0 } }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
