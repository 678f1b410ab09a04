-- GatherV2: torch.nn.functional.embedding(indices, weight); indices are drawn within the
-- table's rows (the Python original's [0, 8) could run past a small table).
local C = require "perfscript.replay.common"

-- The checks (check-only and build share them): the slots and the two inputs' slot indices.
local function validate(row)
  local sl = C.must(C.slots(row, "in"))
  local idx = C.present(sl)
  C.need(#idx >= 2, "GatherV2 needs weight and indices")
  local weight = C.must(C.tensor_ok(sl, idx[1]))
  C.must(C.tensor_ok(sl, idx[2]))
  return sl, idx, weight[1] or 1
end

local function body(row)
  local sl, idx, rows = validate(row)
  local weight = C.must(C.tensor(sl, idx[1]))
  local ind = C.must(C.tensor(sl, idx[2], { init = "randint", high = math.max(1, rows) }))
  return { api = "torch.nn.functional.embedding", args = { ind, weight } }
end

local function ok(row) validate(row); return true end

-- build(row) and the check-only check(row)
return C.builder(body, ok)
