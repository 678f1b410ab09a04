-- GLM-5.1 (MLA attention, 256 routed experts; EP up to 64 ranks, 4 local experts).
return {
  model_id = "zai-org/GLM-5.1", name = "GLM-5.1", model_key = "glm51",
  hidden_size = 6144, intermediate_size = 12288,
  num_attention_heads = 64, num_kv_heads = 64,        -- MLA latent
  head_dim = 256, q_lora_rank = 2048, kv_lora_rank = 512, qk_nope_head_dim = 192, qk_rope_head_dim = 64,
  num_experts = 256, num_experts_per_card = 32, expert_intermediate_size = 2048, topk = 8,
  tp_sizes = { 1, 2, 4, 8, 16 }, ep_sizes = { 1, 2, 4, 8, 16, 32, 64 },
}
