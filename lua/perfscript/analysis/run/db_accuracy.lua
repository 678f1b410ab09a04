-- The interpolation accuracy run (recipes/db_accuracy.lua is its entry point): per kernel type,
-- every measured signature predicted leave-one-out as db:interp would (perfscript.db.accuracy),
-- the |error| p50 / p90 / max, the worst rows with their neighbours and the rows that cannot be
-- predicted; --output writes every prediction as CSV, --html a page with the error against each
-- swept axis (inline SVG, no scripts).
local perf = require "perfscript"
local options = require "perfscript.options"
local cli = require "perfscript.analysis.cli"
local html = require "perfscript.analysis.html"
local acc = require "perfscript.db.accuracy"
local A = require "perfscript.db.analysis"
local D = require "perfscript.db"
local R = require "perfscript.db.result"

local esc = html.esc
local M = {}

function M.parser()
  local parser = require("argparse")("db_accuracy",
    "Interpolation accuracy of a database, leave-one-out: each measured signature predicted from the others "
    .. "as the consumer interpolates (db:interp), never extrapolating.")
  options.database(parser, { positional = true, help = "Database directory to read." })
  options.list(parser, "--kernels", "Kernel types, a comma list; repeatable (default: every kernel with shapes).",
               { aliases = { "--kernel" } })
  parser:option("--html", "Write a page with the error against each swept axis to this file."):argname("<file>")
  options.output(parser, "Write every prediction (kernel, line, actual, predicted, error, neighbours) to this CSV file.")
  parser:option("--worst", "Worst rows printed per kernel.", "5"):convert(math.tointeger)
  options.quiet(parser, "Print only the summary table.")
  return parser
end

