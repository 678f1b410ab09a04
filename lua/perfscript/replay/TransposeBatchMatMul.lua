-- TransposeBatchMatMul: torch_npu.npu_transpose_batchmatmul(x1, x2, bias=None, scale=None,
-- perm_x1=, perm_x2=[0,1,2], perm_y=[1,0,2], batch_split_factor=1): x1 (B,M,K) with perm_x1
-- [0,1,2] or (M,B,K) with [1,0,2] (the real databases' layout),
-- x2 (B,K,N), K and N multiples of 128 for bf16/fp16 inputs (aclnnTransposeBatchMatMul; float32
-- has no alignment rule), one output (M,B,N).
local C = require "perfscript.replay.common"

local PERM_BMK, PERM_MBK = { 0, 1, 2 }, { 1, 0, 2 }  -- read only (each case gets a copy)

-- The checks (check-only and build share them): the slots, the inputs' slot indices and perm_x1.
local function validate(row)
  local sl = C.must(C.slots(row, "in"))
  local out = C.must(C.slots(row, "out"))
  local idx = C.present(sl)
  C.need(#idx == 2, "expects exactly 2 inputs, got %d", #idx)
  local a, b = sl.shapes[idx[1]], sl.shapes[idx[2]]
  C.need(#a == 3 and #b == 3, "both inputs must be 3-D")
  C.need(C.trim(row["Input Formats"] or ""):gsub('"', "") == "ND;ND", "formats must be ND;ND")
  local o = C.present(out)
  C.need(#o == 1, "expects exactly one output")
  local y = out.shapes[o[1]]
  C.need(#y == 3, "the output must be 3-D")
  -- x1 as (B,M,K) (perm_x1 [0,1,2]) or as (M,B,K) (perm_x1 [1,0,2]); x2 (B,K,N); y (M,B,N)
  local perm
  if a[1] == b[1] and a[3] == b[2] and y[1] == a[2] and y[2] == a[1] and y[3] == b[3] then
    perm = PERM_BMK
  elseif a[2] == b[1] and a[3] == b[2] and y[1] == a[1] and y[2] == a[2] and y[3] == b[3] then
    perm = PERM_MBK
  else
    C.need(false, "x1 %s, x2 %s and the output %s are neither (B,M,K)x(B,K,N)->(M,B,N) nor (M,B,K)x(B,K,N)->(M,B,N)",
      table.concat(a, ","), table.concat(b, ","), table.concat(y, ","))
  end
  local dt = C.dtype(sl.dtypes[idx[1]] or "")
  C.need(dt == "DT_FLOAT" or (a[3] % 128 == 0 and b[3] % 128 == 0),
    "K and N must be multiples of 128 for %s inputs (the kernel's constraint; float32 has none)", dt)
  C.must(C.tensors_ok(sl, idx))
  return sl, idx, perm
end

-- one body, no closure per row (the grid asks this of every candidate)
local function body(row)
  local sl, idx, perm = validate(row)
  local null = require("cjson").null
  return { api = "torch_npu.npu_transpose_batchmatmul", args = C.must(C.tensors(sl, idx)),
    kwargs = { bias = null, scale = null, perm_x1 = { perm[1], perm[2], perm[3] }, perm_x2 = { 0, 1, 2 },
               perm_y = { 1, 0, 2 }, batch_split_factor = 1 } }
end

local function ok(row) validate(row); return true end

-- build(row) and the check-only check(row)
return C.builder(body, ok)
