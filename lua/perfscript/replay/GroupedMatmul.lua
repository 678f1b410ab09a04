-- GroupedMatmul: torch_npu.npu_grouped_matmul(x=[x], weight=[w], split_item=2, group_list_type=0,
-- group_type=0, group_list=, [scale=[s]], [per_token_scale=[p]], [output_dtype=]).
-- Slots: 0 x, 1 weight, 2 bias (ignored), 3 scale, 7 group_list, 8 per_token_scale. A 5-D
-- FRACTAL_NZ weight (E, n1, k1, k0, n0) is restored to (E, K, N) (perfscript.shape.nz_logical).
local C = require "perfscript.replay.common"

local DT = { DT_FLOAT = "float32", DT_FLOAT16 = "float16", DT_BF16 = "bfloat16", DT_INT8 = "int8",
             DT_INT32 = "int32" }
-- tensor options, read only (C.tensor copies their fields)
local X_OPTS, W_NZ3 = { default_dtype = "DT_BF16" }, { no_nz_expand = true }
local S_OPTS, P_OPTS = { init = "ones", no_nz_expand = true }, { init = "ones" }

-- The checks (check-only and build share them, in build's order): the slots, the weight's
-- options, x's shape and the output dtype (nil when every output dtype is empty).
local function validate(row)
  local sl = C.must(C.slots(row, "in"))
  local out = C.must(C.slots(row, "out"))
  C.need(sl.shapes[2], "GroupedMatmul requires a non-empty weight shape")
  C.need(sl.shapes[1], "GroupedMatmul requires x")
  local xs = C.must(C.tensor_ok(sl, 1, X_OPTS))
  local wopts
  if C.trim(sl.formats[2]) == "FRACTAL_NZ" and #sl.shapes[2] == 3 then wopts = W_NZ3 end
  local wsh = C.must(C.tensor_ok(sl, 2, wopts))
  C.need(#wsh >= 2 and wsh[#wsh - 1] == xs[#xs], "weight %s (logical) disagrees with x %s on K",
    table.concat(wsh, ","), table.concat(xs, ","))
  if sl.shapes[4] then C.must(C.tensor_ok(sl, 4, S_OPTS)) end
  local groups
  if sl.shapes[8] then groups = C.group_list(xs[1], sl.shapes[8][1]) end
  if sl.shapes[9] then C.must(C.tensor_ok(sl, 9, P_OPTS)) end
  local odt
  for _, d in ipairs(out.dtypes) do
    if d ~= "" then
      odt = DT[C.dtype(d)]
      C.need(odt, "unsupported output dtype %s", d)
      break
    end
  end
  return sl, wopts, groups, odt
end

-- one body, no closure per row (the grid asks this of every candidate)
local function body(row)
  local sl, wopts, groups, odt = validate(row)
  local x = C.must(C.tensor(sl, 1, X_OPTS))
  local w = C.must(C.tensor(sl, 2, wopts))
  local kw = { x = { list_of = { x } }, weight = { list_of = { w } }, split_item = 2, group_list_type = 0,
               group_type = 0, group_list = require("cjson").null }
  if sl.shapes[4] then kw.scale = { list_of = { C.must(C.tensor(sl, 4, S_OPTS)) } } end
  if groups then kw.group_list = C.T({ sl.shapes[8][1] }, C.dtype(sl.dtypes[8]), "data", { data = groups }) end
  if sl.shapes[9] then kw.per_token_scale = { list_of = { C.must(C.tensor(sl, 9, P_OPTS)) } } end
  if odt then kw.output_dtype = { torch_attr = odt } end
  return { api = "torch_npu.npu_grouped_matmul", args = {}, kwargs = kw }
end

local function ok(row) validate(row); return true end

-- build(row) and the check-only check(row)
return C.builder(body, ok)
