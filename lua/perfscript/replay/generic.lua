-- Generic replay builders, as data: a kernel whose replay is one torch call on tensors of the
-- row's own shapes and dtypes is a line in M.TABLE, not a file (perfscript/replay/registry.lua
-- looks kernels up here after the per-kernel files).
--   { api, n = inputs, args = extra positional args, kwargs = ..., method = true (api is a
--     tensor method on the first input), out_dtype = true (append the output dtype),
--     divisor = true (the second input is built as ones: random integers hold zeros) }
local C = require "perfscript.replay.common"

local M = {}

local TORCH_DT = { DT_FLOAT = "float32", DT_FLOAT16 = "float16", DT_BF16 = "bfloat16", DT_DOUBLE = "float64",
  DT_INT8 = "int8", DT_UINT8 = "uint8", DT_INT16 = "int16", DT_INT32 = "int32", DT_INT64 = "int64", DT_BOOL = "bool" }
M.TORCH_DT = TORCH_DT

local function bin(api) return { api = api, n = 2 } end
local function div(api) return { api = api, n = 2, divisor = true } end
local function un(api, extra) local s = extra or {}; s.api = api; s.n = 1; return s end

M.TABLE = {
  -- elementwise, two inputs (broadcasting as recorded)
  Sub = bin "torch.sub", Mul = bin "torch.mul", RealDiv = div "torch.div", Div = div "torch.div",
  Equal = bin "torch.eq", NotEqual = bin "torch.ne", GreaterEqual = bin "torch.ge", Greater = bin "torch.gt",
  Less = bin "torch.lt", LessEqual = bin "torch.le", LogicalAnd = bin "torch.logical_and",
  LogicalOr = bin "torch.logical_or", FloorDiv = div "torch.floor_divide", FloorMod = div "torch.remainder",
  Maximum = bin "torch.maximum", Minimum = bin "torch.minimum", Pow = bin "torch.pow",
  -- elementwise, one input
  Neg = un "torch.neg", Log = un "torch.log", Exp = un "torch.exp", Sqrt = un "torch.sqrt",
  Rsqrt = un "torch.rsqrt", Abs = un "torch.abs", Sigmoid = un "torch.sigmoid", Tanh = un "torch.tanh",
  LogicalNot = un "torch.logical_not", ZerosLike = un "torch.zeros_like", OnesLike = un "torch.ones_like",
  Muls = un("torch.mul", { args = { 2.0 } }), Adds = un("torch.add", { args = { 1.0 } }),
  Cumsum = un("torch.cumsum", { kwargs = { dim = -1 } }),
  Fill = un("fill_", { method = true, args = { 1.0 } }),
  Cast = un("to", { method = true, out_dtype = true }),
  -- norms: x1, x2, gamma (the default epsilon)
  AddRmsNorm = { api = "torch_npu.npu_add_rms_norm", n = 3, args = { 1e-6 } },
  InplaceAddRmsNorm = { api = "torch_npu.npu_add_rms_norm", n = 3, args = { 1e-6 } },
}

-- The builder of spec s.
function M.builder(s)
  return function(row)
    return C.guard(function()
      local sl = C.must(C.slots(row, "in"))
      local idx = C.present(sl)
      C.need(#idx == s.n, "expects exactly %d input(s), got %d", s.n, #idx)
      local args = C.must(C.tensors(sl, idx, s.divisor and { [idx[2]] = { init = "ones" } } or nil))
      for _, a in ipairs(s.args or {}) do args[#args + 1] = a end
      if s.out_dtype then
        local out = C.must(C.slots(row, "out"))
        local o = C.present(out)
        C.need(#o == 1, "expects exactly one output, got %d", #o)
        local dt = C.dtype(out.dtypes[o[1]] or "")
        C.need(TORCH_DT[dt], "unsupported output dtype %s", dt)
        args[#args + 1] = { torch_attr = TORCH_DT[dt] }
      end
      if s.method then return { method = s.api, args = args, kwargs = s.kwargs } end
      return { api = s.api, args = args, kwargs = s.kwargs }
    end)
  end
end

return M
