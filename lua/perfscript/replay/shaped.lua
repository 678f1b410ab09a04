-- Builders whose call arguments come from the recorded input and output shapes (one torch
-- call each): BroadcastTo, Tile, ConcatD, AsStrided, ReduceSum, Pack. Looked up by
-- perfscript/replay/registry.lua.
local C = require "perfscript.replay.common"

local M = {}

local function io(row)
  local sl = C.must(C.slots(row, "in"))
  local out = C.must(C.slots(row, "out"))
  C.need(sl.shapes[1], "input slot 1 has no shape")
  local o = out.shapes[C.present(out)[1] or 1]
  C.need(o, "no output shape")
  return sl, o
end

-- BroadcastTo: torch.broadcast_to(x, out).contiguous() (slot 2, the shape tensor, is implied).
M.BroadcastTo = function(row)
  return C.guard(function()
    local sl, o = io(row)
    local x = sl.shapes[1]
    C.need(#x <= #o, "input rank %d exceeds output rank %d", #x, #o)
    for k = 0, #x - 1 do
      local a, b = x[#x - k], o[#o - k]
      C.need(a == b or a == 1, "input %s does not broadcast to %s", table.concat(x, ","), table.concat(o, ","))
    end
    return { api = "torch.broadcast_to", args = { C.must(C.tensor(sl, 1)), o }, post = "contiguous" }
  end)
end

-- Tile: x.repeat(out / in per dim).
M.Tile = function(row)
  return C.guard(function()
    local sl, o = io(row)
    local x = sl.shapes[1]
    C.need(#x == #o, "input and output ranks differ (%d, %d)", #x, #o)
    local reps = {}
    for i = 1, #x do
      C.need(x[i] > 0 and o[i] % x[i] == 0, "output dim %d (%d) is not a multiple of the input's (%d)", i, o[i], x[i])
      reps[i] = o[i] // x[i]
    end
    return { method = "repeat", args = { C.must(C.tensor(sl, 1)), reps } }
  end)
end

-- ConcatD: torch.cat(inputs, dim) with dim the axis where the inputs add up to the output.
M.ConcatD = function(row)
  return C.guard(function()
    local sl, o = io(row)
    local idx = C.present(sl)
    C.need(#idx >= 1, "no inputs")
    local dim
    for d = 1, #o do
      local sum = 0
      for _, i in ipairs(idx) do
        C.need(#sl.shapes[i] == #o, "input %d has rank %d, the output %d", i, #sl.shapes[i], #o)
        sum = sum + sl.shapes[i][d]
      end
      if sum == o[d] and (#idx > 1 or dim == nil) then dim = dim or d - 1 end
    end
    C.need(dim, "no axis where the inputs add up to the output")
    return { api = "torch.cat", args = { { list_of = C.must(C.tensors(sl, idx)) } }, kwargs = { dim = dim } }
  end)
end

-- Pack: torch.stack(inputs, dim=0).
M.Pack = function(row)
  return C.guard(function()
    local sl = C.must(C.slots(row, "in"))
    local idx = C.present(sl)
    C.need(#idx >= 1, "no inputs")
    return { api = "torch.stack", args = { { list_of = C.must(C.tensors(sl, idx)) } }, kwargs = { dim = 0 } }
  end)
end

-- AsStrided: torch.as_strided(x, out, contiguous strides of out).contiguous(); x holds enough
-- elements (slots 2-4, the size, stride and offset tensors, are implied).
M.AsStrided = function(row)
  return C.guard(function()
    local sl, o = io(row)
    local strides, s = {}, 1
    for i = #o, 1, -1 do strides[i] = s; s = s * o[i] end
    C.need(C.numel(sl.shapes[1]) >= s, "input has %d elements, the view needs %d", C.numel(sl.shapes[1]), s)
    return { api = "torch.as_strided", args = { C.must(C.tensor(sl, 1)), o, strides }, post = "contiguous" }
  end)
end

-- ReduceSum: torch.sum over the axes the output drops (size 1 in the output, or missing at
-- the end); an output equal to its input reduced an axis of size 1, built as a trailing 1.
M.ReduceSum = function(row)
  return C.guard(function()
    local sl, o = io(row)
    local x = sl.shapes[1]
    local dims = {}
    if #o == #x then
      for i = 1, #x do
        if o[i] ~= x[i] then
          C.need(o[i] == 1, "output dim %d (%d) is neither the input's (%d) nor 1", i, o[i], x[i])
          dims[#dims + 1] = i - 1
        end
      end
    else
      C.need(#o < #x, "output rank %d exceeds the input's %d", #o, #x)
      for i = 1, #o do C.need(o[i] == x[i], "output %s is not a prefix of input %s", table.concat(o, ","), table.concat(x, ",")) end
      for i = #o + 1, #x do dims[#dims + 1] = i - 1 end
    end
    local t = C.must(C.tensor(sl, 1))
    if #dims == 0 then
      local d = table.move(x, 1, #x, 1, {})
      d[#d + 1] = 1
      t.tensor.shape = d
      dims = { #x }
    end
    return { api = "torch.sum", args = { t, dims }, kwargs = { keepdim = #o == #x and #dims > 0 and o[dims[1] + 1] == 1 } }
  end)
end

return M
