-- The V1 minimum axis-density standard (grid_generator spec section 7) as Lua data.
-- required: exact anchors; range: the axis span; segments: {lo, hi, gap = max step} or
-- {lo, hi, ratio = max b/a}; ratio alone applies to the whole range. A step (a, b) is judged
-- by the segment that contains b (the standard leaves a pair across a boundary open).
local NK = { 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1728, 1792,
             2048, 2304, 2560, 3072, 3456, 3584, 4096, 4608, 5120, 6144, 6912, 7168, 8192,
             10240, 12288, 13824, 14336, 16384, 18432, 27648, 28672, 55296 }
local nk_rule = {
  range = { 128, 55296 }, required = NK,
  segments = { { 128, 1024, gap = 128 }, { 1025, 4096, gap = 512 }, { 4097, 8192, gap = 1024 },
               { 8193, 18432, ratio = 1.25 }, { 18433, 55296, ratio = 2 } },
}
return {
  axes = {
    M_GRID = { range = { 1, 32768 }, segments = {
      { 1, 8, gap = 1 }, { 9, 16, gap = 2 }, { 17, 32, gap = 4 }, { 33, 64, gap = 8 },
      { 65, 128, gap = 16 }, { 129, 256, gap = 64 }, { 257, 1024, gap = 256 },
      { 1025, 32768, ratio = 2 } } },
    ELEM_TOKENS_GRID = { range = { 1, 32768 }, segments = { { 1, 64, ratio = 4 }, { 65, 32768, ratio = 2 } } },
    MOE_TOKENS_GRID = { range = { 1, 65536 }, ratio = 2 },
    ATTN_SEQ_GRID = { range = { 1, 131072 }, segments = { { 1, 64, ratio = 4 }, { 65, 131072, ratio = 2 } } },
    PAD_TOKENS_GRID = { required = { 1, 2, 3, 4, 5, 6, 7, 9, 15, 31, 63, 127, 129, 255, 257, 511, 513, 1023,
                                     1025, 2047, 2049, 4095, 4097, 8191, 8193 } },
    NK_GRID = nk_rule,
    ELEM_HIDDEN_GRID = nk_rule,
    HEADS_GRID = { range = { 1, 128 }, ratio = 2,
                   required = { 1, 2, 3, 4, 5, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 128 } },
    KV_HEADS_GRID = { range = { 1, 32 }, ratio = 2, required = { 1, 2, 4, 8, 16, 32 } },
    HEAD_DIM_GRID = { range = { 64, 256 }, ratio = 2, required = { 64, 128, 256 } },
    ATTN_BATCH_GRID = { range = { 1, 128 }, ratio = 2, required = { 1, 2, 4, 8, 16, 32, 48, 64, 128 } },
  },
  -- per-pattern axes given inline in perfscript/grids/patterns.lua ({pattern, iterator} -> rule)
  templates = {
    { "transpose_batch_matmul", "K", { range = { 64, 512 }, ratio = 2, required = { 64, 128, 256, 512 } } },
    { "transpose_batch_matmul", "N", { range = { 64, 1024 }, ratio = 2, required = { 64, 128, 256, 512, 1024 } } },
    { "batch_matmul_nd", "batch", { range = { 1, 32 }, ratio = 2, required = { 1, 2, 4, 8, 16, 32 } } },
    { "batch_matmul_nd", "K", { range = { 64, 1024 }, ratio = 2, required = { 64, 128, 256, 512, 1024 } } },
    { "batch_matmul_nd", "N", { range = { 64, 1024 }, ratio = 2, required = { 64, 128, 256, 512, 1024 } } },
    { "as_strided", "batch", { range = { 1, 64 }, ratio = 2, required = { 1, 2, 4, 8, 16, 32, 64 } } },
    { "as_strided", "heads", { range = { 1, 128 }, ratio = 4, required = { 1, 4, 8, 16, 32, 64, 128 } } },
    { "kv_rmsnorm_rope_cache", "d", { required = { 512 } } },
    { "sort_op", "D", { range = { 64, 8192 }, ratio = 2 } },
    { "tile", "D", { range = { 64, 2048 }, ratio = 2 } },
    { "concat", "D", { range = { 64, 4096 }, ratio = 2 } },
    { "argmax", "batch", { range = { 1, 128 }, ratio = 2 } },
    { "argmax", "vocab", { range = { 1024, 151936 }, ratio = 4 } },
    { "apply_topk_top_p", "batch", { range = { 1, 128 }, ratio = 2 } },
    { "apply_topk_top_p", "vocab", { range = { 1024, 151936 }, ratio = 4 } },
    { "gather", "vocab", { range = { 1024, 152064 }, ratio = 4 } },
    { "paged_cache_load", "batch", { range = { 1, 64 }, ratio = 2, required = { 1, 2, 4, 8, 16, 32, 64 } } },
    { "moe_gating_topk", "experts", { required = { 64, 128, 256 } } },
    { "moe_gating_topk", "topk", { required = { 2, 4, 8 } } },
  },
}
