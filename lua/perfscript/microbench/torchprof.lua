-- `recipes/microbench.lua --torch-device cuda|cpu`: the replay, profile and write-back loop on
-- a device that plain torch drives (a GPU, or the CPU for tests) instead of msprof and an NPU.
-- executor.py --profile times each plain-torch case under torch.profiler, every timed call in
-- a range "perfscript:<case id>:<repeat>"; this module reads the profiler's Chrome trace back
-- with perfscript's streaming trace reader, charges each range the device work it launched,
-- and writes the msprof-style op_summary that the ordinary aggregation and merge consume.
local perf = require "perfscript"
local num = require "perfscript.num"
local trace = require "perfscript.trace"
local paths = require "perfscript.path"
local simulate = require "perfscript.microbench.simulate"

local M = {}

M.RANGE_PREFIX = "perfscript:"

-- Device-side work in torch.profiler's trace (kineto's categories); each carries the
-- correlation id of the runtime call on the CPU that launched it.
local DEVICE_CATS = { kernel = true, gpu_memcpy = true, gpu_memset = true }

local function ns_of(text) return text and num.us_to_ns(text) end

-- Index of the range of sorted list rs (by lo) holding time t, or nil.
local function find_range(rs, t)
  local lo, hi, best = 1, #rs, nil
  while lo <= hi do
    local mid = (lo + hi) // 2
    if rs[mid].lo <= t then best, lo = mid, mid + 1 else hi = mid - 1 end
  end
  if best and t <= rs[best].hi then return rs[best] end
  return nil
end

