-- MaskedFill: in-place t.masked_fill_(mask, 0); slot 2 is always built as bool.
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx == 2, "expects exactly 2 inputs, got %d", #idx)
    local t = C.must(C.tensor(sl, idx[1]))
    local mask = C.must(C.tensor(sl, idx[2], { dtype = "DT_BOOL" }))
    return { method = "masked_fill_", args = { t, mask, 0 } }
  end)
end
