-- The axis density standard V1 (docs/rules.md, Shape grids: axis density), its one home: per public
-- grid, its range, spacing segments (max_gap or max_ratio between neighbouring measured values)
-- and required anchors; per template axis ({pattern, iterator, rule}) the same. check() judges
-- a sorted list of measured values against one grid; the grid engine's audit
-- (perfscript.grid.density) judges the generated axes against the same rules.
local M = {}

local NK_ANCHORS = { 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1728,
                     1792, 2048, 2304, 2560, 3072, 3456, 3584, 4096, 4608, 5120, 6144, 6912, 7168,
                     8192, 10240, 12288, 13824, 14336, 16384, 18432, 27648, 28672, 55296 }

M.grids = {
  M_GRID = { range = { 1, 32768 }, segments = {
    { 1, 8, gap = 1 }, { 9, 16, gap = 2 }, { 17, 32, gap = 4 }, { 33, 64, gap = 8 },
    { 65, 128, gap = 16 }, { 129, 256, gap = 64 }, { 257, 1024, gap = 256 },
    { 1025, 32768, ratio = 2 } } },
  ELEM_TOKENS_GRID = { range = { 1, 32768 }, segments = { { 1, 64, ratio = 4 }, { 65, 32768, ratio = 2 } } },
  MOE_TOKENS_GRID = { range = { 1, 65536 }, segments = { { 1, 65536, ratio = 2 } } },
  ATTN_SEQ_GRID = { range = { 1, 131072 }, segments = { { 1, 64, ratio = 4 }, { 65, 131072, ratio = 2 } } },
  NK_GRID = { range = { 128, 55296 }, anchors = NK_ANCHORS, segments = {
    { 128, 1024, gap = 128 }, { 1025, 4096, gap = 512 }, { 4097, 8192, gap = 1024 },
    { 8193, 18432, ratio = 1.25 }, { 18433, 55296, ratio = 2 } } },
  HEADS_GRID = { range = { 1, 128 }, segments = { { 1, 128, ratio = 2 } },
                 anchors = { 1, 2, 3, 4, 5, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 128 } },
  KV_HEADS_GRID = { range = { 1, 32 }, segments = { { 1, 32, ratio = 2 } }, anchors = { 1, 2, 4, 8, 16, 32 } },
  HEAD_DIM_GRID = { range = { 64, 256 }, segments = { { 64, 256, ratio = 2 } }, anchors = { 64, 128, 256 } },
  ATTN_BATCH_GRID = { range = { 1, 128 }, segments = { { 1, 128, ratio = 2 } },
                      anchors = { 1, 2, 4, 8, 16, 32, 48, 64, 128 } },
  PAD_TOKENS_GRID = { anchors = { 1, 2, 3, 4, 5, 6, 7, 9, 15, 31, 63, 127, 129, 255, 257, 511, 513, 1023,
                                  1025, 2047, 2049, 4095, 4097, 8191, 8193 } },
  -- measured by comm_bench, not a shape grid
  COMM_BYTES = { comm = true, range = { 128, 536870912 }, segments = { { 128, 536870912, ratio = 2 } } },
}
M.grids.ELEM_HIDDEN_GRID = M.grids.NK_GRID

-- Template axes: the patterns' inline iterators, {pattern, iterator, rule}.
local function r2(lo, hi, ratio, anchors)
  return { range = { lo, hi }, segments = { { lo, hi, ratio = ratio } }, anchors = anchors }
