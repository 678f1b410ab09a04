-- microbench.lua --slurm (README, Collecting on a cluster): a collection as Slurm jobs.
-- A job array with one task per node measures the plan's shards (`--shard K/N --stage-only`
-- over the node's NPUs with --devices, K = SLURM_ARRAY_TASK_ID, 1-based), staging into the
-- run directory <database>/.perfscript/runs/<id>/ (shared storage); a final job that depends on
-- the array (afterany) writes everything staged back under the database lock
-- (`--resume <id> --writeback-only`). Both scripts live in the run directory with slurm.json
-- (the submissions), so that recipes/runs.lua can resubmit only the unfinished shards.
--
--   slurm.options(parser)                     -- the flags
--   local text = slurm.scripts(o)             -- {array =, final =}: the sbatch scripts
--   slurm.main(a, argv, script)               -- microbench.lua --slurm / --slurm-dry-run
--   slurm.shards(info, meta, n)               -- per shard: counts, started, finished
--   slurm.resubmit(run_dir, shards, opts)     -- sbatch again: those array indices + final job
local perf = require "perfscript"
local lfs = require "lfs"
local cjson = require "cjson"
local paths = require "perfscript.path"
local journal = require "perfscript.microbench.journal"
local msprof = require "perfscript.microbench.msprof"
local run = require "perfscript.microbench.run"

local M = {}

M.ARRAY, M.FINAL, M.STATE = "slurm-array.sbatch", "slurm-final.sbatch", "slurm.json"

local say = run.say  -- a line on stdout, flushed

local function positive(s)
  local v = math.tointeger(tonumber(s))
  if not v or v < 1 then return nil, ("'%s' is not a whole number of 1 or more"):format(s) end
  return v
end

function M.options(p)
  p:flag("--slurm", "Submit the collection as Slurm jobs (sbatch): a job array with one task per node "
    .. "(--nodes), each measuring its shard of the plan on the node's NPUs (--npus-per-node) and staging "
    .. "the results in the run directory <database>/.perfscript/runs/<id>/ (shared storage), and a final "
    .. "job, after the array, that writes everything back under the database lock. The sbatch scripts "
    .. "are kept in the run directory; recipes/runs.lua follows the run and resubmits what is unfinished.")
  p:flag("--slurm-dry-run", "Print the sbatch scripts and commands of --slurm; write no script, submit nothing.")
  p:option("--nodes", "With --slurm: nodes, i.e. array tasks (shards of the plan) (default: 1).")
    :convert(positive)
  p:option("--npus-per-node", "With --slurm: NPUs per node; each task asks for the generic resource "
    .. "npu:<n> and replays on devices 0..n-1 (default: 8)."):convert(positive)
  p:option("--partition", "With --slurm: the Slurm partition (both jobs).")
  p:option("--time", "With --slurm: the time limit of each job (sbatch --time, e.g. 4:00:00).")
  p:option("--sbatch-arg", "With --slurm: one more sbatch option for both jobs, written as an #SBATCH "
    .. "line; repeatable. Give it with '=' when it starts with '-': --sbatch-arg=--account=proj.")
    :count("*"):argname("<option>")
end

-- The microbench flags the submitter takes for itself (value: how many arguments follow).
local OWN = { ["--slurm"] = 0, ["--slurm-dry-run"] = 0, ["--nodes"] = 1, ["--npus-per-node"] = 1,
  ["--partition"] = 1, ["--time"] = 1, ["--sbatch-arg"] = 1, ["--run-id"] = 1 }
-- Flags a --slurm run sets itself for its jobs, or that make no sense with it.
local REFUSED = { "devices", "shard", "stage_only", "writeback_only", "resume", "retry_failed",
  "prof_path", "validate", "plan_only" }

