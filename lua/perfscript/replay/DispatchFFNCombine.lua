-- DispatchFFNCombine: torch.ops._C_ascend.dispatch_ffn_combine(x=, weight1=[w1], weight2=[w2],
-- expert_idx=, scale1=[s1], scale2=[s2], probs=, group=<HCCL group>, max_output_size=, out=,
-- expert_token_nums=) on ep_size ranks (the executor starts them with torchrun: distributed =
-- {ep_size = n}, n the row's EP Size). 7 input and 2 output slots (w1 (E,H,I), w2 (E,I/2,H));
-- balanced expert ids; scales 1.0 as float32 for int8 weights (the Python original compared the
-- wrong spelling and never took that branch).
local C = require "perfscript.replay.common"
local num = require "perfscript.num"

local M = {}

-- Balanced expert ids (T x topk, row-major) for E experts over EP ranks.
function M.balanced_ids(T, topk, E, EP)
  local ids = {}
  local L = (EP > 1 and E % EP == 0) and E // EP or nil
  for s = 0, T * topk - 1 do
    ids[#ids + 1] = L and ((s % EP) * L + (s // EP) % L) or s % E
  end
  return ids
end

local function same(a, b) return table.concat(a, ",") == table.concat(b, ",") end

-- The checks (check-only and build share them), in build's order: the row's EP size, slots
-- and dimensions.
local NZ = { no_nz_expand = true }
local NZ_OPTS = { [2] = NZ, [3] = NZ }
local function validate(row, ctx)
  -- the row's own EP Size; the run's --dispatch-ffn-combine-ep-size where it records none
  local cell = C.trim(row["EP Size"] or "")
  local ep = num.int(cell)
  C.need(cell == "" or (ep and ep >= 1), "EP Size %q is not a positive integer", cell)
  ep = ep or (ctx and ctx.ep_size) or 16
  local sl = C.must(C.slots(row, "in"))
  local out = C.must(C.slots(row, "out"))
  C.need(sl.n == 7 and #sl.dtypes == 7 and #sl.formats == 7, "expects seven input metadata slots (got %d)", sl.n)
  C.need(out.n == 2 and #out.dtypes == 2 and #out.formats == 2, "expects two output metadata slots")
  for i = 1, 7 do C.need(sl.shapes[i], "input slot %d has an empty shape", i) end
  for i = 1, 2 do C.need(out.shapes[i], "output slot %d has an empty shape", i) end
  local x, w1, w2, ei, probs = sl.shapes[1], sl.shapes[2], sl.shapes[3], sl.shapes[4], sl.shapes[7]
  C.need(#x == 2 and #w1 == 3 and #w2 == 3, "x must be 2-D, w1 and w2 3-D")
  local T, H, E, I = x[1], x[2], w1[1], w1[3]
  C.need(w1[2] == H and w2[1] == E and w2[3] == H, "w1 (E,H,I) / w2 (E,*,H) disagree with x (T,H)")
  -- the FFN is gate+up (w1's I columns), SwiGLU, down: w2 takes I/2 rows
  C.need(I % 2 == 0 and w2[2] * 2 == I, "w2 (E,%d,H) must hold half of w1's %d columns (SwiGLU of gate and up)", w2[2], I)
  C.need(#ei == 2 and same(ei, probs) and ei[1] == T, "expert_idx and probs must be equal (T, topk)")
  C.need(same(out.shapes[1], x), "out must equal x")
  local etn = out.shapes[2]
  C.need(same(etn, { E }) or same(etn, { 1, E }), "expert_token_nums must be (E,) or (1,E)")
  local topk = ei[2]
  C.must(C.tensors_ok(sl, { 1, 2, 3 }, NZ_OPTS))
  for d = 1, #out.shapes[1] do C.need(out.shapes[1][d] > 0, "out dims must be > 0") end
  return ep, sl, out, T, H, E, I, topk, etn
end

-- scale input slot (5 or 6) of shape want: its checks, and its tensor where build
local function scale(sl, int8, slot, want, build)
  local s = sl.shapes[slot]
  if #s == 2 then C.need(same(s, want), "scale %d must be %s", slot, table.concat(want, ","))
  elseif #s == 1 then C.need(s[1] == want[1] * want[2], "scale %d must have %d elements", slot, want[1] * want[2])
  else C.need(false, "scale %d has rank %d", slot, #s) end
  if not build then return end
  if int8 then return C.T(want, "DT_FLOAT", "ones") end
  return C.T(want, C.dtype(sl.dtypes[5]), "zeros")
end

local function int8_of(sl) return C.dtype(sl.dtypes[2]) == "DT_INT8" or C.dtype(sl.dtypes[3]) == "DT_INT8" end

local function body(row, ctx)
  local ep, sl, out, T, H, E, I, topk, etn = validate(row, ctx)
  local int8 = int8_of(sl)
  local t = C.must(C.tensors(sl, { 1, 2, 3 }, NZ_OPTS))
  local probs_data = {}
  for i = 1, T * topk do probs_data[i] = 1 / topk end
  return { api = "torch.ops._C_ascend.dispatch_ffn_combine", args = {}, distributed = { ep_size = ep },
    kwargs = { x = t[1], weight1 = { list_of = { t[2] } }, weight2 = { list_of = { t[3] } },
      expert_idx = C.T({ T, topk }, "DT_INT32", "data", { data = M.balanced_ids(T, topk, E, ep) }),
      scale1 = { list_of = { scale(sl, int8, 5, { E, I }, true) } },
      scale2 = { list_of = { scale(sl, int8, 6, { E, H }, true) } },
      probs = C.T({ T, topk }, "DT_FLOAT", "data", { data = probs_data }),
      group = { hccl_group = true }, max_output_size = 65536,
      out = C.T(out.shapes[1], C.dtype(out.dtypes[1]), "empty"),
      expert_token_nums = C.T(etn, "DT_INT32", "zeros") } }
end

-- build's verdict without its T x topk arrays: the same checks, and balanced_ids' one way to
-- fail (no experts to spread T x topk > 0 ids over) raised by balanced_ids itself
local function ok(row, ctx)
  local ep, sl, _, T, H, E, I, topk = validate(row, ctx)
  int8_of(sl)
  if T * topk > 0 and E == 0 then M.balanced_ids(1, 1, E, ep) end
  scale(sl, false, 5, { E, I })
  scale(sl, false, 6, { E, H })
  return true
end

function M.build(row, ctx) return C.guard(body, row, ctx) end
-- check-only (perfscript.replay.registry.verdict)
function M.check(row, ctx) return C.guard(ok, row, ctx) end

return setmetatable(M, { __call = function(_, row, ctx) return M.build(row, ctx) end })
