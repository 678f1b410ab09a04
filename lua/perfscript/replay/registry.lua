-- The one home of "can this row be replayed" (docs/rules.md, Replay): kernel type (a CSV
-- stem, with the AiCore-suffixed and numbered variants the profiles and grids use) -> builder,
-- and check(kernel, row) -> case | nil, reason, kind. Microbench planning and the shape grid
-- (--replayable-only) both ask here.
--
-- Lookup order: perfscript/replay/<kernel>.lua (the user's --lua-dir first, so a user builder
-- overrides), the variant's base kernel (ALIAS), the table-driven builders (generic.lua,
-- shaped.lua). Kernels with no builder say why in NO_BUILDER.
local M = {}

-- The per-kernel builder files (perfscript/replay/<name>.lua).
M.FILES = {
  "Add", "AddRmsNormBias", "AddRmsNormDynamicQuant", "ArgMaxV2", "AscendQuantV2", "BatchMatMulV2",
  "DispatchFFNCombine", "DynamicQuant", "FusedInferAttentionScore", "GatherV2", "GroupedMatmul",
  "GroupedMatmulSwigluQuant", "Index", "InterleaveRope", "KvRmsNormRopeCache", "LightningIndexer",
  "MaskedFill", "MatMulCommon", "MatMulV2", "MatMulV3", "MoeGatingTopK", "MoeTokenPermute",
  "MoeTokenUnpermute", "PadV3", "PagedCacheLoadNdKernel", "QuantBatchMatmulV3",
  "RINGMLAPrefillBF16Kernel", "ReshapeAndCacheNdKernel", "RmsNorm", "ScatterNdUpdate", "Slice",
  "SoftmaxV2", "Sort", "SparseFlashAttention", "SwiGlu", "TensorMove", "TransposeBatchMatMul",
  "Transpose", "split_qkv_rmsnorm_rope_kernel",
}

-- Kernel variants replayed by another kernel's builder: the same torch call dispatches to
-- either kernel, by shape (CANN 8.5's AiCore variants; op_mapping.yaml's alternates).
M.ALIAS = {
  AddAiCore = "Add", SubAiCore = "Sub", MulAiCore = "Mul", CastAiCore = "Cast", LessAiCore = "Less",
  LogicalAndAiCore = "LogicalAnd", LogicalNotAiCore = "LogicalNot", MaskedFillAiCore = "MaskedFill",
  SliceAiCore = "Slice", TransposeAiCore = "Transpose", PadV3AiCore = "PadV3",
  AsStridedAiCore = "AsStrided", AscendQuantV2Aicore = "AscendQuantV2", TensorMoveAiCore = "TensorMove",
  AddRmsNormDynamicQuantAiCore = "AddRmsNormDynamicQuant",
  GatherV2AiCore = "GatherV2", GatherV3 = "GatherV2",
  MatMul = "MatMulV2", BatchMatMulNd = "BatchMatMulV2", BatchMatMul = "BatchMatMulV2",
  reshape_and_cache_200000000 = "ReshapeAndCacheNdKernel",
  split_qkv_rmsnorm_rope_kernel_0 = "split_qkv_rmsnorm_rope_kernel",
}

-- Kernels the database and grids hold that no builder replays, with the reason.
M.NO_BUILDER = {
  LinearIndex = "an internal kernel of aclnnIndex/IndexPut with no torch entry point of its own",
  _triton_rope = "a vllm-ascend Triton kernel with no registered torch op",
  muls_add_kernel = "a vllm-ascend Triton kernel with no registered torch op",
  AttentionUpdate = "the recorded slots (4 equal 4-D tensors) do not say npu_attention_update's lse and output lists",
  ApplyTopKTopPCustom = "a vllm-ascend custom sampler whose torch op takes arguments the row does not record",
  ApplyTopKTopPWithSorted = "a vllm-ascend custom sampler whose torch op takes arguments the row does not record",
}

