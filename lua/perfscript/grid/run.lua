-- The shape-grid pipeline over one database directory (grid_generator spec section 1, with
-- the fixes of section 8/10). Per CSV:
--   route -> template row (the first) -> candidates (constraints) -> slot alignment and
--   absent-slot clearing -> memory filter (each slot's own dtype) -> dedup within the
--   generated set -> deterministic sample (seeded by seed and kernel type, independent of
--   the rows already in the file) -> rows that already exist dropped -> appended, sorted by
--   shape, atomically, under the database lock. Existing rows are never touched or
--   reordered; a file with nothing to append is not rewritten.
local perf = require "perfscript"
local lfs = require "lfs"
local mem = require "perfscript.mem"
local cells = require "perfscript.grid.cells"
local expand = require "perfscript.grid.expand"
local route = require "perfscript.grid.route"
local models = require "perfscript.grid.models"

local M = {}

-- Columns a generated row takes from the template (the kernel variant's identity).
local INHERIT = { ["OP State"] = true, ["Accelerator Core"] = true,
                  ["Input Data Types"] = true, ["Input Formats"] = true,
                  ["Output Data Types"] = true, ["Output Formats"] = true }
local ABSENT = { [""] = true, NULL = true, NONE = true, UNDEFINED = true, DT_UNDEFINED = true }

---------------------------------------------------------------------------------------------
-- Deterministic sampling: SplitMix64 seeded with FNV-1a 64 of (seed, kernel type).

local function fnv1a(s)
  local h = -3750763034362895579  -- 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 1099511628211 end
  return h
end

function M.rng(seed, kernel)
  local state = fnv1a(tostring(seed) .. "\0" .. kernel)
  return function(n)  -- uniform integer in [1, n]
    state = state + -7046029254386353131  -- 0x9E3779B97F4A7C15
    local z = state
    z = (z ~ (z >> 30)) * -4658895280553007687  -- 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * -7723592293110705685  -- 0x94D049BB133111EB
    z = z ~ (z >> 31)
    return (z >> 1) % n + 1  -- 63 random bits; the modulo bias is below n / 2^63
  end
end

-- Picks k of n indices (partial Fisher-Yates), returned ascending.
function M.sample(n, k, seed, kernel)
  local rand, idx = M.rng(seed, kernel), {}
  for i = 1, n do idx[i] = i end
  for i = 1, k do
    local j = i - 1 + rand(n - i + 1)
    idx[i], idx[j] = idx[j], idx[i]
  end
  local out = table.move(idx, 1, k, 1, {})
  table.sort(out)
  return out
end

---------------------------------------------------------------------------------------------
-- Helpers

local function split_meta(cell)
  local s = (cell or ""):gsub("^%s+", ""):gsub("%s+$", ""):gsub('^"', ""):gsub('"$', "")
  local out = {}
  if s == "" then return out end
  for part in (s .. ";"):gmatch("([^;]*);") do out[#out + 1] = part:match("^%s*(.-)%s*$") end
  return out
end

-- Slot indices whose dtype or format entry says "absent", per (dtypes, formats) pair.
local absent_cache = setmetatable({}, { __mode = "k" })
local function absent_slots(dtypes, formats)
  local by_dt = absent_cache[dtypes]
  if not by_dt then by_dt = {}; absent_cache[dtypes] = by_dt end
  local list = by_dt[formats]
  if list then return list end
  list = {}
  local dt, fm = split_meta(dtypes), split_meta(formats)
  for j = 1, math.max(#dt, #fm) do
    if (dt[j] and ABSENT[dt[j]:upper()]) or (fm[j] and ABSENT[fm[j]:upper()]) then list[#list + 1] = j end
  end
  by_dt[formats] = list
  return list
end

-- Empties shape j when its dtype or format entry says the slot is absent (template layout wins).
local function clear_absent(shapes, dtypes, formats)
  local list = absent_slots(dtypes, formats)
  for i = 1, #list do
    local j = list[i]
    if j <= #shapes then shapes[j] = {} end
  end
end

local function align(shapes, k)
  for i = #shapes + 1, k do shapes[i] = {} end
  return shapes
end

local function csv_field(s)
  if s:find('[,"\r\n]') then return '"' .. s:gsub('"', '""') .. '"' end
  return s
end

-- Recursive *.csv list (without our temp files), sorted component-wise.
function M.discover(dir)
  local out = {}
  local function walk(d, rel)
    local names = {}
    for name in lfs.dir(d) do
      if name ~= "." and name ~= ".." then names[#names + 1] = name end
    end
    table.sort(names)
    for _, name in ipairs(names) do
      local p = d .. "/" .. name
      local mode = lfs.attributes(p, "mode")
      if mode == "directory" then
        walk(p, rel .. name .. "/")
      elseif mode == "file" and name:sub(-4) == ".csv" and not name:find(".tmp.", 1, true) then
        out[#out + 1] = { path = p, name = rel .. name, kernel = name:sub(1, -5) }
      end
    end
  end
  walk(dir, "")
  return out
end

---------------------------------------------------------------------------------------------
-- One file

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  return text
end

-- Reads header, template and the signature set of the existing rows.
local function load_csv(path, kernel)
  local r, err = perf.csv.open(path, { header = true, reuse = true })
  if not r then return nil, err end
  local header = r:header()
  if #header == 0 then r:close(); return nil, "empty file" end
  if header[1]:find("^version https://git%-lfs") then
    r:close()
    return nil, "a Git-LFS pointer, not data (git lfs pull first)"
  end
  local col = {}
  for i, h in ipairs(header) do if col[h] == nil then col[h] = i end end
  if not col["Input Shapes"] then r:close(); return nil, "no 'Input Shapes' column" end
  local existing, template, nrows = {}, nil, 0
  local key = cells.record_keyer(header, kernel)
  for f in r:lines() do
    nrows = nrows + 1
    if not template then template = table.move(f, 1, #f, 1, {}) end
    existing[key(f)] = true
  end
  local eol = r:style()
  r:close()
  if not template then return nil, "no template row" end
  local trow = {}
  for name, i in pairs(col) do trow[name] = template[i] or "" end
  return { header = header, col = col, template = trow, existing = existing, rows = nrows, eol = eol }
end

-- The generated population of one file: candidates after alignment, clearing, memory and
-- in-set dedup, in generation order; stats counted.
local function population(job, csv, st)
  local T = csv.template
  local t_in = cells.parse(T["Input Shapes"] or "") or {}
  local t_out = (T["Output Shapes"] or "") ~= "" and (cells.parse(T["Output Shapes"]) or {}) or {}
  local kin, kout = #t_in, #t_out
  local budget, kernel = job.max_hbm_bytes, job.kernel
  local seen, pop = {}, {}
  local rec = {}
  local function emit(c)
    st.generated = st.generated + 1
    local ins, outs, extra = c.inputs, c.outputs, c.extra or {}
    if kin > 0 then align(ins, kin) end
    if kout > 0 then align(outs, kout) end
    local idt = extra["Input Data Types"] or T["Input Data Types"] or ""
    local ifm = extra["Input Formats"] or T["Input Formats"] or ""
    local odt = extra["Output Data Types"] or T["Output Data Types"] or ""
    local ofm = extra["Output Formats"] or T["Output Formats"] or ""
    clear_absent(ins, idt, ifm)
    clear_absent(outs, odt, ofm)
    if budget and mem.row_bytes(ins, idt, outs, odt) > budget then
      st.memory = st.memory + 1
      return
    end
    local it, ot = cells.text(ins), cells.text(outs)
    rec["Input Shapes"], rec["Input Data Types"], rec["Input Formats"] = it, idt, ifm
    rec["Output Shapes"], rec["Output Data Types"] = ot, odt
    rec["EP Size"] = extra["EP Size"] or T["EP Size"]
    local key = cells.key(kernel, rec)
    if seen[key] then st.duplicates = st.duplicates + 1; return end
    seen[key] = true
    pop[#pop + 1] = { ins = ins, it = it, ot = ot, extra = extra, key = key }
  end
  job.generate(emit, st)
  return pop
end

-- Cell values of one appended row, in `header` order.
local function render(header, T, cand)
  local row = {}
  for i, name in ipairs(header) do
    local v
    if name == "Input Shapes" then v = cand.it == "" and "" or '"' .. cand.it .. '"'
    elseif name == "Output Shapes" then v = cand.ot == "" and "" or '"' .. cand.ot .. '"'
    elseif cand.extra[name] ~= nil then v = cand.extra[name]
    elseif INHERIT[name] then v = T[name] or ""
    else v = "" end  -- latencies, counters, unset runtime and user columns: to be measured
    row[i] = v
  end
  return row
end

local function write_rows(job, csv, appended)
  -- columns the new rows need that the header lacks (e.g. FIA runtime columns, EP Size)
  local extra_cols, have = {}, {}
  for _, h in ipairs(csv.header) do have[h] = true end
  local function want(name)
    if not have[name] then have[name] = true; extra_cols[#extra_cols + 1] = name end
  end
  for _, name in ipairs(job.columns or {}) do
    for _, c in ipairs(appended) do if c.extra[name] ~= nil then want(name); break end end
  end
  local others = {}
  for _, c in ipairs(appended) do
    for name in pairs(c.extra) do if not have[name] then others[name] = true end end
  end
  local sorted = {}
  for name in pairs(others) do sorted[#sorted + 1] = name end
  table.sort(sorted)
  for _, name in ipairs(sorted) do want(name) end

  local header = table.move(csv.header, 1, #csv.header, 1, {})
  for _, name in ipairs(extra_cols) do header[#header + 1] = name end
  if #extra_cols == 0 then
    -- existing bytes kept as they are (BOM, line endings, quoting); rows appended
    local text, err = read_file(job.path)
    if not text then return nil, err end
    local eol = csv.eol or "\n"
    local buf = { text }
    if #text > 0 and not text:find("\n$") then buf[#buf + 1] = eol end
    -- per column: a fixed encoded cell (inherited or blank), or what varies per row
    local plan, fixed = {}, {}
    local extra_names = {}
    for _, c in ipairs(appended) do for name in pairs(c.extra) do extra_names[name] = true end end
    for i, name in ipairs(header) do
      if name == "Input Shapes" then plan[i] = 1
      elseif name == "Output Shapes" then plan[i] = 2
      elseif extra_names[name] then plan[i] = name
      else
        plan[i] = 0
        fixed[i] = csv_field(INHERIT[name] and csv.template[name] or "")
      end
    end
    local row, n = {}, #header
    for _, c in ipairs(appended) do
      local extra = c.extra
      for i = 1, n do
        local k = plan[i]
        if k == 0 then row[i] = fixed[i]
        elseif k == 1 then row[i] = c.it == "" and "" or '"""' .. c.it .. '"""'
        elseif k == 2 then row[i] = c.ot == "" and "" or '"""' .. c.ot .. '"""'
        else
          local v = extra[k]
          if v == nil then v = INHERIT[k] and csv.template[k] or "" end
          row[i] = csv_field(v)
        end
      end
      buf[#buf + 1] = table.concat(row, ",", 1, n) .. eol
    end
    return perf.fs.write_atomic(job.path, table.concat(buf))
  end
  -- header extension: existing rows rewritten with empty cells in the new columns
  local r, err = perf.csv.open(job.path, { header = true })
  if not r then return nil, err end
  local w, werr = perf.csv.writer(job.path)
  if not w then r:close(); return nil, werr end
  w:write(header)
  local n = #header
  for f in r:lines() do
    for i = #f + 1, n do f[i] = "" end
    w:write(f)
  end
  r:close()
  for _, c in ipairs(appended) do w:write(render(header, csv.template, c)) end
  return w:commit()
end

-- process(job) -> stats. job: path, name, kernel, generate(emit, stats), columns,
-- rows, seed, max_hbm_bytes, dry_run.
function M.process(job)
  local st = { file = job.name, kernel = job.kernel, generated = 0, candidates = 0, rejected = 0,
               memory = 0, duplicates = 0, sampled_out = 0, present = 0, appended = 0 }
  local csv, why = load_csv(job.path, job.kernel)
  if not csv then st.status = "skipped: " .. why; return st end
  local pop = population(job, csv, st)
  if st.candidates == 0 then st.candidates = st.generated end  -- generators count as they emit
  local chosen = pop
  if job.rows and job.rows > 0 and #pop > job.rows then
    chosen = {}
    for i, idx in ipairs(M.sample(#pop, job.rows, job.seed, job.kernel)) do chosen[i] = pop[idx] end
    st.sampled_out = #pop - job.rows
  end
  local appended = {}
  for _, c in ipairs(chosen) do
    if csv.existing[c.key] then st.present = st.present + 1 else appended[#appended + 1] = c end
  end
  -- by shape, stable: sort byte keys (compared in C) that end with the position
  local keys = {}
  for i, c in ipairs(appended) do keys[i] = cells.sort_key(c.ins) .. string.pack(">I4", i) end
  table.sort(keys)
  local sorted = {}
  for i, k in ipairs(keys) do sorted[i] = appended[string.unpack(">I4", k, #k - 3)] end
  appended = sorted
  st.appended = #appended
  if #appended == 0 then st.status = "unchanged"; return st end
  if job.dry_run then st.status = "would append"; return st end
  local res, err = write_rows(job, csv, appended)
  if not res then perf.fail("%s: %s", job.path, err) end
  st.status = "appended"
  return st
end

---------------------------------------------------------------------------------------------
-- A whole directory

-- run(opts) -> list of per-file stats. opts: dir, models (list of names or nil),
-- presets (extra presets from --model-config), rows, seed, max_hbm_bytes, dry_run, rules
-- ({patterns, assignments, grids, scenes}), print (function for progress lines).
function M.run(opts)
  local dir = opts.dir
  if lfs.attributes(dir, "mode") ~= "directory" then perf.fail("Data directory does not exist: %s", dir) end
  local files = M.discover(dir)
  if #files == 0 then perf.fail("No CSV files found under: %s", dir) end
  local meta, merr = route.load_meta(dir .. "/op_mapping.yaml")
  if not meta then perf.fail("%s", merr) end
  local rules = opts.rules
  local configs = models.resolve(opts.models, opts.presets)
  local nk_pairs = opts.models and models.matmul_nk_pairs(configs) or nil
  local env = { grids = rules.grids, scenes = rules.scenes, is_mla = models.is_mla,
                moe_configs = models.moe_configs }
  local lock
  if not opts.dry_run then
    local err
    lock, err = perf.fs.lock(dir)
    if not lock then perf.fail("%s", err) end
  end
  -- route every file first: a pattern used by several files is generated once and replayed
  local routes, uses = {}, {}
  for i, f in ipairs(files) do
    local pname, why = route.pattern_for(f.kernel, rules.assignments, rules.patterns, meta)
    routes[i] = { pname, why }
    if pname then uses[pname] = (uses[pname] or 0) + 1 end
  end
  local function source(pname)
    local p = rules.patterns[pname]
    local gen
    if p.generator then
      local ok, g = pcall(require, "perfscript.grid.generators." .. p.generator)
      if not ok then perf.fail("pattern '%s': unknown generator '%s'", pname, p.generator) end
      gen = { columns = g.columns, each = function(emit) g.generate(configs, emit, env) end }
    else
      local c = expand.compile(pname, p, rules.grids)
      gen = { each = function(emit, st) expand.each(c, nk_pairs, emit, st) end }
    end
    if uses[pname] > 1 then
      local list, counts = {}, { candidates = 0, rejected = 0 }
      gen.each(function(c) list[#list + 1] = c end, counts)
      gen.each = function(emit, st)
        st.candidates, st.rejected = st.candidates + counts.candidates, st.rejected + counts.rejected
        for i = 1, #list do
          local c = list[i]
          emit { inputs = table.move(c.inputs, 1, #c.inputs, 1, {}),
                 outputs = table.move(c.outputs, 1, #c.outputs, 1, {}), extra = c.extra }
        end
      end
    end
    return gen
  end
  local sources = {}
  local results = {}
  for i, f in ipairs(files) do
    local pname, why = routes[i][1], routes[i][2]
    if not pname then
      results[#results + 1] = { file = f.name, kernel = f.kernel, status = "no generator: " .. why }
    else
      sources[pname] = sources[pname] or source(pname)
      local gen = sources[pname]
      local job = { path = f.path, name = f.name, kernel = f.kernel, rows = opts.rows, seed = opts.seed,
                    max_hbm_bytes = opts.max_hbm_bytes, dry_run = opts.dry_run, pattern = pname,
                    columns = gen.columns, generate = gen.each }
      local st = M.process(job)
      st.pattern = pname
      results[#results + 1] = st
      if opts.print then opts.print(st) end
    end
  end
  if lock then lock:release() end
  return results
end

return M
