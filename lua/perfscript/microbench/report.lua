-- The profile update report (docs/rules.md, Write-back: report): markdown text, the full
-- hotspot CSV and a JSON twin, under <db>/reports/ with a run id that two runs in the same
-- second cannot share.
local perf = require "perfscript"

local M = {}

M.GAP_BOUNDS = { 0.8, 1.2 }
M.MAX_GAP_DISPLAY = 20
M.MAX_EXAMPLE_DISPLAY = 3

function M.is_hotspot(g)
  return g.ratio < M.GAP_BOUNDS[1] or g.ratio > M.GAP_BOUNDS[2]
end

-- The hotspots in report order: the larger gap (ratio or its inverse) first, then the larger
-- absolute difference, then the later operator name; equal ones keep their order (the index
-- is the last key, so the order is the same on every run). Sorted in C (perf.csvedit.hotspots).
function M.hotspots(gaps)
  return perf.csvedit.hotspots(gaps, M.GAP_BOUNDS[1], M.GAP_BOUNDS[2])
end

-- Markdown table; "_None_" when there are no rows.
function M.table(headers, rows)
  if #rows == 0 then return "_None_" end
  local w = {}
  for i, h in ipairs(headers) do w[i] = #h end
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do if #tostring(c) > w[i] then w[i] = #tostring(c) end end
  end
  local function line(cells)
    local parts = {}
    for i, c in ipairs(cells) do parts[i] = tostring(c) .. string.rep(" ", w[i] - #tostring(c)) end
    return "| " .. table.concat(parts, " | ") .. " |"
  end
  local out = { line(headers) }
  local sep = {}
  for i = 1, #headers do sep[i] = string.rep("-", w[i]) end
  out[#out + 1] = line(sep)
  for _, r in ipairs(rows) do out[#out + 1] = line(r) end
  return table.concat(out, "\n")
end

local function examples(list, fmt)
  local ex = {}
  for i = 1, math.min(#list, M.MAX_EXAMPLE_DISPLAY) do ex[i] = fmt and fmt(list[i]) or list[i] end
  return #ex > 0 and table.concat(ex, "; ") or "-"
end

-- Unreplayable rows grouped by (kind, operator, reason with its numbers blanked): {{count=,
-- example = the first row}}, largest groups first.
function M.group_unreplayable(list)
  local groups, by = {}, {}
  for _, u in ipairs(list or {}) do
    local key = table.concat({ u.kind or "", u.op, (tostring(u.reason):gsub("%d+", "#")) }, "\0")
    local g = by[key]
    if not g then g = { count = 0, example = u, first = #groups + 1 }; by[key] = g; groups[#groups + 1] = g end
    g.count = g.count + 1
  end
  table.sort(groups, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    return a.first < b.first
  end)
  return groups
end

-- The console lines of rows grouped by reason (M.group_unreplayable): one per reason with its
-- count and an example, "[TAG] op: n row(s): reason (e.g. file:row shapes=...)"; tag is a
-- string or a function of the example row.
function M.grouped_lines(list, tag)
  local out = {}
  for _, grp in ipairs(M.group_unreplayable(list)) do
    local u = grp.example
    out[#out + 1] = ("[%s] %s: %d row(s): %s (e.g. %s:%d shapes=%s)"):format(type(tag) == "function" and tag(u) or tag,
      u.op, grp.count, u.reason, u.csv:match("[^/]+$"), u.row, u.shapes or "")
  end
  return out
end

-- p.no_builder as a list {op=, rows=, reason=}, most rows first.
function M.no_builder_list(map)
  local out = {}
  for op, nb in pairs(map or {}) do out[#out + 1] = { op = op, rows = nb.rows, reason = nb.reason } end
  table.sort(out, function(a, b)
    if a.rows ~= b.rows then return a.rows > b.rows end
    return a.op < b.op
  end)
  return out
end

local f6 = require("perfscript.num").fmt6 -- string.format("%.6f", v), faster

-- results: per-file results of merge.file; gaps: all gap records; status: {success=, failed=,
-- skipped=} or nil; opts.simulated adds the SIMULATED banner; opts.extra: {title, text} sections;
-- opts.hot: the hotspots of an earlier render of the same gaps (not sorted again).
function M.render(results, gaps, status, opts)
  opts = opts or {}
  local out = { "# Profile Update Report" }
  local function add(s) out[#out + 1] = s end
  if opts.simulated then
    add("")
    add("> [!WARNING]")
    add("> SIMULATED: durations come from the roofline model of a simulated device, not from an NPU.")
  end
  if status then
    add("")
    add("## Operator Execution Status")
    add("- Success: " .. #status.success)
    add("- Failed: " .. #status.failed)
    add("- Skipped: " .. #status.skipped)
    for _, f in ipairs(status.failed) do add(("  - FAILED: %s: %s"):format(f.op, f.reason)) end
  end
  local hot = opts.hot or M.hotspots(gaps)  -- the second rendering of a run reuses the first's
  local sum = { updated = 0, added = 0, deleted = 0, unchanged = 0, dups = 0, missing = 0 }
  for _, r in ipairs(results) do
    sum.updated = sum.updated + r.updated
    sum.added = sum.added + r.added
    sum.deleted = sum.deleted + #r.deleted
    sum.unchanged = sum.unchanged + r.unchanged
    sum.dups = sum.dups + #r.duplicates
    sum.missing = sum.missing + #r.missing
  end
  add("")
  add("## Overview")
  add(M.table({ "Metric", "Value" }, {
    { "CSV files touched", #results }, { "Rows updated", sum.updated }, { "Rows added", sum.added },
    { "Rows deleted", sum.deleted }, { "Rows unchanged", sum.unchanged },
    { "Duplicate signatures", sum.dups }, { "Missing shapes", sum.missing },
    { "Hotspots", #hot },
    { "Gap threshold", ("microbench/profiling not in [%.2fx, %.2fx]"):format(M.GAP_BOUNDS[1], M.GAP_BOUNDS[2]) },
  }))
  local sorted = {}
  for _, r in ipairs(results) do sorted[#sorted + 1] = r end
  table.sort(sorted, function(a, b)
    if a.added ~= b.added then return a.added > b.added end
    if a.updated ~= b.updated then return a.updated > b.updated end
    return a.csv_name < b.csv_name
  end)
  local rows = {}
  for _, r in ipairs(sorted) do
    rows[#rows + 1] = { r.stem, r.updated, r.added, #r.deleted, r.unchanged, examples(r.missing) }
  end
  add("")
  add("## Update Summary")
  add(M.table({ "Operator", "Updated", "Added", "Deleted", "Unchanged", "Missing Samples" }, rows))
  local function section(title, field, fmt)
    local list = {}
    for _, r in ipairs(results) do if #r[field] > 0 then list[#list + 1] = r end end
    table.sort(list, function(a, b)
      if #a[field] ~= #b[field] then return #a[field] > #b[field] end
      return a.csv_name < b.csv_name
    end)
    local t = {}
    for _, r in ipairs(list) do t[#t + 1] = { r.stem, #r[field], examples(r[field], fmt) } end
    add("")
    add("## " .. title)
    add(M.table({ "Operator", "Count", "Examples" }, t))
  end
  section("Missing Shapes", "missing")
  section("Deleted Empty Rows", "deleted")
  section("Duplicate Signatures", "duplicates", function(d) return ("%s (x%d)"):format(d[1], d[2]) end)
  local hrows = {}
  for i = 1, math.min(#hot, M.MAX_GAP_DISPLAY) do
    local g = hot[i]
    hrows[#hrows + 1] = { g.op_type, f6(g.mb_us), f6(g.prof_us), f6(g.diff_us),
                          ("%.2fx"):format(g.ratio), g.signature }
  end
  add("")
  add("## Duration Gap Hotspots")
  add(M.table({ "Operator", "MicroBench(us)", "Profiling(us)", "Abs Diff(us)", "MB/Profile", "Shape" }, hrows))
  for _, x in ipairs(opts.extra or {}) do
    add("")
    add("## " .. x[1])
    add(x[2])
  end
  if status and #status.failed > 0 then
    add("")
    add("## Failures")
    add("> [!WARNING]")
    add("> Operators that failed.")
    add("")
    local t = {}
    for _, f in ipairs(status.failed) do t[#t + 1] = { f.op, f.reason } end
    add(M.table({ "Operator", "Reason" }, t))
  end
  return table.concat(out, "\n") .. "\n", hot
end

-- Writes reports/profile_update_report_<id>.md, duration_gap_hotspots_full_<id>.csv and
-- profile_update_report_<id>.json (staged with the database files when stage is given).
-- Returns the md and csv paths; fails with the cause when a file cannot be written.
function M.write(db_dir, text, hot, run_id, json_doc, stage)
  local function check(ok, err)
    if not ok then perf.fail("%s", err) end
    return ok
  end
  local dir = db_dir .. "/reports"
  check(perf.fs.mkdir_p(dir))
  local csv_name = "duration_gap_hotspots_full_" .. run_id .. ".csv"
  local csv_path = dir .. "/" .. csv_name
  local w = check(perf.csv.writer(csv_path, { eol = "\n" }))
  w:write { "Operator", "CSV Name", "MicroBench(us)", "Profiling(us)", "Abs Diff(us)", "MB/Profile", "Shape" }
  for _, g in ipairs(hot) do
    w:write { g.op_type, g.csv_name, f6(g.mb_us), f6(g.prof_us), f6(g.diff_us), f6(g.ratio), g.signature }
  end
  check(w:commit { stage = stage })
  local md_path = dir .. "/profile_update_report_" .. run_id .. ".md"
  check(perf.fs.write_atomic(md_path, text .. "Full hotspot CSV: " .. csv_name .. "\n", { stage = stage }))
  if json_doc then
    local cjson = require "cjson"
    check(perf.fs.write_atomic(dir .. "/profile_update_report_" .. run_id .. ".json",
      cjson.encode(json_doc) .. "\n", { stage = stage }))
  end
  return md_path, csv_path
end

return M
