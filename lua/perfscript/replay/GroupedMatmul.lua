-- GroupedMatmul: torch_npu.npu_grouped_matmul(x=[x], weight=[w], split_item=2, group_list_type=0,
-- group_type=0, group_list=, [scale=[s]], [per_token_scale=[p]], [output_dtype=]).
-- Slots: 0 x, 1 weight, 2 bias (ignored), 3 scale, 7 group_list, 8 per_token_scale. A 5-D
-- FRACTAL_NZ weight (E, n1, k1, k0, n0) is restored to (E, K, N) (perfscript.shape.nz_logical).
local C = require "perfscript.replay.common"

local DT = { DT_FLOAT = "float32", DT_FLOAT16 = "float16", DT_BF16 = "bfloat16", DT_INT8 = "int8",
             DT_INT32 = "int32" }

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    C.need(sl.shapes[2], "GroupedMatmul requires a non-empty weight shape")
    C.need(sl.shapes[1], "GroupedMatmul requires x")
    local x = C.must(C.tensor(sl, 1, { default_dtype = "DT_BF16" }))
    local w
    if C.trim(sl.formats[2]) == "FRACTAL_NZ" and #sl.shapes[2] == 3 then
      w = C.must(C.tensor(sl, 2, { no_nz_expand = true }))
    else
      w = C.must(C.tensor(sl, 2))
    end
    local xs, wsh = x.tensor.shape, w.tensor.shape
    C.need(#wsh >= 2 and wsh[#wsh - 1] == xs[#xs], "weight %s (logical) disagrees with x %s on K",
      table.concat(wsh, ","), table.concat(xs, ","))
    local kw = { x = { list_of = { x } }, weight = { list_of = { w } }, split_item = 2, group_list_type = 0,
                 group_type = 0, group_list = require("cjson").null }
    if sl.shapes[4] then
      local s = C.must(C.tensor(sl, 4, { init = "ones", no_nz_expand = true }))
      kw.scale = { list_of = { s } }
    end
    if sl.shapes[8] then
      local g = sl.shapes[8][1]
      kw.group_list = C.T({ g }, C.dtype(sl.dtypes[8]), "data", { data = C.group_list(x.tensor.shape[1], g) })
    end
    if sl.shapes[9] then kw.per_token_scale = { list_of = { C.must(C.tensor(sl, 9, { init = "ones" })) } } end
    for _, d in ipairs(out.dtypes) do
      if d ~= "" then
        local t = DT[C.dtype(d)]
        C.need(t, "unsupported output dtype %s", d)
        kw.output_dtype = { torch_attr = t }
        break
      end
    end
    return { api = "torch_npu.npu_grouped_matmul", args = {}, kwargs = kw }
  end)
end
