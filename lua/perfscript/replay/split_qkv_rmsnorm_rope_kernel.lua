-- split_qkv_rmsnorm_rope_kernel: torch.ops.vllm.qkv_rmsnorm_rope(input=, cos_sin_cache=,
-- positions=, q_weight=, k_weight=, q_hidden_size=, kv_hidden_size=, head_dim=, eps=1e-6); the
-- executor imports vllm_ascend's Triton ops first (prepare = "vllm_ascend_triton").
local C = require "perfscript.replay.common"

local M = {}

local function gcd(a, b) while b ~= 0 do a, b = b, a % b end return a end

-- head_dim: rope_dim if it divides both hidden sizes, else the smallest common divisor >= rope_dim (D4).
function M.head_dim(q_hidden, kv_hidden, rope)
  local g = gcd(q_hidden, kv_hidden)
  local best
  for d = rope, g do
    if g % d == 0 then
      if d == rope then return d end
      best = best or d
    end
  end
  if not best then return nil, ("no head_dim >= %d divides %d and %d"):format(rope, q_hidden, kv_hidden) end
  return best
end

function M.build(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    local idx, o = C.present(sl), C.present(out)
    C.need(#o == 2 or #o == 3, "expects 2 or 3 outputs")
    C.need(#idx == 2 or #idx == 3, "expects 2 or 3 inputs")
    local q_hidden, kv_hidden = out.shapes[o[1]][#out.shapes[o[1]]], out.shapes[o[2]][#out.shapes[o[2]]]
    local tokens, rope = sl.shapes[idx[1]][1], sl.shapes[idx[2]][#sl.shapes[idx[2]]]
    local cache, pos
    if #idx == 2 then cache, pos = { math.max(tokens, 2048), rope }, { tokens }
    else cache, pos = sl.shapes[idx[2]], sl.shapes[idx[3]] end
    local hd = C.must(M.head_dim(q_hidden, kv_hidden, rope))
    local raw = C.trim(sl.dtypes[idx[1]] or "")
    C.need(raw == "DT_FLOAT" or raw == "DT_FLOAT16" or raw == "DT_BF16", "weights dtype %s is not a float type", raw)
    local input = C.must(C.tensor(sl, idx[1]))
    local cs = C.T(cache, C.dtype(sl.dtypes[idx[2]]), "empty")
    return { api = "torch.ops.vllm.qkv_rmsnorm_rope", prepare = "vllm_ascend_triton", args = {}, kwargs = {
      input = input, cos_sin_cache = cs,
      positions = C.T(pos, "DT_INT64", "randint", { high = math.max(1, cache[1]) }),
      q_weight = C.T({ hd }, raw, "randn"), k_weight = C.T({ hd }, raw, "randn"),
      q_hidden_size = q_hidden, kv_hidden_size = kv_hidden, head_dim = hd, eps = 1e-6 } }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
