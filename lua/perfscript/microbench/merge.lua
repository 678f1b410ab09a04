-- Per-file merge of aggregated microbench rows into a database CSV (docs/rules.md,
-- Write-back) in one streaming C pass (perfscript.csvedit.merge: index,
-- match, update, prune and atomic rewrite), with the Python original's defects fixed:
--   * Git LFS pointer files are detected and left alone;
--   * a blank or invalid incoming duration never overwrites a value (nor is a row added);
--   * all candidates for one row (own rows and MatMul aliases) are reduced to their minimum
--     first, then written once and counted once;
--   * the file is rewritten (atomically) only when a value changes; rows are never reordered
--     and only deleted when pruning is asked for.
-- The caller holds the database lock. With opts.stage (perf.fs.stage()) the new content is
-- only staged; res.status says what the stage's commit will do. res.written_rows lists the
-- rows whose values were written ({key = signature hash, row = the incoming row}): provenance.
--
--   local res = merge.file(path, rows, match_only, {mode = "all", prune = false, say = print,
--                          stage = st,
--                          family = rows of the file's kernel family (match-only, misses silent)})
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
           gaps = {}, written_rows = {} }
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

  -- Columns and the signature default of legacy DispatchFFNCombine files (EP Size).
  local cols, src, header, ep_fill
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

  -- Incoming rows reduced per signature: the fastest valid sample wins (own rows and aliases
  -- alike), so a row is written once and counted once.
  local stem_op = perf.sig.op_name(stem)
  local stem_mm = perf.sig.is_matmul(stem_op)
  local same_sig = {}
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
  local updates, order = {}, {}
  local function add(r, kind)
    local h = hash_of(r)
    local dur = schema.valid_sample(r[schema.MB_DUR])
    local u = updates[h]
    if not u then
      u = { mb = false, record = false, dur = nil, row = r, kind = kind }
      updates[h] = u
      order[#order + 1] = h
    end
    if kind == "merge" then u.record = true end
    if dur and (not u.dur or dur < u.dur) then
      u.dur, u.row, u.mb = dur, r, r[schema.MB_DUR]
    end
  end
  for _, r in ipairs(rows) do add(r, "merge") end
  for _, r in ipairs(match_only) do add(r, "match") end
  -- samples of the file's kernel family (AddAiCore's replay profiled as Add): match-only, and
  -- a miss is no news (most of them belong to the sibling's own file)
  for _, r in ipairs(opts.family or {}) do add(r, "family") end

  -- Output columns of the counter means (0: absent).
  local mcols = {}
  for i, k in ipairs(MB_COLS) do mcols[i] = colpos[k] or 0 end

  -- Rows to append: incoming signatures (rows to merge, all mode, valid duration) that no
  -- existing row matched, as the aggregated rows (their cells are perf.csvedit.cells': the
  -- row's own value, a counter column's mean, floats %.6f); missing and match-only misses
  -- are reported.
  local function appended(matched)
    local out = {}
    for _, h in ipairs(order) do
      local u = updates[h]
      if not matched[h] then
        if u.record then
          res.missing[#res.missing + 1] = perf.sig.display(u.row)
          if mode == "all" and u.dur then
            out[#out + 1] = u.row
            res.written_rows[#res.written_rows + 1] = { key = h, row = u.row }
          end
        elseif u.kind == "match" then
          say(("[WARN] match-only profiling row did not match %s: %s"):format(res.csv_name, perf.sig.display(u.row)))
        end
      end
    end
    res.added = #out
    return out
  end

  if not exists then
    local dir = path:match("^(.*)/[^/]*$")
    if dir then
      local ok, err = perf.fs.mkdir_p(dir)
      if not ok then return nil, err end
    end
    local rows = appended({})
    for i, r in ipairs(rows) do rows[i] = perf.csvedit.cells(r, cols, mcols) end
    local status, err = perf.csvedit.rewrite(nil, path, { header = cols, append = rows,
                                                          stage = opts.stage })
    if not status then return nil, err end
    res.status, res.columns = status, cols
    return res
  end

  local hpos = {}
  for i, c in ipairs(header) do if not hpos[c] then hpos[c] = i end end
  local map = {}
  for i, c in ipairs(cols) do map[i] = hpos[(src and src[c]) or c] or 0 end
  local copy = {}
  for _, k in ipairs(MB_COLS) do
    if colpos[k] then copy[#copy + 1] = { k, colpos[k] } end
  end
  local fill
  if ep_fill then fill = { [colpos[schema.EP_SIZE]] = ep_fill } end
  local mbsrc = src and src[schema.MB_DUR] or schema.MB_DUR
  local srccols = { mb = hpos[mbsrc] or 0, prof = hpos[schema.PROF_AVG] or 0 }
  for _, c in ipairs { "OP Type", "OP State", "Input Shapes", "Input Data Types", "Input Formats",
                       "Output Shapes", "Output Data Types", "EP Size" } do
    srccols[c] = hpos[c] or 0
  end
  local r, err = perf.csvedit.merge(path, { op = stem, header = cols, map = map, src = srccols,
    updates = updates, copy = copy, mcols = mcols, fill = fill, ep_default = ep_fill, mb_out = colpos[schema.MB_DUR],
    mode_all = mode == "all", prune = opts.prune, append = appended, stage = opts.stage, csv_name = res.csv_name })
  if not r then return nil, err end
  res.status, res.columns = r.status, cols
  res.updated, res.unchanged = r.updated, r.unchanged
  -- the rows whose values this merge wrote (their provenance changes): updated, then appended
  local appended_rows = res.written_rows
  res.written_rows = {}
  for _, h in ipairs(order) do
    if r.applied and r.applied[h] then res.written_rows[#res.written_rows + 1] = { key = h, row = updates[h].row } end
  end
  for _, x in ipairs(appended_rows) do res.written_rows[#res.written_rows + 1] = x end
  res.deleted = r.deleted
  res.gaps = r.gaps -- {op_type = stem, csv_name, signature, mb_us, prof_us, diff_us, ratio}
  res.duplicates = r.duplicates
  table.sort(res.duplicates, function(a, b)
    if a[2] ~= b[2] then return a[2] > b[2] end
    return a[1] < b[1]
  end)
  return res
end

return M