-- The arguments the jobs get: the command line without the submitter's own flags.
function M.forward(argv)
  local out, i = {}, 1
  while argv[i] ~= nil do
    local s = argv[i]
    local name = s:match("^(%-%-[%w-]+)=") or s
    local n = OWN[name]
    if n == nil then out[#out + 1] = s; i = i + 1
    elseif name ~= s then i = i + 1          -- the value after "="
    else i = i + 1 + n end
  end
  return out
end

-- An #SBATCH line holds one option without blanks or quotes (sbatch splits it on blanks).
local function directive(v, what)
  if v:find("[%s\"'\\]") then
    perf.fail("%s %q: an #SBATCH line cannot hold blanks, quotes or backslashes", what, v)
  end
  return "#SBATCH " .. v
end

local function command(argv)
  return msprof.quote_cmd(argv)
end

-- The sbatch scripts of a run. o: id, run_dir, cwd, perfscript (the binary), recipe, args (the
-- forwarded microbench arguments), nodes, npus, partition, time, extra (sbatch options).
-- Returns {array = text, final = text}.
function M.scripts(o)
  local devices = {}
  for d = 0, o.npus - 1 do devices[#devices + 1] = tostring(d) end
  local common = {}
  if o.partition then common[#common + 1] = directive("--partition=" .. o.partition, "--partition") end
  if o.time then common[#common + 1] = directive("--time=" .. o.time, "--time") end
  for _, x in ipairs(o.extra or {}) do common[#common + 1] = directive(x, "--sbatch-arg") end
  local base = { o.perfscript, o.recipe }
  for _, x in ipairs(o.args) do base[#base + 1] = x end
  local function head(lines, what)
    local t = { "#!/bin/bash",
      ("# perfscript microbench run %s: %s"):format(o.id, what),
      "# (written by microbench.lua --slurm; recipes/runs.lua --run " .. o.id .. " follows it and resubmits it)" }
    for _, l in ipairs(lines) do t[#t + 1] = l end
    for _, l in ipairs(common) do t[#t + 1] = l end
    t[#t + 1] = "set -eu"
    t[#t + 1] = "cd " .. command { o.cwd }
    return t
  end
  local array = head({
    directive("--job-name=perfscript-" .. o.id, "the run id"),
    directive(("--array=1-%d"):format(o.nodes), "--nodes"),
    "#SBATCH --nodes=1",
    "#SBATCH --ntasks=1",
    directive(("--gres=npu:%d"):format(o.npus), "--npus-per-node"),
    directive("--output=" .. o.run_dir .. "/slurm-%A_%a.out", "the run directory"),
  }, ("one array task per node measures shard K/%d of the plan on its %d NPU(s) and stages the results")
    :format(o.nodes, o.npus))
  local task = { table.unpack(base) }
  for _, x in ipairs { "--devices", table.concat(devices, ","), "--run-id", o.id } do task[#task + 1] = x end
  -- PERFSCRIPT_RETRY_FAILED=1 in the job's environment (runs.lua --resume --retry-failed)
  array[#array + 1] = "exec " .. command(task) .. ' --shard "${SLURM_ARRAY_TASK_ID:?}/' .. o.nodes
    .. '" --stage-only ${PERFSCRIPT_RETRY_FAILED:+--retry-failed}'
  local final = head({
    directive("--job-name=perfscript-" .. o.id .. "-writeback", "the run id"),
    "#SBATCH --nodes=1",
    "#SBATCH --ntasks=1",
    directive("--output=" .. o.run_dir .. "/slurm-%j-writeback.out", "the run directory"),
  }, "after the array job (afterany), write every staged result back under the database lock")
  local wb = { table.unpack(base) }
  for _, x in ipairs { "--resume", o.id, "--writeback-only" } do wb[#wb + 1] = x end
  final[#final + 1] = "exec " .. command(wb)
  return { array = table.concat(array, "\n") .. "\n", final = table.concat(final, "\n") .. "\n" }
end

-- This program's own path (the jobs run the same binary: it must be on shared storage too).
local function self_exe()
  local target = lfs.symlinkattributes("/proc/self/exe", "target")
  if target and target ~= "" then return target end
  local a0 = arg and arg[-1] or "perfscript"
  return a0:find("/", 1, true) and paths.abspath(a0) or (perf.proc.which(a0) or a0)
end

-- The sbatch command lines of a submission: {array = argv, final = argv with "<array job>"}.
local function sbatch_argv(run_dir, indices)
  local arr = { "sbatch", "--parsable" }
  if indices then arr[#arr + 1] = "--array=" .. indices end
  arr[#arr + 1] = run_dir .. "/" .. M.ARRAY
  return arr, { "sbatch", "--parsable", "--dependency=afterany:<array job>", run_dir .. "/" .. M.FINAL }
end

-- Runs sbatch; returns the job id or nil, message.
local function sbatch(argv, run_dir, env)
  local out = ("%s/.sbatch.%d.out"):format(run_dir, journal.pid() or 0)
  local ok, code, how = pcall(perf.proc.run, { argv = argv, stdout = out, stderr = out, stdin_null = true,
    timeout = 120, env = env })
  local text = paths.read(out) or ""
  os.remove(out)
  text = paths.trim(text)
  if not ok then return nil, tostring(code) end
  if code == nil then
    if tostring(how):find("not found", 1, true) then
      return nil, "sbatch not found: submit from a Slurm login node (or print the scripts with --slurm-dry-run)"
    end
    return nil, tostring(how)
  end
  if how ~= "exit" or code ~= 0 then
    return nil, ("%s failed (%s %s): %s"):format(command(argv), how, tostring(code), text)
  end
  local id = text:match("^(%d+)[;%s]?") or text:match("\n(%d+)[;%s]*$")
  if not id then return nil, ("%s: no job id in its output: %s"):format(command(argv), text) end
  return id
end

local function read_state(run_dir)
  local text = paths.read(run_dir .. "/" .. M.STATE)
  if not text then return nil end
  local ok, v = pcall(cjson.decode, text)
  if not ok or type(v) ~= "table" then return nil, ("%s/%s:1: not a JSON object"):format(run_dir, M.STATE) end
  return v
end
M.read_state = read_state

local function write_state(run_dir, state)
  local path = run_dir .. "/" .. M.STATE
  local how, err = perf.fs.write_atomic(path, cjson.encode(state) .. "\n", { if_changed = false })
  if not how then perf.fail("%s", err) end
  say(("[WRITE] %s %s"):format(how, path))
end

-- Submits the array (indices: nil for the script's own, else "2,4") and the final job after it
-- (opts.final_only: the final job alone); records the submission in slurm.json. env: extra
-- environment of the array's tasks. Returns the array and final job ids.
function M.submit(run_dir, indices, env, opts)
  opts = opts or {}
  local arr_argv, fin_argv = sbatch_argv(run_dir, indices)
  local arr, err
  if opts.final_only then
    table.remove(fin_argv, 3)
  else
    arr, err = sbatch(arr_argv, run_dir, env)
    if not arr then perf.fail("%s", err) end
    fin_argv[3] = "--dependency=afterany:" .. arr
  end
  local fin, ferr = sbatch(fin_argv, run_dir)
  if not fin then
    perf.fail("%s%s", ferr, arr and ("\nThe array job " .. arr .. " was submitted; once it has ended, write back "
      .. "with recipes/runs.lua --run " .. paths.basename(run_dir) .. " --resume.") or "")
  end
  local state = read_state(run_dir) or {}
  state.submissions = state.submissions or {}
  state.submissions[#state.submissions + 1] = { array_job = arr, final_job = fin,
    indices = not opts.final_only and (indices or state.array) or nil, time = os.date("!%Y-%m-%dT%H:%M:%SZ") }
  write_state(run_dir, state)
  if arr then
    say(("[SLURM] array job %s (tasks %s), final job %s (afterany:%s)"):format(arr, indices or state.array or "all",
      fin, arr))
  else
    say(("[SLURM] final job %s"):format(fin))
  end
  return arr, fin
end

-- Whether the flags ask for a Slurm submission; the Slurm-only flags without it are an error.
function M.wanted(a)
  if a.slurm or a.slurm_dry_run then return true end
  for _, f in ipairs { "nodes", "npus_per_node", "partition", "time" } do
    if a[f] then perf.fail("--%s needs --slurm (or --slurm-dry-run)", (f:gsub("_", "-"))) end
  end
  if a.sbatch_arg and #a.sbatch_arg > 0 then perf.fail("--sbatch-arg needs --slurm (or --slurm-dry-run)") end
  return false
end

-- microbench.lua --slurm | --slurm-dry-run. a: the parsed flags, argv: the command line,
-- script: the recipe's path. Returns the exit status.
function M.main(a, argv, script)
  for _, f in ipairs(REFUSED) do
    if a[f] then perf.fail("--%s cannot be combined with --slurm (the jobs set their own)", (f:gsub("_", "-"))) end
  end
  require("perfscript.microbench.resume").check(a)  -- the run id's rule
  -- the database the jobs write (made now, so that no two tasks copy a seed at once)
  local _, dst = run.databases(a, script, a.slurm_dry_run)
  a.nodes, a.npus_per_node = a.nodes or 1, a.npus_per_node or 8
  local id = a.run_id or journal.new_id()
  local run_dir = paths.join(journal.runs_dir(dst), id)
  if lfs.attributes(run_dir) then
    perf.fail("run %s already exists (%s): choose another --run-id, or follow it with recipes/runs.lua --run %s",
      id, run_dir, id)
  end
  local o = { id = id, run_dir = run_dir, cwd = lfs.currentdir(), perfscript = self_exe(),
    recipe = paths.abspath(script), args = M.forward(argv), nodes = a.nodes, npus = a.npus_per_node,
    partition = a.partition, time = a.time, extra = a.sbatch_arg }
  local text = M.scripts(o)
  local arr_argv, fin_argv = sbatch_argv(run_dir)
  if a.slurm_dry_run then
    say(("# %s/%s\n%s\n# %s/%s\n%s"):format(run_dir, M.ARRAY, text.array, run_dir, M.FINAL, text.final))
    say("# submitted with:\n" .. command(arr_argv) .. "\n" .. command(fin_argv))
    say("[SLURM] dry run: nothing written, nothing submitted.")
    return 0
  end
  local ok, err = perf.fs.mkdir_p(run_dir)
  if not ok then perf.fail("%s", err) end
  for name, t in pairs { [M.ARRAY] = text.array, [M.FINAL] = text.final } do
    ok, err = perf.fs.write_atomic(run_dir .. "/" .. name, t, { if_changed = false })
    if not ok then perf.fail("%s", err) end
    say(("[WRITE] created %s/%s"):format(run_dir, name))
  end
  write_state(run_dir, { id = id, nodes = a.nodes, npus_per_node = a.npus_per_node, array = "1-" .. a.nodes,
    created = os.date("!%Y-%m-%dT%H:%M:%SZ"), created_epoch = os.time(), submissions = {} })
  M.submit(run_dir)
  say(("[SLURM] run %s: %d node(s) x %d NPU(s); results staged in %s, written back into %s by the final job.\n"
    .. "[SLURM] follow it: perfscript recipes/runs.lua --database-path %s --run %s"):format(id, a.nodes,
    a.npus_per_node, run_dir, dst, command { dst }, id))
  return 0
end

-- The cases of shard k (1-based) of n among a plan of `cases` cases (index % n == k - 1).
local function expected(cases, k, n)
  if not cases or cases < k then return 0 end
  return (cases - k) // n + 1
end

-- Per shard 1..n of a run: {k =, total =, done =, failed =, timeout =, left =, started =,
-- finished =} from journal.read's info (nil: no shard has started) and run.json's meta. A case
-- counts for the shard its plan index gives (journal.shard_of: the shard that measures it, whoever
-- journaled its plan; journals from before resume.start planned by index count right too); a
-- shard's cases not planned yet count as left; started: the shard has its journal file.
function M.shards(info, meta, n)
  local out = {}
  for k = 1, n do
    out[k] = { k = k, total = 0, done = 0, failed = 0, timeout = 0, left = 0,
      started = info ~= nil and info.dir ~= nil and paths.isfile(journal.file_of(info.dir, { k = k, n = n })) }
  end
  for _, c in pairs(info and info.cases or {}) do
    local k = math.tointeger(c.index) and journal.shard_of(c.index, n) or math.tointeger(c.shard) or 1
    local r = out[k]
    if r then
      local st = c.status or "left"
      r.total, r[st] = r.total + 1, r[st] + 1
    end
  end
  local cases = meta and math.tointeger(meta.cases)
  for k, r in ipairs(out) do
    local want = expected(cases, k, n)
    if cases and want > r.total then r.left, r.total = r.left + want - r.total, want end
    -- without a plan size (no shard has run), a shard is unfinished
    r.finished = cases ~= nil and r.left == 0
  end
  return out
end

-- The run's jobs that squeue still lists (by their job names): {"<id> <name> <state>", ...};
-- nil when squeue cannot tell.
function M.queued(run_dir, id)
  local out = ("%s/.squeue.%d.out"):format(run_dir, journal.pid() or 0)
  local ok, code = pcall(perf.proc.run, { argv = { "squeue", "-h", "-o", "%i %j %T",
    "--name=perfscript-" .. id .. ",perfscript-" .. id .. "-writeback" },
    stdout = out, stderr = "/dev/null", stdin_null = true, timeout = 60 })
  local text = paths.read(out)
  os.remove(out)
  if not ok or code ~= 0 or not text then return nil end
  local jobs = {}
  for line in text:gmatch("[^\n]+") do jobs[#jobs + 1] = paths.trim(line) end
  return jobs
end

return M
