-- Build the workspace's host runner, run `msprof op simulator` over it (collect), export the
-- simulator package MindStudio Insight opens, and check that package. Every process goes
-- through perfscript.proc (argv, a timeout that kills the whole process group), its output in
-- <workspace>/logs/<step>.log. A failed step leaves the workspace as it is and says where.
--
-- The simulator's layout (the msOpProf user guide, "msopprof Simulator Mode Performance Data",
-- and CANN's "msprof op simulator" pages): msprof writes OPPROF_<timestamp>_<XXX>/ under
-- --output, holding dump/ (raw simulation data) and simulator/:
--   simulator/trace.json, simulator/visualize_data.bin,
--   simulator/core<i>.veccore<j>|cubecore<j>/{trace.json, core*_instr_exe*.csv, core*_code_exe*.csv}
-- (the CSV names carry a timestamp suffix when several operators were simulated).
--
--   build(ws, o) -> runner | nil, message      o: cmake, runtime_include, runtime_libs, timeout
--   collect(ws, runner, o) -> opprof dir | nil, message   o: msprof, soc_version, kernel_lib, entry
--   export(ws, opprof, o) -> simulator dir | nil, message
--   find_package(root) -> simulator dir | nil, message
--   check_package(sim) -> {trace=, visualize=, cores = {{name=, dir=, trace=, instr = {csv...}}}} | nil, message
local perf = require "perfscript"
local lfs = require "lfs"
local paths = require "perfscript.path"

local M = {}

M.TIMEOUT = 1800

local function quote_cmd(argv) return require("perfscript.microbench.msprof").quote_cmd(argv) end

