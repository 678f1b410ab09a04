-- TensorMove: dst.copy_(src). The destination is built separately with the same spec (the
-- Python original cloned the source, which put an extra copy kernel with this signature in
-- the profile).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx == 1, "expects exactly 1 input, got %d", #idx)
    local src = C.must(C.tensor(sl, idx[1]))
    local dst = C.must(C.tensor(sl, idx[1], { init = "zeros" }))
    return { method = "copy_", args = { dst, src } }
  end)
end
