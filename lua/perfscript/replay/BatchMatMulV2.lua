-- BatchMatMulV2: 2-D inputs take the common matmul case; 3-D A (batch,m,k) with O (batch,m,n)
-- uses B as recorded when it is (batch,k,n), else its last-two transpose when (batch,n,k).
local C = require "perfscript.replay.common"
local mm = require("perfscript.replay.matmul")(true, "torch.matmul")

local T2 = { transpose_last2 = true }  -- read only (C.tensor copies its fields)

-- The checks of the batched path (check-only and build share them): the slots, A's and B's
-- slot indices and B's options.
local function validate3(sl, idx, row)
  -- C.need called only on a refusal (the grid asks this of every candidate)
  if #idx < 2 then C.need(false, "expects at least 2 inputs") end
  local out = C.must(C.slots(row, "out"))
  local o = out.shapes[1]
  local A, B = sl.shapes[idx[1]], sl.shapes[idx[2]]
  if not (o and #o == 3 and #A == 3 and #B == 3) then C.need(false, "the batched path needs 3-D A, B and output") end
  if not (A[1] == o[1] and A[2] == o[2]) then C.need(false, "batch/m of A and the output disagree") end
  local k, n = A[3], o[3]
  local bopts
  if B[1] == A[1] and B[2] == k and B[3] == n then
    bopts = nil
  elseif B[1] == A[1] and B[2] == n and B[3] == k then
    bopts = T2
  else
    C.need(false, "second input %s is not compatible with A %s", table.concat(B, ","), table.concat(A, ","))
  end
  C.must(C.tensor_ok(sl, idx[2], bopts))
  C.must(C.tensor_ok(sl, idx[1]))
  return bopts
end

-- one body, no closure per row (the grid asks this of every candidate)
local function body(row)
  local sl = C.must(C.slots(row, "in"))
  local idx = C.present(sl)
  C.need(#idx >= 1, "no input shapes")
  if #sl.shapes[idx[1]] == 2 then return C.must(mm(row)) end
  local bopts = validate3(sl, idx, row)
  local b = C.must(C.tensor(sl, idx[2], bopts))
  return { api = "torch.matmul", args = { C.must(C.tensor(sl, idx[1])), b } }
end

local function ok(row)
  local sl = C.must(C.slots(row, "in"))
  local idx = C.present(sl)
  if #idx < 1 then C.need(false, "no input shapes") end  -- C.need only on a refusal
  if #sl.shapes[idx[1]] == 2 then mm.check_slots(sl); return true end  -- mm.check's checks, parsed once
  validate3(sl, idx, row)
  return true
end

-- build(row) and the check-only check(row)
return C.builder(body, ok)
