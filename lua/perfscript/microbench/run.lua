-- Microbench collection (the recipes/microbench.lua run): replay database rows on an NPU under msprof and write the measured
-- durations back (replaces the Python original's start_microbench.py, op_replay/ and
-- signature_utils.py; docs/rules.md, Replay and Write-back).
--
--   perfscript recipes/microbench.lua --database-path DB [--ops MatMulV2 Add] [--update-mode all]
--   perfscript recipes/microbench.lua --simulate             # no NPU: a simulated device
--   perfscript recipes/microbench.lua --database-path DB --prof-path PROF_DIR   # re-parse only
--     (PROF_DIR: a PROF_* directory, its parent, a mindstudio_profiler_output directory or one
--     op_summary_*.csv)
--
-- 1. plan: each target CSV's rows become replay cases (lua/perfscript/replay/<Op>.lua); rows that
--    cannot be replayed are reported, never deleted; the database is not touched.
-- 2. profile: `msprof --output=<scratch> python3 <work dir>/executor.py <plan>` (one child
--    process per operator), per-operator fallback, --devices shards, --simulate, --prof-path.
-- 3. write-back: op_summary aggregation and the per-file merge under the database lock,
--    atomic writes, reports under <db>/reports/; only the target CSVs are written (side
--    kernels are reported as ignored) and an existing database never gains a file.
-- The work directory ($TMPDIR/perfscript-microbench-<run id>) goes when the run ends, however
-- it ends, unless --keep-workdir.
local perf = require "perfscript"
local lfs = require "lfs"
local argparse = require "argparse"
local dbpath = require "perfscript.dbpath"
local options = require "perfscript.options"
local schema = require "perfscript.microbench.schema"
local plan = require "perfscript.microbench.plan"
local registry = require "perfscript.replay.registry"
local aggregate = require "perfscript.microbench.aggregate"
local merge = require "perfscript.microbench.merge"
local report = require "perfscript.microbench.report"
local msprof = require "perfscript.microbench.msprof"
local simulate = require "perfscript.microbench.simulate"
local torchprof = require "perfscript.microbench.torchprof"
local paths = require "perfscript.path"
local journal = require "perfscript.microbench.journal"
local resume = require "perfscript.microbench.resume"
local provenance = require "perfscript.microbench.provenance"

local M = {}

local MATMUL_ALIASES = {
  MatMulV2 = { "MatMulV3", "MatMulCommon" },
  MatMulV3 = { "MatMulV2", "MatMulCommon" },
  MatMulCommon = { "MatMulV2", "MatMulV3" },
}

local isdir, isfile, abspath = paths.isdir, paths.isfile, paths.abspath

local function say(s)
  io.stdout:write(s, "\n")
  io.stdout:flush()
end

function M.parser()
  local p = argparse("microbench.lua",
    "Replay database rows under msprof (or a simulated device) and write the durations back.")
  p:epilog("Available operators: " .. table.concat(plan.OPS, ", ") .. "\n\nUpdate modes:\n"
    .. "  all: Update all matched rows\n  missing-only: Only fill rows with invalid durations\n\n"
    .. "With --simulate the run writes a separate copy (<database>_simulated, or\n"
    .. "./perfdb_simulated/... for the bundled seed); simulated results never land in a database\n"
    .. "unless you name it with --output.")
  options.database(p, { write = true, default = dbpath.default_help(false) .. " A run that writes "
    .. "into it (not --simulate) first makes the grown database from the seed." })
  options.list(p, "--ops", "Operators to replay, a comma list; repeatable (names as in the list "
    .. "below; X_run and X_run.py accepted; --ops A B also works).", { many = true })
  p:option("--prof-path", "Re-parse an existing profile and launch nothing: a PROF_* directory, a "
    .. "directory holding PROF_* directories, a mindstudio_profiler_output directory, or one "
    .. "op_summary_*.csv file.")
  p:option("--repeat-count", "Timed calls per case.", "1"):convert(math.tointeger)
  p:option("--warmup", "Untimed calls per case before the timed ones.", "1"):convert(math.tointeger)
  p:option("--update-mode", "all | missing-only", "all"):choices { "all", "missing-only" }
  p:flag("--fail-fast", "Stop at the first failing operator (no per-operator fallback).")
  p:flag("--prune-empty-duration-rows", "Delete rows that still have no valid duration (reported).")
  p:option("--dispatch-ffn-combine-ep-size", "Expert-parallel size for DispatchFFNCombine.", "16")
   :convert(math.tointeger)
  p:option("--dispatch-ffn-combine-nproc-per-node", "torchrun processes per node (default: EP size).")
   :convert(math.tointeger)
  p:option("--dispatch-ffn-combine-nnodes", "torchrun node count.", "1"):convert(math.tointeger)
  p:option("--dispatch-ffn-combine-node-rank", "torchrun node rank.", "0"):convert(math.tointeger)
  p:option("--dispatch-ffn-combine-master-addr", "torchrun master address.", "127.0.0.1")
  p:option("--dispatch-ffn-combine-master-port", "torchrun master port.")
   :convert(math.tointeger)
  options.list(p, "--devices", "NPU ids to shard the replay over, e.g. 0,1,2,3 (one msprof per device).")
  p:flag("--simulate", "Use a simulated device (roofline model) instead of msprof and an NPU.")
  p:option("--torch-device", "Time the rows whose replay is plain torch (matmuls, elementwise, softmax, "
    .. "gather, ...) with torch on this device under torch.profiler instead of msprof and an NPU, and "
    .. "write them back from the profiler's trace: the collection loop on a GPU (cuda) or, for tests, "
    .. "the CPU. Results go to a separate copy (<database>_torch_<device>) unless --output names one; "
    .. "rows that call an Ascend API are skipped with the reason."):choices { "cuda", "cpu" }
  options.output(p, "Write results into this database directory instead of the one that was read.",
    { aliases = { "--output-database" }, argname = "<dir>" }):target("output_database")
  p:option("--msprof", "The msprof program.", "msprof")
  p:option("--python", "The Python interpreter that runs the executor.", "python3")
  p:option("--timeout", "Seconds allowed per msprof run (0: no limit).", "0"):convert(tonumber)
  p:option("--work-dir", "Where the run's work directory perfscript-microbench-<run id> (plan.jsonl, "
    .. "status, profiler output) is made (default: $TMPDIR, else /tmp).")
  p:flag("--keep-workdir --keep-profiler-output", "Keep the work directory <work-dir>/perfscript-microbench-"
    .. "<run id> when the run ends (it is removed otherwise, whatever the outcome); its path is printed.")
  p:flag("--plan-only", "Write the replay plan into the work directory, keep it, and stop.")
  p:option("--validate", "Write nothing and replay nothing on an NPU: run every planned row through "
    .. "the golden functions of the executor (plain torch; `meta`, the default: shapes and dtypes only, "
    .. "every row at its real size; `cpu`: real values, rows over --max-elements stay on meta) and report "
    .. "per operator the rows valid, rejected (with the reason) and not replayable; exit status 3 when "
    .. "a row is rejected. The interpreter is --python when given, else the first of python3 and "
    .. "/usr/bin/python3 that imports torch. (--device is the database's device folder.)")
    :args("?"):choices { "meta", "cpu" }
  resume.options(p)
  require("perfscript.microbench.slurm").options(p)
  p:option("--max-elements", "With --validate cpu: rows with more input and output elements stay on meta "
    .. "(0: no cap).", "4194304"):convert(math.tointeger)
  return p
