-- Index: source[index] (aten.index.Tensor) with index = arange(output dim 0), int64 when the
-- fourth dtype is DT_INT64, else int32 (D21).
local C = require "perfscript.replay.common"

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    C.need(sl.n == 4 and #sl.dtypes == 4, "Index expects exactly 4 input shapes and dtypes")
    local o = out.shapes[1]
    C.need(o, "Index needs an output shape")
    local n = o[1]
    C.need(n > 0, "index length must be positive")
    C.need(sl.shapes[1] and sl.shapes[1][1] >= n, "source dim 0 is shorter than the index")
    local d3 = C.dtype(sl.dtypes[4])
    C.need(d3 == "DT_INT32" or d3 == "DT_INT64", "index dtype %s is not DT_INT32/DT_INT64", d3)
    local src = C.must(C.tensor(sl, 1))
    return { index = true, args = { src, C.T({ n }, d3, "arange") } }
  end)
end
