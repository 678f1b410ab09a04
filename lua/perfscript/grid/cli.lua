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
local paths = require "perfscript.path"

local M = {}

M.DEFAULT_ROOT = "perfdb"
M.SEED_VERSION = "ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

-- The repository root, from the recipe's own path (recipes/<x>.lua).
local function repo_root(script)
  return paths.dirname(paths.dirname(script or "recipes/x.lua"))
end

-- Copies a database tree (not the lock file); fails with the reason.
local function copy_tree(src, dst)
  local n, err = paths.copy_tree(src, dst)
  if not n then perf.fail("%s", err) end
  return n
end

-- Builds the parser; info.models is the recipe's default model list (nil: all presets).
function M.parser(info)
  local p = argparse(info.name, info.description)
  p:epilog(info.epilog or ("With no database flags the run uses ./" .. M.DEFAULT_ROOT .. "/"
    .. M.SEED_VERSION .. ", a working copy of the bundled seed database (data/seed_db), "
    .. "created on first use.\n\nSummary columns per kernel: candidates generated, rejected by "
    .. "constraints, over the memory budget, duplicates (same signature), sampled out by --rows, "
    .. "already present in the file, shadowed (the consumer would answer the row's own query "
    .. "with an earlier row, or could not read it, so it is not appended), appended."))
  dbpath.add_options(p)
  p:option("--data-dir", "The same as --database-path."):target("database_path"):hidden(true)
  p:option("--target-models", "Comma-separated model ids" .. (info.models and
    (" (default: " .. table.concat(info.models, ",") .. ")") or " (default: all presets)") .. ".")
  p:option("--model-config", "A local HuggingFace config.json: adds that model (no network access).")
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
  p:option("--out-dir", "Copy the database to this new directory first and grow the copy.")
  p:option("--report", "Also write the per-kernel summary to this file (.csv, else JSON).")
  return p
end

-- Resolves the database directory: --database-path, or the version flags under
-- --database-root ($PERFSCRIPT_DB_ROOT, else ./perfdb); with none of them, ./perfdb's copy of
-- the bundled seed database, made on first use.
function M.database_dir(a, script, say)
  if a.database_path or a.vllm_version or a.torch_version or a.cann_version then
    if not a.database_root or a.database_root == "" then
      a.database_root = os.getenv(dbpath.ROOT_ENV) or M.DEFAULT_ROOT
    end
    return dbpath.from_args(a)
  end
  local root = a.database_root or os.getenv(dbpath.ROOT_ENV) or M.DEFAULT_ROOT
  local dir = root .. "/" .. M.SEED_VERSION
  if lfs.attributes(dir, "mode") ~= "directory" then
    local seed = repo_root(script) .. "/data/seed_db/" .. M.SEED_VERSION
    if lfs.attributes(seed, "mode") ~= "directory" then
      perf.fail("no database given and the bundled seed database %s is missing", seed)
    end
    local n = copy_tree(seed, dir)
    say(("Created the working database %s (%d files copied from %s)."):format(dir, n, seed))
  end
  return dir
end

local function load_rules()
  return { patterns = require "perfscript.grids.patterns", assignments = require "perfscript.grids.assignments",
           grids = require "perfscript.grids.registry", scenes = require "perfscript.grids.fia_scenes" }
end

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

-- The summary as CSV (by extension) or JSON, written atomically.
function M.write_report(path, results, say)
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
  local ok, err = perf.fs.write_atomic(path, text)
  if not ok then perf.fail("--report: %s", err) end
  say(("Wrote the summary to %s."):format(path))
end

-- main(argv, info): info.name, info.description, info.models (recipe's default list).
function M.main(argv, info)
  local script = argv[0]
  local a = M.parser(info):parse(argv)
  local say = function(s) io.stdout:write(s, "\n") end
  local names
  if a.target_models then
    names = {}
    for item in a.target_models:gmatch("[^,]+") do
      item = item:match("^%s*(.-)%s*$")
      if item ~= "" then names[#names + 1] = item end
    end
    if #names == 0 then perf.fail("--target-models lists no model") end
  elseif info.models then
    names = table.move(info.models, 1, #info.models, 1, {})
  end
  local presets = {}
  for _, path in ipairs(a.model_config or {}) do
    local p = models.from_hf_config(path)
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
  local dir = M.database_dir(a, script, say)
  if a.out_dir then
    if lfs.attributes(dir, "mode") ~= "directory" then perf.fail("Data directory does not exist: %s", dir) end
    if lfs.attributes(a.out_dir) then
      for name in lfs.dir(a.out_dir) do
        if name ~= "." and name ~= ".." then perf.fail("--out-dir %s exists and is not empty", a.out_dir) end
      end
    end
    local n = copy_tree(dir, a.out_dir)
    say(("Copied %d files of %s to %s."):format(n, dir, a.out_dir))
    dir = a.out_dir
  end
  local shown = {}
  for _, p in ipairs(models.resolve(names, presets)) do shown[#shown + 1] = p.model_id end
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
                            progress = progress }
  if bar then bar:finish() end
  if a.report then M.write_report(a.report, results, say) end
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