-- Runs argv with its output in ws/logs/<step>.log; nil, message naming the step and the log.
local function step(ws, name, argv, o)
  local logs = ws .. "/logs"
  assert(perf.fs.mkdir_p(logs))
  local log = logs .. "/" .. name .. ".log"
  local timeout = o.timeout or M.TIMEOUT
  if o.say then o.say(("[%s] %s"):format(name, quote_cmd(argv))) end
  local code, how = perf.proc.run { argv = argv, cwd = o.cwd, stdout = log, stderr = log,
    stdin_null = true, timeout = timeout, env = o.env }
  if code == nil then
    local err = tostring(how)
    if err:find(": not found$") and argv[1]:match("msprof$") then
      err = err .. " (activate the Ascend toolkit: source <ascend-toolkit>/set_env.sh, or pass --msprof PATH)"
    end
    return nil, ("%s: %s"):format(name, err)
  end
  if how == "timeout" then
    return nil, ("%s: timed out after %ds and was stopped (its process group killed); log %s")
      :format(name, timeout, log)
  end
  if code ~= 0 or how ~= "exit" then
    local text = paths.read(log) or ""
    local tail = {}
    for line in text:gmatch("[^\n]+") do tail[#tail + 1] = line; if #tail > 5 then table.remove(tail, 1) end end
    return nil, ("%s failed (%s %s): %s; log %s"):format(name, how, tostring(code),
      table.concat(tail, " | "), log)
  end
  return log
end
M.step = step

function M.build(ws, o)
  o = o or {}
  local cmake = o.cmake or "cmake"
  local argv = { cmake, "-S", ws, "-B", ws .. "/build" }
  if o.runtime_include then argv[#argv + 1] = "-DINSIGHT_RUNTIME_INCLUDE=" .. o.runtime_include end
  if o.runtime_libs then argv[#argv + 1] = "-DINSIGHT_RUNTIME_LIBS=" .. o.runtime_libs end
  local ok, err = step(ws, "configure", argv, o)
  if not ok then return nil, err end
  ok, err = step(ws, "build", { cmake, "--build", ws .. "/build" }, o)
  if not ok then return nil, err end
  local runner = ws .. "/build/insight_runner"
  if not paths.isfile(runner) then return nil, "build: no " .. runner .. " after the build" end
  return runner
end

-- The OPPROF_* directories directly under root, newest name last.
local function opprof_dirs(root)
  local out = {}
  if not paths.isdir(root) then return out end
  for name in lfs.dir(root) do
    if name:match("^OPPROF_") and paths.isdir(root .. "/" .. name) then out[#out + 1] = root .. "/" .. name end
  end
  table.sort(out)
  return out
end
M.opprof_dirs = opprof_dirs

function M.collect(ws, runner, o)
  o = o or {}
  local out = ws .. "/collect"
  local before = {}
  for _, d in ipairs(opprof_dirs(out)) do before[d] = true end
  local argv = { o.msprof or "msprof", "op", "simulator" }
  if o.soc_version then argv[#argv + 1] = "--soc-version=" .. o.soc_version end
  argv[#argv + 1] = "--output=" .. out
  argv[#argv + 1] = runner
  if o.kernel_lib then argv[#argv + 1] = o.kernel_lib end
  if o.entry then argv[#argv + 1] = o.entry end
  local ok, err = step(ws, "collect", argv, o)
  if not ok then return nil, err end
  local new = {}
  for _, d in ipairs(opprof_dirs(out)) do if not before[d] then new[#new + 1] = d end end
  if #new == 0 then return nil, ("collect: msprof wrote no OPPROF_* directory under %s"):format(out) end
  local dir = new[#new]
  if not paths.isdir(dir .. "/dump") then return nil, ("collect: %s has no dump/ directory"):format(dir) end
  return dir
end

function M.export(ws, opprof, o)
  o = o or {}
  local out = ws .. "/insight_export"
  local before = {}
  for _, d in ipairs(opprof_dirs(out)) do before[d] = true end
  local ok, err = step(ws, "export", { o.msprof or "msprof", "op", "simulator",
    "--export=" .. opprof .. "/dump", "--output=" .. out }, o)
  if not ok then return nil, err end
  local newest
  for _, d in ipairs(opprof_dirs(out)) do if not before[d] then newest = d end end
  if not newest then return nil, ("export: msprof wrote no OPPROF_* directory under %s"):format(out) end
  return M.find_package(newest)
end

-- The simulator/ directory of an OPPROF_* directory, or of the newest one under root.
function M.find_package(root)
  root = root:gsub("(.)/+$", "%1")
  if paths.basename(root) == "simulator" and paths.isdir(root) then return root end
  if paths.isdir(root .. "/simulator") then return root .. "/simulator" end
  local dirs = opprof_dirs(root)
  for i = #dirs, 1, -1 do
    if paths.isdir(dirs[i] .. "/simulator") then return dirs[i] .. "/simulator" end
  end
  return nil, ("%s: no simulator/ package (looked for simulator/ and OPPROF_*/simulator/)"):format(root)
end

-- Checks the package is complete: the summary trace, the visualisation file, and per core its
-- trace and instruction CSV. Returns what it found, or nil and every missing piece.
function M.check_package(sim)
  local missing, cores = {}, {}
  local function need(p) if not paths.isfile(p) then missing[#missing + 1] = p end end
  need(sim .. "/trace.json")
  need(sim .. "/visualize_data.bin")
  local names = {}
  for name in lfs.dir(sim) do
    if name:match("^core%d+") and paths.isdir(sim .. "/" .. name) then names[#names + 1] = name end
  end
  table.sort(names, function(a, b)
    local ia, ib = tonumber(a:match("^core(%d+)")), tonumber(b:match("^core(%d+)"))
    if ia ~= ib then return ia < ib end
    return a < b
  end)
  if #names == 0 then missing[#missing + 1] = sim .. "/core*/ (no per-core directory)" end
  for _, name in ipairs(names) do
    local d = sim .. "/" .. name
    local c = { name = name, dir = d, trace = d .. "/trace.json", instr = {} }
    need(c.trace)
    for f in lfs.dir(d) do
      if f:match("_instr_exe.*%.csv$") and paths.isfile(d .. "/" .. f) then c.instr[#c.instr + 1] = d .. "/" .. f end
    end
    table.sort(c.instr)
    if #c.instr == 0 then missing[#missing + 1] = d .. "/*_instr_exe_*.csv" end
    cores[#cores + 1] = c
  end
  if #missing > 0 then
    return nil, ("%s: incomplete simulator package, missing %s"):format(sim, table.concat(missing, ", "))
  end
  return { dir = sim, trace = sim .. "/trace.json", visualize = sim .. "/visualize_data.bin", cores = cores }
end

return M
