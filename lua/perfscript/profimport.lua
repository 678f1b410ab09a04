-- perfscript.profimport: profiler exports (kernel_details*.csv, op_summary_*.csv) into a
-- database directory, one <KernelType>.csv per kernel type. The steps, each usable alone:
--   discover(path)            -> the input files of a capture (or of many)
--   check(files, opts)        -> nil, or the list of "file: missing columns: ..." errors
--   aggregate(files, opts)    -> a perfscript.profile aggregate, per-file counts, notes
--   fia_metadata(agg, files, per_file) -> the FusedInferAttentionScore Runtime columns per group
--   attach_fia(agg, tables, files, per_file) -> the same, for the FIA table only
--   tables(agg, fia)          -> per kernel type: file name, columns and rows
--   merge(dir, tables, opts)  -> what changed, written atomically under the database lock
local perf = require "perfscript"
local profile = require "perfscript.profile"
local lfs = require "lfs"
local paths = require "perfscript.path"

local M = {}

M.FIA_TYPE = profile.FIA_TYPE
M.FIA_COLUMNS = require("perfscript.fia").IMPORT
M.UPDATE_MODES = { "new-only", "missing-only", "all" }

-- Statistics columns a merge may replace (everything after the 8 base columns).
local STAT_FIRST = 9

---------------------------------------------------------------------------------------------
-- Paths

local basename, dirname = paths.basename, paths.dirname

