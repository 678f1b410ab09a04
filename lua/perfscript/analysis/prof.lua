-- The profiling side of the analysis tools: one streaming pass over a forward-pass trace CSV
-- (a slice of kernel_details.csv; docs/rules.md, Analysis).
--
-- One rule set for every tool (the Python original's three tools disagreed):
--   * BOM stripped, columns found by name (with the profiler's aliases);
--   * rows with an empty Type are ignored; a bad Duration(us) (or an hcom row's bad Start Time(us))
--     skips the row, counted and reported with its line (the original aborted in some tools);
--   * `...AicpuKernel` rows are control kernels: counted apart, before the hcom test;
--   * `hcom_*` rows appear twice (stream N/A and a hardware stream) with the same start and
--     duration: the scan merges them itself (prof.dedup), so the three tools count the same
--     collectives. A collective is (Type, exact int64-ns start). Different collectives of one
--     type can start a fraction of a microsecond apart on two streams (0.24 us in a DeepSeek-V3
--     decode trace), so the default window is 0; `window_ns` > 0 also merges copies whose starts
--     lie that close. The longest copy is counted, and copies of different durations are counted
--     so the tools can warn.
local perf = require "perfscript"
local numparse = require "perfscript.analysis.numparse"

local M = {}

M.DEFAULT_WINDOW_NS = 0

function M.kind(kt)
  if kt:sub(-11) == "AicpuKernel" then return "aicpu" end
  if kt:sub(1, 5) == "hcom_" then return "hcom" end
  return "compute"
end

------------------------------------------------------------------------------------------------
-- hcom de-duplication: groups of (Type, start), first-seen order. With window 0 a copy joins
-- the group of exactly its start (one table lookup); with a window it joins the first group of
-- its type whose start lies within the window.

local Dedup = {}
Dedup.__index = Dedup

function M.dedup(window_ns)
  local w = window_ns == nil and M.DEFAULT_WINDOW_NS or window_ns
  if math.type(w) ~= "integer" or w < 0 then
    error("prof.dedup: the window must be a non-negative integer of nanoseconds, got " ..
          tostring(window_ns), 2)
  end
  return setmetatable({ window = w, buckets = {}, list = {}, mixed = 0 }, Dedup)
end

local function join(self, g, dur)
  g.copies = g.copies + 1
  if dur ~= g.dur and not g.mixed then
    g.mixed = true
    self.mixed = self.mixed + 1
  end
  if dur > g.dur then
    local grow = dur - g.dur
    g.dur = dur
    return grow, g
  end
  return 0.0, g
end

-- Adds one copy; returns the amount the group's duration grew by (the whole duration for a
-- new group) and the group {key, start_ns, dur, copies, mixed, info}. `info` (any value) is
-- kept from the group's first copy.
function Dedup:add(key, start_ns, dur, info)
  local w, bk = self.window, nil
  if w == 0 then
    bk = key .. "\0" .. start_ns
    local g = self.buckets[bk]
    if g then return join(self, g, dur) end
  else
    local b = start_ns // w
    for _, bb in ipairs { b, b - 1, b + 1 } do
      local lst = self.buckets[key .. "\0" .. bb]
      if lst then
        for _, g in ipairs(lst) do
          if math.abs(g.start_ns - start_ns) <= w then return join(self, g, dur) end
        end
      end
    end
    bk = key .. "\0" .. b
  end
  local g = { key = key, start_ns = start_ns, dur = dur, copies = 1, mixed = false, info = info }
  if w == 0 then
    self.buckets[bk] = g
  else
    self.buckets[bk] = self.buckets[bk] or {}
    table.insert(self.buckets[bk], g)
  end
  self.list[#self.list + 1] = g
  return dur, g
end

-- The collectives in first-seen order.
function Dedup:groups()
  return ipairs(self.list)
end

------------------------------------------------------------------------------------------------

-- Streams the CSV and calls on_row(kind, type, dur_us, shapes) for every usable compute and
-- AICPU row; hcom rows are merged into collectives (see above), returned in the summary.
-- Returns a summary {rows, skipped = {{line, why}...}, nskipped, hcom = the Dedup} or nil,
-- message.
-- opts.shapes: also deliver the `Input Shapes` cell (whitespace-trimmed; an hcom group keeps
-- its first copy's as `info`). opts.window_ns: the hcom window (default 0).
function M.scan(path, opts, on_row)
  opts = opts or {}
  local dd = M.dedup(opts.window_ns)
  local fh = io.open(path, "rb")
  if not fh then return nil, "Prof trace not found: " .. path end
  fh:close()
  local r, err = perf.csv.open(path, { trim = true, reuse = true })
  if not r then return nil, err end
  local cols, cerr = r:columns { "Type", "Duration(us)" }
  if not cols then r:close(); return nil, cerr end
  local ti, di = cols["Type"], cols["Duration(us)"]
  local si = r:column("Start Time(us)")
  local hi = opts.shapes and r:column("Input Shapes") or nil
  local summary = { rows = 0, skipped = {}, nskipped = 0, hcom = dd }
  local function skip(why)
    summary.nskipped = summary.nskipped + 1
    if #summary.skipped < 20 then summary.skipped[#summary.skipped + 1] = { r:line(), why } end
  end
  local kinds = {}   -- kernel type -> kind: types repeat, the string tests need not
  local float, us_to_ns = numparse.float, numparse.us_to_ns
  local nrows = 0
  local ok, perr = pcall(function()
    for f in r:lines() do
      local kt = f[ti]
      if kt and kt ~= "" then
        local draw = f[di] or ""
        local dur = draw == "" and 0.0 or float(draw)
        local kind = kinds[kt]
        if not kind then kind = M.kind(kt); kinds[kt] = kind end
        local start_ns
        if kind == "hcom" and si then
          local st = f[si]
          if st and st ~= "" then start_ns = us_to_ns(st) end
        end
        if not dur or dur ~= dur then
          skip(string.format("bad Duration(us) '%s'", draw))
        elseif kind == "hcom" and not start_ns then
          if not si then
            error({ msg = string.format("%s:%d: hcom rows need the Start Time(us) column " ..
                                        "to merge their duplicate copies", path, r:line()) }, 0)
          end
          local st = f[si] or ""
          skip(st == "" and "hcom row without Start Time(us)" or
               string.format("bad Start Time(us) '%s'", st))
        elseif kind == "hcom" then
          nrows = nrows + 1
          dd:add(kt, start_ns, dur, hi and f[hi] or nil)
        else
          nrows = nrows + 1
          on_row(kind, kt, dur, hi and f[hi] or "")
        end
      end
    end
  end)
  summary.rows = nrows
  r:close()
  if not ok then
    return nil, type(perr) == "table" and perr.msg or tostring(perr)
  end
  return summary
end

-- Prints the scan's warnings to stderr: the skipped rows, and hcom collectives whose copies
-- disagree on the duration (they never should; if they do, the user should know
-- which number was counted).
function M.report_warnings(path, summary)
  for _, s in ipairs(summary.skipped) do
    io.stderr:write(string.format("warning: %s:%d: %s (row skipped)\n", path, s[1], s[2]))
  end
  if summary.nskipped > #summary.skipped then
    io.stderr:write(string.format("warning: %s: %d more rows skipped\n", path,
                                  summary.nskipped - #summary.skipped))
  end
  local mixed = summary.hcom and summary.hcom.mixed or 0
  if mixed > 0 then
    io.stderr:write(string.format("warning: %s: %d hcom collective%s copies of different " ..
                                  "durations (the longest copy counted)\n", path, mixed,
                                  mixed == 1 and " has" or "s have"))
  end
end

-- Per kernel type totals for op comparison: {[type] = {total_us, count}}; hcom collectives
-- counted once; AICPU control kernels left out.
function M.by_type(path, opts)
  local stats = {}
  local function st(kt)
    local s = stats[kt]
    if not s then s = { total_us = 0.0, count = 0 }; stats[kt] = s end
    return s
  end
  local summary, err = M.scan(path, opts, function(kind, kt, dur)
    if kind == "compute" then
      local s = st(kt)
      s.total_us = s.total_us + dur
      s.count = s.count + 1
    end
  end)
  if not summary then return nil, err end
  for _, g in summary.hcom:groups() do
    local s = st(g.key)
    s.total_us = s.total_us + g.dur
    s.count = s.count + 1
  end
  return stats, summary
end

return M