local generic = require "perfscript.replay.generic"
local shaped = require "perfscript.replay.shaped"
local IS_FILE = {}
for _, k in ipairs(M.FILES) do IS_FILE[k] = true end

-- Every kernel type with a builder, sorted.
M.KERNELS = {}
do
  local seen = {}
  local function add(k) if not seen[k] then seen[k] = true; M.KERNELS[#M.KERNELS + 1] = k end end
  for _, k in ipairs(M.FILES) do add(k) end
  for k in pairs(generic.TABLE) do add(k) end
  for k, v in pairs(shaped) do if type(v) == "function" then add(k) end end
  for k in pairs(M.ALIAS) do add(k) end
  table.sort(M.KERNELS)
end
M.IS_KERNEL = {}
for _, k in ipairs(M.KERNELS) do M.IS_KERNEL[k] = true end

local cache = {}

-- The builder of kernel (a function(row, ctx) -> case | nil, reason), or nil, reason.
-- A user's perfscript/replay/<kernel>.lua (--lua-dir) is tried for kernels not listed here.
function M.builder(kernel)
  local c = cache[kernel]
  if c then return c[1], c[2] end
  local b, why
  local name = M.ALIAS[kernel] or kernel
  if IS_FILE[name] then
    b = require("perfscript.replay." .. name)
  elseif generic.TABLE[name] then
    b = generic.builder(generic.TABLE[name])
  elseif type(shaped[name]) == "function" then
    b = shaped[name]
  elseif M.NO_BUILDER[kernel] then
    why = M.NO_BUILDER[kernel]
  elseif kernel:match("^[%a_][%w_]*$") and kernel:match("^%u") then
    -- a user's own builder file (names of helper modules are lower case)
    local ok, mod = pcall(require, "perfscript.replay." .. kernel)
    if ok and (type(mod) == "function" or (type(mod) == "table" and getmetatable(mod) and getmetatable(mod).__call)) then
      b = mod
    end
  end
  if not b then why = why or "no replay builder for this kernel type" end
  cache[kernel] = { b, why }
  return b, why
end

-- The other kernel types of kernel's family (the same base kernel: Add, AddAiCore): a replay
-- of one may be profiled as another, by CANN's choice for the shape.
function M.family(kernel)
  local base, out = M.ALIAS[kernel] or kernel, {}
  if base ~= kernel then out[1] = base end
  for k, b in pairs(M.ALIAS) do if b == base and k ~= kernel then out[#out + 1] = k end end
  table.sort(out)
  return out
end

-- Whether kernel has a builder.
function M.has(kernel) return (M.builder(kernel)) ~= nil end

-- check(kernel, row, ctx) -> case | nil, reason, kind ("no builder" | "rejected").
-- row: the database row keyed by column name; ctx: {ep_size = n} (a default where the row
-- records none).
function M.check(kernel, row, ctx)
  local b, why = M.builder(kernel)
  if not b then return nil, why, "no builder" end
  local ok, case, reason = pcall(b, row, ctx or {})
  if not ok then return nil, "builder error: " .. tostring(case), "rejected" end
  if not case then return nil, reason or "not replayable", "rejected" end
  return case
end

-- verdict(kernel, row, ctx) -> true | nil, reason, kind: check()'s verdict, the same reasons,
-- without building the case where the builder has a check-only entry (a table builder's
-- .check(row, ctx) -> true | nil, reason, which its build runs first): the shape grid asks this
-- of every candidate.
function M.verdict(kernel, row, ctx)
  local b, why = M.builder(kernel)
  if not b then return nil, why, "no builder" end
  local only = type(b) == "table" and rawget(b, "check")
  if not only then
    local case, reason, kind = M.check(kernel, row, ctx)
    if case then return true end
    return nil, reason, kind
  end
  local ok, good, reason = pcall(only, row, ctx or {})
  if not ok then return nil, "builder error: " .. tostring(good), "rejected" end
  if not good then return nil, reason or "not replayable", "rejected" end
  return true
end

return M
