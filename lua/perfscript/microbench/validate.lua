-- `recipes/microbench.lua --validate [meta|cpu]`: every planned row through the executor's
-- golden functions (lua/perfscript/replay/golden/, plain torch on cpu or meta), so that a plan
-- is proven before it reaches an NPU. The same row selection as a run (--ops, --update-mode);
-- nothing is written to the database. Per operator: rows valid, rows rejected (grouped by
-- reason, with a count and one example), rows the builder could not replay, rows of kernel
-- types with no builder. Exit status 0 when no row is rejected, 3 otherwise.
local perf = require "perfscript"
local options = require "perfscript.options"
local plan = require "perfscript.microbench.plan"
local report = require "perfscript.microbench.report"
local paths = require "perfscript.path"

local M = {}

local PROBE = "import sys, torch; print(sys.executable); print(torch.__version__)"

-- The interpreter that runs the executor: --python when given (it must import torch), else
-- python3 on PATH, then /usr/bin/python3 (Debian's python3-torch is invisible to a pyenv,
-- conda or virtualenv python3 that comes first on PATH). Returns path, {executable, torch},
-- or nil, message naming every interpreter tried and why it failed.
function M.find_python(explicit, work)
  local cands = explicit and { explicit } or { "python3", "/usr/bin/python3" }
  local tried = {}
  for _, py in ipairs(cands) do
    local out, err = work .. "/probe.out", work .. "/probe.err"
    local code, how = perf.proc.run { argv = { py, "-c", PROBE }, stdout = out, stderr = err,
                                      stdin_null = true, timeout = 300 }
    local text = paths.read(out) or ""
    local exe, ver = text:match("^([^\n]+)\n([^\n]+)")
    if code == 0 and exe then return py, { executable = exe, torch = ver } end
    local why = code == nil and tostring(how)
      or ((paths.read(err) or ""):match("([^\n]*Error[^\n]*)%s*$") or ("exit status " .. tostring(code)))
    tried[#tried + 1] = ("%s (%s)"):format(py, why)
  end
  return nil, ("no Python interpreter that can import torch: tried %s. Install Debian's python3-torch "
    .. "(apt-get install python3-torch) or name an interpreter with --python"):format(table.concat(tried, ", "))
end

-- Per-operator counts from the plan and the executor's per-case status.
local function tally(p, status)
  local by, order = {}, {}
  local function op(name)
    if not by[name] then
      by[name] = { op = name, rows = 0, valid = 0, rejected = 0, unreplayable = 0, no_builder = 0, meta = 0 }
      order[#order + 1] = name
    end
    return by[name]
  end
  local rejected = {}
  for _, c in ipairs(p.cases) do
    local t = op(c.op)
    t.rows = t.rows + 1
    local r = status.cases[c.id]
    if r and r.status == "valid" then
      t.valid = t.valid + 1
    else
      t.rejected = t.rejected + 1
      rejected[#rejected + 1] = { op = c.op, csv = c.csv, row = c.row, shapes = c.record and c.record["Input Shapes"],
        reason = r and r.reason or "the executor gave no status for this case", kind = "rejected" }
    end
    if r and r.note then t.meta = t.meta + 1 end
  end
  for _, u in ipairs(p.unreplayable) do
    local t = op(u.op)
    t.rows, t.unreplayable = t.rows + 1, t.unreplayable + 1
  end
  for name, nb in pairs(p.no_builder) do
    local t = op(name)
    t.rows, t.no_builder = t.rows + nb.rows, t.no_builder + nb.rows
  end
  table.sort(order)
  local list = {}
  for _, name in ipairs(order) do list[#list + 1] = by[name] end
  return list, rejected
end

local function print_table(list, say)
  local w = 8
  for _, t in ipairs(list) do w = math.max(w, #t.op) end
  local fmt = "%-" .. w .. "s %6s %6s %9s %15s %11s"
  say(fmt:format("operator", "rows", "valid", "rejected", "not replayable", "no builder"))
  local tot = { 0, 0, 0, 0, 0 }
  for _, t in ipairs(list) do
    say(fmt:format(t.op, t.rows, t.valid, t.rejected, t.unreplayable, t.no_builder))
    tot[1], tot[2], tot[3] = tot[1] + t.rows, tot[2] + t.valid, tot[3] + t.rejected
    tot[4], tot[5] = tot[4] + t.unreplayable, tot[5] + t.no_builder
  end
  say(fmt:format("total", tot[1], tot[2], tot[3], tot[4], tot[5]))
  return tot
end

-- The --validate run on parsed arguments; returns the exit status.
function M.run(a, script)
  local run = require "perfscript.microbench.run"
  local say = run.say
  local device = type(a.validate) == "table" and (a.validate[1] or "meta") or a.validate
  if device == true then device = "meta" end
  if a.simulate or a.prof_path or a.plan_only or a.output_database then
    perf.fail("--validate writes nothing and replays nothing: it takes no --simulate, --prof-path, "
      .. "--plan-only or --output")
  end
  if a.max_elements == nil or a.max_elements < 0 then perf.fail("--max-elements must be 0 or more") end
  local ops = run.check_args(a)
  local src = paths.abspath((options.database_dir(a, { script = script, say = say, write = false })))
  if not paths.isdir(src) then perf.fail("%s: no such database directory", src) end
  local files = run.target_files(src, ops)
  local work = paths.abspath(a.work_dir or os.getenv("TMPDIR") or "/tmp")
  local run_dir = ("%s/perfscript-validate-%s"):format(work, run.run_id())
  assert(perf.fs.mkdir_p(run_dir))
  local wd <close> = run.workdir(run_dir, a.keep_workdir)
  local explicit = a.python ~= "python3" and a.python or nil
  local py, info = M.find_python(explicit, run_dir)
  if not py then perf.fail("%s", info) end
  say(("Database: %s (read only)"):format(src))
  say(("[VALIDATE] device %s; Python %s (%s, torch %s)"):format(device, py, info.executable, info.torch))

  local p, err = plan.build(files, { mode = a.update_mode, ep_size = a.dispatch_ffn_combine_ep_size, outputs = true })
  if not p then perf.fail("%s", err) end
  local plan_path, status_path = run_dir .. "/plan.jsonl", run_dir .. "/status.json"
  assert(plan.write(plan_path, p, { seed = 0 }))
  local ok, werr = plan.write_executor(run_dir .. "/executor.py", { golden = true })
  if not ok then perf.fail("%s", werr) end
  local status = { cases = {} }
  if #p.cases > 0 then
    local log = run_dir .. "/executor.log"
    local argv = { py, run_dir .. "/executor.py", plan_path, "--device", device, "--status", status_path,
                   "--max-elements", tostring(a.max_elements) }
    local code, how = perf.proc.run { argv = argv, stdout = log, stderr = log, stdin_null = true, cwd = run_dir,
                                      timeout = (a.timeout and a.timeout > 0) and a.timeout or nil }
    local text = paths.read(status_path)
    local okj, st = pcall(require("cjson").decode, text or "")
    if not (text and okj and type(st) == "table" and type(st.cases) == "table") then
      perf.fail("the executor ended with %s %s and wrote no status; its log: %s", tostring(how), tostring(code),
        require("perfscript.microbench.msprof").log_tail(log, 8))
    end
    status = st
  end
  for _, w in ipairs(p.warnings or {}) do io.stderr:write("[WARN] ", w, "\n") end
  local list, rejected = tally(p, status)
  say("")
  local tot = print_table(list, say)
  local meta = 0
  for _, t in ipairs(list) do meta = meta + t.meta end
  if meta > 0 then
    say(("[META] %d row(s) over --max-elements %d ran on meta (shapes and dtypes only)"):format(meta, a.max_elements))
  end
  for _, line in ipairs(report.grouped_lines(rejected, "REJECTED")) do say(line) end
  for _, line in ipairs(report.grouped_lines(p.unreplayable, "NOT REPLAYABLE")) do say(line) end
  for _, nb in ipairs(report.no_builder_list(p.no_builder)) do
    say(("[NO BUILDER] %s: %d row(s): %s"):format(nb.op, nb.rows, nb.reason))
  end
  say(("[SUMMARY] %d row(s): %d valid, %d rejected, %d not replayable, %d with no builder (device %s); "
    .. "nothing written"):format(tot[1], tot[2], tot[3], tot[4], tot[5], device))
  return tot[3] > 0 and 3 or 0
end

return M