end

-- Copies the source database into the target: not its reports, and no file the target has.
local function copy_tree(src, dst)
  local n, err = paths.copy_tree(src, dst, { skip = { reports = true }, keep_existing = true })
  if not n then perf.fail("%s", err) end
  return n
end

-- Source and target database directories; script finds the bundled seed database. Without
-- database flags: the default database (dbpath.default); a simulated run only reads it.
-- no_copy: only name them (--slurm-dry-run).
local function databases(a, script, no_copy)
  local dir, how = options.database_dir(a, { script = script, say = say,
    write = not a.simulate and not a.torch_device and not a.output_database })
  local src = abspath(dir)
  if not isdir(src) and not a.output_database then perf.fail("%s: no such database directory", src) end
  local dst = a.output_database and abspath(a.output_database)
  if (a.simulate or a.torch_device) and not dst then
    local tag = a.simulate and "simulated" or ("torch_" .. a.torch_device)
    dst = how == "seed" and abspath(("perfdb_%s/%s"):format(tag, dbpath.SEED_VERSION))
      or (src:gsub("/+$", "") .. "_" .. tag)
  end
  dst = dst or src
  if dst ~= src and isdir(src) and not no_copy then
    local n = copy_tree(src, dst)
    if n > 0 then say(("Copied %d file(s) of %s into %s."):format(n, src, dst)) end
  end
  return src, dst
end

