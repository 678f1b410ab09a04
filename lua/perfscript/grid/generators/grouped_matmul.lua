-- GroupedMatmul rows for MoE models (grid_generator spec section 4.2). Kept as in the
-- original: TP splits the hidden dimension too. No dedup here (the pipeline dedups).
local M = {}

function M.generate(configs, emit, env)
  for _, c in ipairs(env.moe_configs(configs)) do
    for _, ep in ipairs(c.ep_sizes) do
      for _, tp in ipairs(c.tp_sizes) do
        for _, tokens in ipairs(env.grids.MOE_TOKENS_GRID) do
          local hidden = math.max(1, c.hidden_size // tp)
          local ei = math.max(1, c.expert_intermediate_size // tp)
          local experts = math.max(1, c.num_experts_per_card // ep)
          local rows = math.max(1, ei // 16)
          emit { inputs = { { tokens, hidden }, { experts, hidden, rows, 16 }, {}, { experts, ei },
                            {}, {}, {}, { experts }, { tokens } },
                 outputs = { { tokens, ei } } }
        end
      end
    end
  end
end

return M
