-- Per-file merge of aggregated microbench rows into a database CSV (spec
-- replay_and_update.md section 9), streaming (one C pass to index the file, one to rewrite
-- it), with the original's defects fixed:
--   * Git LFS pointer files are detected and left alone;
--   * a blank or invalid incoming duration never overwrites a value (nor is a row added);
--   * all candidates for one row (own rows and MatMul aliases) are reduced to their minimum
--     first, then written once and counted once;
--   * the file is rewritten (atomically) only when a value changes; rows are never reordered
--     and only deleted when pruning is asked for.
-- The caller holds the database lock.
--
--   local res = merge.file(path, rows, match_only, {mode = "all", prune = false, say = print})
local perf = require "perfscript"
local lfs = require "lfs"
local schema = require "perfscript.microbench.schema"

local M = {}

local MB_COLS = {}
for i, m in ipairs(schema.METRICS) do MB_COLS[i] = schema.mb_col(m) end

local function stem_of(path)
  return (path:match("([^/]+)$") or path):gsub("%.csv$", "")
end

local function new_result(path)
  return { csv_path = path, csv_name = path:match("([^/]+)$") or path, stem = stem_of(path),
           updated = 0, added = 0, unchanged = 0, missing = {}, deleted = {}, duplicates = {},
           gaps = {} }
end

local function display(is, os)
  if not is or is == "" then is = "N/A" end
  if not os or os == "" then os = "N/A" end
  return is .. " -> " .. os
end

