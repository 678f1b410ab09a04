-- Grid patterns (docs/rules.md, Shape grids: patterns): 38 of them.
-- Template form:
--   iterators   ordered {name, grid} pairs, outermost first; grid is a name in
--               perfscript/grids/registry.lua or an inline list of integers
--   constants   name -> integer (a constant overrides an iterator of the same name)
--   constraints boolean expressions, all must hold (lua/perfscript/expr.lua)
--   inputs, outputs  shape templates, e.g. "(tokens, D*2)", "(N,)", "()"
--   model_nk_pairs + fallback_iterators: with target models, (N, K) walk the models' GEMM
--               weight pairs; without, the fallback iterators are appended
--   input_dtypes / input_formats / output_dtypes / output_formats: optional per-slot metadata
-- Function form: generator = "<name>" of lua/perfscript/grid/generators/<name>.lua.
local function it(...)
  local a, out = { ... }, {}
  for i = 1, #a, 2 do out[#out + 1] = { a[i], a[i + 1] } end
  return out
end
local TOK_D = it("tokens", "ELEM_TOKENS_GRID", "D", "ELEM_HIDDEN_GRID")
local S = "min(max_slots, max(16, tokens*8))"
local B = "max(16, seq*8)"
local BATCH_VOCAB = it("batch", { 1, 2, 4, 8, 16, 32, 64, 128 },
                       "vocab", { 1024, 4096, 16384, 32000, 65536, 128256, 151936 })

