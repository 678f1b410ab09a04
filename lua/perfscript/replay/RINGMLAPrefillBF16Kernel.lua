-- RINGMLAPrefillBF16Kernel: torch_npu.atb.npu_ring_mla(...) through a list of attempts (the
-- executor keeps the first that works): prefix-state rows try four configurations, first-ring
-- rows one; seqlen candidates are [[q],[kv]] and, for long sequences, the 512-chunk split (D18).
local C = require "perfscript.replay.common"
local shape = require "perfscript.shape"

local M = {}
M.MASK = 512
local NONE = { UNDEFINED = true, DT_UNDEFINED = true, ["N/A"] = true, NA = true, NULL = true }

-- The optional-slot parser (D19): shapes (false for absent tokens), dtypes ("" for absent).
function M.parse(shapes_cell, dtypes_cell)
  local shapes, dtypes = {}, {}
  for i, s in ipairs(C.split(shapes_cell)) do
    if s == "" or NONE[s:upper()] then shapes[i] = false
    else shapes[i] = C.must(shape.parse(s))[1] or false end
  end
  for i, d in ipairs(C.split(dtypes_cell)) do dtypes[i] = (d == "" or NONE[d:upper()]) and "" or d end
  return shapes, dtypes
end

-- Greedy split of total into n chunks of at most size (trailing zeros possible).
function M.chunks(total, n, size)
  local out = {}
  for i = 1, n do
    local c = math.min(size, total)
    out[i] = c
    total = total - c
  end
  return out
end

-- The causal mask: the strict upper triangle is -inf for float16 and 1 otherwise.
function M.mask(dims, dtype)
  return C.T(dims, dtype, "triu", dtype == "DT_FLOAT16" and { value = "-inf" } or nil)
end

function M.build(row)
  return C.guard(function()
    local S, D = M.parse(row["Input Shapes"], row["Input Data Types"])
    local OS, OD = M.parse(row["Output Shapes"], row["Output Data Types"])
    local F = C.split(row["Input Formats"])
    C.need(#S >= 5, "expects at least 5 input slots")
    for i = 1, 5 do C.need(S[i], "input slot %d is empty", i) end
    local sl = { shapes = S, dtypes = D, formats = F, n = #S }
    local main = C.must(C.tensors(sl, { 1, 2, 3, 4, 5 }))
    local qn, qr = S[1], S[2]
    local d0 = C.dtype(D[1])
    local pre, lse = S[14], S[15]
    local out_shape = OS[1] or pre
    C.need(out_shape, "no output shape (neither output 0 nor pre_out)")
    local lse_shape = OS[2] or lse or { qn[2], qn[1] }
    local mask_shape = S[6] or { M.MASK, M.MASK }
    local q_len, kv_len = qn[1], S[3][1]
    local common = { q_nope = main[1], q_rope = main[2], k_nope = main[3], k_rope = main[4], value = main[5],
      head_num = qn[2], kv_head_num = qn[2], qk_scale = 1 / math.sqrt(qn[#qn] + qr[#qr]),
      kernel_type = "kernel_type_high_precision", input_layout = "type_bsnd" }
    local null = require("cjson").null
    local seqlens = { { { q_len }, { kv_len } } }
    local chunks = math.max(-(-q_len // M.MASK), -(-kv_len // M.MASK))
    if chunks > 1 then seqlens[2] = { M.chunks(q_len, chunks, M.MASK), M.chunks(kv_len, chunks, M.MASK) } end
    local function case(name, extra, seq)
      local kw = {}
      for k, v in pairs(common) do kw[k] = v end
      for k, v in pairs(extra) do kw[k] = v end
      local flat = {}
      local dims
      if type(seq[1]) == "table" then
        for _, part in ipairs(seq) do for _, v in ipairs(part) do flat[#flat + 1] = v end end
        dims = { #seq, #seq[1] }
      else
        flat, dims = seq, { #seq }
      end
      kw.seqlen = C.T(dims, "DT_INT32", "data", { data = flat, host = true })
      return { name = name, api = "torch_npu.atb.npu_ring_mla", args = {}, kwargs = kw }
    end
    local attempts = {}
    if pre and lse then
      local od = C.first_nonblank(OD[1], D[14], D[1])
      local ld = C.first_nonblank(OD[2], D[15], "DT_FLOAT")
      local pre_t = C.T(pre, C.dtype(D[14] ~= "" and D[14] or D[1]), "empty")
      local lse_t = C.T(lse, C.dtype(D[15] ~= "" and D[15] or "DT_FLOAT"), "empty")
      local fresh_o, fresh_l = C.T(out_shape, C.dtype(od), "empty"), C.T(lse_shape, C.dtype(ld), "empty")
      local mask = M.mask(mask_shape, d0)
      local mask3 = M.mask({ 1, M.MASK, M.MASK }, d0)
      local configs = {
        { "default_nomask_alias_2d", "no_mask", mask, pre_t, lse_t },
        { "default_nomask_separate_2d", "no_mask", mask, fresh_o, fresh_l },
        { "default_triu_alias_3d", "mask_type_triu", mask3, pre_t, lse_t },
        { "default_triu_separate_3d", "mask_type_triu", mask3, fresh_o, fresh_l },
      }
      for _, cfg in ipairs(configs) do
        for si, seq in ipairs(seqlens) do
          attempts[#attempts + 1] = case(cfg[1] .. " seqlen=" .. si, { mask_type = cfg[2], mask = cfg[3],
            calc_type = "calc_type_default", pre_out = pre_t, prev_lse = lse_t, output = cfg[4],
            softmax_lse = cfg[5] }, seq)
        end
      end
    else
      local od = C.first_nonblank(OD[1], D[1])
      local md = C.dtype(C.first_nonblank(D[6], D[1]))
      attempts[1] = case("first_ring", { mask_type = "mask_type_triu", mask = M.mask(mask_shape, md),
        calc_type = "calc_type_first_ring", pre_out = null, prev_lse = null,
        output = C.T(out_shape, C.dtype(od), "empty"),
        softmax_lse = C.T(lse_shape, C.dtype(C.first_nonblank(OD[2], "DT_FLOAT")), "empty") }, { q_len })
    end
    return { attempts = attempts }
  end)
end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
