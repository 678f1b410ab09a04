-- Add: torch.add(t1, t2) with two or more inputs (extras ignored), torch.add(t1, 1.0) with one.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx >= 1, "Add needs at least one input")
    if #idx == 1 then return { api = "torch.add", args = { C.must(C.tensor(sl, idx[1])), 1.0 } } end
    return { api = "torch.add", args = C.must(C.tensors(sl, { idx[1], idx[2] })) }
  end)
end
