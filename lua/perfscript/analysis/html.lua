-- One self-contained HTML page per report: inline SVG charts (no scripts, no network) with the
-- latency error per kernel type and each kernel type's share of the forward-pass time, plus a
-- table of the numbers. Used by op_comparison.lua and m6.lua (--html OUT.html).
local pyfmt = require "perfscript.analysis.pyfmt"

local M = {}

-- HTML text and attribute escaping: the one escaper of every page perfscript writes.
local function esc(s)
  return (tostring(s):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                         ['"'] = "&quot;", ["'"] = "&#39;" }))
end
M.esc = esc

local COLORS = { tc = "#1f77b4", prof = "#ff7f0e", over = "#d62728", under = "#4c72b0",
                 unmodelled = "#9467bd", axis = "#444444", grid = "#dddddd" }
M.COLORS = COLORS

local CSS = [[
body { font-family: sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 32px; } h3 { font-size: 15px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.summary td { text-align: left; }
svg text { font-size: 12px; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }
]]
M.CSS = CSS

local ROW_H, LABEL_W, PLOT_W, PAD, MARGIN = 22, 280, 560, 40, 64

local function clip_label(s)
  if pyfmt.width(s) <= 40 then return s end
  local n = 0
  for p in utf8.codes(s) do
    n = n + 1
    if n == 38 then return s:sub(1, p - 1) .. "\u{2026}" end
  end
  return s
end

-- Diverging bars of the latency error (%), clipped at +-clip with the true value in the label.
local function error_chart(kernels, clip)
  local h = PAD + #kernels * ROW_H + 20
  local w = LABEL_W + PLOT_W + 2 * MARGIN
  local x0 = LABEL_W + MARGIN + PLOT_W / 2
  local scale = (PLOT_W / 2) / clip
  local out = { string.format('<svg xmlns="http://www.w3.org/2000/svg" class="chart error-chart" ' ..
    'width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="latency error per kernel">',
    w, h, w, h) }
  for _, t in ipairs { -clip, -clip / 2, 0, clip / 2, clip } do
    local x = x0 + t * scale
    out[#out + 1] = string.format('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>',
      x, PAD - 6, x, h - 20, t == 0 and COLORS.axis or COLORS.grid)
    out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="middle">%s%%</text>',
      x, PAD - 12, pyfmt.repr(math.tointeger(t) or t))
  end
  for i, k in ipairs(kernels) do
    local y = PAD + (i - 1) * ROW_H
    out[#out + 1] = string.format('<text class="kernel-label" x="%d" y="%d" text-anchor="end">%s</text>',
      LABEL_W - 8, y + 15, esc(clip_label(k.name)))
    if k.not_modelled then
      -- its own category: TC has no time for it, which is not a -100 % error
      out[#out + 1] = string.format('<rect class="bar not-modelled" data-kernel="%s" data-value="not modelled" ' ..
        'x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: not modelled by TC</title></rect>',
        esc(k.name), x0 - 6, y + 3, 12, ROW_H - 6, COLORS.unmodelled, esc(k.name))
      out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="start" fill="%s">not modelled</text>',
        x0 + 10, y + 15, COLORS.unmodelled)
    elseif k.error_pct then
      local e = math.max(-clip, math.min(clip, k.error_pct))
      local x, bw = x0, e * scale
      if bw < 0 then x, bw = x0 + bw, -bw end
      out[#out + 1] = string.format('<rect class="bar error-bar" data-kernel="%s" data-value="%s" ' ..
        'x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s%%</title></rect>',
        esc(k.name), pyfmt.fixed(k.error_pct, 1), x, y + 3, math.max(bw, 1), ROW_H - 6,
        e >= 0 and COLORS.over or COLORS.under, esc(k.name), pyfmt.fixed(k.error_pct, 1))
      out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="%s">%s%%</text>',
        e >= 0 and x0 + bw + 4 or x - 4, y + 15, e >= 0 and "start" or "end",
        pyfmt.fixed(k.error_pct, 1))
    else
      out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="middle" fill="#888">' ..
        'not in profiling</text>', x0, y + 15)
    end
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

-- Paired bars: each kernel's share (%) of the TC total and of the profiled total.
local function share_chart(kernels, tc_total, prof_total)
  local pair_h = ROW_H + 8
  local TOP = 8
  local h = TOP + #kernels * pair_h + 20
  local w = LABEL_W + PLOT_W + 80
  local maxshare = 1
  for _, k in ipairs(kernels) do
    k.tc_share = tc_total > 0 and k.tc_us / tc_total * 100 or 0
    k.prof_share = prof_total > 0 and k.prof_us / prof_total * 100 or 0
    maxshare = math.max(maxshare, k.tc_share, k.prof_share)
  end
  local scale = PLOT_W / maxshare
  local out = { string.format('<svg xmlns="http://www.w3.org/2000/svg" class="chart share-chart" ' ..
    'width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="share of time per kernel">',
    w, h, w, h) }
  out[#out + 1] = string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>',
    LABEL_W, TOP - 6, LABEL_W, h - 20, COLORS.axis)
  for i, k in ipairs(kernels) do
    local y = TOP + (i - 1) * pair_h
    out[#out + 1] = string.format('<text class="kernel-label" x="%d" y="%d" text-anchor="end">%s</text>',
      LABEL_W - 8, y + 15, esc(clip_label(k.name)))
    for j, side in ipairs { "tc", "prof" } do
      local share = k[side .. "_share"]
      local by = y + (j - 1) * (ROW_H / 2) + 2
      out[#out + 1] = string.format('<rect class="bar share-bar %s" data-kernel="%s" data-value="%s" ' ..
        'x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s%%</title></rect>',
        side, esc(k.name), pyfmt.fixed(share, 1), LABEL_W, by, math.max(share * scale, 1),
        ROW_H / 2 - 1, COLORS[side], esc(k.name), side == "tc" and "TC" or "Prof",
        pyfmt.fixed(share, 1))
      out[#out + 1] = string.format('<text x="%.1f" y="%d" font-size="10">%s%%</text>',
        LABEL_W + math.max(share * scale, 1) + 4, by + ROW_H / 2 - 3, pyfmt.fixed(share, 1))
    end
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

