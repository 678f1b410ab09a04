-- A simulated device: a roofline cost model over a case's recorded shapes and dtypes, and an
-- msprof-style writer of PROF_*/mindstudio_profiler_output/op_summary_*.csv, so that the whole
-- collection loop runs without an NPU (and the stand-in msprof of the tests shares it).
-- Its numbers are a model, not a measurement: every consumer marks them SIMULATED.
local perf = require "perfscript"
local shape = require "perfscript.shape"
local schema = require "perfscript.microbench.schema"
local registry = require "perfscript.replay.registry"

local M = {}

-- Peak figures of the modelled device (an Ascend 910-class die).
M.DEVICE = { cube_tflops = 350, vector_tflops = 22, hbm_gbps = 1600, launch_us = 3.0 }

local CUBE_OPS = { MatMulV2 = true, MatMulV3 = true, MatMulCommon = true, BatchMatMulV2 = true,
  QuantBatchMatmulV3 = true, GroupedMatmul = true, GroupedMatmulSwigluQuant = true,
  TransposeBatchMatMul = true, FusedInferAttentionScore = true, SparseFlashAttention = true,
  RINGMLAPrefillBF16Kernel = true, LightningIndexer = true, DispatchFFNCombine = true }

local function slots(cell_shapes, cell_dtypes)
  local sh = shape.parse(cell_shapes or "", true) or {}
  local dt = shape.split(cell_dtypes or "")
  local out = {}
  for i, d in ipairs(sh) do
    if d and #d > 0 then out[#out + 1] = { dims = d, dtype = dt[i] or "" } end
  end
  return out
end

-- Gathers (by their base kernel, so the AiCore and V3 variants too): the table (input 1) is
-- charged for the rows the indices (input 2) pick, not whole.
local GATHER = { GatherV2 = true }

-- Bytes of input 1 a gather reads: indices count x row width, at most the table.
local function gathered_bytes(tbl, idx)
  local rows = tbl.dims[1] or 1
  if rows <= 0 then return 0 end
  local width = shape.numel(tbl.dims) // rows
  local n = math.min(shape.numel(idx.dims), rows)
  return math.min(shape.nbytes(tbl.dims, tbl.dtype), n * width * (shape.dtype_bytes(tbl.dtype) or 2))
end