-- Target CSV files: one explicit, non-recursive set.
local function target_files(dir, ops, reparse)
  local files = {}
  if ops then
    for _, op in ipairs(ops) do files[#files + 1] = { op = op, path = dir .. "/" .. op .. ".csv" } end
  elseif isdir(dir) then
    local names = {}
    for name in lfs.dir(dir) do
      local stem = name:match("^(.*)%.csv$")
      -- every kernel type: the plan counts the rows of those no builder replays
      if stem and not name:find(".tmp.", 1, true) then names[#names + 1] = stem end
    end
    table.sort(names)
    for _, op in ipairs(names) do files[#files + 1] = { op = op, path = dir .. "/" .. op .. ".csv" } end
  end
  local present, lfs_skipped = {}, {}
  for _, f in ipairs(files) do
    if not isfile(f.path) then
      if not reparse then say(("[SKIP] %s: no such file; nothing to replay for %s."):format(f.path, f.op)) end
    else
      if schema.is_lfs_pointer(f.path) then
        lfs_skipped[#lfs_skipped + 1] = f.path
        say(("[SKIP] %s is a Git LFS pointer, not the real CSV content. Run `git lfs pull` and retry."):format(f.path))
      else
        present[#present + 1] = f
      end
    end
  end
  return present, files, lfs_skipped
end

local function validate_ops(list)
  if not list then return nil end
  local out, bad = {}, {}
  for _, o in ipairs(list) do
    for piece in o:gmatch("[^,%s]+") do
      local n = perf.sig.op_name(piece)
      if plan.IS_OP[n] then out[#out + 1] = n else bad[#bad + 1] = n end
    end
  end
  if #bad > 0 then
    table.sort(bad)
    perf.fail("Unsupported --ops: %s. Available: %s", table.concat(bad, ", "), table.concat(plan.OPS, ", "))
  end
  return out
end

local function check_custom_env(ops)
  local need = {}
  for _, op in ipairs(ops) do if plan.needs_custom_opp(op) then need[#need + 1] = op end end
  if #need == 0 then return end
  local opp = os.getenv("ASCEND_CUSTOM_OPP_PATH") or ""
  local ld = os.getenv("LD_LIBRARY_PATH") or ""
  local ok = opp:match("%S") and ld:match("%S")
  if ok then
    ok = false
    for p in opp:gmatch("[^:]+") do if isdir(p) then ok = true end end
  end
  if not ok then
    perf.fail("Missing env vars for operators: %s.\nPlease run:\n"
      .. "  export ASCEND_CUSTOM_OPP_PATH=<vllm-ascend>/_cann_ops_custom/vendors/vllm-ascend:$ASCEND_CUSTOM_OPP_PATH\n"
      .. "  export LD_LIBRARY_PATH=<vllm-ascend>/_cann_ops_custom/vendors/vllm-ascend/op_api/lib/:$LD_LIBRARY_PATH\n"
      .. "(<vllm-ascend> is the installed vllm_ascend package directory; ASCEND_CUSTOM_OPP_PATH must "
      .. "name an existing directory)", table.concat(need, ", "))
  end
end

local run_id = journal.new_id

-- Executor command line for an operator (nil: all of the plan).
local function app_for(a, plan_path, status_path)
  local executor = plan_path:gsub("[^/]*$", "") .. "executor.py"
  return function(op)
    local argv = { a.python, executor, plan_path,
                   "--repeat-count", tostring(a.repeat_count), "--warmup", tostring(a.warmup),
                   "--status", status_path .. (op and ("." .. op) or "") }
    if op then argv[#argv + 1] = "--ops"; argv[#argv + 1] = op end
    return argv
  end
end

local function read_status(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local ok, v = pcall(require("cjson").decode, text)
  if ok and type(v) == "table" then return v end
  return nil
end

-- Profiling on one or several devices; returns summaries, status, failures.
-- One msprof run of the operators, with ASCEND_RT_VISIBLE_DEVICES = visible when given;
-- tag names its output and status files apart; only: the plan's other operators are left out
-- (--ops). Returns summaries, status or nil, message.
local function profile_one(a, ops, plan_path, run_dir, visible, tag, only)
  local status_path = run_dir .. "/status.json" .. tag
  local timeout = (a.timeout and a.timeout > 0) and a.timeout or nil
  local app = app_for(a, plan_path, status_path)
  if only then
    local all = app
    app = function(op)
      local argv = all(op)
      if not op then argv[#argv + 1] = "--ops"; argv[#argv + 1] = table.concat(ops, ",") end
      return argv
    end
  end
  local res, err = msprof.profile { msprof = a.msprof, out = run_dir .. "/prof" .. tag,
    env = { ASCEND_RT_VISIBLE_DEVICES = visible }, cwd = run_dir, timeout = timeout, ops = ops,
    allow_fallback = a.ops ~= nil, fail_fast = a.fail_fast, say = say, app_for = app, keep = a.keep_workdir }
  if not res then return nil, err end
  local status = read_status(status_path) or { success = {}, failed = {}, skipped = {} }
  for _, f in ipairs(res.failed) do status.failed[#status.failed + 1] = f end
  return res.summaries, status
end

local profile_devices

local function profile(a, ops, plan_path, run_dir)
  local devices = {}
  for _, d in ipairs(a.devices or {}) do devices[#devices + 1] = d end
  if #devices <= 1 then return profile_one(a, ops, plan_path, run_dir, devices[1], "") end
  -- An operator that runs on several ranks (DispatchFFNCombine under torchrun) is not given to
  -- one device's worker: it runs after them, in one msprof that sees every device of --devices.
  local split, together = {}, {}
  for _, op in ipairs(ops) do
    if op == schema.DFC then together[#together + 1] = op else split[#split + 1] = op end
  end
  local summaries, status = {}, { success = {}, failed = {}, skipped = {} }
  if #split > 0 then
    local err
    summaries, err = profile_devices(a, split, devices, plan_path, run_dir)
    if not summaries then return nil, err end
    status = err
  end
  if #together > 0 and not (a.fail_fast and #status.failed > 0) then
    local visible = table.concat(devices, ",")
    say(("[RUN] devices %s: %s"):format(visible, table.concat(together, ", ")))
    local got, st = profile_one(a, together, plan_path, run_dir, visible, ".all", #split > 0)
    if not got then return nil, st end
    for _, x in ipairs(got) do summaries[#summaries + 1] = x end
    for _, k in ipairs { "success", "failed", "skipped" } do
      for _, x in ipairs(st[k] or {}) do status[k][#status[k] + 1] = x end
    end
  end
  return summaries, status
end

-- One worker per device on a share of the operators, all at once; merged afterwards.
-- Returns summaries, status or nil, message.
function profile_devices(a, ops, devices, plan_path, run_dir)
  local status_path = run_dir .. "/status.json"
  local timeout = (a.timeout and a.timeout > 0) and a.timeout or nil
  local shards = {}
  for i, op in ipairs(ops) do
    local k = (i - 1) % #devices + 1
    shards[k] = shards[k] or {}
    table.insert(shards[k], op)
  end
  local workers, procs = {}, {}
  local guard <close> = msprof.kill_on_error(procs)
  for k, list in pairs(shards) do
    local out = ("%s/prof_dev%s"):format(run_dir, devices[k])
    local argv = app_for(a, plan_path, status_path .. ".dev" .. devices[k])(nil)
    argv[#argv + 1] = "--ops"
    argv[#argv + 1] = table.concat(list, ",")
    local p, cmd = msprof.start { msprof = a.msprof, out = out, app = argv, cwd = run_dir,
      env = { ASCEND_RT_VISIBLE_DEVICES = devices[k] }, log = out .. "/msprof.log" }
    if not p then
      for _, w in ipairs(workers) do w.p:kill(1) end
      return nil, cmd
    end
    procs[#procs + 1] = p
    say(("[RUN] device %s: %s"):format(devices[k], table.concat(list, ", ")))
    workers[#workers + 1] = { p = p, cmd = cmd, out = out, ops = list, device = devices[k],
      status = status_path .. ".dev" .. devices[k] }
  end
  local summaries, status = {}, { success = {}, failed = {}, skipped = {} }
  local start = os.time()
  local pending = #workers
  local aborted = false
  while pending > 0 do
    for _, w in ipairs(workers) do
      if not w.done then
        local rc, how = w.p:wait(0.05)
        local late = timeout and os.time() - start > timeout
        if rc or late or aborted then
          if not rc then w.p:kill(2); rc, how = 124, "timeout" else w.p:kill(0.2) end
          w.done, w.rc, w.how = true, rc, how
          pending = pending - 1
          local got = msprof.summaries(msprof.prof_dirs(w.out))
          for _, s in ipairs(got) do summaries[#summaries + 1] = s end
          local st = read_status(w.status)
          if st then
            for _, x in ipairs(st.success or {}) do status.success[#status.success + 1] = x end
            for _, x in ipairs(st.failed or {}) do status.failed[#status.failed + 1] = x end
          end
          if #got == 0 then
            for _, op in ipairs(w.ops) do
              status.failed[#status.failed + 1] = { op = op, reason = ("device %s worker exited with %s (%s); %s")
                :format(w.device, tostring(rc), how, a.keep_workdir and ("data kept at " .. w.out)
                  or ("msprof log: " .. msprof.log_tail(w.out .. "/msprof.log"))) }
            end
            if a.fail_fast and not aborted then
              aborted = true
              say(("[FAIL] device %s failed; stopping the other workers (--fail-fast)."):format(w.device))
            end
          end
        end
      end
    end
  end
  return summaries, status
end

-- The run's work directory (plan, status, profiler output): removed when the run ends, however
-- it ends (error, Ctrl-C, perf.fail), unless the user keeps it.
local function workdir(path, keep)
  return setmetatable({}, { __close = function()
    if keep then
      say("[KEEP] work directory kept: " .. path)
    elseif lfs.attributes(path, "mode") then
      local ok, err = paths.rmtree(path)
      if ok then
        say("[CLEAN] removed the work directory " .. path .. " (--keep-workdir keeps it)")
      else
        io.stderr:write(("perfscript: cannot remove the work directory %s: %s\n"):format(path, tostring(err)))
      end
    end
  end })
end

local function has_csv(dir)
  if not isdir(dir) then return false end
  for name in lfs.dir(dir) do
    if name:match("%.csv$") and isfile(dir .. "/" .. name) then return true end
  end
  return false
end

-- The CSVs the write-back may write, {op=, feed=, new=}: the target files (those named by
-- --ops, else the operator CSVs of the database). A replay run feeds only the operators it
-- replayed (the others' kernels are side kernels); re-parsing feeds every target. Files are
-- created only when re-parsing into a database that has no CSV yet, and only for the
-- operators named by --ops. An existing database never gains a file.
local function write_targets(a, files, dst, replayed_ops, ops)
  local replayed = {}
  for _, op in ipairs(replayed_ops) do replayed[op] = true end
  local targets, seen = {}, {}
  for _, f in ipairs(files) do
    seen[f.op] = true
    -- a kernel type no builder replays is no target of a replay run (never pruned by it)
    if a.prof_path or plan.IS_OP[f.op] or plan.builder(f.op) then
      targets[#targets + 1] = { op = f.op, feed = a.prof_path ~= nil or replayed[f.op] == true }
    end
  end
  if a.prof_path and not has_csv(dst) then
    for _, op in ipairs(ops or {}) do
      if not seen[op] then
        seen[op] = true
        targets[#targets + 1] = { op = op, feed = true, new = true }
      end
    end
  end
  table.sort(targets, function(x, y) return x.op < y.op end)
  return targets
end

-- Kernel types of the profile that fed no file, with the reason (reported, never written).
local function ignored_types(a, agg, used, dst, new_db)
  local out = {}
  for _, t in ipairs(agg.order) do
    local n = perf.sig.op_name(t)
    local rows = agg.rows[t]
    if not used[n] and #rows > 0 then
      local samples = 0
      for _, r in ipairs(rows) do samples = samples + (r._samples or 0) end
      local path = dst .. "/" .. n .. ".csv"
      local reason
      if not isfile(path) then
        reason = ("no %s.csv in the database; not created%s"):format(n,
          new_db and a.prof_path and " (name it with --ops to create it)" or "")
      elseif schema.is_lfs_pointer(path) then
        reason = ("%s.csv is a Git LFS pointer; left alone"):format(n)
      elseif a.prof_path then
        reason = ("%s.csv not named by --ops"):format(n)
      else
        reason = "not replayed in this run (a side kernel of the replay)"
      end
      out[#out + 1] = { op = t, signatures = #rows, samples = samples, reason = reason }
      say(("[IGNORED] %s: %d signature(s), %d sample(s): %s."):format(t, #rows, samples, reason))
    end
  end
  return out
end

-- Checks and normalises the arguments; returns the validated --ops list (nil: all).
local function check_args(a)
  local ops = validate_ops(a.ops)
  if a.msprof:find("/") then a.msprof = abspath(a.msprof) end
  if a.python:find("/") then a.python = abspath(a.python) end
  if a.repeat_count <= 0 then perf.fail("--repeat-count must be positive, got %d", a.repeat_count) end
  if a.torch_device and (a.simulate or a.prof_path) then
    perf.fail("--torch-device cannot be combined with %s", a.simulate and "--simulate" or "--prof-path")
  end
  return ops
end

-- Leaves DispatchFFNCombine out when this machine cannot run its EP size (docs/rules.md, Replay).
local function drop_unrunnable(a, ops, files)
  local ep, nproc = a.dispatch_ffn_combine_ep_size, a.dispatch_ffn_combine_nproc_per_node
  local ndev = #(a.devices or {})
  local visible = ndev > 0 and ndev or plan.visible_npus()
  if a.simulate or a.torch_device or a.prof_path or not plan.dfc_skip(ops, ep, nproc, visible, a.update_mode) then
    return files
  end
  local kept = {}
  for _, f in ipairs(files) do
    if f.op == schema.DFC then
      say(("[SKIP] DispatchFFNCombine requires ep-size %d local rank(s), but only %d visible NPU device(s) are available.")
        :format(nproc or ep, visible))
    else
      kept[#kept + 1] = f
    end
  end
  return kept
end

-- Writes the plan of an EP group (or of a batch of it) for the executor.
local function write_plan(a, path, gp, ep)
  local default_ep = a.dispatch_ffn_combine_ep_size
  assert(plan.write(path, gp, { repeat_count = a.repeat_count, warmup = a.warmup, distributed = {
    -- the torchrun layout flags describe the --dispatch-ffn-combine-ep-size run
    nproc_per_node = ep == default_ep and a.dispatch_ffn_combine_nproc_per_node or nil,
    nnodes = ep == default_ep and a.dispatch_ffn_combine_nnodes or nil,
    node_rank = ep == default_ep and a.dispatch_ffn_combine_node_rank or nil,
    master_addr = a.dispatch_ffn_combine_master_addr, master_port = a.dispatch_ffn_combine_master_port } }))
end

-- 1. The replay plan (read-only; --prof-path re-parses without replaying, so it needs no plan),
-- written with the executor into run_dir. Returns the plan and its path.
local function make_plan(a, files, run_dir)
  local p
  if a.prof_path then
    p = { cases = {}, unreplayable = {}, ops = {} }
    for _, f in ipairs(files) do p.ops[#p.ops + 1] = f.op end
  else
    local err
    p, err = plan.build(files, { mode = a.update_mode, ep_size = a.dispatch_ffn_combine_ep_size })
    if not p then perf.fail("%s", err) end
  end
  local default_ep = a.dispatch_ffn_combine_ep_size
  p.groups = plan.split_ep(p, default_ep)
  for _, g in ipairs(p.groups) do
    g.path = run_dir .. (g.ep == default_ep and "/plan.jsonl" or ("/plan_ep%d.jsonl"):format(g.ep))
    write_plan(a, g.path, g.p, g.ep)
  end
  assert(plan.write_executor(run_dir .. "/executor.py"))
  local plan_path = p.groups[1].path
  local nb_rows, nb_kinds = 0, 0
  for _, nb in pairs(p.no_builder or {}) do nb_rows, nb_kinds = nb_rows + nb.rows, nb_kinds + 1 end
  say(("[PLAN] %d case(s) for %d operator(s); %d row(s) not replayable; %d row(s) of %d kernel type(s) "
    .. "with no replay builder; plan %s"):format(#p.cases, #p.ops, #p.unreplayable, nb_rows, nb_kinds, plan_path))
  for _, w in ipairs(p.warnings or {}) do io.stderr:write("[WARN] ", w, "\n") end
  for _, g in ipairs(p.groups) do
    if g.ep ~= default_ep then
      say(("[PLAN] %d DispatchFFNCombine case(s) at their own EP Size %d: plan %s"):format(#g.p.cases, g.ep, g.path))
    end
  end
  -- once, grouped by reason with a count and one example; every row is in the report file
  for _, line in ipairs(report.grouped_lines(p.unreplayable, function(u)
    return u.kind == "skipped" and "SKIP" or "INVALID"
  end)) do say(line) end
  for _, nb in ipairs(report.no_builder_list(p.no_builder)) do
    say(("[NO BUILDER] %s: %d row(s) to measure: %s"):format(nb.op, nb.rows, nb.reason))
  end
  return p, plan_path
end

-- Whether missing-only mode finds nothing to do (says so per file).
local function nothing_missing(a, p, files)
  if a.update_mode == "missing-only" and #p.cases == 0 and #p.unreplayable == 0 and not next(p.no_builder or {})
      and not a.prof_path
      and not a.prune_empty_duration_rows and #files > 0 then
    for _, f in ipairs(files) do say(("[SKIP] %s already has usable durations."):format(f.path)) end
    say("[SUMMARY] All target CSV files already have usable replay durations.")
    return true
  end
  return false
end

-- 2. The op_summary files: re-parsed (--prof-path), simulated, or profiled under msprof.
-- Returns summaries and the run status (nil when re-parsing).
local function collect(a, p, plan_path, run_dir)
  if a.prof_path then
    local summaries, err = msprof.find_summaries(abspath(a.prof_path))
    if not summaries then perf.fail("--prof-path %s", err) end
    say(("[PROF] %d op_summary file(s) from %s"):format(#summaries, a.prof_path))
    return summaries
  elseif #p.cases == 0 then
    say("[SUMMARY] Nothing to replay.")
    return {}
  elseif a.simulate then
    return { (simulate.write_op_summary(run_dir .. "/prof", p.cases, { repeat_count = a.repeat_count,
      index = p.sim_index })) },
      { success = p.ops, failed = {}, skipped = {} }
  elseif a.torch_device then
    local path, status = torchprof.collect(a, p, plan_path, run_dir, say)
    return { path }, status
  end
  check_custom_env(p.ops)
  local summaries, status = profile(a, p.ops, plan_path, run_dir)
  if not summaries then perf.fail("%s", status) end
  return summaries, status
end

-- Adds an aggregation (of one EP group) to the merged one.
local function add_agg(merged, agg)
  for _, op in ipairs(agg.order) do
    if not merged.rows[op] then merged.rows[op] = {}; merged.order[#merged.order + 1] = op end
    for _, r in ipairs(agg.rows[op]) do table.insert(merged.rows[op], r) end
  end
  for _, x in ipairs(agg.no_duration) do merged.no_duration[#merged.no_duration + 1] = x end
  merged.samples = merged.samples + (agg.samples or 0)
end

-- Runs every EP group of the plan (plan.split_ep: DispatchFFNCombine rows at their own EP
-- Size) and aggregates each with its EP; returns the merged aggregation and status.
local function collect_groups(a, p, run_dir)
  local merged = { order = {}, rows = {}, no_duration = {}, samples = 0 }
  local status
  local visible
  for gi, g in ipairs(p.groups or { { ep = a.dispatch_ffn_combine_ep_size, p = p, path = run_dir .. "/plan.jsonl" } }) do
    local run = true
    if gi > 1 and not a.simulate and not a.torch_device then
      visible = visible or plan.visible_npus()
      if visible > 0 and g.ep > visible then
        run = false
        say(("[SKIP] %d DispatchFFNCombine row(s) with EP Size %d need %d local ranks; %d NPU(s) visible.")
          :format(#g.p.cases, g.ep, g.ep, visible))
        for _, c in ipairs(g.p.cases) do
          p.unreplayable[#p.unreplayable + 1] = { op = c.op, csv = c.csv, row = c.row, kind = "skipped",
            shapes = c.record and c.record["Input Shapes"], reason = ("EP Size %d needs %d local ranks; %d NPU(s) visible")
              :format(g.ep, g.ep, visible) }
        end
      end
    end
    if run and (#g.p.cases > 0 or (gi == 1 and (a.prof_path or #p.groups == 1))) then
      local dir = gi == 1 and run_dir or ("%s/ep%d"):format(run_dir, g.ep)
      if gi > 1 then assert(perf.fs.mkdir_p(dir)) end
      local summaries, st = collect(a, g.p, g.path, dir)
      add_agg(merged, assert(aggregate.files(summaries, { ep_size = g.ep })))
      if st then
        if not status then status = st
        else
          for _, k in ipairs { "success", "failed", "skipped" } do
            for _, x in ipairs(st[k] or {}) do status[k][#status[k] + 1] = x end
          end
        end
      end
    end
  end
  -- an operator that ran in several groups counts once
  if status then
    local seen, ok = {}, {}
    for _, op in ipairs(status.success) do if not seen[op] then seen[op] = true; ok[#ok + 1] = op end end
    status.success = ok
  end
  return merged, status
end

-- Status: the executor's when it wrote one; an operator without any op_summary row failed.
local function settle_status(a, status, agg, profiled_ops)
  if not status or a.prof_path or a.simulate or a.torch_device then return end
  local seen = {}
  for _, t in ipairs(agg.order) do seen[perf.sig.op_name(t)] = true end
  local known = {}
  for _, f in ipairs(status.failed) do known[f.op] = true end
  local ok = {}
  -- a variant's replay may show as another kernel of its family (AddAiCore as Add)
  local function ran(op)
    if seen[op] then return true end
    for _, k in ipairs(registry.family(op)) do if seen[k] then return true end end
    return false
  end
  for _, op in ipairs(profiled_ops) do
    if ran(op) then
      if not known[op] then ok[#ok + 1] = op end
    elseif not known[op] then
      status.failed[#status.failed + 1] = { op = op, reason = "no op_summary rows (the replay produced no kernel)" }
    end
  end
  status.success = ok
end

-- Why this machine cannot run an EP group (more local ranks than visible NPUs), or nil.
local function ep_unrunnable(a, g, gi, cache)
  if gi == 1 or a.simulate then return nil end
  cache.visible = cache.visible or plan.visible_npus()
  if cache.visible > 0 and g.ep > cache.visible then
    return ("EP Size %d needs %d local ranks; %d NPU(s) visible"):format(g.ep, g.ep, cache.visible)
  end
end

-- 2. Journal runs: the cases still to do (ctx.todo), EP group by group, in batches of
-- --batch-size cases (0: the group at once); each batch is staged in the run directory and
-- marked in the journal before the next one starts, so that a kill loses at most one batch.
local function measure(a, p, run_dir, ctx)
  local bs, nb, cache = a.batch_size or 0, 0, {}
  for gi, g in ipairs(p.groups) do
    local todo, pos = {}, {}
    for i, c in ipairs(g.p.cases) do
      if ctx.todo[c.id] then todo[#todo + 1] = c; pos[#pos + 1] = i end
    end
    local why = #todo > 0 and ep_unrunnable(a, g, gi, cache)
    if why then
      say(("[SKIP] %d DispatchFFNCombine row(s) with EP Size %d need %d local ranks; %d NPU(s) visible.")
        :format(#todo, g.ep, g.ep, cache.visible))
      for _, c in ipairs(todo) do
        p.unreplayable[#p.unreplayable + 1] = { op = c.op, csv = c.csv, row = c.row, kind = "skipped",
          shapes = c.record and c.record["Input Shapes"], reason = why }
      end
      resume.fail_cases(ctx, todo, why)
    elseif #todo > 0 then
      local size = bs > 0 and bs or #todo
      for first = 1, #todo, size do
        local chunk, idx, ops, seen = {}, {}, {}, {}
        for i = first, math.min(first + size - 1, #todo) do
          local c = todo[i]
          chunk[#chunk + 1], idx[#idx + 1] = c, pos[i]
          if not seen[c.op] then seen[c.op] = true; ops[#ops + 1] = c.op end
        end
        nb = nb + 1
        local whole = #chunk == #g.p.cases
        local dir, path, sub
        if whole then
          -- the whole group at once: the layout of a run without a journal
          dir, path, sub = gi == 1 and run_dir or ("%s/ep%d"):format(run_dir, g.ep), g.path, g.p
        else
          dir = ("%s/batch%d"):format(run_dir, nb)
          path, sub = dir .. "/plan.jsonl", { cases = chunk, ops = ops, unreplayable = {}, no_builder = {} }
        end
        assert(perf.fs.mkdir_p(dir))
        if not whole then
          write_plan(a, path, sub, g.ep)
          assert(plan.write_executor(dir .. "/executor.py"))
          say(("[BATCH] %d: %d case(s) of %s"):format(nb, #chunk, table.concat(ops, ", ")))
        end
        sub.sim_index = idx
        local summaries, st = collect(a, sub, path, dir)
        settle_status(a, st, assert(aggregate.files(summaries, { ep_size = g.ep })), sub.ops)
        resume.stage(ctx, summaries, g.ep, chunk, st)
        sub.sim_index = nil
        -- a long run keeps only what is staged, not every batch's profiler output
        if not whole and not a.keep_workdir then paths.rmtree(dir) end
      end
    end
  end
end

-- The write-back's input from a journal run: every staged batch the journal marks done,
-- aggregated per EP group (in plan order), and the status by operator from the journal.
local function staged_agg(a, ctx)
  local merged = { order = {}, rows = {}, no_duration = {}, samples = 0 }
  for _, g in ipairs(resume.staged(ctx, a.dispatch_ffn_combine_ep_size)) do
    add_agg(merged, assert(aggregate.files(g.files, { ep_size = g.ep })))
  end
  return merged, resume.status(ctx)
end

-- The provenance lines of the rows the write-back wrote: measured / simulated by a journal
-- run (the input: the staged op_summary file of the row's case), or imported (--prof-path):
-- text, n (provenance.lines).
local function provenance_lines(a, ctx, p, results, id)
  local base = { run = id, source = a.simulate and "simulated" or a.prof_path and "imported" or "measured" }
  if a.torch_device then -- measured, but with torch on a GPU or the CPU, not on an NPU
    base.device = ("torch %s%s"):format(a.torch_device, a.torch_device_name and (" (" .. a.torch_device_name .. ")") or "")
  end
  local inputs
  if ctx then
    for k, v in pairs(ctx.identity or {}) do if base[k] == nil then base[k] = v end end
    local by_key = {}
    for _, c in ipairs(p.cases) do
      local ok, key = pcall(provenance.key, c.record or {}, c.op)
      if ok then by_key[c.op .. "\0" .. key] = c.id end
    end
    inputs = function(kernel, key)
      local cid = by_key[kernel .. "\0" .. key]
      local c = cid and ctx.info.cases[cid]
      local b = c and c.batch and ctx.batch_meta and ctx.batch_meta[c.batch]
      if not b then return nil end
      local names, hashes = {}, {}
      for _, f in ipairs(b.files or {}) do
        -- relative to the database (the log travels with it)
        names[#names + 1] = ("%s/%s/staged/%s/%s"):format(journal.DIR, ctx.id, b.batch, f.name)
        hashes[#hashes + 1] = f.xxh3
      end
      return table.concat(names, ","), table.concat(hashes, ",")
    end
  elseif a.prof_path then
    inputs = { provenance.inputs(msprof.find_summaries(abspath(a.prof_path)) or {}, abspath(a.prof_path)) }
  end
  return provenance.lines(base, results, inputs)
end

-- The aggregated rows by file stem (kernel type -> operator name).
local function rows_by_stem(agg)
  local by_stem = {}
  for _, t in ipairs(agg.order) do
    local n = perf.sig.op_name(t)
    by_stem[n] = by_stem[n] or {}
    for _, r in ipairs(agg.rows[t]) do table.insert(by_stem[n], r) end
  end
  return by_stem
end

-- 3. The write-back of every target file under the database lock, staged (docs/rules.md,
-- All-or-nothing writes): nothing is replaced before every file and the report are written.
-- Returns {results=, gaps=, used=, unpruned=, recovered=, lock=, stage=, writes=}; write_report
-- commits the stage and releases the lock.
local function write_back(a, targets, by_stem, dst, status)
  local failed_ops = {}
  for _, f in ipairs(status and status.failed or {}) do failed_ops[f.op] = true end
  local w = { results = {}, gaps = {}, used = {}, unpruned = {}, recovered = {}, writes = {} }
  if not isdir(dst) then
    local ok, err = perf.fs.mkdir_p(dst)
    if not ok then perf.fail("%s", err) end
  end
  local lock, lerr = perf.fs.lock(dst, { wait = true })
  if not lock then perf.fail("%s", lerr) end
  w.lock, w.stage = lock, perf.fs.stage()
  w.recovered = lock:recovered()
  for _, t in ipairs(targets) do
    local stem = t.op
    -- samples only for the operators this run replayed (or, re-parsing, every target)
    local own = t.feed and by_stem[stem] or {}
    if t.feed and by_stem[stem] then w.used[stem] = true end
    local rows, match_only, family = own, {}, {}
    if MATMUL_ALIASES[stem] then
      match_only, rows = {}, {}
      for _, r in ipairs(own) do match_only[#match_only + 1] = r end
      -- the aliases' samples: silent when they miss (they belong to the alias's own file)
      for _, al in ipairs(t.feed and MATMUL_ALIASES[stem] or {}) do
        if by_stem[al] then w.used[al] = true end
        for _, r in ipairs(by_stem[al] or {}) do family[#family + 1] = r end
      end
    elseif t.feed and not a.prof_path then
      -- a variant's replay may be profiled as another kernel of its family (AddAiCore as Add):
      -- their samples may update this file's rows, never add any
      for _, al in ipairs(registry.family(stem)) do
        if by_stem[al] then
          w.used[al] = true
          for _, r in ipairs(by_stem[al]) do family[#family + 1] = r end
        end
      end
    end
    local prune = a.prune_empty_duration_rows
    if prune and failed_ops[stem] then
      -- its rows had no chance to get a duration: an environment failure must not delete them
      prune = false
      w.unpruned[#w.unpruned + 1] = stem
      say(("[KEEP] %s.csv not pruned: %s failed in this run."):format(stem, stem))
    end
    local path = dst .. "/" .. stem .. ".csv"
    local n = #rows + #match_only + #family
    if (isfile(path) and (n > 0 or prune)) or (t.new and n > 0) then
      local res, err = merge.file(path, rows, match_only, { mode = a.update_mode, prune = prune, say = say,
                                                           stage = w.stage, family = family })
      if not res then perf.fail("%s", err) end
      w.results[#w.results + 1] = res
      for _, g in ipairs(res.gaps) do w.gaps[#w.gaps + 1] = g end
      if res.status and res.status ~= "unchanged" then
        w.writes[#w.writes + 1] = ("[WRITE] %s %s (updated %d, added %d, deleted %d)"):format(res.status, path,
          res.updated, res.added, #res.deleted)
      end
    end
  end
  return w
end

-- The report's extra sections: rows not replayed (grouped by reason; with full, row by row
-- too, for the report file), kernel types with no builder, ignored kernel types, files not
-- pruned, leftovers of interrupted writes.
local function extra_sections(p, ignored, w, full)
  local extra = {}
  if #p.unreplayable > 0 then
    local t = {}
    for _, g in ipairs(report.group_unreplayable(p.unreplayable)) do
      local u = g.example
      t[#t + 1] = { u.op, g.count, u.reason, ("%s:%d %s"):format(u.csv:match("[^/]+$"), u.row, u.shapes or "") }
    end
    extra[#extra + 1] = { "Rows Not Replayed (kept), by reason",
      report.table({ "Operator", "Rows", "Reason", "Example" }, t) }
    if full then
      t = {}
      for _, u in ipairs(p.unreplayable) do
        t[#t + 1] = { u.op, ("%s:%d"):format(u.csv:match("[^/]+$"), u.row), u.shapes or "", u.reason }
      end
      extra[#extra + 1] = { "Rows Not Replayed (kept), row by row",
        report.table({ "Operator", "Row", "Input Shapes", "Reason" }, t) }
    end
  end
  local nb = report.no_builder_list(p.no_builder)
  if #nb > 0 then
    local t = {}
    for _, x in ipairs(nb) do t[#t + 1] = { x.op, x.rows, x.reason } end
    extra[#extra + 1] = { "Kernel Types With No Replay Builder (rows kept, not measured)",
      report.table({ "Kernel Type", "Rows", "Reason" }, t) }
  end
  if #ignored > 0 then
    local t = {}
    for _, g in ipairs(ignored) do t[#t + 1] = { g.op, g.signatures, g.samples, g.reason } end
    extra[#extra + 1] = { "Ignored Kernel Types (not written)",
      report.table({ "Kernel Type", "Signatures", "Samples", "Reason" }, t) }
  end
  if #w.unpruned > 0 then
    local t = {}
    for _, op in ipairs(w.unpruned) do t[#t + 1] = { op, "the operator failed in this run" } end
    extra[#extra + 1] = { "Not Pruned", report.table({ "Operator", "Reason" }, t) }
  end
  if #w.recovered > 0 then
    local t = {}
    for _, f in ipairs(w.recovered) do t[#t + 1] = { f } end
    extra[#extra + 1] = { "Removed Leftovers of Interrupted Writes", report.table({ "File" }, t) }
  end
  return extra
end

-- 4. The report: printed, and written under <dst>/reports/ (markdown, hotspot CSV, JSON).
-- Returns the exit status (3 when an operator failed).
local function write_report(a, id, dst, p, status, ignored, w)
  -- the console gets the grouped sections; the report file every row too
  local text, hot = report.render(w.results, w.gaps, status,
    { simulated = a.simulate, extra = extra_sections(p, ignored, w, true) })
  local console = report.render(w.results, w.gaps, status,
    { simulated = a.simulate, extra = extra_sections(p, ignored, w, false), hot = hot })
  local json = { run_id = id, simulated = a.simulate or false, torch_device = a.torch_device, database = dst, status = status,
    files = {}, hotspots = #hot, unreplayable = p.unreplayable, no_builder = p.no_builder, ignored = ignored, not_pruned = w.unpruned,
    recovered = w.recovered }
  for _, r in ipairs(w.results) do
    json.files[#json.files + 1] = { file = r.csv_path, status = r.status or r.skipped, updated = r.updated,
      added = r.added, unchanged = r.unchanged, deleted = r.deleted, missing = r.missing }
  end
  local md, csvp = report.write(dst, text, hot, id, json, w.stage)
  -- every database file and the report are written: now they replace the old ones together
  local ok, err = w.stage:commit()
  if not ok then perf.fail("%s", err) end
  w.lock:release()
  for _, line in ipairs(w.writes) do say(line) end
  io.stdout:write(console)
  say("\n[REPORT] " .. md .. "\n[REPORT] " .. csvp)
  if status and #status.failed > 0 then
    io.stderr:write(("perfscript: %d operator(s) failed; see the report\n"):format(#status.failed))
    return 3
  end
  return 0
end

-- One run on parsed arguments; script is the recipe's path (it finds the seed database).
-- Returns the exit status.
function M.run(a, script)
  if a.validate then return require("perfscript.microbench.validate").run(a, script or "recipes/microbench.lua") end
  local ops = check_args(a)
  local shard = resume.check(a)
  local src, dst = databases(a, script or "recipes/microbench.lua")
  local files = drop_unrunnable(a, ops, (target_files(src, ops, a.prof_path)))
  local id = a.resume == nil and a.run_id or run_id()
  local work = abspath(a.work_dir or os.getenv("TMPDIR") or "/tmp")
  local run_dir = ("%s/perfscript-microbench-%s"):format(work, run_id())
  assert(perf.fs.mkdir_p(run_dir))
  local wd <close> = workdir(run_dir, a.keep_workdir or a.plan_only)
  if a.simulate then say("SIMULATED run: durations come from a roofline model, not an NPU.") end
  if a.torch_device then
    say(("TORCH run: durations measured with plain torch on %s, not on an NPU."):format(a.torch_device))
  end
  say(("Database: %s%s"):format(src, dst ~= src and (" -> results into " .. dst) or ""))

  local p = make_plan(a, files, run_dir)
  if a.plan_only or (not a.resume and not a.run_id and nothing_missing(a, p, files)) then return 0 end
  local agg, status, ctx
  if a.prof_path then
    agg, status = collect_groups(a, p, run_dir)
  else
    -- a journal run: measured batches are staged in <dst>/.perfscript/runs/<id>/ first
    ctx = resume.start(a, dst, p, say, { shard = shard, tmp = run_dir, id = id, argv = M.argv })
    id = ctx.id
    if #p.cases == 0 then say("[SUMMARY] Nothing to replay.") end
    if not a.writeback_only then measure(a, p, run_dir, ctx) end
    if a.stage_only then
      local info = assert(journal.read(ctx.dir))
      for _, l in ipairs(journal.summary(info)) do say(l) end
      say(("[STAGED] run %s: results staged in %s; write them back with --resume %s --writeback-only")
        :format(ctx.id, ctx.dir, ctx.id))
      local bad = 0
      for _, c in pairs(info.cases) do
        if (c.status == "failed" or c.status == "timeout") and (not shard or c.shard == shard.k) then bad = bad + 1 end
      end
      return bad > 0 and 3 or 0
    end
    agg, status = staged_agg(a, ctx)
    local left = ctx.info.totals.left
    if left > 0 then
      say(("[WARN] run %s: %d case(s) not measured (left as they are in the database)."):format(ctx.id, left))
    end
    assert(ctx.j:event("writeback-begin"))
  end
  for _, g in ipairs(agg.no_duration) do
    say(("[WARN] %s: %d sample(s) of %s had no valid duration; nothing written for it."):format(g.op, g.count, g.sig))
  end
  if not ctx then settle_status(a, status, agg, p.ops) end
  local new_db = not has_csv(dst)
  local replayed = p.ops
  if ctx then
    replayed = {}
    for _, x in ipairs(status.success) do replayed[#replayed + 1] = x end
    for _, f in ipairs(status.failed) do replayed[#replayed + 1] = f.op end
  end
  local targets = write_targets(a, files, dst, replayed, ops)
  local w = write_back(a, targets, rows_by_stem(agg), dst, status)
  local held <close> = w.lock
  local staged <close> = w.stage  -- an error before the commit removes the staged files
  local ignored = ignored_types(a, agg, w.used, dst, new_db)
  local ptext, plines = provenance_lines(a, ctx, p, w.results, id)
  if plines > 0 then
    local ok, err = provenance.append(dst, ptext, w.stage)
    if not ok then perf.fail("%s", err) end
    w.writes[#w.writes + 1] = ("[WRITE] provenance of %d row(s) (%s) appended to %s"):format(plines,
      a.simulate and "SIMULATED" or a.prof_path and "imported" or "measured", provenance.path(dst))
  end
  resume.crash_point("writeback-staged")
  local rc = write_report(a, id, dst, p, status, ignored, w)
  if ctx then
    resume.crash_point("committed")
    assert(ctx.j:event("written"))
    local info = assert(journal.read(ctx.dir))
    for _, l in ipairs(journal.summary(info)) do say(l) end
    if ctx.resumed then
      say(("[RESUME] run %s: %d case(s) done before this resume, %d replayed by it (%s), every staged result written back")
        :format(ctx.id, ctx.before.done, a.writeback_only and 0 or ctx.ntodo,
          a.writeback_only and "--writeback-only" or (a.retry_failed and "left, failed and timed out" or "left")))
    end
  end
  return rc
end

-- Shared with --slurm (perfscript.microbench.slurm): the source and target databases.
M.databases = databases

-- Shared with --validate (perfscript.microbench.validate).
M.check_args, M.target_files, M.workdir, M.run_id, M.say = check_args, target_files, workdir, run_id, say

-- The recipe's entry: parses argv (the recipe's `arg`) and runs; returns the exit status.
function M.main(argv, script)
  M.argv = {}
  for i = 0, #(argv or {}) do M.argv[#M.argv + 1] = argv[i] end
  local a = M.parser():parse(argv)
  local slurm = require "perfscript.microbench.slurm"
  if slurm.wanted(a) then return slurm.main(a, argv, script or argv[0] or "recipes/microbench.lua") end
  return M.run(a, script or (argv and argv[0]))
end

return M
