-- Command line of the shape-grid recipes (recipes/shape_grid.lua, dsv3_grid.lua,
-- qwen3_grid.lua): the Python original generate_shape_grid.py's flags plus --model-config,
-- --sampling, --variants, --dry-run, --out-dir and --report; the bundled seed database as
-- the default; the per-kernel summary table.
local perf = require "perfscript"
local lfs = require "lfs"
local argparse = require "argparse"
local mem = require "perfscript.mem"
local models = require "perfscript.grid.models"
local run = require "perfscript.grid.run"
local dbpath = require "perfscript.dbpath"
local options = require "perfscript.options"
local paths = require "perfscript.path"

local M = {}

M.DEFAULT_ROOT = dbpath.DEFAULT_ROOT
M.SEED_VERSION = dbpath.SEED_VERSION

-- Copies a database tree (not the lock file); fails with the reason.
local function copy_tree(src, dst)
  local n, err = paths.copy_tree(src, dst)
  if not n then perf.fail("%s", err) end
  return n
end

-- Builds the parser; info.models is the recipe's default model list (nil: all presets).
-- The parallelism each preset of the recipe assumes, for --help.
local function parallelism_help(info)
  local lines = { "Parallelism the presets assume (DP: any; it only changes the tokens per rank, "
                  .. "which the token grids span):" }
  local ok, list = pcall(models.resolve, info.models)
  for _, p in ipairs(ok and list or {}) do lines[#lines + 1] = "  " .. models.parallelism(p) end
  lines[#lines + 1] = "  A --model-config model: TP 1,2,4,8,16; EP the powers of two up to 64 that "
    .. "divide its routed experts."
  return table.concat(lines, "\n")
end

function M.parser(info)
  local p = argparse(info.name, info.description)
  p:epilog(info.epilog or (parallelism_help(info) .. "\n\nWith no database flags the run uses ./" .. M.DEFAULT_ROOT .. "/"
    .. M.SEED_VERSION .. ", a working copy of the bundled seed database (data/seed_db), "
    .. "created on first use.\n\nSummary columns per kernel: candidates generated, rejected by "
    .. "constraints, over the memory budget, duplicates (same signature), sampled out by --rows, "
    .. "already present in the file, shadowed (the consumer would answer the row's own query "
    .. "with an earlier row, or could not read it, so it is not appended), appended."))
  options.database(p, { write = true, aliases = { "--data-dir" } })
  options.list(p, "--target-models", "Model ids, a comma list; repeatable" .. (info.models and
    (" (default: " .. table.concat(info.models, ",") .. ")") or " (default: all presets)") .. ".")
  p:option("--model-config", "A local HuggingFace config.json: adds that model (no network access); "
           .. "without --target-models only the configs' models grow.")
   :count("*")
  p:option("--rows", "Rows appended per CSV at most (0 = no cap).", "1000"):convert(math.tointeger)
  p:option("--seed", "Sampling seed (per file, mixed with the kernel type).", "0"):convert(math.tointeger)
  p:option("--max-hbm-gb", "Per-row budget in GiB for input plus output tensors (0 = off).", "32")
   :convert(tonumber)
  p:option("--sampling", "How --rows picks: random (seeded; a bigger --rows tops up) or spread "
           .. "(evenly along the shape order, smallest and largest shapes included).", "random")
   :choices { "random", "spread" }
  p:flag("--variants", "One template per kernel variant in the file (OP State, core, dtypes and "
         .. "formats), not only the first row; --rows applies to each variant.")
  p:flag("--dry-run", "Report what would be appended; write nothing.")
  p:flag("--replayable-only", "Append only rows a replay builder can measure (the default: the rows feed "
         .. "microbench.lua); the others are counted per kernel with the reason.")
  p:flag("--no-replayable-only", "Also append rows no replay builder can measure (they stay unmeasured).")
  options.output(p, "Copy the database to this new (or empty) directory first and grow the copy "
    .. "(default: grow the database in place).", { aliases = { "--out-dir" }, argname = "<dir>" })
  p:option("--report", "Also write the per-kernel summary to this file (.csv, else JSON).")
  options.threads(p, "Worker processes growing independent files at once (default: one per "
    .. "core; 1: this process alone).")
  return p
end

-- Resolves the database directory: --database-path, or the version flags under
-- --database-root ($PERFSCRIPT_DB_ROOT, else ./perfdb); with none of them, the default
-- database for a writer (dbpath.default: ./perfdb's copy of the bundled seed, made on first use).
function M.database_dir(a, script, say)
  return (options.database_dir(a, { write = true, script = script, say = say }))
end

local function load_rules()
  return { patterns = require "perfscript.grids.patterns", assignments = require "perfscript.grids.assignments",
           grids = require "perfscript.grids.registry", scenes = require "perfscript.grids.fia_scenes" }
end
M.load_rules = load_rules

local function pad(s, n) s = tostring(s); return s .. string.rep(" ", n - #s) end
local function lpad(s, n) s = tostring(s); return string.rep(" ", n - #s) .. s end

-- The per-kernel summary table.
function M.summary(results, out)
  local cols = { "candidates", "rejected", "memory", "duplicates", "unreplayable", "sampled_out", "present",
                 "shadowed", "appended" }
  local heads = { "candidates", "constraints", "memory", "duplicates", "unreplayable", "sampled out", "present",
                  "shadowed", "appended" }
  local w = 6
  for _, r in ipairs(results) do if #r.kernel > w then w = #r.kernel end end
  local line = { pad("kernel", w) }
  for _, h in ipairs(heads) do line[#line + 1] = lpad(h, 11) end
  line[#line + 1] = "  status"
  out(table.concat(line, " "))
  local tot = {}
  for _, r in ipairs(results) do
    line = { pad(r.kernel, w) }
    for i, c in ipairs(cols) do
      local v = r[c]
      line[#line + 1] = lpad(v ~= nil and v or "-", 11)
      if v then tot[i] = (tot[i] or 0) + v end
    end
    line[#line + 1] = "  " .. (r.status or "")
    out(table.concat(line, " "))
  end
  line = { pad("total", w) }
  for i = 1, #cols do line[#line + 1] = lpad(tot[i] or 0, 11) end
  out(table.concat(line, " "))
  M.left_out(results, out)
end

-- The rows --replayable-only left out, per kernel and reason (most first).
function M.left_out(results, out)
  local list = {}
  for _, r in ipairs(results) do
    for why, n in pairs(r.unreplayable_why or {}) do list[#list + 1] = { kernel = r.kernel, why = why, n = n } end
  end
  if #list == 0 then return end
  table.sort(list, function(a, b)
    if a.n ~= b.n then return a.n > b.n end
    if a.kernel ~= b.kernel then return a.kernel < b.kernel end
    return a.why < b.why
  end)
  local total, nb, w = 0, 0, 6
  for _, x in ipairs(list) do
    total = total + x.n
    if x.why:find("^no builder") then nb = nb + x.n end
    if #x.kernel > w then w = #x.kernel end
  end
  out("")
  out(("Left out, not replayable (%d candidate rows, %d of them with no builder; --no-replayable-only keeps them):")
      :format(total, nb))
  for _, x in ipairs(list) do out(("  %s %7d  %s"):format(pad(x.kernel, w), x.n, x.why)) end
end

local REPORT_COLS = { "file", "kernel", "pattern", "candidates", "rejected", "memory", "duplicates",
                      "unreplayable", "sampled_out", "present", "shadowed", "appended", "status" }

-- The summary as CSV (by extension) or JSON, written atomically (staged with the database
-- files when stage is given).
function M.write_report(path, results, say, stage)
  local text
  if path:lower():sub(-4) == ".csv" then
    local lines = { table.concat(REPORT_COLS, ",") }
    for _, r in ipairs(results) do
      local row = {}
      for i, c in ipairs(REPORT_COLS) do
        local v = tostring(r[c] == nil and "" or r[c])
        row[i] = perf.csv.quote(v)
      end
      lines[#lines + 1] = table.concat(row, ",")
    end
    text = table.concat(lines, "\n") .. "\n"
  else
    local cjson = require "cjson"
    local list = {}
    for i, r in ipairs(results) do
      local o = {}
      for _, c in ipairs(REPORT_COLS) do o[c] = r[c] end
      list[i] = o
    end
    text = cjson.encode(list) .. "\n"
  end
  local ok, err = perf.fs.write_atomic(path, text, { stage = stage })
  if not ok then perf.fail("--report: %s", err) end
  if not stage then say(("Wrote the summary to %s."):format(path)) end
end

-- main(argv, info): info.name, info.description, info.models (recipe's default list).
function M.main(argv, info)
  local script = argv[0]
  local a = M.parser(info):parse(argv)
  local say = function(s) io.stdout:write(s, "\n") end
  local names
  if a.target_models then
    names = a.target_models
    if #names == 0 then perf.fail("--target-models lists no model") end
  elseif info.models then
    names = table.move(info.models, 1, #info.models, 1, {})
  end
  local presets = {}
  -- --model-config without --target-models: only the configs' models
  if a.model_config and #a.model_config > 0 and not a.target_models then names = {} end
  for _, path in ipairs(a.model_config or {}) do
    local p = models.from_hf_config(path)
    for _, q in ipairs(presets) do
      if models.normalize(q.name) == models.normalize(p.name) then
        perf.fail("%s: names the model '%s', as another --model-config does", path, p.name)
      end
    end
    presets[#presets + 1] = p
    if names then
      local listed = false
      for _, n in ipairs(names) do
        if models.normalize(n) == models.normalize(p.name) then listed = true end
      end
      if not listed then names[#names + 1] = p.name end
    end
  end
  if a.rows == nil or a.seed == nil then perf.fail("--rows and --seed take integers") end
  if not a.max_hbm_gb then perf.fail("--max-hbm-gb takes a number") end
  local budget = a.max_hbm_gb > 0 and math.floor(a.max_hbm_gb * 1024 ^ 3) or nil
  local resolved = models.resolve(names, presets)  -- bad models fail before any file is made
  local dir = M.database_dir(a, script, say)
  if a.output then
    if lfs.attributes(dir, "mode") ~= "directory" then perf.fail("Data directory does not exist: %s", dir) end
    if lfs.attributes(a.output) then
      for name in lfs.dir(a.output) do
        if name ~= "." and name ~= ".." then perf.fail("--output %s exists and is not empty", a.output) end
      end
    end
    local n = copy_tree(dir, a.output)
    say(("Copied %d files of %s to %s."):format(n, dir, a.output))
    dir = a.output
  end
  local shown = {}
  for _, p in ipairs(resolved) do shown[#shown + 1] = p.model_id end
  say(("Target models: %s%s"):format(table.concat(shown, ", "), names and "" or " (all presets)"))
  say(("Database: %s | rows/csv: %s | seed: %d | HBM budget: %s%s"):format(dir,
      a.rows > 0 and a.rows or "unlimited", a.seed, budget and mem.format(budget) .. " per row" or "off",
      a.dry_run and " | dry run" or ""))
  local bar
  local function progress(done, total, name)
    bar = bar or require("perfscript.progress").new("Files", total)
    bar:update(done, name)
  end
  local results = run.run { dir = dir, models = names, presets = presets, rows = a.rows, seed = a.seed,
                            max_hbm_bytes = budget, dry_run = a.dry_run, variants = a.variants,
                            sampling = a.sampling,
                            replayable_only = not a.no_replayable_only,
                            rules = load_rules(),
                            progress = progress, threads = options.thread_count(a),
                            also_stage = a.report and function(results, stage)
                              M.write_report(a.report, results, say, stage)
                            end }
  if bar then bar:finish() end
  if a.report then
    if a.dry_run then M.write_report(a.report, results, say)
    else say(("Wrote the summary to %s."):format(a.report)) end
  end
  say("")
  M.summary(results, say)
  local total, files, changed = 0, 0, 0
  for _, r in ipairs(results) do
    files = files + 1
    total = total + (r.appended or 0)
    if (r.appended or 0) > 0 then changed = changed + 1 end
  end
  say("")
  if a.dry_run then
    say(("Dry run: would append %d rows to %d of %d CSV files under %s (nothing written).")
        :format(total, changed, files, dir))
  else
    say(("Appended %d rows to %d of %d CSV files under %s."):format(total, changed, files, dir))
  end
  return results
end

return M