-- The modelled duration in microseconds of a database-style record (column -> value).
function M.duration_us(op, rec)
  local ins = slots(rec["Input Shapes"], rec["Input Data Types"])
  local outs = slots(rec["Output Shapes"], rec["Output Data Types"])
  local bytes, out_elems = 0, 0
  local gather = GATHER[registry.ALIAS[op] or op] and #ins >= 2
  for i, s in ipairs(ins) do
    bytes = bytes + ((gather and i == 1) and gathered_bytes(s, ins[2]) or shape.nbytes(s.dims, s.dtype))
  end
  for _, s in ipairs(outs) do
    bytes = bytes + shape.nbytes(s.dims, s.dtype)
    out_elems = out_elems + shape.numel(s.dims)
  end
  local flops, cube = out_elems, CUBE_OPS[op]
  if cube and #ins >= 2 then
    -- 2*M*N*K with K taken as the last dim of the first input
    local a = ins[1].dims
    flops = 2 * out_elems * a[#a]
  end
  local peak = (cube and M.DEVICE.cube_tflops or M.DEVICE.vector_tflops) * 1e12
  local t = math.max(flops / peak, bytes / (M.DEVICE.hbm_gbps * 1e9)) * 1e6
  return t + M.DEVICE.launch_us, cube
end

M.OP_SUMMARY_HEADER = { "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type",
  "OP State", "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)",
  "Block Num", "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types",
  "Input Formats", "Output Shapes", "Output Data Types", "Output Formats", "Context ID" }
for _, m in ipairs(schema.METRICS) do M.OP_SUMMARY_HEADER[#M.OP_SUMMARY_HEADER + 1] = m end

-- The profiler's literal quotes around shape lists.
local function q(s)
  s = s or ""
  if s:find("[,;]") and not s:find('^"') then return '"' .. s .. '"' end
  return s
end

-- Kernels a real replay launches around the measured call (random inputs, dtype and format
-- conversions, helper kernels), with the slot of the case's first input they work on.
M.SIDE_KERNELS = {
  { op = "DSARandomNormal", dtype = "DT_BF16" }, { op = "Cast", dtype = "FLOAT" },
  { op = "TransData", dtype = "DT_BF16" }, { op = "MaskedFill", dtype = "DT_BF16" },
  { op = "fill_zeros_kernel", dtype = "FLOAT" },
}

-- Writes <root>/PROF_<tag>/mindstudio_profiler_output/op_summary_<tag>.csv for cases (each
-- with .op and .record), repeat_count rows per case with a small deterministic jitter.
-- opts: repeat_count, tag, device_id, skip_ops (set), side_kernels (also write the side
-- kernels of M.SIDE_KERNELS before each case, as a real replay does), index (index[i]: case
-- i's position in its whole plan, for the jitter, so that a batch of a plan measures as the
-- whole plan does). Returns the file path
-- and row count.
function M.write_op_summary(root, cases, opts)
  opts = opts or {}
  local tag = opts.tag or "000001"
  local dir = ("%s/PROF_%s/mindstudio_profiler_output"):format(root, tag)
  assert(perf.fs.mkdir_p(dir))
  local path = ("%s/op_summary_%s.csv"):format(dir, tag)
  local w = assert(perf.csv.writer(path, { eol = "\n" }))
  w:write(M.OP_SUMMARY_HEADER)
  local t0, task, n = 1764246877073569.640, 0, 0
  for ci, c in ipairs(cases) do
    if not (opts.skip_ops and opts.skip_ops[c.op]) then
      local rec = c.record or {}
      local first = (shape.split(rec["Input Shapes"] or "")[1] or ""):gsub('"', "")
      for _, k in ipairs(opts.side_kernels and first ~= "" and M.SIDE_KERNELS or {}) do
        task = task + 1
        local row = { tostring(opts.device_id or 0), "4294967295", tostring(task), "2", k.op .. "_" .. ci, k.op,
          "static", "AI_VECTOR_CORE", ("%.3f\t"):format(t0 + task * 100), "1.250", "0.000", "8", "0", "NO",
          q(first), k.dtype, "ND", q(first), k.dtype, "ND", "N/A" }
        for _ = 1, #schema.METRICS do row[#row + 1] = "N/A" end
        w:write(row)
        n = n + 1
      end
      local base, cube = M.duration_us(c.op, rec)
      for rep = 1, opts.repeat_count or 1 do
        task = task + 1
        local jitter = 1 + (((opts.index and opts.index[ci] or ci) * 7919 + rep * 104729) % 97) / 1000
        local d = base * jitter
        local row = { tostring(opts.device_id or 0), "4294967295", tostring(task), "2",
          c.op .. "_" .. ci, c.op, rec["OP State"] ~= "" and rec["OP State"] or "dynamic",
          cube and "AI_CORE" or "AI_VECTOR_CORE", ("%.3f\t"):format(t0 + task * 100), ("%.3f"):format(d),
          "0.000", "24", "0", "NO", q(rec["Input Shapes"]), rec["Input Data Types"] or "",
          rec["Input Formats"] or "", q(rec["Output Shapes"]), rec["Output Data Types"] or "",
          rec["Output Formats"] or "", "N/A" }
        for i = 1, #schema.METRICS do
          local m = schema.METRICS[i]
          local v
          if m == "aicore_time(us)" or m == "aiv_time(us)" then v = ("%.3f"):format(d * 0.9)
          elseif m:find("ratio") or m:find("rate") then v = "0.5"
          elseif m:find("cycles") then v = ("%d"):format(math.floor(d * 1850))
          elseif m == "cube_utilization(%)" then v = cube and "60.0" or "0.0"
          else v = ("%.3f"):format(d * 0.3) end
          row[#row + 1] = v
        end
        w:write(row)
        n = n + 1
      end
    end
  end
  assert(w:commit())
  return path, n
end

return M
