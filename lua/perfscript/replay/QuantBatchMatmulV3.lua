-- QuantBatchMatmulV3: torch_npu.npu_quant_matmul(x, w, scale, output_dtype=, [bias= | offset= |
-- pertoken_scale=]); int8 x and weight; the optional 4th input's role from its dtype and size
-- (D20); a FRACTAL_NZ weight needs torchair graph mode (graph = "torchair").
local C = require "perfscript.replay.common"

local M = {}
local OUT = { DT_FLOAT = "float32", DT_FLOAT16 = "float16", DT_BF16 = "bfloat16", DT_INT8 = "int8", DT_INT32 = "int32" }

-- The role of the optional 4th input: "bias", "pertoken_scale", "offset", or nil, reason.
function M.role(dtype, numel, x, out)
  local m = #x >= 2 and x[#x - 1] or x[1]
  local n = out[#out]
  if dtype == "DT_INT32" then return "bias" end
  -- a bf16/fp16 bias of N elements (a bf16 or fp16 output's bias; the seed rows' layout)
  if (dtype == "DT_BF16" or dtype == "DT_FLOAT16") and numel == n then return "bias" end
  if dtype == "DT_FLOAT" and numel == m then return "pertoken_scale" end
  if dtype == "DT_FLOAT" and (numel == 1 or numel == n) then return "offset" end
  return nil, ("cannot tell the role of input 4 (%s, %d elements)"):format(dtype, numel)
end

-- The checks (check-only and build share them): the row's slots and what build needs of them.
local function validate(row)
  local sl = C.must(C.slots(row, "in"))
  local out = C.must(C.slots(row, "out"))
  local idx = C.present(sl)
  local o = C.present(out)
  -- C.need called only on a refusal (the grid asks this of every candidate)
  if #o ~= 1 then C.need(false, "expects exactly one output") end
  local ni = #idx
  if ni ~= 3 and ni ~= 4 then C.need(false, "expects 3 or 4 inputs, got %d", ni) end
  if not (C.dtype(sl.dtypes[idx[1]]) == "DT_INT8" and C.dtype(sl.dtypes[idx[2]]) == "DT_INT8") then
    C.need(false, "x and weight must be DT_INT8")
  end
  local od = OUT[C.dtype(out.dtypes[o[1]])]
  if not od then C.need(false, "unsupported output dtype %s", out.dtypes[o[1]] or "") end
  C.must(C.tensor_ok(sl, idx[1])); C.must(C.tensor_ok(sl, idx[2])); C.must(C.tensor_ok(sl, idx[3]))
  local role
  if idx[4] then
    role = C.must(M.role(C.dtype(sl.dtypes[idx[4]]), C.numel(sl.shapes[idx[4]]), sl.shapes[idx[1]], out.shapes[o[1]]))
    C.must(C.tensor_ok(sl, idx[4]))
  end
  return sl, idx, od, role
end

-- one body, no closure per row (the grid asks this of every candidate)
local function body(row)
  local sl, idx, od, role = validate(row)
  local t = C.must(C.tensors(sl, { idx[1], idx[2], idx[3] }))
  local kw = { output_dtype = { torch_attr = od } }
  if role then kw[role] = C.must(C.tensor(sl, idx[4])) end
  local case = { api = "torch_npu.npu_quant_matmul", args = t, kwargs = kw }
  if C.trim(sl.formats[idx[2]]) == "FRACTAL_NZ" then case.graph = "torchair" end
  return case
end

local function ok(row) validate(row); return true end

function M.build(row) return C.guard(body, row) end
function M.check(row) return C.guard(ok, row) end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
