-- msprof launch orchestration (docs/rules.md, Replay; the Python original's
-- defects fixed): argv arrays only, the profiler output in a scratch directory outside the
-- database, a timeout that kills the whole process tree, and a per-operator fallback that
-- keeps going and keeps what succeeded.
local perf = require "perfscript"
local lfs = require "lfs"
local paths = require "perfscript.path"

local M = {}

local isdir = paths.isdir

-- Every PROF_* directory under root (recursive), sorted.
function M.prof_dirs(root)
  local out = {}
  if not isdir(root) then return out end
  paths.walk(root, function(p, name, mode)
    if mode == "directory" and name:match("^PROF_") then out[#out + 1] = p end
  end, { follow = true })
  table.sort(out)
  return out
end

local SUMMARY = "^op_summary_.*%.csv$"

local function summaries_in(dir)
  local list = {}
  for name in lfs.dir(dir) do
    if name:match(SUMMARY) and lfs.attributes(dir .. "/" .. name, "mode") == "file" then
      list[#list + 1] = dir .. "/" .. name
    end
  end
  table.sort(list)
  return list
end

-- The op_summary_*.csv files (all slices) of the PROF directories, in order.
function M.summaries(prof_dirs)
  local out = {}
  for _, d in ipairs(prof_dirs) do
    local o = d .. "/mindstudio_profiler_output"
    if isdir(o) then
      for _, p in ipairs(summaries_in(o)) do out[#out + 1] = p end
    end
  end
  return out
end

local WHAT = "a PROF_* directory, a directory holding PROF_* directories, a "
  .. "mindstudio_profiler_output directory or one op_summary_*.csv file"

-- The op_summary_*.csv files of what a user names with --prof-path: one op_summary_*.csv
-- file, a mindstudio_profiler_output directory (or any directory holding op_summary_*.csv
-- files), a PROF_* directory, or a directory with PROF_* directories anywhere below it.
-- Returns the list, or nil and a message naming the path and what was looked for.
local function find_summaries(path)
  local mode = lfs.attributes(path, "mode")
  if not mode then
    return nil, ("%s: no such file or directory (--prof-path takes %s)"):format(path, WHAT)
  end
  if mode == "file" then
    local name = path:match("[^/]+$")
    if name:match(SUMMARY) then return { path } end
    return nil, ("%s: not an op_summary_*.csv file (--prof-path takes %s)"):format(path, WHAT)
  end
  if mode ~= "directory" then return nil, ("%s: not a file or directory"):format(path) end
  local here = summaries_in(path)
  if #here > 0 then return here end
  local dirs = M.prof_dirs(path)
  local name = path:match("[^/]+$") or path
  if name:match("^PROF_") then table.insert(dirs, 1, path) end
  local out = M.summaries(dirs)
  if #out > 0 then return out end
  if #dirs == 0 then
    return nil, ("%s: no op_summary_*.csv in it and no PROF_* directory below it (--prof-path takes %s)")
      :format(path, WHAT)
  end
  return nil, ("%s: %d PROF_* director%s (%s%s) but no mindstudio_profiler_output/op_summary_*.csv in "
    .. "any of them (export the data first: msprof --export=on --output=<PROF_* directory>)")
    :format(path, #dirs, #dirs == 1 and "y" or "ies", dirs[1], #dirs > 1 and ", ..." or "")
end

function M.find_summaries(path)
  path = path:gsub("(.)/+$", "%1")
  local ok, list, err = pcall(find_summaries, path)
  if not ok then return nil, ("%s: %s"):format(path, tostring(list)) end -- an unreadable directory
  return list, err
end

-- Removes a directory tree (the profiler scratch directory); links are removed, never followed.

-- argv as one POSIX shell command line (shown in messages, written into the Slurm scripts):
-- a word of only characters no shell treats specially stays as it is, others are single-quoted.
local function quote_cmd(argv)
  local parts = {}
  for i, a in ipairs(argv) do
    parts[i] = (a == "" or a:find("[^%w@%%+=:,./_-]")) and ("'" .. a:gsub("'", "'\\''") .. "'") or a
  end
  return table.concat(parts, " ")
end
M.quote_cmd = quote_cmd

-- Starts `msprof --output=<out> <app...>` without waiting. o: msprof, out, app (argv), env,
-- cwd, log. Returns the process or nil, message.
function M.start(o)
  assert(perf.fs.mkdir_p(o.out))
  local argv = { o.msprof or "msprof", "--output=" .. o.out }
  for _, a in ipairs(o.app) do argv[#argv + 1] = a end
  local p, err = perf.proc.spawn { argv = argv, env = o.env, cwd = o.cwd, stdout = o.log,
    stderr = o.log, stdin_null = true }
  if not p then
    if err:find(": not found$") then
      err = ("msprof not found (%s). Activate the Ascend toolkit environment "
        .. "(source <ascend-toolkit>/set_env.sh) or pass --msprof PATH, or use --simulate."):format(argv[1])
    end
    return nil, err
  end
  return p, quote_cmd(argv)
end

-- Waits for a started run; returns {rc=, how=, summaries=, cmd=}.
-- A to-be-closed guard that kills the processes' groups when the scope is left by an error
-- (Ctrl-C included), so that nothing still writes into a work directory being removed.
function M.kill_on_error(procs)
  return setmetatable({}, { __close = function(_, err)
    if err == nil then return end
    for _, p in ipairs(procs) do p:kill(0.5) end -- the group, even when its leader has ended
  end })
end

-- The last lines of a log, on one line (the work directory, and so the log, may be removed).
function M.log_tail(path, n)
  local f = io.open(path, "rb")
  if not f then return "(no log)" end
  local lines = {}
  for l in f:lines() do
    if l:match("%S") then
      lines[#lines + 1] = l
      if #lines > (n or 5) then table.remove(lines, 1) end
    end
  end
  f:close()
  return #lines > 0 and table.concat(lines, " | ") or "(empty log)"
end

-- Where a failed run's evidence is: kept on disk, or the log's last lines.
local function evidence(o, dir)
  if o.keep then return ("profiling data kept at %s (log: %s/msprof.log)"):format(dir, dir) end
  return ("msprof log: %s (--keep-workdir keeps the profiler output)"):format(M.log_tail(dir .. "/msprof.log"))
end

function M.finish(p, o, cmd)
  local guard <close> = M.kill_on_error { p }
  -- short waits: Ctrl-C is raised between them (a blocking wait would hold it until the end)
  local rc, how
  local waited, step = 0, 0.25
  repeat
    rc, how = p:wait(step)
    waited = waited + step
  until rc or (o.timeout and waited >= o.timeout)
  if not rc then
    p:kill(2)
    rc, how = 124, "timeout"
  else
    -- orphans of the run (workers msprof left behind) would keep holding the NPU
    p:kill(0.2)
  end
  return { rc = rc, how = how, cmd = cmd, out = o.out, summaries = M.summaries(M.prof_dirs(o.out)) }
end

-- One profiled run, start to end.
function M.run(o)
  local p, cmd = M.start(o)
  if not p then return nil, cmd end
  return M.finish(p, o, cmd)
end

-- The combined run with the per-operator fallback. o: as M.run plus ops (list), app_for(op_or_nil)
-- -> app argv, allow_fallback, say, keep (the output outlives the run: messages point at it). Returns {summaries=, failed={{op=, reason=}}, runs=} or nil, message.
function M.profile(o)
  local say = o.say or print
  local res = { summaries = {}, failed = {}, runs = 0, dirs = {} }
  local first, err = M.run { msprof = o.msprof, out = o.out, app = o.app_for(nil), env = o.env,
    cwd = o.cwd, log = o.out .. "/msprof.log", timeout = o.timeout }
  if not first then return nil, err end
  res.runs = 1
  if first.rc == 0 and #first.summaries > 0 then
    res.summaries = first.summaries
    return res
  end
  if #first.summaries > 0 then
    say(("[WARN] msprof exited with %s, but %d op_summary file(s) were generated under %s. "
      .. "Continuing with generated profiling data."):format(first.how == "timeout" and "a timeout" or tostring(first.rc),
      #first.summaries, o.out))
    res.summaries = first.summaries
    res.partial = true
    return res
  end
  local ops = o.ops or {}
  if not o.allow_fallback or #ops < 2 or o.fail_fast then
    return nil, ("msprof exited with %s without op_summary data; %s; command: %s%s")
      :format(first.how == "timeout" and "a timeout" or tostring(first.rc), evidence(o, o.out), first.cmd,
        (#ops < 2 or o.fail_fast) and "" or "; rerun with --ops to enable the per-operator fallback")
  end
  say("[WARN] Combined msprof run produced no op_summary data. Retrying each selected operator in a separate msprof run.")
  for _, op in ipairs(ops) do
    local dir = o.out .. "/per_op_" .. op
    local r, rerr = M.run { msprof = o.msprof, out = dir, app = o.app_for(op), env = o.env, cwd = o.cwd,
      log = dir .. "/msprof.log", timeout = o.timeout }
    res.runs = res.runs + 1
    if not r then return nil, rerr end
    if #r.summaries == 0 then
      res.failed[#res.failed + 1] = { op = op, reason = ("msprof exited with %s while profiling %s; %s")
        :format(r.how == "timeout" and "a timeout" or tostring(r.rc), op, evidence(o, dir)) }
      say("[FAIL] " .. res.failed[#res.failed].reason)
    else
      if r.rc ~= 0 then say(("[WARN] msprof exited with %d while profiling %s; continuing with its op_summary data."):format(r.rc, op)) end
      for _, s in ipairs(r.summaries) do res.summaries[#res.summaries + 1] = s end
    end
  end
  return res
end

return M
