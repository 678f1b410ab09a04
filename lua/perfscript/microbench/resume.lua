-- Resume of microbench runs (docs/rules.md, Resume): the flags, the identity a run is bound
-- to, the run's journal (perfscript.microbench.journal) and its staged results.
--
--   resume.options(parser)                       -- --run-id, --resume, --retry-failed, --force,
--                                                -- --shard, --stage-only, --writeback-only, --batch-size
--   local ctx = resume.start(a, dst, p, say)     -- create / join / resume; ctx.todo[id] = true
--   resume.stage(ctx, batch, summaries, ep, cases, status, simulated)
--   local groups = resume.staged(ctx)            -- {{ep =, files = {...}}, ...} for the write-back
--   resume.status(ctx)                           -- {success =, failed =, skipped =} from the journal
-- Staged results: <run>/staged/<batch>/NNN_op_summary_*.csv and batch.json, written before the
-- journal's done marks name the batch; a batch no done mark names (a kill between the two)
-- is never written back, and its cases are measured again.
local perf = require "perfscript"
local cjson = require "cjson"
local paths = require "perfscript.path"
local journal = require "perfscript.microbench.journal"

local M = {}

function M.options(p)
  p:option("--run-id", "Use this run id: create the run (<database>/.perfscript/runs/<id>/) or join it as "
    .. "a shard; a shard that already ran replays only what it has not done.")
  p:option("--resume", "Resume a run (an id, or `last`): replay only the cases not done, then write "
    .. "back everything staged. Refused when the perfscript version, the database path, the plan's "
    .. "inputs or the CANN / torch / device identity differ (see --force); with --writeback-only the "
    .. "CANN / torch / device identity is not compared (nothing is measured).")
  p:flag("--retry-failed", "With --resume: also replay the cases that failed or timed out.")
  p:flag("--force", "Resume despite a different perfscript version, database path, plan inputs or "
    .. "CANN / torch / device identity (each difference is said).")
  p:option("--shard", "K/N: only the plan's cases with index % N == K-1 (0-based; one Slurm array task "
    .. "per node); the shard appends to its own journal-shard<K>.jsonl.")
  p:flag("--stage-only", "Measure and stage the results in the run directory; no write-back.")
  p:flag("--writeback-only", "With --resume: measure nothing; write back everything staged under "
    .. "the database lock (the cluster's final job, on any node: it compares the perfscript version, "
    .. "the database path and the plan inputs, not the device, CANN or torch).")
  p:option("--batch-size", "Cases per msprof run (0: all of a shard's cases in one run). A kill "
    .. "loses at most the batch being measured.", "0"):convert(math.tointeger)
end

-- Checks the flags together; returns the shard {k =, n =} or nil.
function M.check(a)
  local shard
  if a.shard then
    local k, n = a.shard:match("^(%d+)/(%d+)$")
    k, n = math.tointeger(tonumber(k)), math.tointeger(tonumber(n))
    if not k or n < 1 or k < 1 or k > n then
      perf.fail("--shard %s: expected K/N with 1 <= K <= N (e.g. 2/4)", a.shard)
    end
    shard = { k = k, n = n }
  end
  local function conflict(x, y) perf.fail("%s cannot be combined with %s", x, y) end
  if a.writeback_only and not a.resume then perf.fail("--writeback-only needs --resume ID|last") end
  if a.writeback_only and a.stage_only then conflict("--writeback-only", "--stage-only") end
  if a.writeback_only and shard then conflict("--writeback-only", "--shard (the write-back takes every shard)") end
  if a.retry_failed and not (a.resume or a.run_id) then perf.fail("--retry-failed needs --resume ID|last") end
  if a.resume and a.run_id and a.resume ~= a.run_id then conflict("--resume " .. a.resume, "--run-id " .. a.run_id) end
  for _, f in ipairs { "resume", "run_id", "shard", "stage_only", "writeback_only" } do
    if a[f] and (a.prof_path or a.validate or a.plan_only) then
      conflict("--" .. f:gsub("_", "-"), a.prof_path and "--prof-path" or a.validate and "--validate" or "--plan-only")
    end
  end
  for _, f in ipairs { "run_id", "resume" } do
    local v = a[f]
    if v and not v:match("^[%w][%w._-]*$") then
      perf.fail("--%s %s: a run id is letters, digits, '.', '_' and '-' (as in .perfscript/runs/<id>)", f:gsub("_", "-"), v)
    end
  end
  if a.batch_size and a.batch_size < 0 then perf.fail("--batch-size must be 0 or positive, got %d", a.batch_size) end
  return shard
end