local function split_path(p)
  local parts = {}
  for c in p:gmatch("[^/]+") do parts[#parts + 1] = c end
  return parts
end

-- Python's Path ordering: component lists compared by code point (byte order in UTF-8).
local function path_less(a, b)
  local pa, pb = split_path(a), split_path(b)
  for i = 1, math.min(#pa, #pb) do
    if pa[i] ~= pb[i] then return pa[i] < pb[i] end
  end
  return #pa < #pb
end

-- The files under dir, links to files included (links to directories are not followed).
local function walk(dir, out)
  paths.walk(dir, function(p, _, mode)
    if mode == "file" or (mode == "link" and paths.isfile(p)) then out[#out + 1] = p end
  end)
  return out
end

local function stem(p) return (basename(p):gsub("%.[^.]*$", "")) end
local function is_csv(p) return p:lower():match("%.csv$") ~= nil end
function M.is_kernel_details(p) return is_csv(p) and stem(p):lower():find("kernel_details", 1, true) ~= nil end
function M.is_op_summary(p) return is_csv(p) and stem(p):lower():find("^op_summary") ~= nil end

-- The capture an op_summary belongs to: the parent of its PROF_* directory (a torch_npu
-- capture keeps its kernel_details in <capture>/ASCEND_PROFILER_OUTPUT).
local function capture_root(p)
  local parts = split_path(p)
  for i = #parts - 1, 1, -1 do
    if parts[i]:find("^PROF_") then
      return (p:sub(1, 1) == "/" and "/" or "") .. table.concat(parts, "/", 1, i - 1)
    end
  end
end

-- Files of a capture. A directory is scanned recursively for kernel_details*.csv and
-- op_summary*.csv; an op_summary of a capture that also has a kernel_details (torch_npu
-- writes both, from the same kernels) is left out so no kernel counts twice.
-- Returns {files = {...}, operator_details = {...}, left_out = {...}} or nil, message.
function M.discover(path)
  local mode = lfs.attributes(path, "mode")
  if not mode then return nil, "profiling path not found: " .. path end
  if mode ~= "directory" then
    local sibling = dirname(path) .. "/operator_details.csv"
    return { files = { path }, left_out = {},
             operator_details = lfs.attributes(sibling, "mode") == "file" and { sibling } or {} }
  end
  local all = walk(path:gsub("/+$", ""), {})
  table.sort(all, path_less)
  local kd, os_, ops = {}, {}, {}
  for _, p in ipairs(all) do
    if M.is_kernel_details(p) then kd[#kd + 1] = p
    elseif M.is_op_summary(p) then os_[#os_ + 1] = p
    elseif basename(p) == "operator_details.csv" then ops[#ops + 1] = p end
  end
  local files, left_out = {}, {}
  for _, p in ipairs(kd) do files[#files + 1] = p end
  for _, p in ipairs(os_) do
    local root, twin = capture_root(p), false
    if root then
      local out = root .. "/ASCEND_PROFILER_OUTPUT/"
      for _, k in ipairs(kd) do
        if k:sub(1, #out) == out then twin = true break end
      end
    end
    if twin then left_out[#left_out + 1] = p else files[#files + 1] = p end
  end
  table.sort(files, path_less)
  if #files == 0 then
    return nil, "No CSV files with 'kernel_details' or 'op_summary' in the filename found under: " .. path
  end
  return { files = files, operator_details = ops, left_out = left_out }
end

---------------------------------------------------------------------------------------------
-- Header check (before anything is read or written)

local function level0_hint(header)
  local has = {}
  for _, h in ipairs(header) do has[h] = true end
  if not has["Input Shapes"] and not has["Output Shapes"] then
    return " (no shapes: a Level0 export, or one captured without record_shapes; capture with "
      .. "profiler_level Level1 or higher and record_shapes=True)"
  end
  return ""
end

-- Returns a list of file problems (missing columns, unreadable files); empty files are put
-- in skipped (they hold no data). opts.require_counters: the 25 counters are required too.
function M.check(files, opts)
  opts = opts or {}
  local required = {}
  for _, c in ipairs(profile.required) do required[#required + 1] = c end
  if opts.require_counters then
    for _, c in ipairs(profile.metrics) do required[#required + 1] = c end
  end
  local errors, usable, skipped = {}, {}, {}
  for _, f in ipairs(files) do
    local r, err = perf.csv.open(f, { trim = true })
    if not r then
      errors[#errors + 1] = err
    else
      local header = r:header()
      if #header == 0 then
        skipped[#skipped + 1] = f
      else
        local cols, cerr = r:columns(required)
        if not cols then errors[#errors + 1] = cerr .. level0_hint(header)
        else usable[#usable + 1] = f end
      end
      r:close()
    end
  end
  return errors, usable, skipped
end

---------------------------------------------------------------------------------------------
-- Aggregation

-- opts.progress(done_bytes, total_bytes, file): called now and then; opts.threads: see below;
-- opts.hash: each file's XXH3 is taken while it is read (per_file[i].xxh3, an integer, or nil
-- when it could not be read), for the provenance log.
-- Returns agg, per-file {counts, absent}; raises perf.fail on a data error.
function M.aggregate(files, opts)
  opts = opts or {}
  -- opts.threads (or PERFSCRIPT_THREADS): the threads reading a big file, in as many chunks
  -- (default: one per core); PERFSCRIPT_SPLIT_MIN (bytes) lets tests split small files (the C
  -- core reads no environment).
  local agg = profile.new { threads = opts.threads or tonumber(os.getenv("PERFSCRIPT_THREADS") or ""),
                            split_min = tonumber(os.getenv("PERFSCRIPT_SPLIT_MIN") or ""),
                            hash = opts.hash }
  local total, offset = 0, 0
  for _, f in ipairs(files) do total = total + (lfs.attributes(f, "size") or 0) end
  local per_file = {}
  for i, f in ipairs(files) do
    local cb
    if opts.progress then
      cb = function(done) opts.progress(offset + done, total, f) end
    end
    local counts, absent = agg:add_file(f, cb)
    if not counts then perf.fail("%s", absent) end
    per_file[i] = { file = f, counts = counts, absent = absent, xxh3 = opts.hash and agg:file_xxh3(i) or nil }
    offset = offset + (lfs.attributes(f, "size") or 0)
  end
  return agg, per_file
end

---------------------------------------------------------------------------------------------
-- FusedInferAttentionScore Runtime columns

local function norm_text(s) return (s or ""):lower():gsub("[^a-z0-9]+", "") end

-- The Input Shapes of the FIA rows of one operator_details.csv, in file order. Unlike the
-- original we do not require an Output Shapes column (real exports have none), and a row
-- without Input Shapes keeps its place as "" (dropping it would pair every later kernel row
-- with the next launch's operator row).
local function fia_operator_rows(path)
  local r, err = perf.csv.open(path, { trim = true })
  if not r then return nil, err end
  local name_cols = {}
  for _, c in ipairs { "Type", "Name", "Op Type", "Op Name", "Operator Type", "Operator Name" } do
    local i = r:column(c)
    if i then name_cols[#name_cols + 1] = i end
  end
  local shapes = r:column("Input Shapes")
  local rows = {}
  if #name_cols > 0 then
    for fields in r:lines() do
      local parts = {}
      for _, i in ipairs(name_cols) do
        if fields[i] and fields[i] ~= "" then parts[#parts + 1] = norm_text(fields[i]) end
      end
      if table.concat(parts, " "):find("fusedinferattentionscore", 1, true) then
        rows[#rows + 1] = shapes and fields[shapes] or ""
      end
    end
  end
  r:close()
  return rows
end

-- "a,b" for a slot's dims, "" for an empty or unparsable slot.
local function slot_text(slots, i)
  local s = slots and slots[i]
  if type(s) ~= "table" then return "" end
  local t = {}
  for k, d in ipairs(s) do t[k] = string.format("%d", d) end
  return table.concat(t, ",")
end

-- The capture's name: the *_ascend_pt directory above ASCEND_PROFILER_OUTPUT when there is
-- one (the Python original wrote the uninformative "ASCEND_PROFILER_OUTPUT"), else the parent.
function M.source_profile(file)
  local parent = dirname(file)
  if basename(parent) == "ASCEND_PROFILER_OUTPUT" then return basename(dirname(parent)) end
  return basename(parent)
end

-- Slots 5, 6 and 14 (0-based) of an FIA Input Shapes text: actual_seq_lengths,
-- actual_seq_lengths_kv and block_table. Unparsable slots give "" instead of aborting.
function M.fia_shapes(text)
  local slots = require("perfscript.shape").parse(text or "", true)
  return slot_text(slots, 6), slot_text(slots, 7), slot_text(slots, 15)
end

-- Pairing (docs/rules.md, Import: FIA pairing): the i-th FIA kernel row of a directory goes with
-- the i-th FIA row of that directory's operator_details.csv, counting the kernel rows over the
-- directory's kernel files in path order (a file's count starts where the previous file's
-- ended). Kernel rows skipped for N/A shapes or a bad duration still count (each is a launch
-- the operator_details lists); exact duplicates do not. A group takes the operator row of its
-- first kernel row (the Python original's first-wins index); without one (no operator_details, or
-- fewer operator rows, or one without Input Shapes) its own Input Shapes are used.
-- per_file: aggregate()'s per-file counts. indices: the groups to look at (default all; the
-- FIA table's groups are enough). Returns {[group index] = {16 Runtime cells}}, warnings.
function M.fia_metadata(agg, files, per_file, indices)
  assert(type(per_file) == "table", "fia_metadata: per_file (aggregate's second result) expected")
  local warnings = {}
  -- per file: the FIA kernel rows of the same directory in earlier files; per directory: all
  local base, dir_rows, dirs = {}, {}, {}
  for f, file in ipairs(files) do
    local d = dirname(file)
    if dir_rows[d] == nil then
      dir_rows[d] = 0
      dirs[#dirs + 1] = d
    end
    base[f] = dir_rows[d]
    dir_rows[d] = dir_rows[d] + (per_file[f] and per_file[f].counts.fia_rows or 0)
  end
  local by_dir = {}
  local function operator_rows(d)
    if by_dir[d] == nil then
      local p = d .. "/operator_details.csv"
      local rows = false
      if lfs.attributes(p, "mode") == "file" then
        local r, err = fia_operator_rows(p)
        if r then rows = r else warnings[#warnings + 1] = err end
      end
      by_dir[d] = rows
    end
    return by_dir[d] or nil
  end
  for _, d in ipairs(dirs) do
    local ops = dir_rows[d] > 0 and operator_rows(d)
    if ops and #ops > 0 and #ops ~= dir_rows[d] then
      warnings[#warnings + 1] = string.format("FIA kernel/operator row count mismatch under %s: "
        .. "kernel_rows=%d, operator_rows=%d. Pairing uses row order for the shared prefix only.",
        d, dir_rows[d], #ops)
    end
  end
  -- per file whose kernel rows include FIA ones (a group's first FIA row is from such a file):
  -- the capture's name, its directory's operator rows and where its count starts; the groups
  -- themselves in C (agg:fia_runtime: an agg:group table and a Lua shape parse per group were
  -- most of this step)
  local per = {}
  for f, file in ipairs(files) do
    if per_file[f] and per_file[f].counts.fia_rows > 0 then
      per[f] = { source = M.source_profile(file), base = base[f],
                 ops = operator_rows(dirname(file)) or nil }
    end
  end
  if not indices then
    indices = {}
    for i = 1, #agg do indices[i] = i end
  end
  local meta = agg:fia_runtime(indices, per)
  return meta, warnings
end

---------------------------------------------------------------------------------------------
-- Output tables

-- The original's file-name rule: strip, replace < > : " / \ | ? * and control characters.
function M.sanitize(name)
  local s = name:gsub("^%s+", ""):gsub("%s+$", ""):gsub('[<>:"/\\|%?%*%c]', "_")
  if s == "" then return "UNKNOWN_TYPE" end
  return s
end

-- Per kernel type, in first-seen order: {type=, file=, columns=, groups={indices}, rows=n,
-- row=function(k) -> {cells=, key=}}. The grouping is C's (agg:types(): no Lua table per
-- group); the import keys (keys_of) and the rows are made only when a merge into an existing
-- file asks for them, one type at a time, so memory holds the statistics of one kernel type,
-- not of the whole database; a new file is written from C (agg:csv_text).
local function keys_of(t)
  if not t.keys then t.keys = t.agg:keys(t.groups) end
  return t.keys
end

function M.tables(agg, fia)
  local order = agg:types()
  for _, t in ipairs(order) do
    local columns = {}
    for k, c in ipairs(profile.columns) do columns[k] = c end
    if t.type == M.FIA_TYPE then
      for _, c in ipairs(M.FIA_COLUMNS) do columns[#columns + 1] = c end
    end
    t.file, t.columns, t.agg, t.rows = M.sanitize(t.type) .. ".csv", columns, agg, #t.groups
    -- extra: the Runtime cells per group index (set by attach_fia when not given here)
    t.extra = t.type == M.FIA_TYPE and (fia or {}) or nil
    t.row = function(k)
      local gi = t.groups[k]
      local cells = agg:row(gi)
      if t.type == M.FIA_TYPE then
        local m = t.extra and t.extra[gi]
        for c = 1, #M.FIA_COLUMNS do cells[#cells + 1] = m and m[c] or "" end
      end
      return { cells = cells, key = keys_of(t)[k] }
    end
  end
  return order
end

-- The FusedInferAttentionScore table's Runtime cells: works them out for that table's groups
-- only and attaches them. Returns the warnings of the pairing.
function M.attach_fia(agg, tables, files, per_file)
  for _, t in ipairs(tables) do
    if t.type == M.FIA_TYPE then
      local fia, warnings = M.fia_metadata(agg, files, per_file, t.groups)
      t.extra = fia
      return warnings
    end
  end
  return {}
end

---------------------------------------------------------------------------------------------
-- Merge into the database

local real = require("perfscript.num").is_duration
local provenance = require "perfscript.microbench.provenance"

local function read_table(path)
  local r, err = perf.csv.open(path)
  if not r then return nil, err end
  local header = r:header()
  local rows = {}
  for fields in r:lines() do
    local row = {}
    for i = 1, #header do row[i] = fields[i] or "" end
    -- extra cells of a ragged row are kept past the header
    for i = #header + 1, #fields do row[i] = fields[i] end
    rows[#rows + 1] = row
  end
  r:close()
  return header, rows
end

-- Notes a row this import writes, for the provenance log (get(column) -> cell).
local function written(res, t, get)
  if not res.written_rows then return end
  local row = provenance.sig_row(get)
  local _, h = perf.sig.row(row, t.stem)
  res.written_rows[#res.written_rows + 1] = { key = h, row = row }
end

-- A new file's rows (a perfscript.text). Those of every table of this merge whose file does
-- not exist yet are made ahead, in the tables' order, on the aggregate's threads
-- (agg:csv_renderer): the next file's rows are made while this one is written.
local function new_rows(t, opts)
  local ahead = opts.ahead
  if ahead == nil then
    local lists, extras, slot = {}, {}, {}
    for _, u in ipairs(opts.tables) do
      if u.agg == t.agg and not opts.modes[u] then
        lists[#lists + 1] = u.groups
        extras[#lists] = u.extra
        slot[u] = #lists
      end
    end
    ahead = { slot = slot, n = #lists, r = t.agg:csv_renderer(lists, "\r\n", extras) }
    opts.ahead = ahead
  end
  local i = ahead and ahead.slot[t]
  if not i then return t.agg:csv_text(t.groups, t.extra, "\r\n", true) end
  local rows = ahead.r:take(i)
  if i == ahead.n then ahead.r:close() end   -- the last one: no thread outlives the files
  return rows
end

-- Merges one table into dir/<file> (opts.modes[t]: what that path is, M.merge's look). Returns a result record:
-- {file=, status="created"|"updated"|"unchanged"|"would create"|..., added=, replaced=,
--  kept=, filled=, columns_added=}
local function merge_one(dir, t, opts)
  local path = dir .. "/" .. t.file
  local res = { file = t.file, added = 0, replaced = 0, kept = 0, columns_added = 0, rows = t.rows,
                written_rows = opts.provenance and {} or nil, stem = t.stem }
  local exists = opts.modes[t] == "file"
  local header, rows
  if exists then
    header, rows = read_table(path)
    if not header then perf.fail("%s", rows) end
    if #header == 0 then exists = false end
  end
  if not exists then
    res.status = "created"
    res.added = t.rows
    if not opts.dry_run then
      -- the whole file from C in one string (no Lua table per row); CRLF, no BOM, minimal
      -- quoting as the Python original wrote
      local head = {}
      for i, c in ipairs(t.columns) do head[i] = perf.csv.quote(c) end
      -- the header and the rows written one after the other (not joined: a copy of the file)
      local pieces, k = { table.concat(head, ",") .. "\r\n", new_rows(t, opts) }, 0
      local ok, err = perf.fs.write_atomic(path, function() k = k + 1; return pieces[k] end, { stage = opts.stage })
      if not ok then perf.fail("%s", err) end
      -- every group is a written row: M.merge logs them from the aggregate (in C)
      res.new_file = true
    end
    return res
  end
  -- column positions; ours that the file lacks are appended at the end
  local pos = {}
  for i, h in ipairs(header) do if pos[h] == nil then pos[h] = i end end
  local width = #header
  for _, c in ipairs(t.columns) do
    if not pos[c] then
      header[#header + 1] = c
      pos[c] = #header
      res.columns_added = res.columns_added + 1
    end
  end
  local function cell(row, name) return row[pos[name]] or "" end
  local index = {}
  for i, row in ipairs(rows) do
    for k = width + 1, #header do row[k] = row[k] or "" end
    local key = profile.import_key(t.type, cell(row, "Input Shapes"), cell(row, "Input Data Types"),
      cell(row, "Input Formats"), cell(row, "Output Shapes"), cell(row, "Output Data Types"))
    if index[key] == nil then index[key] = i end
  end
  -- new columns alone are no reason to rewrite a file
  local changed = false
  for k = 1, t.rows do
    local i = index[keys_of(t)[k]]
    if not i then
      local new = t.row(k)
      local row = {}
      for c = 1, #header do row[c] = "" end
      for c, name in ipairs(t.columns) do row[pos[name]] = new.cells[c] end
      rows[#rows + 1] = row
      index[new.key] = #rows
      res.added = res.added + 1
      changed = true
      written(res, t, function(c) return pos[c] and row[pos[c]] end)
    else
      local row = rows[i]
      local replace = opts.mode == "all"
        or (opts.mode == "missing-only" and not real(cell(row, "Profiling Average Duration(us)")))
      local did = false
      if replace then
        local new = t.row(k)
        for ci = STAT_FIRST, #t.columns do
          local c = t.columns[ci]
          local v = new.cells[ci]
          -- Runtime cells: filled when empty, never overwritten (a back-fill wrote them)
          local runtime = c:find("^Runtime ")
          if (not runtime or row[pos[c]] == "") and row[pos[c]] ~= v then
            row[pos[c]] = v
            did = true
          end
        end
      end
      if did then
        res.replaced = res.replaced + 1; changed = true
        written(res, t, function(c) return pos[c] and row[pos[c]] end)
      else res.kept = res.kept + 1 end
    end
  end
  if not changed then
    res.status = "unchanged"
    res.columns_added = 0
    return res
  end
  res.status = "updated"
  if not opts.dry_run then
    local w <close>, err = perf.csv.writer(path)
    if not w then perf.fail("%s", err) end
    w:write(header)
    for _, row in ipairs(rows) do w:write(row) end
    local ok, cerr = w:commit { stage = opts.stage }
    if not ok then perf.fail("%s", cerr) end
  end
  return res
end

-- 1 when no table's file exists yet (each will be created); modes: M.merge's look at them.
local function all_new(tables, modes)
  for _, t in ipairs(tables) do
    if modes[t] then return false end
  end
  return true
end

-- Appends the log's lines of the written rows to dir's provenance log in the stage: per table,
-- every group of a new file (results nil: every table is one), else the rows merge_one wrote;
-- the lines of one table at a time, each written and dropped before the next (the whole log
-- text at once, twice with its concatenation, was a big import's peak). Sets prov.written.
-- With results nil the lines are made and written by a thread while the files are made: the
-- job is returned, and its finish(stage) must come before the stage's commit.
local function write_log(dir, tables, results, log, stage, prov)
  local n = 0
  for i, t in ipairs(tables) do
    local res = results and results[i]
    n = n + ((not res or res.new_file) and #t.groups or #(res.written_rows or {}))
  end
  prov.written = n
  if n == 0 then return nil end
  if not results then
    local job, err = provenance.start_group_log(dir, log.base, tables[1].agg, tables, log.inputs)
    if not job then perf.fail("%s", err) end
    return job
  end
  local i = 0
  local function next_text()
    i = i + 1
    local t, res = tables[i], results[i]
    if not t then return nil end
    if res.new_file then
      -- C buffers, written without a copy into a Lua string (perfscript.text)
      return (provenance.group_lines(log.base, t.agg, t.groups, t.stem, log.inputs, true))
    end
    return (provenance.lines(log.base, { res }, log.inputs))
  end
  local ok, err = provenance.append(dir, next_text, stage)
  if not ok then perf.fail("%s", err) end
end

-- Merges every table into dir, under the database lock. opts.mode: one of UPDATE_MODES;
-- opts.dry_run: report only. Every file is staged first and all are committed together
-- (docs/rules.md, All-or-nothing writes). Returns the list of per-file results, in table order.
function M.merge(dir, tables, opts)
  opts = opts or {}
  opts.mode = opts.mode or "new-only"
  local results = {}
  if opts.dry_run and lfs.attributes(dir, "mode") ~= "directory" then
    for _, t in ipairs(tables) do
      results[#results + 1] = { file = t.file, status = "created", added = t.rows, replaced = 0,
                                kept = 0, columns_added = 0, rows = t.rows }
    end
    return results
  end
  if not opts.dry_run then
    local ok, err = perf.fs.mkdir_p(dir)
    if not ok then perf.fail("cannot create %s: %s", dir, tostring(err)) end
  end
  local seen = {}
  for _, t in ipairs(tables) do
    if seen[t.file] then
      -- two types that sanitise to one name: refuse rather than mix their rows
      perf.fail("kernel types '%s' and '%s' both map to the file name %s", seen[t.file], t.type, t.file)
    end
    seen[t.file] = t.type
  end
  local lock, lerr
  if not opts.dry_run then
    lock, lerr = perf.fs.lock(dir)
    if not lock then perf.fail("%s", lerr) end
  end
  local held <close> = lock
  local stage <close> = not opts.dry_run and perf.fs.stage() or nil
  -- what each table's path is (false: nothing), looked at once: under the lock, the files stay so
  local modes = {}
  for _, t in ipairs(tables) do modes[t] = lfs.attributes(dir .. "/" .. t.file, "mode") or false end
  local one = setmetatable({ stage = stage, tables = tables, modes = modes }, { __index = opts })
  if opts.provenance then
    for _, t in ipairs(tables) do t.stem = t.file:gsub("%.csv$", "") end
  end
  local log = stage and opts.provenance
  if log then
    -- one line per written row, committed with the files (docs/rules.md, Provenance)
    log = { base = { run = log.run, source = "imported", time = os.date("!%Y-%m-%dT%H:%M:%SZ") },
            inputs = { log.input, log.xxh3 } }
  end
  -- Into a fresh database every group is a written row, so the log's lines are known before
  -- the files are made: a thread makes and writes them (an import's largest file) while the
  -- files are made, and the commit waits only for what is left of it.
  local early = log and all_new(tables, modes)
  local logjob <close> = early and write_log(dir, tables, nil, log, stage, opts.provenance)
  for _, t in ipairs(tables) do
    results[#results + 1] = merge_one(dir, t, one)
  end
  if logjob then
    local ok, err = logjob:finish(stage)
    if not ok then perf.fail("%s", err) end
  end
  if log and not early then write_log(dir, tables, results, log, stage, opts.provenance) end
  if stage then
    local ok, err = stage:commit()
    if not ok then perf.fail("%s", err) end
  end
  return results
end

return M
