-- The consumer's compute exact match (docs/rules.md, Lookups), one input at a time, so
-- that explain can say which input failed and why: dtype check (exact, or the FLOAT group for
-- the kernels that relax it), then the first shape rule that holds.
local M = {}
local C = require "perfscript.table"  -- the input rules' home (src/schema/lookup_key.c)

local function set(list) local s = {}; for _, v in ipairs(list) do s[v] = true end; return s end

M.MATMUL = set { "MatMulV2", "MatMulV3", "MatMulCommon", "MatMul", "QuantBatchMatmulV3",
                 "BatchMatMulV2", "TransposeBatchMatMul", "GroupedMatmul", "GroupedMatmulSwigluQuant" }
M.FLATTEN_3D = set { "AscendQuantV2", "DynamicQuant", "RmsNorm", "AddRmsNormBias", "AddRmsNorm",
                     "DispatchFFNCombine" }
M.MERGE_LAST = set { "AscendQuantV2", "DynamicQuant" }
M.FLOAT_GROUP = set { "ApplyRotaryPosEmb", "_triton_rope", "split_qkv_rmsnorm_rope_kernel", "MatMulV2",
                      "PadV3", "PadV3AiCore", "MoeGatingTopK" }
M.ROPE = set { "ApplyRotaryPosEmb", "_triton_rope", "split_qkv_rmsnorm_rope_kernel" }
M.SWIGLU = set { "SwiGlu" }
M.RESHAPE_AND_CACHE = set { "ReshapeAndCacheNdKernel", "reshape_and_cache_200000000" }
-- kernels whose equally good candidates must agree (query_selection_policy, v0.18)
M.SEMANTIC_UNIQUE = set { "FusedInferAttentionScore", "SparseFlashAttention", "LightningIndexer",
                          "KvRmsNormRopeCache" }

-- TC dtype names as the consumer maps them (fp16 is treated as BF16).
M.DTYPE_MAP = { bfloat16 = "DT_BF16", float16 = "DT_BF16", int8 = "INT8", int32 = "INT32",
                int64 = "INT64", float32 = "FLOAT", bool = "BOOL", bf16 = "DT_BF16",
                fp16 = "DT_BF16", fp32 = "FLOAT" }

function M.dtype(name)
  local m = M.DTYPE_MAP[name]
  if m then return m end
  if name:find("[%s.]") then name = name:gsub("^%s+", ""):gsub("%s+$", ""):gsub("^torch%.", "") end
  return M.DTYPE_MAP[name] or name
end

local function group(kernel, d)
  if M.FLOAT_GROUP[kernel] and (d == "DT_BF16" or d == "FLOAT") then return "FLOAT_GROUP" end
  return d
end