-- The first "version=" value of the CANN toolkit's version files, or nil.
local function cann_version()
  for _, var in ipairs { "ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH" } do
    local home = os.getenv(var)
    if home and home ~= "" then
      for _, f in ipairs { "version.cfg", "ascend_toolkit_install.info", "../version.cfg" } do
        local text = paths.read(home .. "/" .. f)
        local v = text and (text:match("\n?version=%[?([^%]\n]+)") or text:match("_version=%[([^%]\n]+)"))
        if v then return v end
      end
    end
  end
  return nil
end

-- torch and torch_npu versions from the package metadata (no import: fast), or nil.
local function torch_versions(python, tmp)
  local out = tmp .. "/torch_versions.txt"
  local ok = pcall(function()
    return perf.proc.run { argv = { python, "-c", "import importlib.metadata as m\n"
      .. "for p in ('torch', 'torch_npu'):\n  try: print(p, m.version(p))\n  except Exception: print(p, '')" },
      stdout = out, stderr = "/dev/null", stdin_null = true, timeout = 20 }
  end)
  local text = ok and paths.read(out)
  os.remove(out)
  if not text then return nil, nil end
  local t = text:match("torch (%S+)")
  local n = text:match("torch_npu (%S+)")
  return t, n
end

-- The CANN / torch / device identity of this run (simulated: the model's, not a machine's).
function M.identity(a, tmp)
  if a.simulate then return { device = "simulated (roofline model)", cann = "simulated", torch = "simulated" } end
  local id = { cann = cann_version() }
  id.torch, id.torch_npu = torch_versions(a.python, tmp)
  id.device = os.getenv("PERFSCRIPT_DEVICE_NAME")
  if not id.device and perf.proc.which("npu-smi") then
    local out = tmp .. "/npu_smi.txt"
    pcall(perf.proc.run, { argv = { "npu-smi", "info" }, stdout = out, stderr = "/dev/null", stdin_null = true, timeout = 20 })
    local text = paths.read(out)
    os.remove(out)
    -- the first chip row: "| 0     910B3     | OK ..."
    id.device = text and text:match("\n|%s*%d+%s+([%w_-]+)%s+|")
  end
  id.device = id.device or "npu"
  return id
end

