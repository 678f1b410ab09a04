-- What a simulator package says without MindStudio Insight: time per pipeline (cube, vector,
-- MTE1/2/3, scalar, and any other pipe the simulator names) and the top instructions, from the
-- per-core instruction CSVs (core*_instr_exe*.csv; columns instr, addr, pipe, call_count,
-- cycles, running_time(us), detail, as the msOpProf user guide documents them).
--
--   read(pkg) -> s | nil, message   pkg: insight.run.check_package's result
--     s.pipes = {{pipe=, cycles=, time_us=, max_core_us=, calls=, share=}} (the six named first)
--     s.top = {{instr=, pipe=, calls=, cycles=, time_us=, share=}} by cycles, s.cores, s.total_cycles
--   tables(s, n) -> pipes result, top result (perfscript.db.result: printed as aligned tables)
--   page(s, info) -> HTML text (perfscript.analysis.html's page and escaping)
local perf = require "perfscript"
local html = require "perfscript.analysis.html"
local result = require "perfscript.db.result"

local M = {}

M.PIPES = { "cube", "vector", "mte1", "mte2", "mte3", "scalar" }
local PIPE_OF = { CUBE = "cube", M = "cube", VECTOR = "vector", VEC = "vector", V = "vector",
  MTE1 = "mte1", MTE2 = "mte2", MTE3 = "mte3", SCALAR = "scalar", S = "scalar" }
M.COLORS = { cube = "#d62728", vector = "#1f77b4", mte1 = "#9467bd", mte2 = "#ff7f0e",
  mte3 = "#2ca02c", scalar = "#8c564b", other = "#7f7f7f" }

-- The pipeline of a pipe cell: one of M.PIPES, else the cell itself in lower case.
function M.pipe(cell)
  local u = cell:upper():gsub("^PIPE_", "")
  return PIPE_OF[u] or cell:lower()
end

local function number(v, file, line, col)
  if v == nil or v == "" then return 0 end
  local n = perf.num.finite(v)
  if not n or n < 0 then
    return nil, ("%s:%d: %s '%s' is not a number >= 0"):format(file, line, col, v)
  end
  return n
end

-- Adds one instruction CSV to the accumulators.
local function read_csv(path, acc, core_time)
  local r, err = perf.csv.open(path, { header = true, trim = true })
  if not r then return nil, err end
  local idx = {}
  for i, c in ipairs(r:header()) do idx[c] = i end
  for _, c in ipairs { "instr", "pipe", "cycles" } do
    if not idx[c] then
      r:close()
      return nil, ("%s: no %s column (an instruction CSV has instr, addr, pipe, call_count, cycles, running_time(us), detail)")
        :format(path, c)
    end
  end
  local t_col = idx["running_time(us)"]
  while true do
    local f, rerr = r:read()
    if not f then
      if rerr then r:close(); return nil, rerr end
      break
    end
    local line = r:line()
    local instr, pipe = f[idx.instr] or "", f[idx.pipe] or ""
    if instr ~= "" then
      local cycles, e1 = number(f[idx.cycles], path, line, "cycles")
      if not cycles then r:close(); return nil, e1 end
      local calls, e2 = number(idx.call_count and f[idx.call_count], path, line, "call_count")
      if not calls then r:close(); return nil, e2 end
      local us, e3 = number(t_col and f[t_col], path, line, "running_time(us)")
      if not us then r:close(); return nil, e3 end
      local p = M.pipe(pipe ~= "" and pipe or "unknown")
      local a = acc.pipes[p]
      if not a then a = { pipe = p, cycles = 0, time_us = 0, calls = 0, max_core_us = 0 }; acc.pipes[p] = a end
      a.cycles, a.time_us, a.calls = a.cycles + cycles, a.time_us + us, a.calls + calls
      core_time[p] = (core_time[p] or 0) + us
      local key = instr .. "\0" .. p
      local t = acc.instr[key]
      if not t then t = { instr = instr, pipe = p, calls = 0, cycles = 0, time_us = 0 }; acc.instr[key] = t end
      t.calls, t.cycles, t.time_us = t.calls + calls, t.cycles + cycles, t.time_us + us
      acc.total = acc.total + cycles
    end
  end
  r:close()
  return true
end

function M.read(pkg)
  local acc = { pipes = {}, instr = {}, total = 0 }
  local files = 0
  for _, c in ipairs(pkg.cores) do
    local core_time = {}
    for _, path in ipairs(c.instr) do
      local ok, err = read_csv(path, acc, core_time)
      if not ok then return nil, err end
      files = files + 1
    end
    for p, us in pairs(core_time) do
      if us > acc.pipes[p].max_core_us then acc.pipes[p].max_core_us = us end
    end
  end
  local pipes, named = {}, {}
  for _, p in ipairs(M.PIPES) do
    named[p] = true
    pipes[#pipes + 1] = acc.pipes[p] or { pipe = p, cycles = 0, time_us = 0, calls = 0, max_core_us = 0 }
  end
  local others = {}
  for p, a in pairs(acc.pipes) do if not named[p] then others[#others + 1] = a end end
  table.sort(others, function(x, y) if x.cycles ~= y.cycles then return x.cycles > y.cycles end return x.pipe < y.pipe end)
  for _, a in ipairs(others) do pipes[#pipes + 1] = a end
  local top = {}
  for _, t in pairs(acc.instr) do top[#top + 1] = t end
  table.sort(top, function(x, y)
    if x.cycles ~= y.cycles then return x.cycles > y.cycles end
    if x.instr ~= y.instr then return x.instr < y.instr end
    return x.pipe < y.pipe
  end)
  for _, list in ipairs { pipes, top } do
    for _, a in ipairs(list) do a.share = acc.total > 0 and 100 * a.cycles / acc.total or 0 end
  end
  return { pipes = pipes, top = top, cores = #pkg.cores, files = files, total_cycles = acc.total, dir = pkg.dir }
end

local function pct(x) return string.format("%.1f%%", x) end
local function us(x) return string.format("%.3f", x) end

function M.tables(s, n)
  n = n or 10
  local rows = {}
  for _, a in ipairs(s.pipes) do
    rows[#rows + 1] = { pipeline = a.pipe, cycles = math.tointeger(a.cycles) or a.cycles,
      ["time (us)"] = us(a.time_us), ["busiest core (us)"] = us(a.max_core_us),
      calls = math.tointeger(a.calls) or a.calls, share = pct(a.share) }
  end
  local pipes = result.new(("Time per pipeline (%d core director%s, %s cycles in all)"):format(s.cores,
      s.cores == 1 and "y" or "ies", math.tointeger(s.total_cycles) or s.total_cycles),
    { "pipeline", "cycles", "time (us)", "busiest core (us)", "calls", "share" }, rows)
  local trows = {}
  for i = 1, math.min(n, #s.top) do
    local t = s.top[i]
    trows[i] = { instruction = t.instr, pipeline = t.pipe, calls = math.tointeger(t.calls) or t.calls,
      cycles = math.tointeger(t.cycles) or t.cycles, ["time (us)"] = us(t.time_us), share = pct(t.share) }
  end
  local top = result.new(("Top %d instructions by cycles (of %d)"):format(#trows, #s.top),
    { "instruction", "pipeline", "calls", "cycles", "time (us)", "share" }, trows)
  return pipes, top
end

local W, BAR_H, LABEL_W = 560, 22, 90

-- Horizontal bars of each pipeline's share of the cycles.
local function share_chart(pipes)
  local h = #pipes * BAR_H + 30
  local out = { ('<svg xmlns="http://www.w3.org/2000/svg" class="chart pipe-chart" width="%d" height="%d" '
    .. 'viewBox="0 0 %d %d" role="img" aria-label="share of cycles per pipeline">'):format(LABEL_W + W + 80, h,
    LABEL_W + W + 80, h) }
  for i, a in ipairs(pipes) do
    local y = 10 + (i - 1) * BAR_H
    local colour = M.COLORS[a.pipe] or M.COLORS.other
    out[#out + 1] = ('<text class="pipe-label" x="%d" y="%d" text-anchor="end">%s</text>'):format(LABEL_W - 8,
      y + 15, html.esc(a.pipe))
    out[#out + 1] = ('<rect class="bar pipe-bar" data-pipe="%s" data-value="%.1f" x="%d" y="%d" width="%.1f" '
      .. 'height="%d" fill="%s"><title>%s: %.1f%% of the cycles</title></rect>'):format(html.esc(a.pipe), a.share,
      LABEL_W, y + 3, math.max(W * a.share / 100, a.cycles > 0 and 1 or 0), BAR_H - 6, colour, html.esc(a.pipe), a.share)
    out[#out + 1] = ('<text x="%.1f" y="%d">%.1f%%</text>'):format(LABEL_W + W * a.share / 100 + 6, y + 15, a.share)
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

local function table_html(res, class)
  local out = { ('<table class="%s"><tr>'):format(class) }
  for _, c in ipairs(res.columns) do out[#out] = out[#out] .. "<th>" .. html.esc(c) .. "</th>" end
  out[#out] = out[#out] .. "</tr>"
  for _, r in ipairs(res) do
    local cells = {}
    for j, c in ipairs(res.columns) do cells[j] = "<td>" .. html.esc(r[c]) .. "</td>" end
    out[#out + 1] = "<tr>" .. table.concat(cells) .. "</tr>"
  end
  out[#out + 1] = "</table>"
  return table.concat(out, "\n")
end

-- info: {kernel=, source=, package=, workspace=}
function M.page(s, info, n)
  local pipes, top = M.tables(s, n or 20)
  local summary = { { "kernel", info.kernel or "?" }, { "source", info.source or "-" },
    { "simulator package", info.package or s.dir }, { "core directories", tostring(s.cores) },
    { "instruction files", tostring(s.files) },
    { "cycles", tostring(math.tointeger(s.total_cycles) or s.total_cycles) } }
  local rows = { '<table class="summary">' }
  for _, kv in ipairs(summary) do
    rows[#rows + 1] = ("<tr><td>%s</td><td>%s</td></tr>"):format(html.esc(kv[1]), html.esc(kv[2]))
  end
  rows[#rows + 1] = "</table>"
  local body = table.concat({
    "<section>", table.concat(rows, "\n"),
    "<h2>Share of cycles per pipeline</h2>", share_chart(s.pipes),
    "<h2>" .. html.esc(pipes.title) .. "</h2>", table_html(pipes, "data pipes"),
    "<h2>" .. html.esc(top.title) .. "</h2>", table_html(top, "data top"),
    "<p>Open " .. html.esc((info.package or s.dir) .. "/trace.json") ..
      " in MindStudio Insight for the instruction pipelines of each core.</p>",
    "</section>" }, "\n")
  return html.page("Insight trace: " .. (info.kernel or "kernel"), { body })
end

return M
