-- The communication microbench plan (the planning part of generate_comm_microbench.py and
-- run_comm_bench.sh; docs/rules.md, Analysis): topology tiers, rank groups, the
-- bytes grid and the torchrun commands that produce hcom_*.csv.
local M = {}

M.OPS = {
  all_reduce = { kernel = "hcom_allReduce_", csv = "hcom_allReduce_.csv" },
  all_gather = { kernel = "hcom_allGather_", csv = "hcom_allGather_.csv" },
  reduce_scatter = { kernel = "hcom_reduceScatter_", csv = "hcom_reduceScatter_.csv" },
  all_to_all = { kernel = "hcom_alltoallv_", csv = "hcom_alltoallv_.csv" },
}
M.OP_ORDER = { "all_reduce", "all_gather", "reduce_scatter", "all_to_all" }
M.TIER_NAMES = { [0] = "inter_pod", [1] = "intra_pod", [2] = "die_level" }
M.DTYPES = { bf16 = "DT_BF16", fp16 = "DT_FP16", fp32 = "DT_FLOAT", int8 = "DT_INT8" }
M.ELEM_SIZE = { bf16 = 2, fp16 = 2, fp32 = 4, int8 = 1 }

M.DEFAULT_GRID_SHAPE = { 48, 8, 2 }
M.LARGE_MSG_THRESHOLD = 524288
M.ACTIVE_ITERS, M.ACTIVE_ITERS_LARGE = 10, 1

-- Fixed dispatch overhead (us) the Python original adds per (op, num_devices).
M.OVERHEAD_US = {
  all_reduce = { [16] = 7.7 },
  all_gather = { [16] = 14.6, [8] = 1.2 },
  reduce_scatter = { [16] = 14.6, [8] = 2.0 },
}

function M.overhead(op, n)
  local t = M.OVERHEAD_US[op]
  return t and t[n] or nil
end

-- Profiler iterations per size: one long session below the threshold, single-shot sessions above.
function M.active_iters(message_bytes)
  return message_bytes < M.LARGE_MSG_THRESHOLD and M.ACTIVE_ITERS or M.ACTIVE_ITERS_LARGE
end

-- Powers of two lo..hi.
function M.pow2_grid(lo, hi)
  local t, v = {}, 1
  while v < lo do v = v * 2 end
  while v <= hi do t[#t + 1] = v; v = v * 2 end
  return t
end

M.DEFAULT_BYTES = M.pow2_grid(1024, 536870912)       -- the generator's default (20 sizes)
M.SCRIPT_BYTES = M.pow2_grid(128, 536870912)         -- run_comm_bench.sh's grid (23 sizes)

-- Rank -> coordinates (outer to inner), innermost fastest.
function M.coords(rank, grid)
  local c = {}
  for i = #grid, 1, -1 do
    c[i] = rank % grid[i]
    rank = rank // grid[i]
  end
  return c
end

-- The tier of a group: the outermost dimension where members differ (0-based); identical
-- coordinates give the last dimension.
function M.tier_of(ranks, grid)
  grid = grid or M.DEFAULT_GRID_SHAPE
  local base = M.coords(ranks[1], grid)
  for d = 1, #grid do
    for i = 2, #ranks do
      if M.coords(ranks[i], grid)[d] ~= base[d] then return d - 1 end
    end
  end
  return #grid - 1
end

-- The ranks of a group of n devices at a tier around anchor rank r, or nil and the message.
function M.group_for_tier(r, n, tier, grid)
  grid = grid or M.DEFAULT_GRID_SHAPE
  local span = 1
  for d = tier + 1, #grid do span = span * grid[d] end
  if n > span then
    return nil, string.format("num_devices=%d exceeds span size %d for tier=%d, grid_shape=%s",
                              n, span, tier, "[" .. table.concat(grid, ", ") .. "]")
  end
  local base = r - r % span
  local g = {}
  for i = 0, n - 1 do g[#g + 1] = base + i end
  return g
end

local function range(n)
  local t = {}
  for i = 0, n - 1 do t[#t + 1] = i end
  return t
end

-- The plan: sessions {op(s), n, tier, port, argv} for the given options
--   ops (list), devices (list), tiers (list or nil = resolved per n), bytes (list), dtype,
--   mode ("kernel" | "wallclock"), grid (list), script, out_dir, python, torchrun, port.
-- Returns sessions, warnings.
function M.plan(o)
  local grid = o.grid or M.DEFAULT_GRID_SHAPE
  local sessions, warnings = {}, {}
  local port = o.port or 29700
  for _, op in ipairs(o.ops) do
    if not M.OPS[op] then return nil, { "unknown op '" .. op .. "'" } end
    for _, n in ipairs(o.devices) do
      local tiers = o.tiers or { M.tier_of(range(n), grid) }
      for _, tier in ipairs(tiers) do
        local g, err = M.group_for_tier(0, n, tier, grid)
        if not g then
          warnings[#warnings + 1] = string.format("skipping tier=%d, num_devices=%d: %s", tier, n, err)
        else
          local bytes = {}
          for i, b in ipairs(o.bytes) do bytes[i] = tostring(b) end
          local argv = { o.torchrun or "torchrun", "--nproc_per_node=" .. n,
                         "--master_port=" .. port, o.script,
                         "--ops", op, "--num-devices", tostring(n),
                         "--topology-tier", tostring(tier),
                         "--grid-shape" }
          for _, d in ipairs(grid) do argv[#argv + 1] = tostring(d) end
          argv[#argv + 1] = "--dtype"; argv[#argv + 1] = o.dtype or "bf16"
          argv[#argv + 1] = "--bench-mode"; argv[#argv + 1] = o.mode or "kernel"
          argv[#argv + 1] = "--bytes-grid"
          for _, b in ipairs(bytes) do argv[#argv + 1] = b end
          argv[#argv + 1] = "--database-path"; argv[#argv + 1] = o.out_dir
          sessions[#sessions + 1] = {
            op = op, num_devices = n, tier = tier, tier_name = M.TIER_NAMES[tier] or "?",
            port = port, ranks = g, csv = M.OPS[op].csv, argv = argv,
          }
          port = port + 1
        end
      end
    end
  end
  return sessions, warnings
end

-- A shell-safe rendering of an argv (for display and scripts; execution never goes through a
-- shell).
function M.shell_quote(a)
  if a:match("^[%w%._/=:+,@%-]+$") then return a end
  return "'" .. a:gsub("'", "'\\''") .. "'"
end

function M.command_line(argv)
  local t = {}
  for i, a in ipairs(argv) do t[i] = M.shell_quote(a) end
  return table.concat(t, " ")
end

return M
