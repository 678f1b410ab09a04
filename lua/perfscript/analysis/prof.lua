-- The profiling side of the analysis tools: one streaming pass over a forward-pass trace CSV
-- (a slice of kernel_details.csv; spec parsers_analysis.md sections 1.6 and 5.0).
--
-- One rule set for every tool (the original's three tools disagreed, spec section 8):
--   * BOM stripped, columns found by name (with the profiler's aliases);
--   * rows with an empty Type are ignored; a bad Duration(us) or Start Time(us) skips the row and
--     is counted and reported with its line (the original aborted in some tools);
--   * `...AicpuKernel` rows are control kernels: counted apart, before the hcom test;
--   * `hcom_*` rows appear twice (stream N/A and a hardware stream): copies of the same type
--     whose starts lie within `window_ns` (default 1 us) are one collective, its duration the
--     longest copy. Starts are exact int64 nanoseconds. The original keyed on int(start), which
--     split copies straddling an integer microsecond.
local perf = require "perfscript"
local numparse = require "perfscript.analysis.numparse"

local M = {}

M.DEFAULT_WINDOW_NS = 1000

function M.kind(kt)
  if kt:sub(-11) == "AicpuKernel" then return "aicpu" end
  if kt:sub(1, 5) == "hcom_" then return "hcom" end
  return "compute"
end

------------------------------------------------------------------------------------------------
-- hcom de-duplication: groups of (key, start within the window), first-seen order.

local Dedup = {}
Dedup.__index = Dedup

function M.dedup(window_ns)
  return setmetatable({ window = window_ns or M.DEFAULT_WINDOW_NS, buckets = {}, list = {} }, Dedup)
end

-- Adds one copy; returns the amount the group's duration grew by (the whole duration for a
-- new group) and the group.
function Dedup:add(key, start_ns, dur)
  local w = self.window
  local b = start_ns // (w > 0 and w or 1)
  for _, bb in ipairs { b, b - 1, b + 1 } do
    local lst = self.buckets[key .. "\0" .. bb]
    if lst then
      for _, g in ipairs(lst) do
        if math.abs(g.start_ns - start_ns) <= w then
          if dur > g.dur then
            local grow = dur - g.dur
            g.dur = dur
            g.copies = g.copies + 1
            return grow, g
          end
          g.copies = g.copies + 1
          return 0.0, g
        end
      end
    end
  end
  local g = { key = key, start_ns = start_ns, dur = dur, copies = 1 }
  local bk = key .. "\0" .. b
  self.buckets[bk] = self.buckets[bk] or {}
  table.insert(self.buckets[bk], g)
  self.list[#self.list + 1] = g
  return dur, g
end

function Dedup:groups()
  return ipairs(self.list)
end

------------------------------------------------------------------------------------------------

-- Streams the CSV and calls on_row(kind, type, dur_us, start_ns | nil, shapes, line) for every
-- usable row. Returns a summary {rows, skipped = {{line, why}...}, nskipped} or nil, message.
-- opts.shapes: also deliver `Input Shapes` (stripped of whitespace and surrounding quotes).
function M.scan(path, opts, on_row)
  opts = opts or {}
  local fh = io.open(path, "rb")
  if not fh then return nil, "Prof trace not found: " .. path end
  fh:close()
  local r, err = perf.csv.open(path, { trim = true })
  if not r then return nil, err end
  local cols, cerr = r:columns { "Type", "Duration(us)" }
  if not cols then r:close(); return nil, cerr end
  local ti, di = cols["Type"], cols["Duration(us)"]
  local si = r:column("Start Time(us)")
  local hi = opts.shapes and r:column("Input Shapes") or nil
  local summary = { rows = 0, skipped = {}, nskipped = 0 }
  local function skip(line, why)
    summary.nskipped = summary.nskipped + 1
    if #summary.skipped < 20 then summary.skipped[#summary.skipped + 1] = { line, why } end
  end
  local ok, perr = pcall(function()
    for f in r:lines() do
      local kt = f[ti] or ""
      if kt ~= "" then
        local line = r:line()
        local draw = f[di] or ""
        local dur = draw == "" and 0.0 or numparse.float(draw)
        local kind = M.kind(kt)
        local start_ns
        if si and (f[si] or "") ~= "" then start_ns = numparse.us_to_ns(f[si]) end
        if not dur or dur ~= dur then
          skip(line, string.format("bad Duration(us) '%s'", draw))
        elseif si and (f[si] or "") ~= "" and not start_ns then
          skip(line, string.format("bad Start Time(us) '%s'", f[si]))
        elseif kind == "hcom" and not start_ns then
          if not si then
            error({ msg = string.format("%s:%d: hcom rows need the Start Time(us) column " ..
                                        "to merge their duplicate copies", path, line) }, 0)
          end
          skip(line, "hcom row without Start Time(us)")
        else
          summary.rows = summary.rows + 1
          local shapes = ""
          if hi then shapes = (f[hi] or ""):gsub('^"+', ""):gsub('"+$', "") end
          on_row(kind, kt, dur, start_ns, shapes, line)
        end
      end
    end
  end)
  r:close()
  if not ok then
    return nil, type(perr) == "table" and perr.msg or tostring(perr)
  end
  return summary
end

-- Prints the skipped rows of a scan summary to stderr.
function M.report_skipped(path, summary)
  if summary.nskipped == 0 then return end
  for _, s in ipairs(summary.skipped) do
    io.stderr:write(string.format("warning: %s:%d: %s (row skipped)\n", path, s[1], s[2]))
  end
  if summary.nskipped > #summary.skipped then
    io.stderr:write(string.format("warning: %s: %d more rows skipped\n", path,
                                  summary.nskipped - #summary.skipped))
  end
end

-- Per kernel type totals for op comparison: {[type] = {total_us, count}}; hcom collectives
-- counted once; AICPU control kernels left out.
function M.by_type(path, opts)
  opts = opts or {}
  local stats = {}
  local dd = M.dedup(opts.window_ns)
  local function st(kt)
    local s = stats[kt]
    if not s then s = { total_us = 0.0, count = 0 }; stats[kt] = s end
    return s
  end
  local summary, err = M.scan(path, opts, function(kind, kt, dur, start_ns)
    if kind == "hcom" then
      dd:add(kt, start_ns, dur)
    elseif kind == "compute" then
      local s = st(kt)
      s.total_us = s.total_us + dur
      s.count = s.count + 1
    end
  end)
  if not summary then return nil, err end
  for _, g in dd:groups() do
    local s = st(g.key)
    s.total_us = s.total_us + g.dur
    s.count = s.count + 1
  end
  return stats, summary
end

return M
