-- Qwen3-32B (dense, GQA 64/8).
return {
  model_id = "Qwen/Qwen3-32B", name = "Qwen3-32B", model_key = "qwen332b",
  hidden_size = 5120, intermediate_size = 25600,
  num_attention_heads = 64, num_kv_heads = 8, head_dim = 128, qk_rope_head_dim = 64,
  tp_sizes = { 1, 2, 4, 8, 16 }, ep_sizes = { 1 },
}
