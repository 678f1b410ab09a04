-- Reading torch.profiler's Chrome trace back (issue 15, the GPU part): each timed call's range
-- "perfscript:<case id>:<repeat>" is charged the device work it launched (kernels, copies,
-- fills, found through the runtime calls' correlation ids; never the work launched before or
-- after the range, never the range's GPU-side copy), or on the CPU the outermost operators
-- inside it. The traces are written here in the two shapes torch writes: kineto's (torch 2.x,
-- with categories, float timestamps and correlation ids) and the older one without categories.
local lu = require "luaunit"
local h = require "tests.lua.helpers"
local torchprof = require "perfscript.microbench.torchprof"
local simulate = require "perfscript.microbench.simulate"

TestTorchprof = {}

local function X(t) t.ph = "X"; return t end

local function write_trace(path, events)
  local parts = {}
  for i, e in ipairs(events) do parts[i] = require("cjson").encode(e) end
  h.write(path, '{"schemaVersion": 1, "traceEvents": [\n' .. table.concat(parts, ",\n") .. "\n]}")
end

-- A CUDA trace of two cases: Add:2 (one kernel per repeat), MatMulV2:2 (a memset and a kernel
-- per repeat), with an input-building kernel before the ranges and the GPU-side range copies.
local function cuda_events()
  local ev = {
    X { cat = "cpu_op", name = "aten::randn", pid = 7, tid = 7, ts = 100.5, dur = 20 },
    X { cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 7, tid = 7, ts = 105.25, dur = 3, args = { correlation = 1 } },
    X { cat = "kernel", name = "randn_kernel", pid = 0, tid = 7, ts = 130, dur = 50, args = { correlation = 1, device = 0 } },
  }
  local corr = 10
  local function range(id, rep, ts, kernels)
    ev[#ev + 1] = X { cat = "user_annotation", name = ("perfscript:%s:%d"):format(id, rep), pid = 7, tid = 7, ts = ts, dur = 40 }
    ev[#ev + 1] = X { cat = "gpu_user_annotation", name = ("perfscript:%s:%d"):format(id, rep), pid = 0, tid = 7,
      ts = ts + 50, dur = 30 }
    for i, k in ipairs(kernels) do
      corr = corr + 1
      ev[#ev + 1] = X { cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 7, tid = 7, ts = ts + 5 * i, dur = 2,
        args = { correlation = corr } }
      ev[#ev + 1] = X { cat = k.cat or "kernel", name = k.name, pid = 0, tid = 7, ts = ts + 50 + 10 * i, dur = k.dur,
        args = { correlation = corr, device = 0 } }
    end
  end
  range("Add:2", 1, 1000, { { name = "add_kernel", dur = 2.125 } })
  range("Add:2", 2, 1100, { { name = "add_kernel", dur = 2.25 } })
  range("MatMulV2:2", 1, 2000, { { name = "Memset", cat = "gpu_memset", dur = 0.5 }, { name = "sm90_gemm", dur = 10.125 } })
  range("MatMulV2:2", 2, 2100, { { name = "Memset", cat = "gpu_memset", dur = 0.5 }, { name = "sm90_gemm", dur = 9.875 } })
  -- a launch after the last range: charged to nothing
  ev[#ev + 1] = X { cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 7, tid = 7, ts = 5000, dur = 2, args = { correlation = 99 } }
  ev[#ev + 1] = X { cat = "kernel", name = "late", pid = 0, tid = 7, ts = 5010, dur = 7, args = { correlation = 99 } }
  -- the file order of a kineto trace: CPU events first, device events last
  table.sort(ev, function(a, b) return (a.cat == "kernel" and 1 or 0) < (b.cat == "kernel" and 1 or 0) end)
  return ev
end

function TestTorchprof:test_cuda_trace_charges_each_range_its_own_device_work()
  local dir = h.tmpdir()
  write_trace(dir .. "/t.json", cuda_events())
  local t = assert(torchprof.case_times(dir .. "/t.json"))
  lu.assertEquals(t["Add:2"].us, { 2.125, 2.25 })
  lu.assertAlmostEquals(t["MatMulV2:2"].us[1], 10.625, 1e-9)
  lu.assertAlmostEquals(t["MatMulV2:2"].us[2], 10.375, 1e-9)
  lu.assertEquals(t["Add:2"].kernels, { "add_kernel" })
  lu.assertEquals(t["MatMulV2:2"].kernels, { "Memset", "sm90_gemm" })
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  lu.assertEquals(n, 2) -- neither the input building nor the late kernel makes a case
end

function TestTorchprof:test_cpu_trace_sums_the_outermost_operators()
  local dir = h.tmpdir()
  write_trace(dir .. "/t.json", {
    X { name = "perfscript:Add:2:1", pid = "CPU functions", tid = 1, ts = 16407, dur = 306 },
    X { name = "aten::empty", pid = "CPU functions", tid = 1, ts = 16421, dur = 3 },
    X { name = "aten::add", pid = "CPU functions", tid = 1, ts = 16442, dur = 247 },
    X { name = "aten::add_out", pid = "CPU functions", tid = 1, ts = 16450, dur = 200 }, -- inside aten::add
    X { name = "aten::add", pid = "CPU functions", tid = 2, ts = 16450, dur = 999 },     -- another thread
    X { name = "aten::mul", pid = "CPU functions", tid = 1, ts = 16800, dur = 40 },       -- after the range
  })
  local t = assert(torchprof.case_times(dir .. "/t.json"))
  lu.assertEquals(t["Add:2"].us, { 250 })
end

function TestTorchprof:test_bad_trace_is_an_error_naming_the_file()
  local dir = h.tmpdir()
  h.write(dir .. "/t.json", '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": ')
  local t, err = torchprof.case_times(dir .. "/t.json")
  lu.assertNil(t)
  lu.assertStrContains(err, dir .. "/t.json")
  t, err = torchprof.case_times(dir .. "/missing.json")
  lu.assertNil(t)
  lu.assertStrContains(err, "missing.json")
end

function TestTorchprof:test_measured_op_summary_rows()
  local dir = h.tmpdir()
  local rec = { ["Input Shapes"] = '"16,7168;16,7168"', ["Input Data Types"] = "DT_BF16;DT_BF16",
    ["Input Formats"] = "ND;ND", ["Output Shapes"] = '"16,7168"', ["Output Data Types"] = "DT_BF16",
    ["Output Formats"] = "ND", ["OP State"] = "dynamic" }
  local cases = { { id = "Add:2", op = "Add", record = rec }, { id = "Add:3", op = "Add", record = rec } }
  local path, n = simulate.write_op_summary(dir, cases, { repeat_count = 2, measured = { ["Add:2"] = { 2.125, 2.25 } },
    task_type = "TORCH_CUDA" })
  lu.assertEquals(n, 2) -- Add:3 was not measured: no row
  local _, rows = h.read_rows(path)
  lu.assertEquals(#rows, 2)
  lu.assertEquals(rows[1]["Task Duration(us)"], "2.125")
  lu.assertEquals(rows[2]["Task Duration(us)"], "2.250")
  lu.assertEquals(rows[1]["Task Type"], "TORCH_CUDA")
  lu.assertEquals(rows[1]["aicore_time(us)"], "N/A")
end

function TestTorchprof:test_settle_sorts_cases_into_measured_skipped_failed()
  local p = { ops = { "Add", "Transpose", "RmsNorm", "Mul" }, cases = {
    { id = "Add:2", op = "Add" }, { id = "Add:3", op = "Add" }, { id = "Transpose:2", op = "Transpose" },
    { id = "RmsNorm:2", op = "RmsNorm" }, { id = "Mul:2", op = "Mul" }, { id = "Mul:3", op = "Mul" } } }
  local status = { cases = {
    ["Add:2"] = { status = "ok" }, ["Add:3"] = { status = "ok" }, ["Transpose:2"] = { status = "ok" },
    ["RmsNorm:2"] = { status = "skipped", reason = "torch_npu.npu_rms_norm is an Ascend API with no cuda kernel" },
    ["Mul:2"] = { status = "ok" }, ["Mul:3"] = { status = "failed", reason = "RuntimeError: boom" } } }
  local times = { ["Add:2"] = { us = { 1, 2 } }, ["Add:3"] = { us = { 3, 4 } }, ["Mul:2"] = { us = { 5, 6 } } }
  local measured, result, timed = torchprof.settle(p, status, times, 2)
  lu.assertEquals(measured, { ["Add:2"] = { 1, 2 }, ["Add:3"] = { 3, 4 }, ["Mul:2"] = { 5, 6 } })
  lu.assertEquals(timed, 3)
  lu.assertEquals(result.success, { "Add" })
  lu.assertEquals(result.skipped, { { op = "Transpose", reason = "no device work in its timed calls (a view on this device)" },
    { op = "RmsNorm", reason = "torch_npu.npu_rms_norm is an Ascend API with no cuda kernel" } })
  lu.assertEquals(result.failed, { { op = "Mul", reason = "RuntimeError: boom" } })
  -- a repeat missing from the trace is a failure, not a short measurement
  measured, result = torchprof.settle(p, status, { ["Add:2"] = { us = { 1 } }, ["Add:3"] = { us = { 3, 4 } } }, 2)
  lu.assertNil(measured["Add:2"])
  lu.assertEquals(result.failed[1], { op = "Add", reason = "fewer timed calls in the trace than --repeat-count" })
end

os.exit(lu.LuaUnit.run())