-- Distinct non-blank EP Size values of the incoming rows.
local function incoming_ep_values(lists)
  local seen, vals = {}, {}
  for _, list in ipairs(lists) do
    for _, r in ipairs(list) do
      local v = schema.trim(r[schema.EP_SIZE])
      if v ~= "" and not seen[v] then seen[v] = true; vals[#vals + 1] = v end
    end
  end
  return vals
end

local function read_header(path)
  local r, err = perf.csv.open(path)
  if not r then return nil, err end
  local h = r:header()
  r:close()
  return h
end

function M.file(path, rows, match_only, opts)
  opts = opts or {}
  local say = opts.say or print
  local mode = opts.mode or "all"
  local res = new_result(path)
  local stem = res.stem
  rows, match_only = rows or {}, match_only or {}
  local exists = lfs.attributes(path, "mode") == "file"

  if exists and schema.is_lfs_pointer(path) then
    res.skipped = path .. " is a Git LFS pointer, not the real CSV content; left untouched "
      .. "(run `git lfs pull` to fetch it)"
    say("[SKIP] " .. res.skipped)
    return res
  end

  -- Columns and the signature defaults (the DFC legacy EP migration).
  local cols, src, header
  local defaults, ep_fill
  if exists then
    local err
    header, err = read_header(path)
    if not header then return nil, err end
    cols, src = schema.migrate_columns(header)
    if perf.sig.op_name(stem) == schema.DFC then
      local has_ep = false
      for _, c in ipairs(cols) do if c == schema.EP_SIZE then has_ep = true end end
      if not has_ep then
        local vals = incoming_ep_values { rows, match_only }
        if #vals == 1 then
          cols[#cols + 1] = schema.EP_SIZE
          ep_fill = vals[1]
          defaults = { [schema.EP_SIZE] = ep_fill }
          say(("[WARN] %s has no EP Size column; using incoming EP Size=%s for legacy row matching.")
            :format(res.csv_name, ep_fill))
        end
      end
    end
  else
    cols = schema.default_columns()
    local seen = {}
    for _, c in ipairs(cols) do seen[c] = true end
    for _, r in ipairs(rows) do
      for _, k in ipairs(r._extra or {}) do
        if not seen[k] then seen[k] = true; cols[#cols + 1] = k end
      end
    end
  end
  local colpos = {}
  for i, c in ipairs(cols) do colpos[c] = i end
  local mbsrc = src and src[schema.MB_DUR] or schema.MB_DUR

  -- Incoming signatures first: the scan then keeps cell values only for the rows they hit.
  local stem_op = perf.sig.op_name(stem)
  local stem_mm = perf.sig.is_matmul(stem_op)
  local same_sig = {}                       -- op -> aggregated hash valid under this stem?
  local function hash_of(r)
    local h = r._hash
    if h then
      local op = r._op
      local ok = same_sig[op]
      if ok == nil then
        local nm = perf.sig.op_name(op)
        ok = nm == stem_op or (stem_mm and perf.sig.is_matmul(nm))
        same_sig[op] = ok
      end
      if ok then return h end
    end
    local _, hh = perf.sig.row(r, stem)
    return hh
  end
  local incoming, want = {}, {}
  for _, r in ipairs(rows) do
    local h = hash_of(r)
    incoming[#incoming + 1] = { r, "merge", h }
    want[h] = true
  end
  for _, r in ipairs(match_only) do
    local h = hash_of(r)
    incoming[#incoming + 1] = { r, "match", h }
    want[h] = true
  end

  -- Index the existing rows: signature hash -> first row; duplicates; durations.
  local IS, OS = "Input Shapes", "Output Shapes"
  local scan = { n = 0, first = {}, dups = {}, values = {}, valid = {} }
  if exists then
    local err
    scan, err = perf.sig.scan(path, { op = stem, defaults = defaults, want = want,
      valid = { mbsrc, schema.PROF_AVG }, columns = { mbsrc, schema.PROF_AVG, IS, OS } })
    if not scan then return nil, err end
  end
  local n = scan.n
  local first = scan.first or {}
  local V = scan.values
  local mbv, profv = V[mbsrc] or {}, V[schema.PROF_AVG] or {}
  local isv, osv = V[IS] or {}, V[OS] or {}
  local valid = scan.valid
  local dup_rows = scan.dups or {}

  -- Match incoming rows; reduce all candidates of one target to the minimum.
  local best, best_order = {}, {}           -- target row -> incoming row
  local recorded = {}                       -- target rows reached by a rows-to-merge row
  local added = {}                          -- appended rows
  local added_index = {}                    -- hash -> index in added
  for _, inc in ipairs(incoming) do
    local r, kind, h = inc[1], inc[2], inc[3]
    local target = first[h]
    local dur = schema.valid_sample(r[schema.MB_DUR])
    if not target then
      local ai = added_index[h]
      if ai then -- a second incoming row for an added signature: keep the faster one
        if dur and dur < (schema.valid_sample(added[ai].row[schema.MB_DUR]) or math.huge) then
          added[ai] = { row = r, kind = kind }
        end
      elseif kind == "merge" then
        res.missing[#res.missing + 1] = perf.sig.display(r)
        if mode == "all" and dur then
          added[#added + 1] = { row = r, kind = kind }
          added_index[h] = #added
        end
      else
        say(("[WARN] match-only profiling row did not match %s: %s"):format(res.csv_name, perf.sig.display(r)))
      end
    else
      if kind == "merge" then recorded[target] = true end
      local cur = best[target]
      if cur == nil then
        best_order[#best_order + 1] = target
        best[target] = dur and r or false
      elseif dur and (cur == false or dur < schema.valid_sample(cur[schema.MB_DUR])) then
        best[target] = r
      end
    end
  end

  local edits, changed = {}, false
  local function set(row, col, value)
    local ci = colpos[col]
    if not ci then return end
    local e = edits[row]
    if not e then e = {}; edits[row] = e end
    e[ci] = value
  end
  local current_mb = {}                     -- row -> MB value after this merge
  for _, t in ipairs(best_order) do
    local r = best[t]
    local old = mbv[t] or ""
    local can_update = mode == "all" or (valid[t] or 0) == 0
    local mb = old
    if can_update and r then
      local new = r[schema.MB_DUR]
      set(t, schema.MB_DUR, new)
      for _, k in ipairs(MB_COLS) do
        local v = r[k]
        if v ~= nil then set(t, k, v) end
      end
      mb = new
      if schema.trim(old) ~= schema.trim(new) then
        res.updated = res.updated + 1
        changed = true
      end
    elseif recorded[t] then
      res.unchanged = res.unchanged + 1
    end
    if (can_update and r) or recorded[t] then
      local mbf, pf = schema.parse_float(mb), schema.parse_float(profv[t])
      if mbf > 0 and pf > 0 then
        res.gaps[#res.gaps + 1] = { op_type = stem, csv_name = res.csv_name,
          signature = display(isv[t], osv[t]), mb_us = mbf, prof_us = pf,
          diff_us = math.abs(mbf - pf), ratio = mbf / pf }
      end
    end
    current_mb[t] = mb
  end
  if ep_fill then
    for i = 1, n do set(i, schema.EP_SIZE, ep_fill) end
    if n > 0 then changed = true end
  end

  -- Prune: rows that still have no valid duration (only when asked).
  local delete, deleted_rows = {}, {}
  if opts.prune then
    for i = 1, n do
      local mb = current_mb[i]
      local ok
      if mb then ok = schema.is_real(mb) or (valid[i] or 0) >= 2 else ok = (valid[i] or 0) ~= 0 end
      if not ok then
        delete[i] = true
        deleted_rows[#deleted_rows + 1] = i
        changed = true
      end
    end
  end

  -- Shapes of duplicated and deleted rows for the report (a second pass, only when needed).
  local need, any = {}, false
  for _, d in ipairs(dup_rows) do if not isv[d[1]] then need[d[1]] = true; any = true end end
  for _, i in ipairs(deleted_rows) do if not isv[i] then need[i] = true; any = true end end
  if any then
    local s2, err = perf.sig.scan(path, { op = stem, defaults = defaults, rows = need, columns = { IS, OS } })
    if not s2 then return nil, err end
    for i in pairs(need) do
      isv[i], osv[i] = (s2.values[IS] or {})[i], (s2.values[OS] or {})[i]
    end
  end
  for _, d in ipairs(dup_rows) do res.duplicates[#res.duplicates + 1] = { display(isv[d[1]], osv[d[1]]), d[2] } end
  table.sort(res.duplicates, function(a, b)
    if a[2] ~= b[2] then return a[2] > b[2] end
    return a[1] < b[1]
  end)
  for _, i in ipairs(deleted_rows) do res.deleted[#res.deleted + 1] = display(isv[i], osv[i]) end

  -- Appended rows, projected onto the columns.
  local append = {}
  for _, a in ipairs(added) do
    local out = {}
    for i, c in ipairs(cols) do out[i] = a.row[c] ~= nil and tostring(a.row[c]) or "" end
    append[#append + 1] = out
    res.added = res.added + 1
    changed = true
  end

  if exists and not changed then
    res.status = "unchanged"
    return res
  end
  local map = {}
  if exists then
    local hpos = {}
    for i, c in ipairs(header) do if not hpos[c] then hpos[c] = i end end
    for i, c in ipairs(cols) do map[i] = hpos[(src and src[c]) or c] or 0 end
  end
  local dir = path:match("^(.*)/[^/]*$")
  if dir and not exists then
    local ok, err = perf.fs.mkdir_p(dir)
    if not ok then return nil, err end
  end
  local status, err = perf.csvedit.rewrite(exists and path or nil, path, {
    header = cols, map = map, edits = edits, delete = delete, append = append })
  if not status then return nil, err end
  res.status = status
  res.columns = cols
  return res
end

return M
