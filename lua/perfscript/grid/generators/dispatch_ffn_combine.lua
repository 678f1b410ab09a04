-- DispatchFFNCombine rows for MoE models (docs/rules.md, Shape grids: patterns):
-- x (M,H); weight1 (E,H,N); weight2 (E,N/2,H); expertIdx (M,topK); scale1 (E*N,);
-- scale2 (E*H,); probs (M,topK) -> out (M,H), (E,), with E = experts per rank in [1, 17].
local M = {}

M.columns = { "EP Size" }
local MAX_MHK = 58 * 1024 * 1024

function M.experts_per_rank(c)
  local set, out = {}, {}
  for _, cards in ipairs { 8, 16, 32, 64 } do
    if cards <= c.num_experts then
      local epc = c.num_experts // cards
      for _, ep in ipairs(c.ep_sizes) do
        if ep <= epc then
          local e = math.max(1, epc // ep)
          if e >= 1 and e <= 17 then set[e] = true end
        end
      end
    end
  end
  for e in pairs(set) do out[#out + 1] = e end
  table.sort(out)
  return out
end

function M.generate(configs, emit, env)
  for _, c in ipairs(env.moe_configs(configs)) do
    local seen, h, topk = {}, c.hidden_size, c.topk
    for _, e in ipairs(M.experts_per_rank(c)) do
      for _, tp in ipairs(c.tp_sizes) do
        local n = math.max(1, c.expert_intermediate_size // tp) * 2
        for _, m in ipairs(env.grids.MOE_TOKENS_GRID) do
          local key = m .. "," .. h .. "," .. n .. "," .. e .. "," .. topk
          if m * h * topk <= MAX_MHK and not seen[key] then
            seen[key] = true
            emit { inputs = { { m, h }, { e, h, n }, { e, n // 2, h }, { m, topk }, { e * n }, { e * h },
                              { m, topk } },
                   outputs = { { m, h }, { e } },
                   extra = { ["EP Size"] = tostring(c.num_experts // e) } }
          end
        end
      end
    end
  end
end

return M
