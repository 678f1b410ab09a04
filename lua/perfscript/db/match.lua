-- The consumer's compute exact match (spec database_consumer.md 2.3), one input at a time, so
-- that explain can say which input failed and why: dtype check (exact, or the FLOAT group for
-- the kernels that relax it), then the first shape rule that holds.
local M = {}

local function set(list) local s = {}; for _, v in ipairs(list) do s[v] = true end; return s end

M.MATMUL = set { "MatMulV2", "MatMulV3", "MatMulCommon", "MatMul", "QuantBatchMatmulV3",
                 "BatchMatMulV2", "TransposeBatchMatMul", "GroupedMatmul", "GroupedMatmulSwigluQuant" }
M.FLATTEN_3D = set { "AscendQuantV2", "DynamicQuant", "RmsNorm", "AddRmsNormBias", "AddRmsNorm",
                     "DispatchFFNCombine" }
M.MERGE_LAST = set { "AscendQuantV2", "DynamicQuant" }
M.FLOAT_GROUP = set { "ApplyRotaryPosEmb", "_triton_rope", "split_qkv_rmsnorm_rope_kernel", "MatMulV2",
                      "PadV3", "PadV3AiCore", "MoeGatingTopK" }
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

-- tc is the csv dimension block-padded (TC is the padded side).
function M.padded(tc, csv)
  if tc <= csv then return false end
  for _, b in ipairs { 16, 32, 64 } do
    if tc == (csv + b - 1) // b * b then return true end
  end
  return csv >= 64 and tc == (csv + 7) // 8 * 8
end

local function dims_padded(tc, csv)
  if tc.scalar or csv.scalar or #tc ~= #csv then return false end
  local any = false
  for i = 1, #tc do
    if tc[i] ~= csv[i] then
      if not M.padded(tc[i], csv[i]) then return false end
      any = true
    end
  end
  return any
end

-- The rule that makes TC input i (1-based) match the row's shape, or nil.
function M.rule(kernel, i, tc, csv)
  if eq(tc, csv) then return "identity" end
  local st, sc = M.strip1(tc), M.strip1(csv)
  if eq(st, sc) or eq(st, csv) then return "batch_strip" end
  if tc.scalar or csv.scalar then return nil end
  if kernel == "Index" and #tc == 2 and #csv == 2 and tc[1] == 1 and csv[2] == 1 and csv[1] == tc[2] then
    return "singleton_axis_transpose"
  end
  if M.MATMUL[kernel] and i >= 2 then
    if #csv == 2 and #st == 2 and st[1] == csv[2] and st[2] == csv[1] then return "transpose" end
    if #csv == 3 and #tc == 3 and tc[1] == csv[1] and tc[2] == csv[3] and tc[3] == csv[2] then
      return "batched_transpose"
    end
  end
  if dims_padded(tc, csv) then return "padding" end
  if dims_padded(st, sc) then return "batch_strip+padding" end
  if #tc == 3 and #csv == 2 then
    if M.FLATTEN_3D[kernel] then
      local f = { tc[1] * tc[2], tc[3] }
      if eq(f, csv) then return "flatten_3d" end
      if dims_padded(f, csv) then return "flatten_3d+padding" end
    end
    if M.MERGE_LAST[kernel] then
      local f = { tc[1], tc[2] * tc[3] }
      if eq(f, csv) then return "merge_last_dims" end
      if dims_padded(f, csv) then return "merge_last_dims+padding" end
    end
  end
  return nil
end

-- Matches a query {shapes = {...}, dtypes = {...} | nil} against a row's parsed inputs.
-- Returns {distance, rule, rules} or nil, "input i: why" (the first input that failed).
function M.row(kernel, q, shapes, dtypes)
  if #shapes ~= #q.shapes then
    return nil, string.format("input count: row has %d, query has %d", #shapes, #q.shapes)
  end
  local distance, rule, rules = 0, "identity", {}
  for i = 1, #shapes do
    if q.dtypes then
      local a, b = q.dtypes[i], dtypes[i]
      if a == nil or b == nil or group(kernel, a) ~= group(kernel, b) then
        return nil, string.format("input %d: dtype %s, row has %s", i, a or "none", b or "none")
      end
    end
    local r = M.rule(kernel, i, q.shapes[i], shapes[i])
    if not r then
      return nil, string.format("input %d: shape %s vs row %s: no rule", i, M.format_shape(q.shapes[i]),
                                M.format_shape(shapes[i]))
    end
    rules[i] = r
    if r:find("padding", 1, true) then distance = 1 end
    if r ~= "identity" then rule = r end  -- the consumer reports the last upgrade
  end
  return { distance = distance, rule = rule, rules = rules }
end

-- Query shapes whose index key can find rows matched by distance-0 rules other than
-- batch_strip: transposed matmul weights and flattened 3-D activations.
function M.variants(kernel, shapes)
  local out = { shapes }
  if M.MATMUL[kernel] then
    for i = 2, #shapes do
      local s = M.strip1(shapes[i])
      if not s.scalar and (#s == 2 or #s == 3) then
        local v = table.move(shapes, 1, #shapes, 1, {})
        local t = table.move(s, 1, #s, 1, {})
        t[#t - 1], t[#t] = t[#t], t[#t - 1]
        v[i] = t
        out[#out + 1] = v
      end
    end
  end
  for i = 1, #shapes do
    local s = shapes[i]
    if not s.scalar and #s == 3 then
      if M.FLATTEN_3D[kernel] then
        local v = table.move(shapes, 1, #shapes, 1, {})
        v[i] = { s[1] * s[2], s[3] }
        out[#out + 1] = v
      end
      if M.MERGE_LAST[kernel] then
        local v = table.move(shapes, 1, #shapes, 1, {})
        v[i] = { s[1], s[2] * s[3] }
        out[#out + 1] = v
      end
    end
  end
  return out
end

function M.shapes_text(shapes)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = s.scalar and "()" or table.concat(s, ",") end
  return table.concat(parts, ";")
end

return M
