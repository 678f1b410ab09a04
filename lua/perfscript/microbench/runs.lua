-- recipes/runs.lua: the microbench runs of a database (<database>/.perfscript/runs/<id>/) with
-- their progress from the journals (perfscript.microbench.journal): cases done / failed /
-- timed out / left, per shard (one Slurm array task, i.e. one node, per shard); and --resume of
-- a Slurm run (microbench.lua --slurm): its unfinished shards go to sbatch again (only those
-- array indices), with the final write-back job after them (perfscript.microbench.slurm).
local perf = require "perfscript"
local argparse = require "argparse"
local options = require "perfscript.options"
local paths = require "perfscript.path"
local journal = require "perfscript.microbench.journal"
local slurm = require "perfscript.microbench.slurm"
local report = require "perfscript.microbench.report"

local M = {}

local say = require("perfscript.microbench.run").say  -- a line on stdout, flushed

function M.parser()
  local p = argparse("runs.lua", "List the microbench runs of a database and their progress (cases done, "
    .. "failed, timed out and left, per shard = node); resubmit the unfinished shards of a Slurm run.")
  options.database(p, { help = "The database the runs write into (their journals are in "
    .. "<dir>/.perfscript/runs/)." })
  p:option("--run", "Show one run (an id, or `last`): its shards, Slurm jobs and failures.")
  p:flag("--resume", "Resubmit a Slurm run (--run, default: the newest): only its unfinished shards "
    .. "(array indices), then its final write-back job; only the final job when every shard is done "
    .. "but the results are not written back yet.")
  p:flag("--retry-failed", "With --resume: a shard with failed or timed-out cases is unfinished too, and "
    .. "its task replays them.")
  p:flag("--dry-run", "With --resume: say what would be resubmitted; submit nothing.")
  return p
end

-- One run: {id =, dir =, meta =, state = slurm.json or nil, info = journal.read or nil,
-- shards = per shard counts (Slurm runs), totals =, error =}.
local function load(r)
  local run = { id = r.id, dir = r.dir, meta = r.meta }
  local state, serr = slurm.read_state(r.dir)
  run.state, run.error = state, serr
  if r.meta then
    local info, err = journal.read(r.dir)
    if not info then run.error = err else run.info = info end
  elseif not state then
    run.error = run.error or r.error
  end
  local n = state and math.tointeger(state.nodes)
  if n then
    run.shards = slurm.shards(run.info, run.meta, n)
    local t = { total = 0, done = 0, failed = 0, timeout = 0, left = 0 }
    for _, s in ipairs(run.shards) do for k in pairs(t) do t[k] = t[k] + s[k] end end
    run.totals = t
  elseif run.info then
    run.totals = run.info.totals
  end
  return run
end

-- Whether results are staged that no write-back has taken yet.
local function unwritten(run)
  local info = run.info
  if not info then return false end
  local last_written, last_done = nil, nil
  for _, e in ipairs(info.events) do if e.ev == "written" then last_written = math.max(last_written or 0, e.t or 0) end end
  for _, c in pairs(info.cases) do
    if c.status == "done" then last_done = math.max(last_done or 0, c.t or 0) end
  end
  if not last_done then return false end
  return not last_written or last_done > last_written
end

local function kind(run)
  local st = run.state
  local sim = run.meta and run.meta.simulated and ", simulated" or ""
  if st then return ("slurm %dx%d%s"):format(st.nodes or 0, st.npus_per_node or 0, sim) end
  return "local" .. sim
end

local function created(run)
  return (run.meta and run.meta.created) or (run.state and run.state.created) or ""
end

local function written(run)
  if not run.info then return "no" end
  local n = run.info.written
  if n == 0 then return "no" end
  return unwritten(run) and ("%d (more staged since)"):format(n) or tostring(n)
end

