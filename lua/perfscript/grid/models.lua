-- Model presets for the grid: name resolution, GEMM (N, K) pairs, MoE selection and
-- presets built from a local HuggingFace config.json (docs/rules.md, Shape grids: models).
-- Presets live in lua/perfscript/models/ (embedded in the binary) and in the user's own
-- perfscript/models/ under --lua-dir; nothing here touches the network.
--
-- Preset fields (defaults in DEFAULTS): model_id, name, model_key, hidden_size,
-- intermediate_size, num_attention_heads, num_kv_heads, head_dim, q_lora_rank,
-- kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, num_experts (0 = dense),
-- num_experts_per_card, expert_intermediate_size, topk, tp_sizes, ep_sizes.
local perf = require "perfscript"
local lfs = require "lfs"

local M = {}

local DEFAULTS = {
  head_dim = 128, q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 64,
  num_experts = 0, num_experts_per_card = 0, expert_intermediate_size = 0, topk = 0,
  tp_sizes = { 1, 4, 8 }, ep_sizes = { 1 }, model_key = "",
}
local REQUIRED = { "name", "hidden_size", "intermediate_size", "num_attention_heads", "num_kv_heads" }

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
  p.model_id = p.model_id or p.name
  if p.model_key == "" then p.model_key = M.normalize(p.model_id) end
  return p
end

-- The preset list: perfscript/models/init.lua (embedded; a live tree may replace it), then each
-- preset file of the user's own perfscript/models/ (--lua-dir, PERFSCRIPT_LUA_DIR) that the list
-- does not load, in name order: a new model is one file there, no rebuild.
local function preset_list()
  local list = {}
  for i, p in ipairs(require "perfscript.models") do list[i] = p end
  local dir = require("perfscript.library").dir()
  local mdir = dir and dir .. "/perfscript/models"
  if mdir and lfs.attributes(mdir, "mode") == "directory" then
    local stems = {}
    for name in lfs.dir(mdir) do
      local stem = name:match("^([%w_]+)%.lua$")
      if stem and stem ~= "init" and not package.loaded["perfscript.models." .. stem] then
        stems[#stems + 1] = stem
      end
    end
    table.sort(stems)
    for _, stem in ipairs(stems) do list[#list + 1] = require("perfscript.models." .. stem) end
  end
  return list
end

local registry_cache
-- The presets in registry order, and an index by normalised model id.
function M.registry()
  if registry_cache then return registry_cache end
  local list = preset_list()
  local by_id = {}
  for i, p in ipairs(list) do
    M.preset(p, "model preset " .. i)
    by_id[M.normalize(p.model_id)] = p
  end
  registry_cache = { list = list, by_id = by_id }
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

-- A preset from a local HuggingFace config.json (fields mapped as the Python original mapped
-- them), named `name` (default: the config's _name_or_path, else the file's directory name).
function M.from_hf_config(path, name)
  local f, err = io.open(path, "rb")
  if not f then perf.fail("--model-config: %s", err) end
  local text = f:read("a")
  f:close()
  local ok, cfg = pcall(require("cjson").decode, text)
  if not ok or type(cfg) ~= "table" then perf.fail("%s: not a JSON object: %s", path, tostring(cfg)) end
  local function first(...)
    for i = 1, select("#", ...) do
      local v = cfg[select(i, ...)]
      if type(v) == "number" then return math.tointeger(v) or math.floor(v) end
    end
  end
  name = name or (type(cfg._name_or_path) == "string" and cfg._name_or_path ~= "" and cfg._name_or_path)
         or path:match("([^/]+)/[^/]*$") or path
  local heads = first("num_attention_heads") or 0
  local hidden = first("hidden_size", "d_model") or 0
  local c = {
    model_id = name, name = name,
    hidden_size = hidden,
    intermediate_size = first("intermediate_size") or 0,
    num_attention_heads = heads,
    num_kv_heads = first("num_key_value_heads", "multi_query_group_num") or heads,
    q_lora_rank = first("q_lora_rank") or 0,
    kv_lora_rank = first("kv_lora_rank") or 0,
    qk_nope_head_dim = first("qk_nope_head_dim") or 0,
    qk_rope_head_dim = first("qk_rope_head_dim", "rotary_dim") or 64,
    num_experts = first("n_routed_experts", "num_experts") or 0,
    topk = first("num_experts_per_tok", "top_k", "num_experts_per_token") or 0,
    expert_intermediate_size = first("moe_intermediate_size", "expert_intermediate_size") or 0,
    tp_sizes = { 1, 2, 4, 8, 16 },
  }
  if M.is_mla(c) then
    c.head_dim = first("v_head_dim", "qk_head_dim", "head_dim") or 128
  else
    c.head_dim = first("head_dim", "kv_channels") or (heads > 0 and hidden // heads or 128)
  end
  if c.num_experts > 0 then
    c.num_experts_per_card = first("n_experts_per_card") or c.num_experts
    c.ep_sizes = { 1 }
    for _, s in ipairs { 2, 4, 8 } do if s <= c.num_experts then c.ep_sizes[#c.ep_sizes + 1] = s end end
  else
    c.num_experts_per_card = 0
    c.ep_sizes = { 1 }
  end
  if hidden <= 0 or heads <= 0 then
    perf.fail("%s: config lacks hidden_size or num_attention_heads", path)
  end
  local known = M.registry().by_id[M.normalize(name)]
  c.model_key = known and known.model_key or M.normalize(name)
  return M.preset(c, path)
end

return M
