-- The profiling side of the analysis tools: one streaming pass over a forward-pass trace CSV
-- (a slice of kernel_details.csv; spec parsers_analysis.md sections 1.6 and 5.0).
--
-- One rule set for every tool (the original's three tools disagreed, spec section 8):
--   * BOM stripped, columns found by name (with the profiler's aliases);
--   * rows with an empty Type are ignored; a bad Duration(us) (or an hcom row's bad Start Time(us))
--     skips the row, counted and reported with its line (the original aborted in some tools);
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

-- Streams the CSV and calls on_row(kind, type, dur_us, start_ns | nil, shapes) for every
-- usable row (start_ns only for hcom rows, the only ones that need it). Returns a summary {rows, skipped = {{line, why}...}, nskipped} or nil, message.
-- opts.shapes: also deliver the `Input Shapes` cell (whitespace-trimmed).
function M.scan(path, opts, on_row)
  opts = opts or {}
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
  local summary = { rows = 0, skipped = {}, nskipped = 0 }
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
        else
          nrows = nrows + 1
          on_row(kind, kt, dur, start_ns, hi and f[hi] or "")
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
