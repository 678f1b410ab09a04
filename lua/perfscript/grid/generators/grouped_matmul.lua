-- GroupedMatmul rows for MoE models (docs/rules.md, Shape grids: patterns): the two grouped
-- GEMMs each rank's routed experts run, for each EP and TP of the preset:
--   gate_up  x (tokens, H)      . W (E, H -> 2*I/TP)  -> (tokens, 2*I/TP)
--   down     x (tokens, I/TP)   . W (E, I/TP -> H)    -> (tokens, H)
-- with E = num_experts / EP local experts and I the expert FFN width; the hidden size is
-- never split (TP splits the experts' FFN, not the tokens' hidden state). No dedup here
-- (the pipeline dedups). Slots as the profiler writes them for W8A8 (x, weight, bias, scale,
-- offset, antiquant_scale, antiquant_offset, group_list, per_token_scale); the INT8 weight
-- of (E, K, N) is FRACTAL_NZ (E, N/32, K/16, 16, 32), which the consumer restores to
-- (E, N, K), so N must be a multiple of 32 and K of 16 for a query of (E, K, N) to find it.
local M = {}

-- One grouped GEMM row: tokens x K times E weights of (K, N).
local function row(tokens, e, k, n)
  return { inputs = { { tokens, k }, { e, n // 32, k // 16, 16, 32 }, {}, { e, n }, {}, {}, {}, { e }, { tokens } },
           outputs = { { tokens, n } } }
end

local function fits(k, n) return n % 32 == 0 and k % 16 == 0 end

-- The (E, K, N) of each grouped GEMM of config c, in emission order (ep, tp, gate_up/down).
function M.gemms(c)
  local out, h, inter = {}, c.hidden_size, c.expert_intermediate_size
  for _, ep in ipairs(c.ep_sizes) do
    if c.num_experts % ep == 0 then
      local e = c.num_experts // ep
      for _, tp in ipairs(c.tp_sizes) do
        if inter % tp == 0 then
          local i = inter // tp
          if fits(h, 2 * i) then out[#out + 1] = { e, h, 2 * i, "gate_up", ep, tp } end
          if fits(i, h) then out[#out + 1] = { e, i, h, "down", ep, tp } end
        end
      end
    end
  end
  return out
end

function M.generate(configs, emit, env)
  for _, c in ipairs(env.moe_configs(configs)) do
    local gemms = M.gemms(c)
    for _, tokens in ipairs(env.grids.MOE_TOKENS_GRID) do
      for _, g in ipairs(gemms) do emit(row(tokens, g[1], g[2], g[3])) end
    end
  end
end

return M
