-- PadV3: torch.nn.functional.pad(x, pad=P, mode="constant", value=0.0), P from the input and
-- output shapes: walking from the last dim, [0, out - in] per dim (D2).
local C = require "perfscript.replay.common"

local M = {}

function M.pads(inp, out)
  local pads = {}
  local n = math.min(#inp, #out)
  for k = 0, n - 1 do
    pads[#pads + 1] = 0
    pads[#pads + 1] = out[#out - k] - inp[#inp - k]
  end
  return pads
end

local X_OPTS = { default_dtype = "DT_FLOAT" }  -- read only (C.tensor copies its fields)

-- The checks (check-only and build share them): the input and output slots.
local function validate(row)
  local sl = C.must(C.slots(row, "in"))
  local out = C.must(C.slots(row, "out"))
  C.need(sl.shapes[1] and out.shapes[1], "PadV3 needs an input and an output shape")
  C.must(C.tensor_ok(sl, 1, X_OPTS))
  return sl, out
end

-- one body, no closure per row (the grid asks this of every candidate)
local function body(row)
  local sl, out = validate(row)
  local x = C.must(C.tensor(sl, 1, X_OPTS))
  return { api = "torch.nn.functional.pad", args = { x },
           kwargs = { pad = M.pads(sl.shapes[1], out.shapes[1]), mode = "constant", value = 0.0 } }
end

local function ok(row) validate(row); return true end

-- build(row) and the check-only check(row), next to M.pads
return C.builder(body, ok, M)
