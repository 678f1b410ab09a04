-- Named value grids for pattern iterators (docs/rules.md, Shape grids: patterns).
-- A pattern iterator names one of these, or lists its values inline.
local NK = { 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1728, 1792,
             2048, 2304, 2560, 3072, 3456, 3584, 4096, 4608, 5120, 6144, 6912, 7168, 8192,
             10240, 12288, 13824, 14336, 16384, 18432, 27648, 28672, 55296 }

local function copy(t) local c = {}; for i, v in ipairs(t) do c[i] = v end; return c end

return {
  -- hidden and intermediate sizes across TP 1..32 of DSv3, Qwen3-32B, LLaMA-70B, Kimi-K2
  NK_GRID = NK,
  HEADS_GRID = { 1, 2, 3, 4, 5, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 128 },
  HEAD_DIM_GRID = { 64, 128, 256 },
  KV_HEADS_GRID = { 1, 2, 4, 8, 16, 32 },
  -- dense at small M (decode, memory-bound), sparse at large M (prefill, compute-bound)
  M_GRID = { 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 80, 96,
             112, 128, 160, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384, 32768 },
  ELEM_TOKENS_GRID = { 1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768 },
  -- unaligned token counts for padding kernels
  PAD_TOKENS_GRID = { 1, 2, 3, 4, 5, 6, 7, 9, 15, 31, 63, 127, 129, 255, 257, 511, 513, 1023,
                      1025, 2047, 2049, 4095, 4097, 8191, 8193 },
  -- registered but unused by the patterns: attention uses its scene grids (fia_scenes.lua)
  ATTN_SEQ_GRID = { 1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
                    131072 },
  ATTN_BATCH_GRID = { 1, 2, 4, 8, 16, 32, 48, 64, 128 },
  MOE_TOKENS_GRID = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                      32768, 65536 },
  ELEM_HIDDEN_GRID = copy(NK),
}
