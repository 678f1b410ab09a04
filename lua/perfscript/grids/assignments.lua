-- Kernel type (CSV file stem) -> pattern name (docs/rules.md, Shape grids: routing): 85 entries.
-- "skip" names no pattern, so the kernel gets no generator.
local A = {}
local function assign(pattern, kernels)
  for _, k in ipairs(kernels) do A[k] = pattern end
end

-- GEMM (MatMulCommon is cross-filled from MatMulV2/V3 through profile aliases)
assign("matmul", { "MatMulV2", "MatMulV3", "MatMul", "BatchMatMulV2" })
assign("skip", { "MatMulCommon" })
assign("quant_matmul", { "QuantBatchMatmulV3" })
assign("transpose_batch_matmul", { "TransposeBatchMatMul" })
assign("batch_matmul_nd", { "BatchMatMulNd" })
-- elementwise
assign("elementwise_binary", { "Add", "AddAiCore", "Mul", "MulAiCore", "Sub", "SubAiCore",
  "Equal", "FloorDiv", "FloorMod", "GreaterEqual", "Less", "LessAiCore", "LogicalAnd",
  "LogicalAndAiCore", "MaskedFill", "MaskedFillAiCore", "NotEqual", "RealDiv", "muls_add_kernel" })
assign("elementwise_unary", { "Cast", "CastAiCore", "ZerosLike", "Fill", "Log", "LogicalNot",
  "LogicalNotAiCore", "Muls", "Neg", "SoftmaxV2", "Pack", "Cumsum", "LinearIndex", "ReduceSum" })
assign("tensor_move", { "TensorMove" })
-- norms
assign("rmsnorm", { "RmsNorm" })
assign("add_rmsnorm", { "AddRmsNorm", "InplaceAddRmsNorm" })
assign("add_rmsnorm_bias", { "AddRmsNormBias" })
assign("add_rmsnorm_dynamic_quant", { "AddRmsNormDynamicQuant", "AddRmsNormDynamicQuantAiCore" })
-- quantize, activation
assign("quant", { "AscendQuantV2", "AscendQuantV2Aicore" })
assign("dynamic_quant", { "DynamicQuant" })
assign("swiglu", { "SwiGlu" })
-- RoPE
assign("interleave_rope", { "InterleaveRope" })
assign("triton_rope", { "_triton_rope" })
assign("split_qkv_rmsnorm_rope", { "split_qkv_rmsnorm_rope_kernel", "split_qkv_rmsnorm_rope_kernel_0" })
assign("kv_rmsnorm_rope_cache", { "KvRmsNormRopeCache" })
-- attention
assign("fused_attention", { "FusedInferAttentionScore" })
assign("attention_update", { "AttentionUpdate" })
-- gather / index
assign("gather", { "GatherV2", "GatherV2AiCore" })
assign("gather_v3", { "GatherV3" })
assign("index", { "Index" })
-- shape manipulation
assign("slice_op", { "Slice", "SliceAiCore" })
assign("transpose_op", { "Transpose", "TransposeAiCore" })
assign("as_strided", { "AsStrided", "AsStridedAiCore" })
assign("broadcast_to", { "BroadcastTo" })
assign("concat", { "ConcatD" })
assign("tile", { "Tile" })
assign("pad", { "PadV3", "PadV3AiCore" })
assign("sort_op", { "Sort" })
-- sampling
assign("argmax", { "ArgMaxV2" })
assign("apply_topk_top_p", { "ApplyTopKTopPCustom", "ApplyTopKTopPWithSorted" })
-- KV cache
assign("reshape_and_cache", { "ReshapeAndCacheNdKernel", "reshape_and_cache_200000000" })
assign("paged_cache_load", { "PagedCacheLoadNdKernel" })
-- MoE
assign("grouped_matmul", { "GroupedMatmul" })
-- its slots (x, weight, weight_scale, x_scale, group_list) are not the GroupedMatmul layout
assign("skip", { "GroupedMatmulSwigluQuant" })
assign("dispatch_ffn_combine", { "DispatchFFNCombine" })
assign("moe_gating_topk", { "MoeGatingTopK" })

return A
