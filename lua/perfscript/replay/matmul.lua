-- The common matmul case of MatMulV2 / MatMulV3 / MatMulCommon (and 2-D BatchMatMulV2):
-- A = slot 1, B built with its recorded shape then transposed (the database records B as
-- [n,k]); torch.mm(A, B^T). exact: the number of inputs must be exactly 2 (else at least 2).
local C = require "perfscript.replay.common"

local B_OPTS = { transpose = true }  -- read only (C.tensor copies its fields)

-- The checks (check-only and build share them) on the row's input slots sl: sl and A's and
-- B's slot indices.
local function validate_slots(sl, exact)
  -- C.need called only on a refusal (the grid asks this of every candidate: no vararg call
  -- per passed check)
  local idx = C.present(sl)
  local ni = #idx
  if exact then if ni ~= 2 then C.need(false, "expects exactly 2 inputs, got %d", ni) end
  elseif ni < 2 then C.need(false, "expects at least 2 inputs, got %d", ni) end
  local a = C.must(C.tensor_ok(sl, idx[1]))
  local b = C.must(C.tensor_ok(sl, idx[2], B_OPTS))
  local ka, kb = a[#a], b[#b]
  if not (#a == 2 and #b == 2) then C.need(false, "matmul inputs must be 2-D") end
  if ka ~= kb then C.need(false, "A [m,k] and recorded B [n,k] disagree on k (%d vs %d)", ka, kb) end
  return sl, idx
end

local function validate(row, exact) return validate_slots(C.must(C.slots(row, "in")), exact) end

-- one body for every variant (no closure per row: the grid asks this of every candidate)
local function body(row, exact, api)
  local sl, idx = validate(row, exact)
  return { api = api or "torch.mm", args = { C.must(C.tensor(sl, idx[1])), C.must(C.tensor(sl, idx[2], B_OPTS)) } }
end

local function ok(row, exact) validate(row, exact); return true end

-- one builder per (exact, api): MatMulV2 and MatMulV3 share theirs, so the grid's verdict
-- memo (keyed by builder) asks it once for the rows of both. A callable table: build(row)
-- and the check-only check(row) (perfscript.replay.registry.verdict).
local made = {}
return function(exact, api)
  local key = tostring(exact) .. "\0" .. tostring(api)
  if not made[key] then
    local B = {}
    function B.build(row) return C.guard(body, row, exact, api) end
    function B.check(row) return C.guard(ok, row, exact) end
    -- check's checks on input slots the caller parsed (BatchMatMulV2's 2-D path), unguarded:
    -- a refusal raises C.need's error
    function B.check_slots(sl) validate_slots(sl, exact) end
    made[key] = setmetatable(B, { __call = function(_, row) return B.build(row) end })
  end
  return made[key]
end