-- The per-case times of trace file path: { [case id] = { us = {[repeat] = microseconds},
-- kernels = {name, ...}, device = bool } }, or nil, message. On a GPU a timed call's time is
-- the sum of the device work it launched (kernels, copies, fills; found through the
-- correlation ids); on the CPU, the sum of the outermost operators inside its range.
function M.case_times(path)
  local r, err = trace.open(path)
  if not r then return nil, err end
  local ranges, launches, cpu_ops, device = {}, {}, {}, {}
  local ok, perr = pcall(function()
    for ev in r:events() do
      local ts, dur = ev.ph == "X" and ns_of(ev.ts), ns_of(ev.dur)
      if ts and dur then
        local key = tostring(ev.pid) .. "/" .. tostring(ev.tid)
        local name, cat = ev.name or "", ev.cat
        local corr = ev.args and ev.args.correlation
        if name:sub(1, #M.RANGE_PREFIX) == M.RANGE_PREFIX then
          if cat == nil or cat == "user_annotation" then -- not its GPU-side copy
            local id, rep = name:sub(#M.RANGE_PREFIX + 1):match("^(.*):(%d+)$")
            if id then
              ranges[key] = ranges[key] or {}
              table.insert(ranges[key], { lo = ts, hi = ts + dur, id = id, rep = tonumber(rep) })
            end
          end
        elseif cat and DEVICE_CATS[cat] and corr then
          local d = device[corr] or { ns = 0, names = {} }
          d.ns = d.ns + dur
          d.names[#d.names + 1] = name
          device[corr] = d
        elseif corr then -- a runtime call (cudaLaunchKernel, cudaMemcpyAsync, ...)
          launches[#launches + 1] = { key = key, ts = ts, corr = corr }
        elseif cat == nil or cat == "cpu_op" then
          cpu_ops[#cpu_ops + 1] = { key = key, lo = ts, hi = ts + dur }
        end
      end
    end
  end)
  r:close()
  if not ok then return nil, tostring(perr) end
  for _, rs in pairs(ranges) do table.sort(rs, function(a, b) return a.lo < b.lo end) end
  local out = {}
  local function charge(rg, ns, names)
    local c = out[rg.id] or { us = {}, kernels = {}, seen = {} }
    out[rg.id] = c
    c.us[rg.rep] = (c.us[rg.rep] or 0) + ns / 1000
    for _, n in ipairs(names or {}) do
      if not c.seen[n] then c.seen[n] = true; c.kernels[#c.kernels + 1] = n end
    end
  end
  if next(device) then
    table.sort(launches, function(x, y) return x.ts < y.ts end)
    for _, l in ipairs(launches) do
      local rg = ranges[l.key] and find_range(ranges[l.key], l.ts)
      local d = rg and device[l.corr]
      if d then charge(rg, d.ns, d.names) end
    end
  else
    table.sort(cpu_ops, function(a, b) return a.lo < b.lo or (a.lo == b.lo and a.hi > b.hi) end)
    local last_hi = {}
    for _, op in ipairs(cpu_ops) do
      local rg = ranges[op.key] and find_range(ranges[op.key], op.lo)
      if rg and op.hi <= rg.hi and op.lo >= (last_hi[op.key] or -1) then -- outermost only
        charge(rg, op.hi - op.lo)
        last_hi[op.key] = op.hi
      end
    end
  end
  for _, c in pairs(out) do c.seen = nil end
  return out
end

-- The run's outcome from the executor's status and the trace's times: measured (case id ->
-- microseconds per repeat, only cases with every repeat timed), the status by operator
-- ({success, failed = {op, reason}, skipped = {op, reason}}; an operator fails when one of its
-- cases failed) and the number of cases timed.
function M.settle(p, status, times, repeat_count)
  local measured, by_op, timed = {}, {}, 0
  for _, c in ipairs(p.cases) do
    local s, t = status.cases[c.id], times[c.id]
    local o = by_op[c.op] or { ok = 0, bad = {}, skip = {} }
    by_op[c.op] = o
    if s and s.status == "ok" and t and #t.us == repeat_count then
      measured[c.id], o.ok, timed = t.us, o.ok + 1, timed + 1
    elseif s and s.status == "skipped" then
      o.skip[#o.skip + 1] = s.reason
    elseif s and s.status == "ok" and not t then
      -- a view (transpose, as_strided, broadcast_to) launches nothing on a GPU; the NPU copies
      o.skip[#o.skip + 1] = "no device work in its timed calls (a view on this device)"
    else
      o.bad[#o.bad + 1] = (s and s.reason) or (s and s.status == "ok" and "fewer timed calls in the trace than --repeat-count")
        or "the executor gave no status for it"
    end
  end
  local result = { success = {}, failed = {}, skipped = {} }
  for _, op in ipairs(p.ops) do
    local o = by_op[op]
    if o and #o.bad > 0 then result.failed[#result.failed + 1] = { op = op, reason = o.bad[1] }
    elseif o and o.ok > 0 then result.success[#result.success + 1] = op
    elseif o then result.skipped[#result.skipped + 1] = { op = op, reason = o.skip[1] } end
  end
  return measured, result, timed
end

-- Runs run_dir/executor.py over plan_path under torch.profiler on a.torch_device and writes
-- the op_summary of the timed cases under run_dir/prof. Returns the op_summary path and the
-- run status ({success, failed, skipped} by operator, as the msprof path gives); say(line)
-- prints progress (microbench.run's); fails with
-- the executor's log tail when it could not run.
function M.collect(a, p, plan_path, run_dir, say)
  local explicit = a.python ~= "python3" and a.python or nil
  local py, info = require("perfscript.microbench.validate").find_python(explicit, run_dir)
  if not py then perf.fail("%s", info) end
  local tr, st, log = run_dir .. "/torch_trace.json", run_dir .. "/torch_status.json", run_dir .. "/torch_executor.log"
  -- the executor sits beside the run's plans (an EP group's plan too, its run_dir one below)
  local argv = { py, plan_path:gsub("[^/]*$", "") .. "executor.py", plan_path, "--profile", a.torch_device, "--trace", tr,
    "--status", st, "--repeat-count", tostring(a.repeat_count), "--warmup", tostring(a.warmup) }
  say(("[TORCH] timing %d case(s) on %s under torch.profiler; Python %s (%s, torch %s)")
    :format(#p.cases, a.torch_device, py, info.executable, info.torch))
  local code, how = perf.proc.run { argv = argv, stdout = log, stderr = log, stdin_null = true, cwd = run_dir,
                                    timeout = (a.timeout and a.timeout > 0) and a.timeout or nil }
  local text = paths.read(st)
  local okj, status = pcall(require("cjson").decode, text or "")
  if not (text and okj and type(status) == "table" and type(status.cases) == "table") then
    perf.fail("the executor (--profile %s) ended with %s %s and wrote no status; its log: %s", a.torch_device,
      tostring(how), tostring(code), require("perfscript.microbench.msprof").log_tail(log, 8))
  end
  a.torch_device_name = status.device_name -- for the provenance log
  local times, err = M.case_times(tr)
  if not times then perf.fail("%s", err) end
  local measured, result, timed = M.settle(p, status, times, a.repeat_count)
  local path = simulate.write_op_summary(run_dir .. "/prof", p.cases, { repeat_count = a.repeat_count,
    measured = measured, task_type = "TORCH_" .. tostring(a.torch_device):upper() })
  say(("[TORCH] %d of %d case(s) timed on %s (torch %s); trace %s"):format(timed, #p.cases,
    status.device_name or a.torch_device, status.torch or "?", tr))
  return path, result
end

return M
