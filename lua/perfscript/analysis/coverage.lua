-- The database coverage run (recipes/db_coverage.lua is its entry point): what a database
-- measured along one axis per kernel type, bucket by bucket, with gaps judged against the axis
-- density standard (perfscript.db.density); --html writes a self-contained heatmap page (no
-- scripts, no external files): one row per bucket, one column per measured value, colour =
-- latency.
local perf = require "perfscript"
local options = require "perfscript.options"
local cli = require "perfscript.analysis.cli"
local repl = require "perfscript.repl"
local density = require "perfscript.db.density"
local esc = require("perfscript.analysis.html").esc

local M = {}

function M.parser()
  local parser = require("argparse")("db_coverage", "Coverage of a database along an axis, with density gaps.")
  options.database(parser, { positional = true, help = "Database directory to read." })
  options.list(parser, "--kernel", "Kernel types, a comma list; repeatable (default: every kernel).")
  parser:option("--axis", "Axis: M, K, N, tokens, hidden, axis_0, seq, batch, bytes, in<slot>.<dim> (default: the kernel's first).")
  parser:option("--fixed", "Fix other axes, e.g. K=7168,N=2048 (one bucket: its values in detail).")
  parser:option("--html", "Write a coverage heatmap page to this file.")
  options.output(parser, "Write the printed rows to this CSV file (one kernel).", { aliases = { "--csv" } })
  parser:option("--max-buckets", "Buckets per kernel in the page."):default("40"):convert(tonumber)
  return parser
end

-- --fixed "K=7168,N=2048" -> {K = 7168, N = 2048}
local function parse_fixed(text)
  if not text then return nil end
  local fixed = {}
  for k, v in text:gmatch("([%w_.]+)=([^,]+)") do fixed[k] = math.tointeger(tonumber(v)) or v end
  return fixed
end