-- A hash of what shapes the plan: the options that change it and every case's id and record.
local RECORD = { "OP State", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                 "Output Data Types", "Output Formats", "EP Size" }
function M.plan_hash(a, p)
  local parts = { "mode=" .. a.update_mode, "repeat=" .. a.repeat_count, "warmup=" .. a.warmup,
    "ep=" .. tostring(a.dispatch_ffn_combine_ep_size), "simulate=" .. tostring(a.simulate or false) }
  for _, c in ipairs(p.cases) do
    local r = { c.id }
    for i, k in ipairs(RECORD) do r[i + 1] = c.record and c.record[k] or "" end
    parts[#parts + 1] = table.concat(r, "\31")
  end
  return ("%016x"):format(perf.sig.hash(table.concat(parts, "\30")))
end

-- What a resume compares, with the words that name it.
local CHECKS = {
  { "version", "perfscript version" }, { "database", "database path" }, { "plan_hash", "plan inputs" },
  { "cann", "CANN version", true }, { "torch", "torch version", true }, { "torch_npu", "torch_npu version", true },
  { "device", "device", true } }

-- The differences between a run's recorded meta and now: {"the plan inputs differ (...)", ...}.
-- now.identity nil: the identity is not compared (a write-back-only resume measures nothing).
local function differences(meta, now, skip_plan)
  local out = {}
  for _, c in ipairs(CHECKS) do
    local key, words, ident = c[1], c[2], c[3]
    local was = ident and (meta.identity or {})[key] or meta[key]
    local is = ident and (now.identity or {})[key] or now[key]
    if not (skip_plan and key == "plan_hash") and not (ident and not now.identity)
        and tostring(was) ~= tostring(is) then
      out[#out + 1] = ("the %s differs (run: %s, now: %s)"):format(words, tostring(was or "unknown"), tostring(is or "unknown"))
    end
  end
  return out
end

-- Creates, joins or resumes the run; returns ctx = {j =, dir =, id =, todo = {[case id] = true},
-- info = journal.read before this process measured, resumed = bool, mine = n}.
function M.start(a, dst, p, say, opts)
  opts = opts or {}
  local shard = opts.shard
  -- a write-back-only resume measures nothing: no identity of this machine to compare or record
  local now = { version = perf.version, database = dst, plan_hash = M.plan_hash(a, p),
    identity = not a.writeback_only and M.identity(a, opts.tmp or "/tmp") or nil }
  local dir, j, err, meta
  local existing = false
  if a.resume then
    dir, err = journal.resolve(dst, a.resume)
    if not dir then perf.fail("--resume %s: %s", a.resume, err) end
    existing = true
  elseif a.run_id and paths.isfile(paths.join(journal.runs_dir(dst), a.run_id, "run.json")) then
    dir = paths.join(journal.runs_dir(dst), a.run_id)
    existing = true
  end
  if existing then
    local merr
    meta, merr = journal.meta(dir)
    if not meta then perf.fail("%s", merr) end
    local info0, ierr = journal.read(dir)
    if not info0 then perf.fail("%s", ierr) end
    local begun = false
    for _, e in ipairs(info0.events) do if e.ev == "writeback-begin" then begun = true end end
    -- a write-back that began changed the database itself: the plan is not compared then
    local diff = differences(meta, now, begun)
    if #diff > 0 then
      if not a.force then
        perf.fail("cannot resume run %s: %s%s. Resume anyway with --force, or start a new run.",
          meta.id, table.concat(diff, "; "), a.writeback_only and " (--writeback-only measures nothing: it "
            .. "compares the perfscript version, the database path and the plan inputs, not the device, "
            .. "CANN or torch)" or "")
      end
      for _, d in ipairs(diff) do say("[RESUME] --force: " .. d) end
    end
    j, err = journal.open(dir, shard)
    if not j then perf.fail("%s", err) end
  else
    meta = { id = a.run_id or opts.id, version = now.version, database = dst, plan_hash = now.plan_hash,
      identity = now.identity, argv = opts.argv, cases = #p.cases, shards = shard and shard.n or 1,
      simulated = a.simulate or false }
    j, err = journal.create(dst, meta, shard)
    if not j then perf.fail("%s", err) end
  end
  local info, ierr = journal.read(j.dir)
  if not info then perf.fail("%s", ierr) end
  local ctx = { j = j, dir = j.dir, id = j.id, todo = {}, info = info, resumed = existing, shard = shard,
    simulated = a.simulate or false, seq = 0, identity = now.identity or (meta and meta.identity) }
  -- this process's cases: recorded once in the plan, replayed while not done; a case is
  -- planned under the shard its index gives among the run's shards, whoever plans it (a
  -- resume without --shard plans the cases of a shard that never started)
  local new, mine = {}, 0
  local nshards = shard and shard.n or math.tointeger(meta.shards) or 1
  if nshards < 1 then nshards = 1 end
  local devices = a.devices and #a.devices > 0 and table.concat(a.devices, ",") or nil
  for i, c in ipairs(p.cases) do
    local k = journal.shard_of(i - 1, nshards)
    if not shard or k == shard.k then
      mine = mine + 1
      local known = info.cases[c.id]
      if not known then
        new[#new + 1] = { id = c.id, op = c.op, sig = perf.sig.display(c.record or {}), device = devices,
          shard = k, index = i - 1 }
        ctx.todo[c.id] = true
      elseif not known.status or (a.retry_failed and known.status ~= "done") then
        ctx.todo[c.id] = true
      end
    end
  end
  if #new > 0 then
    local ok, perr = j:plan(new)
    if not ok then perf.fail("%s", perr) end
  end
  ctx.mine = mine
  ctx.before = info.totals
  local n = 0
  for _ in pairs(ctx.todo) do n = n + 1 end
  ctx.ntodo = n
  if existing then
    for _, l in ipairs(journal.summary(info)) do say(l) end
    say(("[RESUME] run %s: %d case(s) to replay%s%s"):format(j.id, n, shard and (" in shard " .. a.shard) or "",
      a.retry_failed and " (failed and timed-out ones included: --retry-failed)" or ""))
  else
    say(("[RUN] run %s: journal %s"):format(j.id, j.file))
  end
  return ctx
end

-- Stages a measured batch (its op_summary files, copied) and then marks its cases in the
-- journal: done, or failed / timeout with the reason of their operator's failure.
function M.stage(ctx, summaries, ep, cases, status)
  ctx.seq = ctx.seq + 1
  local batch = ("%s-p%s-%d"):format(ctx.shard and ("s" .. ctx.shard.k) or "all", tostring(journal.pid()), ctx.seq)
  local dir = ctx.dir .. "/staged/" .. batch
  local ok, err = perf.fs.mkdir_p(dir)
  if not ok then perf.fail("%s", err) end
  local files = {}
  for i, s in ipairs(summaries) do
    local text, rerr = paths.read(s)
    if not text then perf.fail("%s", rerr) end
    local name = ("%03d_%s.staged"):format(i, paths.basename(s)) -- not *.csv: a database walk never takes it
    ok, err = perf.fs.write_atomic(dir .. "/" .. name, text, { if_changed = false })
    if not ok then perf.fail("%s", err) end
    files[#files + 1] = { name = name, xxh3 = ("%016x"):format(perf.sig.hash(text)), bytes = #text }
  end
  local failed = {}
  for _, f in ipairs(status and status.failed or {}) do failed[f.op] = failed[f.op] or f.reason end
  local marks, ids, min_index = {}, {}, math.huge
  for _, c in ipairs(cases) do
    local why = failed[c.op]
    local st = why and (tostring(why):find("timeout", 1, true) and "timeout" or "failed") or "done"
    marks[#marks + 1] = { case = c.id, status = st, reason = why }
    ids[#ids + 1] = c.id
    local known = ctx.info.cases[c.id]
    min_index = math.min(min_index, known and known.index or math.huge)
  end
  ok, err = perf.fs.write_atomic(dir .. "/batch.json", cjson.encode { batch = batch, ep = ep, files = files,
    cases = ids, simulated = ctx.simulated, min_index = min_index ~= math.huge and min_index or nil,
    created = os.date("!%Y-%m-%dT%H:%M:%SZ") } .. "\n")
  if not ok then perf.fail("%s", err) end
  M.crash_point("staged")
  ok, err = ctx.j:marks(marks, batch)
  if not ok then perf.fail("%s", err) end
  M.crash_point("marked")
  return batch
end

-- Marks cases that were never measured (an EP group this machine cannot run) as failed.
function M.fail_cases(ctx, cases, reason)
  local marks = {}
  for _, c in ipairs(cases) do marks[#marks + 1] = { case = c.id, status = "failed", reason = reason } end
  local ok, err = ctx.j:marks(marks)
  if not ok then perf.fail("%s", err) end
end

-- The staged batches of the run that done marks name, in plan order, grouped by EP size:
-- {{ep =, files = {paths}, batches = {batch.json tables}}, ...}, the default EP group first.
function M.staged(ctx, default_ep)
  local info, err = journal.read(ctx.dir)
  if not info then perf.fail("%s", err) end
  ctx.info = info
  local list = {}
  for b in pairs(info.batches) do
    local dir = ctx.dir .. "/staged/" .. b
    local text, rerr = paths.read(dir .. "/batch.json")
    if not text then perf.fail("run %s: staged batch %s: %s", ctx.id, b, rerr) end
    local okd, meta = pcall(cjson.decode, text)
    if not okd or type(meta) ~= "table" then perf.fail("%s/batch.json:1: not a JSON object", dir) end
    meta.dir = dir
    list[#list + 1] = meta
  end
  table.sort(list, function(x, y)
    local i, k = x.min_index or math.huge, y.min_index or math.huge
    if i ~= k then return i < k end
    return x.batch < y.batch
  end)
  local groups, by = {}, {}
  ctx.batch_meta = {}
  for _, b in ipairs(list) do
    ctx.batch_meta[b.batch] = b
    local ep = b.ep and (math.tointeger(b.ep) or b.ep) or default_ep  -- JSON numbers come back as floats
    if not by[ep] then
      by[ep] = { ep = ep, files = {}, batches = {} }
      groups[#groups + 1] = by[ep]
    end
    local g = by[ep]
    g.batches[#g.batches + 1] = b
    for _, f in ipairs(b.files or {}) do g.files[#g.files + 1] = b.dir .. "/" .. f.name end
  end
  table.sort(groups, function(x, y)
    if (x.ep == default_ep) ~= (y.ep == default_ep) then return x.ep == default_ep end
    return x.ep < y.ep
  end)
  return groups
end

-- The run's status by operator from the journal: an operator with a failed or timed-out case
-- failed (its first reason), else it succeeded when a case of it is done.
function M.status(ctx)
  local st = { success = {}, failed = {}, skipped = {} }
  local ok, bad, order = {}, {}, {}
  for _, id in ipairs(ctx.info.order) do
    local c = ctx.info.cases[id]
    if c.op and not ok[c.op] and not bad[c.op] then order[#order + 1] = c.op end
    if c.status == "failed" or c.status == "timeout" then
      bad[c.op] = bad[c.op] or c.reason or c.status
    elseif c.status == "done" then
      ok[c.op] = true
    end
  end
  local seen = {}
  for _, op in ipairs(order) do
    if not seen[op] then
      seen[op] = true
      if bad[op] then st.failed[#st.failed + 1] = { op = op, reason = bad[op] }
      elseif ok[op] then st.success[#st.success + 1] = op end
    end
  end
  return st
end

-- Test hook: PERFSCRIPT_CRASH_AT=<point>[:n] kills this process with SIGKILL at the nth time
-- it passes the point (staged, marked, writeback-staged, written), as a crash or a
-- pre-empted job would.
local passes = {}
function M.crash_point(name)
  local spec = os.getenv("PERFSCRIPT_CRASH_AT")
  if not spec then return end
  local point, n = spec:match("^([%w-]+):?(%d*)$")
  if point ~= name then return end
  passes[name] = (passes[name] or 0) + 1
  if passes[name] == (tonumber(n) or 1) then
    io.stdout:flush()
    os.execute("kill -9 " .. tostring(journal.pid()))
  end
end

return M