-- "128,4096;4096" (canonical text) -> {{128, 4096}, {4096}}; "()" -> {scalar = true}
function M.parse(text)
  local slots = {}
  for slot in text:gmatch("[^;]+") do
    if slot == "()" then
      slots[#slots + 1] = { scalar = true }
    else
      local dims = {}
      for d in slot:gmatch("[^,]+") do dims[#dims + 1] = math.tointeger(tonumber(d)) end
      slots[#slots + 1] = dims
    end
  end
  return slots
end

function M.format_shape(dims)
  if dims.scalar then return "()" end
  return "(" .. table.concat(dims, ",") .. ")"
end

function M.list(text)
  local parts = {}
  for p in text:gmatch("[^;]+") do
    if p:find('[%s"]') then p = p:gsub('^[%s"]+', ""):gsub('[%s"]+$', "") end
    if p ~= "" then parts[#parts + 1] = p end
  end
  return parts
end

local function eq(a, b)
  if a.scalar or b.scalar then return a.scalar == b.scalar end
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

function M.strip1(s)
  if s.scalar or #s <= 1 or s[1] ~= 1 then return s end
  return table.move(s, 2, #s, 1, {})
end

-- tc is the csv dimension block-padded (TC is the padded side): by 16, 32 or 64, or by 8 from
-- 64 up (ps_lookup_padded).
M.padded = C.padded

-- Every dimension of tc equal to csv's or block-padded from it, at least one padded.
local dims_padded = C.pads
M.pads = dims_padded

-- Two attention T values answer each other when equal or block-padded either way
-- (docs/rules.md, Lookups).
function M.t_compatible(a, b)
  return a == b or M.padded(a, b) or M.padded(b, a)
end

local function out_hits(tg, csv, cs)
  return eq(tg, csv) or eq(tg, cs) or dims_padded(tg, csv) or dims_padded(tg, cs)
end

-- The elementwise output rule (docs/rules.md, Lookups): does a row whose first output is `csv`
-- answer a query whose first output is `target` (leading 1 already stripped)? Equal (stripped
-- or not), block-padded, or a 3-D target flattened to (B*M, D). The grid asks it for every
-- accepted row, so it is one function without the wording.
function M.out_answers(target, csv)
  local cs = M.strip1(csv)
  if out_hits(target, csv, cs) then return true end
  if target.scalar or csv.scalar or #target ~= 3 or #csv ~= 2 then return false end
  return out_hits({ target[1] * target[2], target[3] }, csv, cs)
end

-- The same rule, worded for a lookup's explanation: "" (equal), ", padded", ", flattened to
-- 2-D", or nil.
function M.out_rule(target, csv)
  if not M.out_answers(target, csv) then return nil end
  local cs = M.strip1(csv)
  if eq(target, csv) or eq(target, cs) then return "" end
  if dims_padded(target, csv) or dims_padded(target, cs) then return ", padded" end
  return ", flattened to 2-D"
end

-- The kind bits of a kernel for the input rules (which of them apply to it).
local kinds = {}
function M.kind(kernel)
  local k = kinds[kernel]
  if not k then
    k = (M.MATMUL[kernel] and C.KIND_MATMUL or 0) | (M.FLATTEN_3D[kernel] and C.KIND_FLATTEN_3D or 0) |
        (M.MERGE_LAST[kernel] and C.KIND_MERGE_LAST or 0) | (kernel == "Index" and C.KIND_INDEX or 0)
    kinds[kernel] = k
  end
  return k
end

-- The rule that makes TC input i (1-based) match the row's shape, or nil: the consumer's
-- _inputs_match conditions in its order (the stripped TC shape against the row's shape for
-- the transposes and padding; a 3-D stripped or unstripped TC shape for flatten and merge):
-- identity, batch_strip, singleton_axis_transpose (Index), transpose and batched_transpose
-- (matmul inputs 2..), padding, batch_strip+padding, flatten_3d(+padding), merge_last_dims
-- (+padding). One home in C (ps_lookup_rule), which the slot search also filters with.
local crule = C.rule
function M.rule(kernel, i, tc, csv)
  return crule(kinds[kernel] or M.kind(kernel), i, tc, csv)
end

-- The rule the consumer reports after input rule r, given the rule so far: padding only
-- upgrades identity, batch_strip+padding only identity or batch_strip, every other non-identity
-- rule overwrites. The distance comes from the final name only, so a padded input followed (or
-- preceded) by a transpose or a batch strip counts as distance 0 (as the consumer reports it).
M.fold = C.fold

local function copy(x) return table.move(x, 1, #x, 1, {}) end

-- The consumer's rewrite of a TC query for a row with ncsv input slots (_inputs_match): RoPE
-- swaps Q and K, (B,H,S,D) -> (B,S,H,D) and cos/sin (1,S,D) -> (1,S,1,D) (only Q, K, cos, sin
-- are kept); SwiGlu's gate and up become one (..., X+Y) input for a one-slot row;
-- ReshapeAndCache's key, value (N,D), kv_cache (2,...) and slots become key, value (N,1,D),
-- cache_k, cache_v and slots for a five-slot row. Other queries are returned as they are.
function M.normalize(kernel, q, ncsv)
  local s, d = q.shapes, q.dtypes
  if M.ROPE[kernel] and #s >= 2 and ncsv >= 2 then
    local function tr(x) return (not x.scalar and #x == 4) and { x[1], x[3], x[2], x[4] } or x end
    local out, od = { tr(s[2]), tr(s[1]) }, d and { d[2], d[1] }
    if #s >= 4 then
      for j = 3, 4 do
        local c = s[j]
        out[j] = (not c.scalar and #c == 3) and { c[1], c[2], 1, c[3] } or c
        if od then od[j] = d[j] end
      end
    end
    return { shapes = out, dtypes = od }
  end
  if M.SWIGLU[kernel] and #s == 2 and ncsv == 1 then
    local a, b = M.strip1(s[1]), M.strip1(s[2])
    if not a.scalar and not b.scalar and #a == #b and #a >= 1 and (not d or d[1] == d[2]) then
      for j = 1, #a - 1 do if a[j] ~= b[j] then return q end end
      local m = copy(a)
      m[#m] = a[#a] + b[#b]
      return { shapes = { m }, dtypes = d and { d[1] } }
    end
    return q
  end
  if M.RESHAPE_AND_CACHE[kernel] and #s == 4 and ncsv == 5 then
    local k, v, c = s[1], s[2], s[3]
    if not k.scalar and not v.scalar and not c.scalar and #k == 2 and #v == 2 and #c >= 2 and c[1] == 2 then
      local cs = table.move(c, 2, #c, 1, {})
      return { shapes = { { k[1], 1, k[2] }, { v[1], 1, v[2] }, cs, cs, s[4] },
               dtypes = d and { d[1], d[2], d[3], d[3], d[4] } }
    end
  end
  return q
end

-- The inverse for a row's own inputs: the TC query whose rewrite gives them (RoPE and
-- ReshapeAndCache; the others are their own TC form). shapes, dtypes -> shapes, dtypes.
function M.tc_layout(kernel, shapes, dtypes)
  dtypes = dtypes or {}
  if M.ROPE[kernel] and #shapes >= 2 then
    local function back(x) return (not x.scalar and #x == 4) and { x[1], x[3], x[2], x[4] } or x end
    local s, d = { back(shapes[2]), back(shapes[1]) }, { dtypes[2], dtypes[1] }
    for j = 3, math.min(4, #shapes) do
      local c = shapes[j]
      s[j] = (not c.scalar and #c == 4 and c[3] == 1) and { c[1], c[2], c[4] } or c
      d[j] = dtypes[j]
    end
    for j = 5, #shapes do s[j], d[j] = shapes[j], dtypes[j] end
    return s, d
  end
  if M.RESHAPE_AND_CACHE[kernel] and #shapes == 5 then
    local k, v, ck, cv = shapes[1], shapes[2], shapes[3], shapes[4]
    if not k.scalar and not v.scalar and #k == 3 and k[2] == 1 and #v == 3 and v[2] == 1 and
       M.shapes_text({ ck }) == M.shapes_text({ cv }) and not ck.scalar then
      local c2 = { 2 }
      for _, x in ipairs(ck) do c2[#c2 + 1] = x end
      return { { k[1], k[3] }, { v[1], v[3] }, c2, shapes[5] }, { dtypes[1], dtypes[2], dtypes[3], dtypes[5] }
    end
  end
  return shapes, dtypes
end

-- Matches a query {shapes = {...}, dtypes = {...} | nil} against a row's parsed inputs.
-- Returns {distance, rule, rules} or nil, "input i: why" (the first input that failed).
-- quiet: no reason text for a failed row (a lookup without explain makes no use of it).
function M.row(kernel, q, shapes, dtypes, quiet)
  q = M.normalize(kernel, q, #shapes)
  if #shapes ~= #q.shapes then
    return nil, not quiet and string.format("input count: row has %d, query has %d", #shapes, #q.shapes) or "no match"
  end
  local rule, rules = "identity", {}
  for i = 1, #shapes do
    if q.dtypes then
      local a, b = q.dtypes[i], dtypes[i]
      if a == nil or b == nil or group(kernel, a) ~= group(kernel, b) then
        return nil, not quiet and string.format("input %d: dtype %s, row has %s", i, a or "none", b or "none") or "no match"
      end
    end
    local r = M.rule(kernel, i, q.shapes[i], shapes[i])
    if not r then
      if quiet then return nil, "no match" end
      return nil, string.format("input %d: shape %s vs row %s: no rule", i, M.format_shape(q.shapes[i]),
                                M.format_shape(shapes[i]))
    end
    rules[i] = r
    rule = M.fold(rule, r)
  end
  return { distance = rule:find("padding", 1, true) and 1 or 0, rule = rule, rules = rules }
end

-- Query shapes whose index key can find rows matched by distance-0 rules other than
-- batch_strip: transposed matmul weights and flattened 3-D activations (the query first; one
-- home in C, ps_lookup_variants, which the C exact match keys with).
function M.variants(kernel, shapes)
  return C.variants(kinds[kernel] or M.kind(kernel), shapes)
end

-- The shapes a row's slot j has when TC input j (1-based) matches it by a rule that keeps its
-- size and is not identity (batch strip, transpose, batched transpose, singleton transpose,
-- flatten, merge): a distance-0 match the index keys miss has such a slot (match.fold). One
-- home in C (ps_lookup_slot_variants).
function M.slot_variants(kernel, j, tc)
  return C.slot_variants(kinds[kernel] or M.kind(kernel), j, tc)
end

function M.shapes_text(shapes)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = s.scalar and "()" or table.concat(s, ",") end
  return table.concat(parts, ";")
end

return M
