-- AscendQuantV2: torch_npu.npu_quantize(x, scale, offset|None, qdtype, -1, False), qdtype from
-- the output dtype (DT_INT8 qint8, DT_UINT8 quint8, DT_INT32 int32, DT_INT4 quint4x2).
local C = require "perfscript.replay.common"
local QDTYPE = { DT_INT8 = "qint8", DT_UINT8 = "quint8", DT_INT32 = "int32", DT_INT4 = "quint4x2" }

return function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local out = C.must(C.slots(row, "out"))
    local idx = C.present(sl)
    C.need(#idx >= 2, "AscendQuantV2 needs x and scale")
    local ods = {}
    for _, d in ipairs(out.dtypes) do if d ~= "" then ods[#ods + 1] = d end end
    C.need(#ods == 1, "expects exactly one output dtype")
    local q = QDTYPE[C.dtype(ods[1])]
    C.need(q, "unsupported quantized output dtype %s", ods[1])
    local t = C.must(C.tensors(sl, idx))
    return { api = "torch_npu.npu_quantize",
      args = { t[1], t[2], t[3] or require("cjson").null, { torch_attr = q }, -1, false } }
  end)
end