-- The kernels to report: those named, else every kernel with an Input Shapes column (the
-- communication files are interpolated by the base path's alpha-beta fit, not this rule).
function M.kernels(db, names)
  local out, skipped = {}, {}
  for _, name in ipairs(names or db:names()) do
    local k = db:kernel(name)
    if k:table():column(D.IS) then out[#out + 1] = k
    else skipped[#skipped + 1] = name end
  end
  return out, skipped
end

-- Per kernel: {kernel, res (db:accuracy), summary, seconds}; printed as it goes.
function M.report(kernels, args, say)
  local sections = {}
  local bar = require("perfscript.progress").new("Kernels", #kernels)
  for i, k in ipairs(kernels) do
    bar:update(i - 1, k.name)
    local t0 = os.clock()
    local ok, res = pcall(k.accuracy, k)
    if not ok then
      if not perf.is_user_error(res) then error(res, 0) end
      say(string.format("%s: skipped (%s)", k.name, res.message))
    else
      sections[#sections + 1] = { kernel = k, res = res, summary = res.summary, seconds = os.clock() - t0 }
    end
  end
  bar:finish()
  return sections
end

local function summary_table(sections)
  local res = R.new(nil, { "kernel", "signatures", "predicted", "cannot", "p50", "p90", "max", "seconds" })
  for _, s in ipairs(sections) do
    local sum = s.summary
    res[#res + 1] = { kernel = s.kernel.name, signatures = sum.n, predicted = sum.predicted, cannot = sum.missed,
                      p50 = acc.pct(sum.p50), p90 = acc.pct(sum.p90), max = acc.pct(sum.max),
                      seconds = string.format("%.2f", s.seconds) }
  end
  return res
end
M.summary_table = summary_table

-- The worst n predicted rows and the misses of one kernel, as a result to print.
local function worst(s, n)
  local res = R.new(s.res.title, acc.COLUMNS)
  local misses = {}
  for _, r in ipairs(s.res) do
    if r["error%"] then
      if #res < n then res[#res + 1] = r end
    elseif #misses < n then
      misses[#misses + 1] = r
    end
  end
  for _, r in ipairs(misses) do res[#res + 1] = r end
  for _, note in ipairs(s.res.notes) do res:note("%s", note) end
  return res
end

local CSV_COLS = { "kernel", "line", "rows", "shapes", "dtypes", "actual(us)", "predicted(us)", "error%", "axis",
                   "value", "lower", "upper", "status" }

local function write_csv(path, sections)
  local w, err = perf.csv.writer(path)
  if not w then perf.fail("%s", err) end
  w:write(CSV_COLS)
  for _, s in ipairs(sections) do
    local recs = {}
    for i, r in ipairs(s.res.records) do recs[i] = r end
    table.sort(recs, function(a, b) return a.line < b.line end)
    for _, r in ipairs(recs) do
      local row = acc.row(s.kernel, r)
      row.kernel = s.kernel.name
      local cells = {}
      for i, c in ipairs(CSV_COLS) do
        local v = row[c]
        cells[i] = v == nil and "" or (type(v) == "number" and math.type(v) == "float" and string.format("%.6f", v)
                                       or tostring(v))
      end
      w:write(cells)
    end
  end
  local ok, cerr = w:commit()
  if not ok then perf.fail("%s", cerr) end
  io.stderr:write(string.format("%s %s (every prediction)\n", ok, path))
end

-- ---- the page -------------------------------------------------------------------------------

local W, H, ML, MR, MT, MB = 520, 220, 56, 16, 14, 34
M.MAX_POINTS = 4000  -- markers per chart (an even sample beyond: the caption says so)

-- Axes a page shows for kernel K: the consumer's axes, then the other named axes its points have.
local function page_axes(K)
  local out = {}
  for _, a in ipairs(A.axes(K)) do if not a:find("<") then out[#out + 1] = a end end
  return out
end

-- One chart: the signed error (%) of each predicted signature against its value on axis,
-- misses as grey ticks on the top edge; the p90 |error| per value bin as a line.
local function chart(K, axis, recs, stride)
  local xs, ys, miss = {}, {}, {}
  for i = 1, #recs, stride do
    local r = recs[i]
    local v = A.split(K, r.p, axis)
    if v and v > 0 then
      if r.err then xs[#xs + 1] = v; ys[#ys + 1] = r.err * 100 else miss[#miss + 1] = v end
    end
  end
  if #xs + #miss == 0 then return nil end
  local lo, hi = math.huge, 0
  for _, v in ipairs(xs) do lo, hi = math.min(lo, v), math.max(hi, v) end
  for _, v in ipairs(miss) do lo, hi = math.min(lo, v), math.max(hi, v) end
  local clip = 1
  for _, y in ipairs(ys) do clip = math.max(clip, math.abs(y)) end
  clip = math.min(clip, 100)
  local llo, lhi = math.log(lo), math.log(hi)
  if lhi - llo < 1e-9 then llo, lhi = llo - 0.5, lhi + 0.5 end
  local pw, ph = W - ML - MR, H - MT - MB
  local function X(v) return ML + (math.log(v) - llo) / (lhi - llo) * pw end
  local function Y(e) return MT + ph / 2 - math.max(-clip, math.min(clip, e)) / clip * (ph / 2 - 6) end
  local out = { string.format('<svg xmlns="http://www.w3.org/2000/svg" class="chart accuracy-chart" data-axis="%s" '
    .. 'width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">', esc(axis), W, H, W, H,
    esc(K.name .. " error against " .. axis)) }
  for _, t in ipairs { -clip, -clip / 2, 0, clip / 2, clip } do
    out[#out + 1] = string.format('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>', ML, Y(t), W - MR, Y(t),
      t == 0 and html.COLORS.axis or html.COLORS.grid)
    out[#out + 1] = string.format('<text x="%d" y="%.1f" text-anchor="end">%s%%</text>', ML - 4, Y(t) + 4,
      string.format("%.3g", t))
  end
  -- decade (or power-of-two) ticks along the axis
  local step = (lhi - llo) > math.log(1000) and 10 or 2
  local tick = step ^ math.floor(llo / math.log(step))
  while tick <= hi * 1.0001 do
    if tick >= lo * 0.9999 then
      out[#out + 1] = string.format('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>', X(tick), MT,
        X(tick), H - MB, html.COLORS.grid)
      out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="middle">%s</text>', X(tick), H - MB + 14,
        string.format("%.6g", tick))
    end
    tick = tick * step
  end
  out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="middle">%s</text>', ML + pw / 2, H - 4, esc(axis))
  for i, x in ipairs(xs) do
    local y = ys[i]
    out[#out + 1] = string.format('<circle class="pt" cx="%.1f" cy="%.1f" r="2.5" fill="%s" fill-opacity="0.6"/>',
      X(x), Y(y), y >= 0 and html.COLORS.over or html.COLORS.under)
  end
  for _, x in ipairs(miss) do
    out[#out + 1] = string.format('<rect class="miss" x="%.1f" y="%d" width="2" height="6" fill="#999"/>', X(x) - 1, MT)
  end
  -- p90 |error| per bin (12 bins over the axis, log scale)
  local bins = {}
  for i, x in ipairs(xs) do
    local b = math.min(11, math.floor((math.log(x) - llo) / (lhi - llo) * 12))
    bins[b] = bins[b] or {}
    bins[b][#bins[b] + 1] = math.abs(ys[i])
  end
  local pts = {}
  for b = 0, 11 do
    if bins[b] then
      table.sort(bins[b])
      local v = acc.quantile(bins[b], 0.9)
      pts[#pts + 1] = string.format("%.1f,%.1f", X(math.exp(llo + (b + 0.5) / 12 * (lhi - llo))), Y(v))
    end
  end
  if #pts > 1 then
    out[#out + 1] = string.format('<polyline class="p90" points="%s" fill="none" stroke="%s" stroke-width="2"/>',
      table.concat(pts, " "), html.COLORS.tc)
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n"), #xs, #miss
end

local function page_section(out, s)
  local K, sum, recs = s.kernel, s.summary, s.res.records
  out[#out + 1] = string.format('<section class="kernel" id="%s"><h2>%s</h2>', esc(K.name), esc(K.name))
  out[#out + 1] = string.format('<table class="summary"><tr><th>signatures</th><th>predicted</th><th>cannot be ' ..
    'predicted</th><th>p50 |error|</th><th>p90 |error|</th><th>max |error|</th></tr><tr><td>%d</td><td>%d</td>' ..
    '<td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr></table>', sum.n, sum.predicted, sum.missed,
    acc.pct(sum.p50), acc.pct(sum.p90), acc.pct(sum.max))
  if #recs == 0 then out[#out + 1] = "<p>No measured signature.</p></section>"; return end
  local stride = math.max(1, math.ceil(#recs / M.MAX_POINTS))
  for _, axis in ipairs(page_axes(K)) do
    local svg, n, nm = chart(K, axis, recs, stride)
    if svg then
      out[#out + 1] = string.format("<h3>error against %s</h3>", esc(axis))
      out[#out + 1] = svg
      out[#out + 1] = string.format('<p class="note">%d predicted, %d cannot be predicted (grey ticks)%s</p>', n, nm,
        stride > 1 and string.format("; every %d-th of %d signatures shown", stride, #recs) or "")
    end
  end
  -- the worst rows with their neighbours
  out[#out + 1] = '<table class="worst"><tr>'
  for _, c in ipairs(acc.COLUMNS) do out[#out + 1] = "<th>" .. esc(c) .. "</th>" end
  out[#out + 1] = "</tr>"
  for i, r in ipairs(s.res) do
    if i > 10 then break end
    out[#out + 1] = "<tr>"
    for _, c in ipairs(acc.COLUMNS) do out[#out + 1] = "<td>" .. esc(R.fmt(r[c])) .. "</td>" end
    out[#out + 1] = "</tr>"
  end
  out[#out + 1] = "</table></section>"
end

function M.page(dir, sections)
  local out = { "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                "<title>perfscript interpolation accuracy: " .. esc(dir) .. "</title>",
                "<style>" .. html.CSS .. ".note{color:#555}</style></head><body>",
                "<h1>Interpolation accuracy of " .. esc(dir) .. "</h1>",
                '<p class="note">Each measured signature is predicted from the others as the consumer interpolates ' ..
                '(db:interp: its axes in order, its buckets, never extrapolating). Charts: the signed error (%) ' ..
                string.format('against each swept axis (log scale); <span style="color:%s">above</span> / ', html.COLORS.over) ..
                string.format('<span style="color:%s">below</span> the measurement; ', html.COLORS.under) ..
                string.format('<span style="color:%s">line</span>: p90 |error| per bin; grey ticks: ', html.COLORS.tc) ..
                'signatures with no bracketing neighbours.</p>' }
  local sum = summary_table(sections)
  out[#out + 1] = '<table class="summary"><tr>'
  for _, c in ipairs(sum.columns) do out[#out + 1] = "<th>" .. esc(c) .. "</th>" end
  out[#out + 1] = "</tr>"
  for _, r in ipairs(sum) do
    out[#out + 1] = "<tr>"
    for _, c in ipairs(sum.columns) do
      local v = c == "kernel" and string.format('<a href="#%s">%s</a>', esc(r[c]), esc(r[c])) or esc(R.fmt(r[c]))
      out[#out + 1] = "<td>" .. v .. "</td>"
    end
    out[#out + 1] = "</tr>"
  end
  out[#out + 1] = "</table>"
  for _, s in ipairs(sections) do page_section(out, s) end
  out[#out + 1] = "</body></html>"
  return table.concat(out, "\n") .. "\n"
end

function M.main(argv)
  local args = M.parser():parse(argv)
  local say = function(s) io.stdout:write(s, "\n") end
  local db, dir = cli.open_database(args)
  local kernels, skipped = M.kernels(db, args.kernels)
  local sections = M.report(kernels, args, say)
  if not args.quiet then
    for _, s in ipairs(sections) do
      say(tostring(worst(s, args.worst or 5)))
      say("")
    end
  end
  local sum = summary_table(sections)
  sum.title = string.format("interpolation accuracy of %s (leave-one-out, as db:interp)", dir)
  if #skipped > 0 then sum:note("skipped %d communication kernel(s): interpolated by the base path's alpha-beta fit", #skipped) end
  R.max_rows = math.huge
  say(tostring(sum))
  if args.output then write_csv(args.output, sections) end
  if args.html then cli.write_file(args.html, M.page(dir, sections), "accuracy page") end
  return 0
end

return M