local function data_table(kernels, extra_cols)
  local out = { '<table class="data"><tr><th>kernel type</th><th>TC (\u{3bc}s)</th>' ..
                '<th>Prof (\u{3bc}s)</th><th>error</th>' }
  for _, c in ipairs(extra_cols or {}) do out[#out] = out[#out] .. "<th>" .. esc(c[1]) .. "</th>" end
  out[#out] = out[#out] .. "</tr>"
  for _, k in ipairs(kernels) do
    local row = string.format("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td>", esc(k.name),
      pyfmt.fixed(k.tc_us, 1), pyfmt.fixed(k.prof_us, 1),
      k.not_modelled and "not modelled" or k.error_pct and pyfmt.fixed(k.error_pct, 1) .. "%" or "\u{2013}")
    for _, c in ipairs(extra_cols or {}) do row = row .. "<td>" .. esc(k[c[2]] or "") .. "</td>" end
    out[#out + 1] = row .. "</tr>"
  end
  out[#out + 1] = "</table>"
  return table.concat(out, "\n")
end

-- A section: {title, summary = {{label, text}...}, kernels = {{name, tc_us, prof_us,
-- error_pct | nil, not_modelled = true when TC has no time for a profiled kernel, ...}}, limit,
-- extra_cols = {{header, field}}}.
function M.section(s)
  local kernels = s.kernels
  local tc_total, prof_total = 0, 0
  for _, k in ipairs(kernels) do
    tc_total = tc_total + k.tc_us
    prof_total = prof_total + k.prof_us
  end
  local shown = {}
  for i = 1, math.min(#kernels, s.limit or 30) do shown[i] = kernels[i] end
  local out = { "<section>", "<h2>" .. esc(s.title) .. "</h2>" }
  if s.summary and #s.summary > 0 then
    out[#out + 1] = '<table class="summary">'
    for _, kv in ipairs(s.summary) do
      out[#out + 1] = string.format("<tr><td>%s</td><td>%s</td></tr>", esc(kv[1]), esc(kv[2]))
    end
    out[#out + 1] = "</table>"
  end
  out[#out + 1] = "<h3>Latency error per kernel type (TC vs profiling)</h3>"
  local unmodelled = false
  for _, k in ipairs(shown) do unmodelled = unmodelled or k.not_modelled == true end
  out[#out + 1] = string.format('<p class="legend"><span style="background:%s"></span>TC above ' ..
    'profiling<span style="background:%s"></span>TC below profiling (bars clipped at \u{b1}%s%%)%s</p>',
    COLORS.over, COLORS.under, pyfmt.repr(s.clip or 100), unmodelled and string.format(
      '<span class="not-modelled" style="background:%s"></span>not modelled by TC (no TC time; not a ' ..
      '\u{2212}100%% error)', COLORS.unmodelled) or "")
  out[#out + 1] = error_chart(shown, s.clip or 100)
  out[#out + 1] = "<h3>Share of time per kernel type</h3>"
  out[#out + 1] = string.format('<p class="legend"><span style="background:%s"></span>TC ' ..
    '(total %s \u{3bc}s)<span style="background:%s"></span>Profiling (total %s \u{3bc}s)</p>',
    COLORS.tc, pyfmt.fixed(tc_total, 1, true), COLORS.prof, pyfmt.fixed(prof_total, 1, true))
  out[#out + 1] = share_chart(shown, tc_total, prof_total)
  if #kernels > #shown then
    out[#out + 1] = string.format("<p>Charts show the top %d of %d kernel types; the table has all.</p>",
      #shown, #kernels)
  end
  out[#out + 1] = data_table(kernels, s.extra_cols)
  out[#out + 1] = "</section>"
  return table.concat(out, "\n")
end

-- The page of sections: tables as M.section renders them, or HTML text a report built itself
-- (the Insight trace summary) in the same style.
function M.page(title, sections)
  local out = { "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                "<title>" .. esc(title) .. "</title>", "<style>" .. CSS .. "</style></head><body>",
                "<h1>" .. esc(title) .. "</h1>" }
  for _, s in ipairs(sections) do out[#out + 1] = type(s) == "string" and s or M.section(s) end
  out[#out + 1] = "</body></html>"
  return table.concat(out, "\n") .. "\n"
end

return M