local function list(db, runs)
  if #runs == 0 then
    say(("No microbench runs in %s (no %s/)."):format(db, journal.DIR))
    return
  end
  local rows = {}
  for _, run in ipairs(runs) do
    local t = run.totals
    local shards = ""
    if run.shards then
      local fin = 0
      for _, s in ipairs(run.shards) do if s.finished then fin = fin + 1 end end
      shards = ("%d/%d"):format(fin, #run.shards)
    end
    if run.error and not t then
      rows[#rows + 1] = { run.id, created(run), kind(run), shards, "?", "?", "?", "?", "?", run.error }
    else
      rows[#rows + 1] = { run.id, created(run), kind(run), shards, t.total, t.done, t.failed, t.timeout, t.left,
        run.meta and written(run) or "not started" }
    end
  end
  say(("Microbench runs in %s, newest first:"):format(db))
  say(report.table({ "Run", "Created", "Kind", "Shards done", "Cases", "Done", "Failed", "Timed out", "Left",
    "Written back" }, rows))
end

local function detail(run)
  local m = run.meta or {}
  say(("Run %s (%s)"):format(run.id, run.dir))
  if run.meta then
    local idn = m.identity or {}
    say(("  created %s by perfscript %s; database %s; device %s, CANN %s, torch %s%s"):format(m.created or "?",
      tostring(m.version), tostring(m.database), tostring(idn.device or "?"), tostring(idn.cann or "?"),
      tostring(idn.torch or "?"), m.simulated and " (simulated)" or ""))
  else
    say("  no shard has started yet (no run.json)")
  end
  if run.error then say("  error: " .. run.error) end
  local st = run.state
  if st then
    local subs = {}
    for _, s in ipairs(st.submissions or {}) do
      subs[#subs + 1] = ("array %s (tasks %s) + final %s at %s"):format(s.array_job, s.indices or st.array,
        s.final_job or "-", s.time or "?")
    end
    say(("  Slurm: %d node(s) x %d NPU(s); submitted: %s"):format(st.nodes or 0, st.npus_per_node or 0,
      #subs > 0 and table.concat(subs, "; ") or "never"))
  end
  local rows = {}
  local shards = run.shards
  if not shards and run.info then
    shards = {}
    local ks = {}
    for k in pairs(run.info.shards) do ks[#ks + 1] = k end
    table.sort(ks)
    for _, k in ipairs(ks) do
      local s = run.info.shards[k]
      shards[#shards + 1] = { k = k, total = s.total, done = s.done, failed = s.failed, timeout = s.timeout,
        left = s.left, started = true, finished = s.left == 0 }
    end
  end
  for _, s in ipairs(shards or {}) do
    local state = not s.started and "not started" or (s.left > 0 and "unfinished")
      or ((s.failed + s.timeout) > 0 and "finished, with failures") or "finished"
    rows[#rows + 1] = { s.k, s.total, s.done, s.failed, s.timeout, s.left, state }
  end
  local t = run.totals
  if t then rows[#rows + 1] = { "all", t.total, t.done, t.failed, t.timeout, t.left, "" } end
  say(report.table({ "Shard", "Cases", "Done", "Failed", "Timed out", "Left", "State" }, rows))
  say("Written back: " .. written(run))
  if run.info then
    local why, order = {}, {}
    for _, id in ipairs(run.info.order) do
      local c = run.info.cases[id]
      if c.status == "failed" or c.status == "timeout" then
        local key = ("%s: %s"):format(c.op or "?", c.reason or c.status)
        if not why[key] then why[key] = 0; order[#order + 1] = key end
        why[key] = why[key] + 1
      end
    end
    for _, k in ipairs(order) do say(("  [FAILED] %s (%d case(s))"):format(k, why[k])) end
  end
end

-- --resume: the unfinished shards go to sbatch again, then the final job.
local function resume(a, run)
  if not run.state or not paths.isfile(run.dir .. "/" .. slurm.ARRAY) then
    perf.fail("run %s was not submitted with --slurm (no %s/%s): resume it with "
      .. "recipes/microbench.lua --resume %s", run.id, run.dir, slurm.ARRAY, run.id)
  end
  local queued = slurm.queued(run.dir, run.id)
  if queued == nil then
    io.stderr:write("[WARN] squeue could not say whether jobs of this run are still queued\n")
  elseif #queued > 0 then
    perf.fail("run %s still has jobs in the queue (%s): wait for them or scancel them first", run.id,
      table.concat(queued, "; "))
  end
  local todo = {}
  for _, s in ipairs(run.shards) do
    if not s.finished or (a.retry_failed and (s.failed + s.timeout) > 0) then todo[#todo + 1] = tostring(s.k) end
  end
  local env = a.retry_failed and { PERFSCRIPT_RETRY_FAILED = "1" } or nil
  if #todo == 0 then
    if not unwritten(run) and run.info and run.info.written > 0 then
      say(("[RESUME] run %s: every shard is finished and written back; nothing to submit."):format(run.id))
      return 0
    end
    say(("[RESUME] run %s: every shard is finished; submitting the final write-back job."):format(run.id))
    if a.dry_run then say("[RESUME] dry run: nothing submitted."); return 0 end
    slurm.submit(run.dir, nil, nil, { final_only = true })
    return 0
  end
  local indices = table.concat(todo, ",")
  say(("[RESUME] run %s: resubmitting shard(s) %s of %d, then the final write-back job."):format(run.id, indices,
    #run.shards))
  if a.dry_run then say("[RESUME] dry run: nothing submitted."); return 0 end
  slurm.submit(run.dir, indices, env)
  return 0
end

function M.main(argv, script)
  local a = M.parser():parse(argv)
  if (a.retry_failed or a.dry_run) and not a.resume then
    perf.fail("%s needs --resume", a.retry_failed and "--retry-failed" or "--dry-run")
  end
  local db = paths.abspath(options.database_dir(a, { script = script, say = say }))
  if not paths.isdir(db) then perf.fail("%s: no such database directory", db) end
  local runs = {}
  for _, r in ipairs(journal.list(db)) do runs[#runs + 1] = load(r) end
  -- newest first, a submitted Slurm run whose shards have not started included
  local function epoch(r) return (r.meta and r.meta.created_epoch) or (r.state and r.state.created_epoch) or 0 end
  table.sort(runs, function(x, y)
    if epoch(x) ~= epoch(y) then return epoch(x) > epoch(y) end
    return x.id > y.id
  end)
  if not a.run and not a.resume then
    list(db, runs)
    return 0
  end
  local want = a.run or "last"
  local run
  if want == "last" then
    run = runs[1]
    if not run then perf.fail("%s: no microbench runs (no %s/)", db, journal.DIR) end
  else
    for _, r in ipairs(runs) do if r.id == want then run = r end end
    if not run then
      local _, err = journal.resolve(db, want)
      perf.fail("%s", err or ("no run " .. want))
    end
  end
  detail(run)
  if a.resume then return resume(a, run) end
  return 0
end

return M
