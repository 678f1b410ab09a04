-- The common matmul case of MatMulV2 / MatMulV3 / MatMulCommon (and 2-D BatchMatMulV2):
-- A = slot 1, B built with its recorded shape then transposed (the database records B as
-- [n,k]); torch.mm(A, B^T). exact: the number of inputs must be exactly 2 (else at least 2).
local C = require "perfscript.replay.common"

local B_OPTS = { transpose = true }  -- read only (C.tensor copies its fields)

-- one body for every variant (no closure per row: the grid asks this of every candidate)
local function body(row, exact, api)
  local sl = C.must(C.slots(row, "in"))
  local idx = C.present(sl)
  if exact then C.need(#idx == 2, "expects exactly 2 inputs, got %d", #idx)
  else C.need(#idx >= 2, "expects at least 2 inputs, got %d", #idx) end
  local a = C.must(C.tensor(sl, idx[1]))
  local b = C.must(C.tensor(sl, idx[2], B_OPTS))
  local ka, kb = a.tensor.shape[#a.tensor.shape], b.tensor.shape[#b.tensor.shape]
  C.need(#a.tensor.shape == 2 and #b.tensor.shape == 2, "matmul inputs must be 2-D")
  C.need(ka == kb, "A [m,k] and recorded B [n,k] disagree on k (%d vs %d)", ka, kb)
  return { api = api or "torch.mm", args = { a, b } }
end

-- one builder per (exact, api): MatMulV2 and MatMulV3 share theirs, so the grid's verdict
-- memo (keyed by builder) asks it once for the rows of both
local made = {}
return function(exact, api)
  local key = tostring(exact) .. "\0" .. tostring(api)
  made[key] = made[key] or function(row)
    return C.guard(body, row, exact, api)
  end
  return made[key]
end
