-- FusedInferAttentionScore scene grids (docs/rules.md, Shape grids: patterns), keyed by model key.
-- A model with no entry of its own uses `generic_dense` or `generic_mla`.
-- These cover sub-ranges of ATTN_BATCH_GRID / ATTN_SEQ_GRID on purpose (declared here).
return {
  qwen332b = {
    prefill = { batches = { 1, 2, 4, 8 },
                seqs = { 512, 1024, 2048, 3072, 3592, 4096, 4112, 4608, 5120, 6144 } },
    decode = { batches = { 1, 2, 4, 8, 12, 16, 24, 32 },
               seqs = { 1024, 2048, 3072, 3593, 4096, 4224, 4352, 4608, 4864, 5120, 5376, 5632 } },
  },
  deepseekv3 = {
    prefill = { batches = { 1, 2, 4, 8 },
                seqs = { 512, 1024, 2048, 3072, 4096, 4099, 4608, 5120, 6144 } },
    decode = { batches = { 1, 2, 4, 8, 12, 16 },
               seqs = { 1024, 2048, 3072, 4096, 4100, 4224, 4352, 4608, 4864, 5120, 5376, 5632 } },
  },
  generic_dense = {
    prefill = { batches = { 1, 2, 4, 8 }, seqs = { 256, 512, 1024, 2048, 4096, 8192 } },
    decode = { batches = { 1, 2, 4, 8, 16, 32 }, seqs = { 512, 1024, 2048, 4096, 8192 } },
  },
  generic_mla = {
    prefill = { batches = { 1, 2, 4, 8 }, seqs = { 256, 512, 1024, 2048, 4096, 8192 } },
    decode = { batches = { 1, 2, 4, 8, 16, 32 }, seqs = { 512, 1024, 2048, 4096, 8192 } },
  },
}