end
M.templates = {
  { "transpose_batch_matmul", "K", r2(64, 512, 2, { 64, 128, 256, 512 }) },
  { "transpose_batch_matmul", "N", r2(64, 1024, 2, { 64, 128, 256, 512, 1024 }) },
  { "batch_matmul_nd", "batch", r2(1, 32, 2, { 1, 2, 4, 8, 16, 32 }) },
  { "batch_matmul_nd", "K", r2(64, 1024, 2, { 64, 128, 256, 512, 1024 }) },
  { "batch_matmul_nd", "N", r2(64, 1024, 2, { 64, 128, 256, 512, 1024 }) },
  { "as_strided", "batch", r2(1, 64, 2, { 1, 2, 4, 8, 16, 32, 64 }) },
  { "as_strided", "heads", r2(1, 128, 4, { 1, 4, 8, 16, 32, 64, 128 }) },
  { "kv_rmsnorm_rope_cache", "d", { anchors = { 512 } } },
  { "sort_op", "D", r2(64, 8192, 2) },
  { "tile", "D", r2(64, 2048, 2) },
  { "concat", "D", r2(64, 4096, 2) },
  { "argmax", "batch", r2(1, 128, 2) },
  { "argmax", "vocab", r2(1024, 151936, 4) },
  { "apply_topk_top_p", "batch", r2(1, 128, 2) },
  { "apply_topk_top_p", "vocab", r2(1024, 151936, 4) },
  { "gather", "vocab", r2(1024, 152064, 4) },
  { "paged_cache_load", "batch", r2(1, 64, 2, { 1, 2, 4, 8, 16, 32, 64 }) },
  { "moe_gating_topk", "experts", { anchors = { 64, 128, 256 } } },
  { "moe_gating_topk", "topk", { anchors = { 2, 4, 8 } } },
}

-- The grid an axis is judged against (matmul M from M_GRID, N and K from NK_GRID,
-- elementwise tokens and hidden sizes, attention seq and batch, MoE tokens, comm bytes).
function M.grid_for(kernel, axis, is_matmul)
  if is_matmul then
    if axis == "M" then return "M_GRID" end
    if axis == "K" or axis == "N" then return "NK_GRID" end
  end
  if axis == "seq" then return "ATTN_SEQ_GRID" end
  if axis == "batch" then return "ATTN_BATCH_GRID" end
  if axis == "bytes" then return "COMM_BYTES" end
  if axis == "hidden" then return "NK_GRID" end
  if axis == "tokens" or axis == "axis_0" then
    return kernel == "DispatchFFNCombine" and "MOE_TOKENS_GRID" or "ELEM_TOKENS_GRID"
  end
  return nil
end

local function segment(grid, v)
  for _, s in ipairs(grid.segments or {}) do
    if v >= s[1] and v <= s[2] then return s end
  end
end

-- The spacing rule a step a -> b breaks: "gap", limit or "ratio", limit; nil when it complies.
-- The segment holding the upper value decides (the standard leaves a pair across a boundary open).
function M.step(grid, a, b)
  local s = segment(grid, b)
  if s and s.gap and b - a > s.gap then return "gap", s.gap end
  if s and s.ratio and a > 0 and b / a > s.ratio + 1e-9 then return "ratio", s.ratio end
  return nil
end

-- values: sorted distinct numbers. Returns a list of problems {value, lo, hi, why} and a map
-- value -> problem text for the gap that ends at that value.
function M.check(name, values)
  local grid = M.grids[name]
  local problems, at = {}, {}
  if not grid or #values == 0 then return problems, at end
  local function add(v, why)
    problems[#problems + 1] = { value = v, why = why }
    at[v] = at[v] and (at[v] .. "; " .. why) or why
  end
  for i = 2, #values do
    local a, b = values[i - 1], values[i]
    local kind, limit = M.step(grid, a, b)
    if kind == "gap" then
      add(b, string.format("gap %s > %s after %s", b - a, limit, a))
    elseif kind == "ratio" then
      add(b, string.format("ratio %.3g > %s after %s", b / a, limit, a))
    end
  end
  local lo, hi = values[1], values[#values]
  local missing = {}
  for _, v in ipairs(grid.anchors or {}) do
    if v >= lo and v <= hi then
      local found = false
      for _, x in ipairs(values) do if x == v then found = true; break end end
      if not found then missing[#missing + 1] = v end
    end
  end
  if #missing > 0 then
    problems[#problems + 1] = { why = "missing anchors: " .. table.concat(missing, ",") }
  end
  if grid.range and (lo > grid.range[1] or hi < grid.range[2]) then
    problems[#problems + 1] = { why = string.format("measured %s..%s of the range %s..%s", lo, hi,
                                                   grid.range[1], grid.range[2]) }
  end
  return problems, at
end

return M