-- Prints each kernel's coverage; returns the sections {kernel=, res=} the page shows.
function M.report(db, names, axis, fixed, csv)
  local sections = {}
  for _, name in ipairs(names) do
    local k = db:kernel(name)
    local ok, res = pcall(k.coverage, k, axis, fixed)
    if not ok then
      print(string.format("%s: skipped (%s)", name, perf.is_user_error(res) and res.message or tostring(res)))
    else
      print(res)
      print()
      if csv and #names == 1 then repl.save(res, csv) end
      sections[#sections + 1] = { kernel = name, res = res }
    end
  end
  return sections
end

-- latency -> colour on a log scale from the kernel's fastest (light) to slowest (dark) value
local function colour(v, lo, hi)
  local x = hi > lo and (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) or 0.5
  local r = math.floor(255 - 200 * x)
  local g = math.floor(245 - 150 * x)
  local b = math.floor(220 - 40 * x)
  return string.format("#%02x%02x%02x", r, g, b)
end

-- One kernel's table of the page.
local function section(out, s, max_buckets)
  local res = s.res
  local buckets = res.buckets or (res.bucket and { res.bucket }) or {}
  local values, seen, lo, hi = {}, {}, math.huge, 0
  for i, b in ipairs(buckets) do
    if i > max_buckets then break end
    for _, pt in ipairs(b.pts) do
      if not seen[pt.v] then seen[pt.v] = true; values[#values + 1] = pt.v end
      lo, hi = math.min(lo, pt.lat), math.max(hi, pt.lat)
    end
  end
  table.sort(values)
  if #values == 0 then
    out("<p><b>", esc(s.kernel), "</b>: no measured point along ", esc(res.axis), "</p>\n")
    return
  end
  -- the colour scale of this table: six swatches from its fastest to its slowest latency
  out("<p class=\"legend\">", esc(s.kernel), " latency (us): ")
  for k = 0, 5 do
    local v = lo * (hi / lo) ^ (k / 5)
    out("<span class=\"sw\" style=\"background:", colour(v, lo, hi), "\">", esc(string.format("%.3g", v)), "</span>")
  end
  out(" <span class=\"sw m\">&middot; not measured</span> <span class=\"sw gap\">gap</span></p>\n")
  out("<table><caption>", esc(s.kernel), " along ", esc(res.axis), " (standard: ", esc(res.grid or "none"), ", ",
      #buckets, " buckets", #buckets > max_buckets and (", first " .. max_buckets .. " shown") or "",
      ")</caption>\n<tr><th class=\"b\">bucket</th>")
  for _, v in ipairs(values) do out("<th>", esc(v), "</th>") end
  out("</tr>\n")
  for i, b in ipairs(buckets) do
    if i > max_buckets then break end
    local vals, at = {}, {}
    for j, pt in ipairs(b.pts) do vals[j] = pt.v; at[pt.v] = pt end
    local _, gaps = density.check(res.grid, vals)
    if #vals < 2 then gaps = {} end  -- one point: no gap to judge
    out("<tr><th class=\"b\" title=\"", esc(b.rest .. " " .. b.dtypes), "\">", esc(b.rest), " ", esc(b.dtypes), "</th>")
    for _, v in ipairs(values) do
      local pt = at[v]
      if pt then
        out("<td style=\"background:", colour(pt.lat, lo, hi), "\"", gaps[v] and " class=\"gap\"" or "",
            " title=\"", esc(string.format("%s=%s: %.3f us, line %d%s", res.axis, v, pt.lat, pt.line,
                                           gaps[v] and ("; " .. gaps[v]) or "")), "\">",
            esc(string.format("%.3g", pt.lat)), "</td>")
      else
        out("<td class=\"m\">&middot;</td>")
      end
    end
    out("</tr>\n")
  end
  out("</table>\n")
end

-- The heatmap page of the sections of the database dir.
function M.page(dir, sections, max_buckets)
  local html = {}
  local function out(...) for i = 1, select("#", ...) do html[#html + 1] = select(i, ...) end end
  out("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>perfscript coverage: ", esc(dir), "</title>\n",
      "<style>body{font:13px sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:2em}",
      "td,th{border:1px solid #ddd;padding:2px 4px;text-align:right;white-space:nowrap}",
      "th.b{text-align:left;font-weight:normal;max-width:28em;overflow:hidden;text-overflow:ellipsis}",
      "td.m{background:#f3f3f3;color:#bbb}td.gap{outline:2px solid #d22;outline-offset:-2px}",
      "caption{text-align:left;font-weight:bold;padding:4px 0;white-space:nowrap}.note{color:#555}",
      ".legend{margin:0.5em 0 0.2em}.sw{display:inline-block;padding:1px 6px;margin-right:2px;border:1px solid #ddd}",
      ".sw.m{background:#f3f3f3;color:#bbb}.sw.gap{outline:2px solid #d22;outline-offset:-2px}</style></head><body>\n",
      "<h1>Coverage of ", esc(dir), "</h1>\n<p class=\"note\">One table per kernel type: a row per bucket ",
      "(the other axes and dtypes fixed, as the consumer interpolates), a column per measured value of the axis. ",
      "Colour: latency on a log scale (light = fast). Grey: not measured in this bucket. ",
      "Red outline: the gap before this value breaks the axis density standard.</p>\n")
  for _, s in ipairs(sections) do section(out, s, max_buckets) end
  out("</body></html>\n")
  return table.concat(html)
end

function M.main(argv)
  local args = M.parser():parse(argv)
  require("perfscript.db.result").more_hint = "--output FILE with one --kernel writes them"
  local db, dir = cli.open_database(args)
  local names = args.kernel or db:names()
  local sections = M.report(db, names, args.axis, parse_fixed(args.fixed), args.output)
  if not args.html then return end
  local ok, werr = perf.fs.write_atomic(args.html, M.page(dir, sections, args.max_buckets))
  if not ok then perf.fail("%s", werr) end
  print("wrote " .. args.html)
end

return M
