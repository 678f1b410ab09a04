-- GroupedMatmul rows for MoE models (docs/rules.md, Shape grids: patterns). Kept as in
-- the Python original: TP splits the hidden dimension too. No dedup here (the pipeline dedups).
-- Slots as the profiler writes them for W8A8 (x, weight, bias, scale, offset,
-- antiquant_scale, antiquant_offset, group_list, per_token_scale); the INT8 weight of
-- (E, K, N) is FRACTAL_NZ (E, N/32, K/16, 16, 32), which the consumer restores to (E, N, K),
-- so N must be a multiple of 32 and K of 16 for a query of (E, K, N) to find the row.
local M = {}

function M.generate(configs, emit, env)
  for _, c in ipairs(env.moe_configs(configs)) do
    for _, ep in ipairs(c.ep_sizes) do
      for _, tp in ipairs(c.tp_sizes) do
        for _, tokens in ipairs(env.grids.MOE_TOKENS_GRID) do
          local hidden = math.max(1, c.hidden_size // tp)
          local ei = math.max(1, c.expert_intermediate_size // tp)
          local experts = math.max(1, c.num_experts_per_card // ep)
          if ei % 32 == 0 and hidden % 16 == 0 then
            emit { inputs = { { tokens, hidden }, { experts, ei // 32, hidden // 16, 16, 32 }, {},
                              { experts, ei }, {}, {}, {}, { experts }, { tokens } },
                   outputs = { { tokens, ei } } }
          end
        end
      end
    end
  end
end

return M
