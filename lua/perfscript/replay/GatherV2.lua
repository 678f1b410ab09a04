-- GatherV2: torch.nn.functional.embedding(indices, weight); indices are drawn within the
-- table's rows (the Python original's [0, 8) could run past a small table).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx >= 2, "GatherV2 needs weight and indices")
    local weight = C.must(C.tensor(sl, idx[1]))
    local rows = weight.tensor.shape[1] or 1
    local ind = C.must(C.tensor(sl, idx[2], { init = "randint", high = math.max(1, rows) }))
    return { api = "torch.nn.functional.embedding", args = { ind, weight } }
  end)
end
