-- split_qkv_rmsnorm_rope rows for dense models (docs/rules.md, Shape grids: patterns).
local M = {}

M.columns = { "Input Data Types", "Input Formats", "Output Data Types", "Output Formats" }

function M.generate(configs, emit, env)
  local seen = {}
  for _, c in ipairs(configs) do
    if not env.is_mla(c) then
      local heads, kv, hd = c.num_attention_heads, c.num_kv_heads, c.head_dim
      for _, tp in ipairs(c.tp_sizes) do
        local lkv
        if heads % tp == 0 then
          if kv >= tp then lkv = kv // tp elseif tp % kv == 0 then lkv = 1 end
        end
        if lkv then
          local q, kvh = (heads // tp) * hd, lkv * hd
          local width, rope = q + 2 * kvh, hd
          for _, tokens in ipairs(env.grids.ELEM_TOKENS_GRID) do
            local key = tokens .. "," .. q .. "," .. kvh .. "," .. rope
            if not seen[key] then
              seen[key] = true
              emit { inputs = { { tokens, width }, { rope } },
                     outputs = { { tokens, q }, { tokens, kvh }, { tokens, kvh } },
                     extra = { ["Input Data Types"] = "DT_BF16;DT_BF16", ["Input Formats"] = "ND;ND",
                               ["Output Data Types"] = "DT_BF16;DT_BF16;DT_BF16",
                               ["Output Formats"] = "ND;ND;ND" } }
            end
          end
        end
      end
    end
  end
end

return M
