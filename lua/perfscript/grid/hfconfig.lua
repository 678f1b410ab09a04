-- A model preset from a local Hugging Face config.json (docs/rules.md, Shape grids: models):
-- the dense, GQA, MLA and MoE fields of the common families (Llama, Qwen2/3, Qwen-MoE,
-- Mixtral, DeepSeek-V2/V3, GLM), each checked for type and range before use. Fields it does
-- not use are named on stderr, one line each; fields that never change a kernel shape
-- (dtypes, token ids, dropout, norms' epsilon ...) are summed up in one line, so that a
-- field the grid should have read stands out. No network access.
local perf = require "perfscript"
local cjson = require "cjson"
local models = require "perfscript.grid.models"

local M = {}

-- Integer fields the reader knows, with their minimum (all are checked where present).
local INT = {
  hidden_size = 1, d_model = 1, intermediate_size = 0, ffn_hidden_size = 0,
  num_attention_heads = 1, num_key_value_heads = 1, multi_query_group_num = 1,
  head_dim = 1, kv_channels = 1,
  q_lora_rank = 1, kv_lora_rank = 1, qk_nope_head_dim = 1, qk_rope_head_dim = 1, rotary_dim = 1,
  v_head_dim = 1, qk_head_dim = 1,
  num_local_experts = 0, n_routed_experts = 0, num_experts = 0, moe_num_experts = 0,
  num_experts_per_tok = 1, top_k = 1, num_experts_per_token = 1, moe_topk = 1,
  moe_intermediate_size = 1, expert_intermediate_size = 1, n_experts_per_card = 1,
  n_shared_experts = 0, num_shared_experts = 0, shared_expert_intermediate_size = 0,
  first_k_dense_replace = 0, moe_layer_freq = 1, decoder_sparse_step = 1,
}
local NAME_FIELDS = { model_type = true, _name_or_path = true, architectures = true }

-- Fields that never change a kernel shape the grid generates: skipped, summed up in one line.
local SHAPELESS = {}
for k in ([[torch_dtype transformers_version auto_map bos_token_id eos_token_id pad_token_id
  initializer_range use_cache tie_word_embeddings attention_dropout hidden_dropout
  embd_pdrop resid_pdrop attn_pdrop output_router_logits router_aux_loss_coef aux_loss_alpha
  seq_aux rms_norm_eps layer_norm_eps layer_norm_epsilon rope_theta hidden_act pretraining_tp
  router_jitter_noise norm_topk_prob routed_scaling_factor scoring_func topk_method
  _commit_hash use_return_dict return_dict output_attentions output_hidden_states
  is_encoder_decoder tokenizer_class bias_act chunk_size_feed_forward]]):gmatch("%S+") do
  SHAPELESS[k] = true
end

-- Why a field the grid could care about is still not read (the warning's tail).
local WHY = {
  vocab_size = "no pattern generates embedding or LM-head shapes from the model",
  num_hidden_layers = "the grid generates one layer's shapes",
  max_position_embeddings = "sequence lengths come from the grids",
  ep_size = "EP comes from the preset's EP sizes (see --help)",
  quantization_config = "dtypes come from each database file's template row",
  rope_scaling = "RoPE shapes do not depend on it",
  sliding_window = "attention scenes come from the FIA scene grids",
  use_sliding_window = "attention scenes come from the FIA scene grids",
  max_window_layers = "attention scenes come from the FIA scene grids",
  partial_rotary_factor = "RoPE rows take qk_rope_head_dim (default 64)",
  n_group = "MoeGatingTopK rows come from its own grid", topk_group = "MoeGatingTopK rows come from its own grid",
  attention_bias = "bias slots come from each file's template row",
  num_nextn_predict_layers = "MTP layers repeat a main layer's shapes",
}

-- A JSON value as the user wrote it, for messages.
local function show(v)
  if type(v) == "number" then
    if v ~= v then return "NaN" end
    if v == math.huge then return "Infinity" end
    if v == -math.huge then return "-Infinity" end
    return math.tointeger(v) and tostring(math.tointeger(v)) or ("%.17g"):format(v)
  end
  if type(v) == "string" then return '"' .. v:sub(1, 40) .. (#v > 40 and "..." or "") .. '"' end
  return tostring(v)
end

local function jtype(v)
  if v == cjson.null then return "null" end
  local t = type(v)
  if t == "table" then return next(v) == nil and "an empty object or array" or (#v > 0 and "an array" or "an object") end
  if t == "boolean" then return "a boolean" end
  return "a " .. t
end

-- One field's value as an integer >= min, or a user error naming file, field and fault.
function M.int(path, key, v, min)
  local bad = models.check_int(v, min)
  if bad then
    if type(v) ~= "number" and type(v) ~= "string" then bad = "is " .. jtype(v) .. ", not a number" end
    perf.fail("%s: field '%s' %s", path, key, bad)
  end
  return math.tointeger(v) or math.floor(v)
end

-- The model's name: _name_or_path (a hub id, or a local path's last part), else model_type,
-- else the first architecture. Never the directory the file happens to sit in.
local function model_name(path, cfg)
  for k in pairs(NAME_FIELDS) do
    local v = cfg[k]
    if v ~= nil and v ~= cjson.null then
      local ok = type(v) == "string"
      if k == "architectures" then
        ok = type(v) == "table" and #v > 0
        for _, a in ipairs(type(v) == "table" and v or {}) do ok = ok and type(a) == "string" end
      end
      if not ok then
        perf.fail("%s: field '%s' is %s, not %s", path, k, jtype(v),
                  k == "architectures" and "a list of class names" or "a string")
      end
    end
  end
  local n = cfg._name_or_path
  if type(n) == "string" then
    n = n:gsub("/+$", "")
    if n:sub(1, 1) == "/" or n:sub(1, 1) == "." or n:find("\\", 1, true) then n = n:match("([^/\\]+)$") end
    if n and n ~= "" then return n end
  end
  if type(cfg.model_type) == "string" and cfg.model_type ~= "" then return cfg.model_type end
  if type(cfg.architectures) == "table" and cfg.architectures[1] ~= "" then return cfg.architectures[1] end
  perf.fail("%s: names no model: it has none of 'model_type', '_name_or_path', 'architectures'", path)
end

-- Reads and checks config.json; returns the preset. warn(line) gets the stderr lines.
function M.read(path, warn)
  warn = warn or function(s) io.stderr:write(s, "\n") end
  local f, err = io.open(path, "rb")
  if not f then perf.fail("--model-config: %s", err) end
  local text = f:read("a")
  f:close()
  local ok, cfg = pcall(cjson.decode, text)
  if not ok or type(cfg) ~= "table" or (next(cfg) ~= nil and #cfg > 0) then
    perf.fail("%s: not a JSON object%s", path, ok and "" or (": " .. tostring(cfg)))
  end
  -- every known field is checked, used or not: a bad value is an error, never a silent default
  local val = {}
  for k, min in pairs(INT) do
    local v = cfg[k]
    if v ~= nil and v ~= cjson.null then val[k] = M.int(path, k, v, min) end
  end
  local mlp_only = cfg.mlp_only_layers
  if mlp_only == cjson.null then mlp_only = nil end
  if mlp_only ~= nil then
    if type(mlp_only) ~= "table" or (next(mlp_only) ~= nil and #mlp_only == 0) then
      perf.fail("%s: field 'mlp_only_layers' is %s, not a list of layer numbers", path, jtype(mlp_only))
    end
    for i, v in ipairs(mlp_only) do
      local bad = models.check_int(v, 0)
      if bad then perf.fail("%s: field 'mlp_only_layers' item %d %s", path, i, bad) end
    end
  end
  local used = {}
  local function first(...)
    for i = 1, select("#", ...) do
      local k = select(i, ...)
      if val[k] ~= nil then used[k] = true; return val[k] end
    end
  end
  local name = model_name(path, cfg)
  for k in pairs(NAME_FIELDS) do used[k] = true end
  local hidden = first("hidden_size", "d_model")
  local heads = first("num_attention_heads")
  if not hidden or not heads then
    perf.fail("%s: lacks '%s'", path, hidden and "num_attention_heads" or "hidden_size")
  end
  local kv = first("num_key_value_heads", "multi_query_group_num") or heads
  if heads % kv ~= 0 then
    perf.fail("%s: num_attention_heads (%d) is not a multiple of the key/value heads (%d)", path, heads, kv)
  end
  local experts = first("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts") or 0
  local c = {
    model_id = name, name = name, hidden_size = hidden, num_attention_heads = heads, num_kv_heads = kv,
    tp_sizes = { 1, 2, 4, 8, 16 }, ep_sizes = { 1 }, num_experts = experts,
  }
  -- attention: MLA when a low-rank KV projection is given
  c.kv_lora_rank = first("kv_lora_rank") or 0
  c.q_lora_rank = first("q_lora_rank") or 0
  if c.kv_lora_rank > 0 or c.q_lora_rank > 0 then
    c.qk_nope_head_dim = first("qk_nope_head_dim") or 0
    c.qk_rope_head_dim = first("qk_rope_head_dim", "rotary_dim") or 64
    c.v_head_dim = first("v_head_dim") or 0
    c.head_dim = c.v_head_dim > 0 and c.v_head_dim or first("qk_head_dim", "head_dim") or 128
  else
    c.head_dim = first("head_dim", "kv_channels") or hidden // heads
    c.qk_rope_head_dim = first("qk_rope_head_dim", "rotary_dim") or 64
  end
  -- FFN: dense layers, routed experts, shared experts
  local has_dense = true
  if experts > 0 then
    c.topk = first("num_experts_per_tok", "top_k", "num_experts_per_token", "moe_topk")
    if not c.topk then perf.fail("%s: has %d routed experts but no 'num_experts_per_tok'", path, experts) end
    if c.topk > experts then
      perf.fail("%s: num_experts_per_tok (%d) is more than the %d routed experts", path, c.topk, experts)
    end
    local k_dense = first("first_k_dense_replace") or 0
    local freq = first("moe_layer_freq", "decoder_sparse_step") or 1
    has_dense = k_dense > 0 or freq > 1 or (mlp_only and #mlp_only > 0) or false
    if mlp_only then used.mlp_only_layers = true end
    -- Mixtral has no moe_intermediate_size: its intermediate_size is the experts' width
    c.expert_intermediate_size = first("moe_intermediate_size", "expert_intermediate_size")
    if not c.expert_intermediate_size then
      c.expert_intermediate_size = first("intermediate_size", "ffn_hidden_size")
      if not c.expert_intermediate_size or c.expert_intermediate_size == 0 then
        perf.fail("%s: has %d routed experts but no 'moe_intermediate_size' or 'intermediate_size'",
                  path, experts)
      end
      if has_dense then perf.fail("%s: has dense layers but no 'moe_intermediate_size' for the experts", path) end
    end
    c.num_experts_per_card = first("n_experts_per_card") or experts
    c.num_shared_experts = first("n_shared_experts", "num_shared_experts") or 0
    c.shared_expert_intermediate_size = first("shared_expert_intermediate_size")
      or c.num_shared_experts * c.expert_intermediate_size
    if c.shared_expert_intermediate_size > 0 and c.num_shared_experts == 0 then c.num_shared_experts = 1 end
    -- EP: the powers of two that divide the routed experts, up to 64 ranks
    for _, s in ipairs { 2, 4, 8, 16, 32, 64 } do
      if s <= experts and experts % s == 0 then c.ep_sizes[#c.ep_sizes + 1] = s end
    end
  end
  c.intermediate_size = has_dense and first("intermediate_size", "ffn_hidden_size") or 0
  local why_here = {}
  if not has_dense then
    why_here.intermediate_size = "every layer is MoE (no first_k_dense_replace, mlp_only_layers or sparse step)"
    why_here.ffn_hidden_size = why_here.intermediate_size
  end
  -- unused fields: one line each; shape-free ones summed up
  local unused, skipped = {}, {}
  for k, v in pairs(cfg) do
    if not used[k] then
      if SHAPELESS[k] then skipped[#skipped + 1] = k
      elseif v ~= cjson.null then unused[#unused + 1] = k end
    end
  end
  table.sort(unused)
  table.sort(skipped)
  for _, k in ipairs(unused) do
    local v = cfg[k]
    local shown = type(v) == "table" and jtype(v) or show(v)
    local why = why_here[k] or WHY[k] or (INT[k] and "another field of the same meaning, or the model's layout, decides")
                or "the grid does not know it"
    warn(("warning: %s: field '%s' (%s) is not used: %s"):format(path, k, shown, why))
  end
  if #skipped > 0 then
    warn(("note: %s: %d fields that do not change kernel shapes were skipped (%s)")
         :format(path, #skipped, table.concat(skipped, ", ")))
  end
  local reg = models.registry()
  local known = reg.by_id[models.normalize(name)] or reg.by_key[models.normalize(name)]
  c.model_key = known and known.model_key or models.normalize(name)
  return models.preset(c, path)
end

return M