return {
  -- The CSV stores the physical (N, K) weight; replay applies the transpose.
  matmul = {
    iterators = it("M", "M_GRID"),
    model_nk_pairs = true, fallback_iterators = it("N", "NK_GRID", "K", "NK_GRID"),
    inputs = { "(M, K)", "(N, K)" }, outputs = { "(M, N)" },
  },
  -- input[3] (bias) must be (N,) for npu_quant_matmul; the 4-D weight (N/32, K/16, 16, 32)
  -- is the FRACTAL_NZ layout of a (K, N) matrix.
  quant_matmul = {
    iterators = it("M", "M_GRID"),
    model_nk_pairs = true, fallback_iterators = it("N", "NK_GRID", "K", "NK_GRID"),
    constants = { block_h = 16, block_w = 32 },
    constraints = { "N >= 128", "K >= 128", "N % block_w == 0", "K % block_h == 0" },
    inputs = { "(M, K)", "(max(1, N//block_w), max(1, K//block_h), block_h, block_w)", "(N,)", "(N,)" },
    outputs = { "(M, N)" },
  },
  transpose_batch_matmul = {
    iterators = it("batch", "HEADS_GRID", "M", "M_GRID", "K", { 64, 128, 256, 512 },
                   "N", { 64, 128, 256, 512, 1024 }),
    inputs = { "(batch, M, K)", "(batch, K, N)" }, outputs = { "(M, batch, N)" },
  },
  batch_matmul_nd = {
    iterators = it("batch", { 1, 2, 4, 8, 16, 32 }, "M", "M_GRID", "K", { 64, 128, 256, 512, 1024 },
                   "N", { 64, 128, 256, 512, 1024 }),
    inputs = { "(batch, M, K)", "(batch, K, N)" }, outputs = { "(batch, M, N)" },
  },
  elementwise_binary = { iterators = TOK_D, inputs = { "(tokens, D)", "(tokens, D)" }, outputs = { "(tokens, D)" } },
  elementwise_unary = { iterators = TOK_D, inputs = { "(tokens, D)" }, outputs = { "(tokens, D)" } },
  tensor_move = {
    iterators = TOK_D, constraints = { "tokens * D >= 262144" },
    inputs = { "(tokens, D)" }, outputs = { "(tokens, D)" },
  },
  rmsnorm = { iterators = TOK_D, inputs = { "(tokens, D)", "(D,)" }, outputs = { "(tokens, D)", "(tokens, 1)" } },
  add_rmsnorm = {
    iterators = TOK_D, inputs = { "(tokens, D)", "(tokens, D)", "(D,)" },
    outputs = { "(tokens, D)", "(tokens, 1)", "(tokens, D)" },
  },
  add_rmsnorm_bias = {
    iterators = TOK_D, inputs = { "(tokens, D)", "(tokens, D)", "(D,)", "(D,)" },
    outputs = { "(tokens, D)", "(tokens, 1)", "(tokens, D)" },
  },
  add_rmsnorm_dynamic_quant = {
    iterators = TOK_D, inputs = { "(tokens, D)", "(tokens, D)", "(D,)", "(D,)" },
    outputs = { "(tokens, D)", "(tokens, D)", "(tokens, D)", "(tokens,)", "(tokens,)" },
  },
  quant = { iterators = TOK_D, inputs = { "(tokens, D)", "(D,)", "(D,)" }, outputs = { "(tokens, D)" } },
  dynamic_quant = { iterators = TOK_D, inputs = { "(tokens, D)" }, outputs = { "(tokens, D)", "(tokens,)" } },
  swiglu = { iterators = TOK_D, inputs = { "(tokens, D*2)" }, outputs = { "(tokens, D)" } },
  interleave_rope = {
    iterators = it("seq", "ELEM_TOKENS_GRID", "heads", "HEADS_GRID"), constants = { dim = 64 },
    inputs = { "(seq, heads, 1, dim)", "(seq, 1, 1, dim)", "(seq, 1, 1, dim)" },
    outputs = { "(seq, heads, 1, dim)" },
  },
  triton_rope = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "heads", "HEADS_GRID"), constants = { dim = 64 },
    inputs = { "(tokens, heads, dim)", "(tokens, 1, dim)", "(max(tokens, 2048), dim)" },
    outputs = { "(tokens, heads, dim)", "(tokens, 1, dim)" },
  },
  split_qkv_rmsnorm_rope = { generator = "split_qkv_rmsnorm_rope" },
  -- 4-D kv inputs (PA_BNSD cache mode); slot layout as in profiling; heads = 1 (MLA)
  kv_rmsnorm_rope_cache = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "d", { 512 }),
    constants = { dim = 64, max_slots = 4096 },
    inputs = { "(tokens, 1, 1, d+dim)", "(d,)", "(tokens, 1, 1, dim)", "(tokens, 1, 1, dim)",
               "(tokens,)", "(" .. S .. ", 128, 1, dim)", "(" .. S .. ", 128, 1, d)",
               "()", "()", "()", "()", "()" },
    outputs = { "(" .. S .. ", 128, 1, dim)", "(" .. S .. ", 128, 1, d)",
                "(tokens, 1, 1, dim)", "(tokens, 1, 1, d)" },
  },
  broadcast_to = { iterators = TOK_D, inputs = { "(1, D)", "(2,)" }, outputs = { "(tokens, D)" } },
  slice_op = {
    iterators = TOK_D, inputs = { "(tokens, D)", "(2,)", "(2,)", "(2,)", "(2,)" },
    outputs = { "(max(1, tokens//2), D)" },
  },
  transpose_op = { iterators = TOK_D, inputs = { "(tokens, D)", "(2,)" }, outputs = { "(D, tokens)" } },
  as_strided = {
    iterators = it("batch", { 1, 2, 4, 8, 16, 32, 64 }, "heads", { 1, 4, 8, 16, 32, 64, 128 },
                   "dim", { 64, 128, 256 }),
    inputs = { "(batch*heads*dim*2,)", "(3,)", "(3,)", "(1,)" }, outputs = { "(batch, heads, dim)" },
  },
  sort_op = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "D", { 64, 128, 256, 512, 1024, 2048, 4096, 8192 }),
    inputs = { "(tokens, D)" }, outputs = { "(tokens, D)", "(tokens, D)" },
  },
  tile = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "D", { 64, 128, 256, 512, 1024, 2048 }),
    inputs = { "(tokens, D)", "(2,)" }, outputs = { "(tokens, D*2)" },
  },
  pad = {
    iterators = it("tokens", "PAD_TOKENS_GRID", "D", "ELEM_HIDDEN_GRID"),
    constraints = { "tokens % 8 != 0" },
    inputs = { "(tokens, D)", "(4,)", "()" }, outputs = { "(align(tokens, 8), D)" },
  },
  concat = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "D", { 64, 128, 256, 512, 1024, 2048, 4096 }),
    inputs = { "(tokens, D)", "(tokens, D)" }, outputs = { "(tokens, D*2)" },
  },
  argmax = { iterators = BATCH_VOCAB, inputs = { "(batch, vocab)", "()" }, outputs = { "(batch,)" } },
  apply_topk_top_p = {
    iterators = BATCH_VOCAB,
    inputs = { "(batch, vocab)", "(batch, vocab)", "(batch,)", "(batch,)" }, outputs = { "(batch, vocab)" },
  },
  gather = {
    iterators = it("vocab", { 1024, 4096, 8192, 16384, 32000, 65536, 128256, 151936, 152064 },
                   "D", "ELEM_HIDDEN_GRID", "idx_count", "ELEM_TOKENS_GRID"),
    inputs = { "(vocab, D)", "(idx_count,)", "(1,)" }, outputs = { "(idx_count, D)" },
  },
  gather_v3 = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "D", "ELEM_HIDDEN_GRID", "idx_count", "ELEM_TOKENS_GRID"),
    inputs = { "(tokens, D)", "(idx_count,)", "(1,)" }, outputs = { "(idx_count, D)" },
  },
  index = {
    iterators = it("D", "ELEM_HIDDEN_GRID", "seq", "ELEM_TOKENS_GRID", "out_rows", "ELEM_TOKENS_GRID"),
    constraints = { "out_rows <= seq" },
    inputs = { "(seq, D)", "(1,)", "(out_rows,)", "(1,)" }, outputs = { "(out_rows, D)" },
  },
  reshape_and_cache = {
    iterators = it("seq", "ELEM_TOKENS_GRID", "kv_heads", "KV_HEADS_GRID", "dim", "HEAD_DIM_GRID"),
    constants = { block_size = 128 },
    inputs = { "(seq, kv_heads, dim)", "(seq, kv_heads, dim)", "(" .. B .. ", block_size, kv_heads, dim)",
               "(" .. B .. ", block_size, kv_heads, dim)", "(seq,)" },
    outputs = { "(" .. B .. ", block_size, kv_heads, dim)", "(" .. B .. ", block_size, kv_heads, dim)" },
  },
  paged_cache_load = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "dim", "HEAD_DIM_GRID", "batch", { 1, 2, 4, 8, 16, 32, 64 }),
    constants = { rope_dim = 64 },
    inputs = { "(max(16, tokens*8), 128, 1, dim)", "(max(16, tokens*8), 128, 1, rope_dim)", "(batch, dim)",
               "(batch,)", "(tokens, 1, dim)", "(tokens, 1, rope_dim)", "(batch,)" },
    outputs = { "(tokens, 1, dim)", "(tokens, 1, rope_dim)" },
  },
  attention_update = {
    iterators = it("batch", "ATTN_BATCH_GRID", "heads", "HEADS_GRID", "dim", "HEAD_DIM_GRID"),
    inputs = { "(batch, heads, 1, dim)", "(batch, heads, 1, dim)", "(batch, heads, 1, dim)", "(batch, heads, 1, dim)" },
    outputs = { "(batch, heads, 1, dim)", "(batch, heads, 1, dim)" },
  },
  moe_gating_topk = {
    iterators = it("tokens", "ELEM_TOKENS_GRID", "experts", { 64, 128, 256 }, "topk", { 2, 4, 8 }),
    inputs = { "(tokens, experts)", "()", "()" }, outputs = { "(tokens, topk)", "(tokens, topk)", "(tokens,)" },
  },
  grouped_matmul = { generator = "grouped_matmul" },
  dispatch_ffn_combine = { generator = "dispatch_ffn_combine" },
  fused_attention = { generator = "fused_attention" },
}
