-- Llama-3-70B (dense, GQA 64/8).
return {
  model_id = "meta-llama/Meta-Llama-3-70B", name = "LLaMA-70B", model_key = "llama70b",
  hidden_size = 8192, intermediate_size = 28672,
  num_attention_heads = 64, num_kv_heads = 8, head_dim = 128, qk_rope_head_dim = 64,
  tp_sizes = { 1, 4, 8, 16 }, ep_sizes = { 1 },
}
