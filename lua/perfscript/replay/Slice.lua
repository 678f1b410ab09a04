-- Slice: torch_npu.npu_slice(x, offsets=zeros(rank of output), sizes=output shape).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    C.need(sl.shapes[1], "Slice needs an input")
    local o = out.shapes[1]
    C.need(o, "Slice needs an output shape")
    local offsets = {}
    for i = 1, #o do offsets[i] = 0 end
    return { api = "torch_npu.npu_slice", args = { C.must(C.tensor(sl, 1)), offsets, o } }
  end)
end
