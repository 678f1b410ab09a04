-- DeepSeek-V3 (MLA attention, 256 routed experts and one shared expert). Numbers: the Python
-- original's preset, with the shared expert and EP up to 64 ranks (4 local experts) added.
return {
  model_id = "deepseek-ai/DeepSeek-V3", name = "DeepSeek-V3", model_key = "deepseekv3",
  hidden_size = 7168, intermediate_size = 18432,
  num_attention_heads = 128, num_kv_heads = 1,        -- MLA latent
  head_dim = 128, v_head_dim = 128, q_lora_rank = 1536, kv_lora_rank = 512, qk_nope_head_dim = 128, qk_rope_head_dim = 64,
  num_experts = 256, num_experts_per_card = 32, expert_intermediate_size = 2048, topk = 8,
  num_shared_experts = 1, shared_expert_intermediate_size = 2048,
  tp_sizes = { 1, 2, 4, 8, 16 }, ep_sizes = { 1, 2, 4, 8, 16, 32, 64 },
}
