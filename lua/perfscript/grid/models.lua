-- Model presets for the grid: name resolution, GEMM (N, K) pairs, MoE selection and
-- presets built from a local HuggingFace config.json (docs/rules.md, Shape grids: models).
-- Presets live in lua/perfscript/models/ (embedded in the binary) and in the user's own
-- perfscript/models/ under --lua-dir; nothing here touches the network.
--
-- Preset fields (defaults in DEFAULTS): model_id, name, model_key, hidden_size,
-- intermediate_size (the dense layers' FFN; 0 = every layer is MoE), num_attention_heads,
-- num_kv_heads, head_dim, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
-- v_head_dim, num_experts (routed; 0 = dense), num_experts_per_card (the Python original's,
-- read by no generator), expert_intermediate_size, topk, num_shared_experts,
-- shared_expert_intermediate_size (all shared experts together), tp_sizes, ep_sizes.
-- Parallelism: attention and dense layers split by each TP of tp_sizes; routed experts run
-- num_experts / EP local experts per rank for each EP of ep_sizes, their FFN split by each TP.
local perf = require "perfscript"
local lfs = require "lfs"

local M = {}

local DEFAULTS = {
  head_dim = 128, q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 64,
  v_head_dim = 0, num_experts = 0, num_experts_per_card = 0, expert_intermediate_size = 0, topk = 0,
  num_shared_experts = 0, shared_expert_intermediate_size = 0,
  tp_sizes = { 1, 4, 8 }, ep_sizes = { 1 }, model_key = "",
}
local REQUIRED = { "name", "hidden_size", "intermediate_size", "num_attention_heads", "num_kv_heads" }
-- Integer fields and their minimum; every dimension of a generated row derives from these.
local INT_FIELDS = {
  hidden_size = 1, intermediate_size = 0, num_attention_heads = 1, num_kv_heads = 1, head_dim = 1,
  q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 1, v_head_dim = 0,
  num_experts = 0, num_experts_per_card = 0, expert_intermediate_size = 0, topk = 0,
  num_shared_experts = 0, shared_expert_intermediate_size = 0,
}
-- Above this a model dimension is a typo (and products of dimensions could leave int64).
M.MAX_DIM = 2147483647

-- Why v is not a whole number in [min, MAX_DIM], or nil when it is (perfscript.num decides
-- what is finite). A string that holds a number is still refused: JSON and Lua presets
-- write numbers without quotes.
function M.check_int(v, min)
  if type(v) == "string" then
    local hint = perf.num.int(v) and (" (write " .. v:match("^%s*(.-)%s*$") .. " without quotes)") or ""
    return ('is the string "%s", not a number%s'):format(v:sub(1, 40), hint)
  end
  if type(v) ~= "number" then return "is a " .. type(v) .. ", not a number" end
  local function g(n) local t = ("%.15g"):format(n); return tonumber(t) == n and t or ("%.17g"):format(n) end
  local x = perf.num.finite(v)
  if not x then return ("is %s, not a finite number"):format(v ~= v and "NaN" or (v > 0 and "Infinity" or "-Infinity")) end
  if x ~= math.floor(x) then return ("is %s, not a whole number"):format(g(x)) end
  if x > M.MAX_DIM then return ("is %s, above the limit %d"):format(g(x), M.MAX_DIM) end
  if x < min then
    return ("is %s; it must be %s"):format(g(x), min == 0 and "0 or more" or ("at least " .. min))
  end
end

local function check_list(p, k, source)
  local l = p[k]
  if type(l) ~= "table" or #l == 0 then perf.fail("%s: field '%s' must be a non-empty list of sizes", source, k) end
  for i, v in ipairs(l) do
    local bad = M.check_int(v, 1)
    if bad then perf.fail("%s: field '%s' item %d %s", source, k, i, bad) end
    l[i] = math.tointeger(v)
  end
end

-- Normalised form of a model name: lower case without - _ . / and spaces.
function M.normalize(name)
  return (tostring(name):lower():gsub("[%-_%./ ]", ""))
end

-- Short names the Python original accepted once; each maps to the id to use instead.
local LEGACY = {
  deepseekv3 = "deepseek-ai/DeepSeek-V3", dsv3 = "deepseek-ai/DeepSeek-V3",
  metallama370b = "meta-llama/Meta-Llama-3-70B", llama70b = "meta-llama/Meta-Llama-3-70B",
  qwen332b = "Qwen/Qwen3-32B", glm51 = "zai-org/GLM-5.1", glm52 = "zai-org/GLM-5.2",
}

-- Fills defaults and checks a preset table; returns it.
function M.preset(p, source)
  for _, k in ipairs(REQUIRED) do
    if p[k] == nil then perf.fail("%s: model preset lacks '%s'", source or p.name or "?", k) end
  end
  for k, v in pairs(DEFAULTS) do if p[k] == nil then p[k] = v end end
  source = source or p.name
  for k, min in pairs(INT_FIELDS) do
    local bad = M.check_int(p[k], min)
    if bad then perf.fail("%s: field '%s' %s", source, k, bad) end
    p[k] = math.tointeger(p[k])
  end
  check_list(p, "tp_sizes", source)
  check_list(p, "ep_sizes", source)
  if p.num_experts > 0 then
    if p.topk < 1 or p.topk > p.num_experts then
      perf.fail("%s: field 'topk' is %d; a MoE model routes each token to 1 .. num_experts (%d)",
                source, p.topk, p.num_experts)
    end
    if p.expert_intermediate_size < 1 then
      perf.fail("%s: field 'expert_intermediate_size' must be at least 1 for a MoE model", source)
    end
  end
  p.model_id = p.model_id or p.name
  if p.model_key == "" then p.model_key = M.normalize(p.model_id) end
  return p
end

-- The preset list: perfscript/models/init.lua (embedded; a live tree may replace it), then each
-- preset file of the user's own perfscript/models/ (--lua-dir, PERFSCRIPT_LUA_DIR) that the list
-- does not load, in name order: a new model is one file there, no rebuild.
local function preset_list()
  local list, sources, listed = {}, {}, {}
  for i, p in ipairs(require "perfscript.models") do list[i] = p; listed[p] = true end
  local dir = require("perfscript.library").dir()
  local mdir = dir and dir .. "/perfscript/models"
  if mdir and lfs.attributes(mdir, "mode") == "directory" then
    local stems = {}
    for name in lfs.dir(mdir) do
      local stem = name:match("^([%w_]+)%.lua$")
      if stem and stem ~= "init" then stems[#stems + 1] = stem end
    end
    table.sort(stems)
    -- by identity, not by package.loaded: a file loaded by an earlier, failed registry() call
    -- is still the user's and is checked again
    for _, stem in ipairs(stems) do
      local p = require("perfscript.models." .. stem)
      if not listed[p] then
        list[#list + 1] = p
        sources[#list] = mdir .. "/" .. stem .. ".lua"
      end
    end
  end
  return list, sources
end

local registry_cache
-- The presets in registry order, and an index by normalised model id.
function M.registry()
  if registry_cache then return registry_cache end
  local list, sources = preset_list()
  local by_id, by_key = {}, {}
  for i, p in ipairs(list) do
    M.preset(p, sources[i] or ("model preset " .. i))
    by_id[M.normalize(p.model_id)] = p
    by_key[p.model_key] = by_key[p.model_key] or p
  end
  registry_cache = { list = list, by_id = by_id, by_key = by_key }
  return registry_cache
end

-- Canonical id for a user-given name; raises for legacy short names.
function M.canonical_id(name)
  local key = M.normalize(name)
  if LEGACY[key] then
    perf.fail("Unsupported legacy model name '%s'. Use '%s' to match text_generate model_id naming.",
              name, LEGACY[key])
  end
  local p = M.registry().by_id[key]
  return p and p.model_id or name
end

-- resolve(nil) -> every built-in preset; resolve{"deepseek-ai/DeepSeek-V3", ...} -> presets
-- in the given order; `extra` (from --model-config) are presets matched by name first.
function M.resolve(names, extra)
  local reg = M.registry()
  if names == nil then
    local out, seen = {}, {}
    for _, p in ipairs(reg.list) do
      if not seen[p.model_id] then seen[p.model_id] = true; out[#out + 1] = p end
    end
    for _, p in ipairs(extra or {}) do out[#out + 1] = p end
    return out
  end
  local out = {}
  for _, name in ipairs(names) do
    local found
    for _, p in ipairs(extra or {}) do
      if p.name == name or M.normalize(p.model_id) == M.normalize(name) then found = p end
    end
    if not found then
      local id = M.canonical_id(name)
      found = reg.by_id[M.normalize(id)]
    end
    if not found then
      local known = {}
      for _, p in ipairs(reg.list) do known[#known + 1] = p.model_id end
      perf.fail("unknown model '%s' (presets: %s; for another model pass --model-config "
                .. "path/to/config.json)", name, table.concat(known, ", "))
    end
    out[#out + 1] = found
  end
  return out
end

function M.is_mla(c)
  return (c.q_lora_rank or 0) > 0 or (c.kv_lora_rank or 0) > 0
end

local function sorted_pairs(set)
  local out = {}
  for _, p in pairs(set) do out[#out + 1] = p end
  table.sort(out, function(a, b) if a[1] ~= b[1] then return a[1] < b[1] end return a[2] < b[2] end)
  return out
end

-- The projections as the serving engine (vLLM) fuses and splits them at one TP, added to the
-- Python original's pairs: fused QKV ((heads/TP + 2 * kv heads/TP) * head_dim, H), the output
-- projection (H, heads/TP * head_dim), fused gate_up (2 * I/TP, H); for MLA the fused
-- q_a + kv_a compression (q_lora + kv_lora + rope, H), q_b (heads/TP * (nope + rope), q_lora)
-- (q_proj from H without a q_lora), kv_b (heads/TP * (nope + v), kv_lora) and o_proj
-- (H, heads/TP * v). A TP that does not divide the heads runs no such layer.
-- Heads per rank at one TP: (local heads, local KV heads), or nil when this TP cannot split
-- the attention (heads not divisible; KV heads neither divisible by TP nor dividing it).
-- Fewer KV heads than ranks: each rank holds one copy.
-- The value head width: v_head_dim when the model sets one (MLA), else head_dim (0 = unset).
function M.value_head_dim(c)
  return (c.v_head_dim or 0) > 0 and c.v_head_dim or c.head_dim
end

function M.local_heads(c, tp)
  local heads, kv = c.num_attention_heads, c.num_kv_heads
  if tp <= 0 or heads % tp ~= 0 then return nil end
  if kv >= tp then
    if kv % tp == 0 then return heads // tp, kv // tp end
  elseif tp % kv == 0 then
    return heads // tp, 1
  end
end

function M.serving_pairs(c, tp, add)
  local h, heads = c.hidden_size, c.num_attention_heads
  local function put(n, k) if n > 0 and k > 0 then add(n, k) end end
  if heads % tp == 0 then
    local lh = heads // tp
    if M.is_mla(c) then
      local nope, rope = c.qk_nope_head_dim, c.qk_rope_head_dim
      local v = M.value_head_dim(c)
      if nope > 0 then
        if c.q_lora_rank > 0 then
          put(c.q_lora_rank + c.kv_lora_rank + rope, h)
          put(lh * (nope + rope), c.q_lora_rank)
        else
          put(lh * (nope + rope), h)
        end
        put(lh * (nope + v), c.kv_lora_rank)
      end
      put(h, lh * v)
    else
      local _, lkv = M.local_heads(c, tp)
      if lkv then put((lh + 2 * lkv) * c.head_dim, h) end
      put(h, lh * c.head_dim)
    end
  end
  local inter = c.intermediate_size
  if inter > 0 and inter % tp == 0 then put(2 * (inter // tp), h) end
end

-- Union of the GEMM weight (N, K) pairs of the models, ascending by (N, K).
function M.matmul_nk_pairs(configs)
  local set = {}
  local function add(n, k) set[n .. "," .. k] = { n, k } end
  for _, c in ipairs(configs) do
    local h, inter = c.hidden_size, c.intermediate_size
    for _, tp in ipairs(c.tp_sizes) do
      local ht = math.max(1, h // tp)
      if M.is_mla(c) then
        local q_up = math.max(1, c.num_attention_heads * c.head_dim // tp)
        add(c.q_lora_rank, h)                       -- Q compression
        add(q_up, c.q_lora_rank)                    -- Q up-projection
        add(c.kv_lora_rank + c.qk_rope_head_dim, h) -- KV compression
        add(q_up, c.kv_lora_rank)                   -- KV up-projection
      else
        add(ht, h)                                  -- QKV projection
        add(h, ht)                                  -- output projection
      end
      if inter > 0 then
        local n = math.max(1, inter // tp)
        add(n, h)                                   -- gate/up
        add(h, n)                                   -- down
      end
      M.serving_pairs(c, tp, add)
      local si = c.shared_expert_intermediate_size or 0
      if c.num_experts > 0 and si > 0 and si % tp == 0 then
        add(2 * (si // tp), h)                      -- shared experts' fused gate_up
        add(h, si // tp)                            -- shared experts' down
      end
    end
  end
  return sorted_pairs(set)
end

-- Expert FFN (N, K) pairs per TP (EP does not change weight dims); empty for dense models.
function M.expert_nk_pairs(configs)
  local set = {}
  for _, c in ipairs(configs) do
    if c.num_experts > 0 and c.expert_intermediate_size > 0 then
      for _, tp in ipairs(c.tp_sizes) do
        local ht = math.max(1, c.hidden_size // tp)
        local eit = math.max(1, c.expert_intermediate_size // tp)
        set[eit .. "," .. ht] = { eit, ht }
        set[ht .. "," .. eit] = { ht, eit }
      end
    end
  end
  return sorted_pairs(set)
end

function M.moe_configs(configs)
  local out = {}
  for _, c in ipairs(configs) do if c.num_experts > 0 then out[#out + 1] = c end end
  return out
end

-- A preset from a local HuggingFace config.json (perfscript.grid.hfconfig); warn(line)
-- gets the notes on fields it does not use (default: stderr).
function M.from_hf_config(path, warn)
  return require("perfscript.grid.hfconfig").read(path, warn)
end

-- One line per preset: the parallelism its rows assume (for the recipes' --help).
function M.parallelism(p)
  local s = ("%s: TP %s"):format(p.model_id, table.concat(p.tp_sizes, ","))
  if p.num_experts == 0 then return s .. "; dense (no EP)" end
  local local_e = {}
  for _, ep in ipairs(p.ep_sizes) do
    if p.num_experts % ep == 0 then local_e[#local_e + 1] = p.num_experts // ep end
  end
  s = s .. ("; GroupedMatmul EP %s (%s of %d routed experts per rank), expert FFN split by each TP")
    :format(table.concat(p.ep_sizes, ","), table.concat(local_e, ","), p.num_experts)
  local dfc = require("perfscript.grid.generators.dispatch_ffn_combine").experts_per_rank(p)
  local eps = {}
  for i, e in ipairs(dfc) do eps[i] = p.num_experts // e end
  if #eps > 0 then s = s .. ("; DispatchFFNCombine EP %s"):format(table.concat(eps, ",")) end
  if p.num_shared_experts > 0 then s = s .. "; shared experts as GEMMs split by TP" end
  return s
end

return M
