-- Communication data versus the analytic alpha-beta model (the Python original's
-- validate_comm_alignment.py; docs/rules.md, Analysis).
-- Fixed here: BOM-prefixed CSVs are read (the original dropped every row and said OK); a tier
-- outside 0..2 drops the row with a warning instead of crashing.
local perf = require "perfscript"
local numparse = require "perfscript.analysis.numparse"
local num = require "perfscript.num"

local M = {}

-- A3 topology: tier -> bandwidth (bytes/s), latency (s).
M.TIERS = {
  [0] = { bw = 196e9, lat = 5.5e-6 },
  [1] = { bw = 196e9, lat = 0.5e-6 },
  [2] = { bw = 224e9, lat = 0.2e-6 },
}
M.EFFICIENCY = 0.7

-- File -> op, in the order the validator examines them.
M.FILES = {
  { "hcom_allReduce_.csv", "all_reduce" },
  { "hcom_allGather_.csv", "all_gather" },
  { "hcom_reduceScatter_.csv", "reduce_scatter" },
  { "hcom_alltoallv_.csv", "all_to_all" },
}

local log2 = function(x) return math.log(x, 2) end

-- Predicted time in us, or nil and a message.
function M.predict(op, m, n, tier)
  local t = M.TIERS[tier]
  if not t then return nil, string.format("unknown topology tier %s (known: 0, 1, 2)", tostring(tier)) end
  local A, B
  if n <= 1 then
    if op ~= "all_reduce" and op ~= "all_gather" and op ~= "reduce_scatter" and op ~= "all_to_all" then
      return nil, string.format("Unknown op_type: '%s'", op)
    end
    return 0.0
  end
  local bw, lat = t.bw * M.EFFICIENCY, t.lat
  if op == "all_reduce" then
    A = 2 * (n - 1) * lat + 2 * (n - 1) * m / n / bw
    B = 2 * log2(n) * lat + 2 * m / bw
  elseif op == "all_gather" then
    A = (n - 1) * lat + (n - 1) * m / bw
    B = log2(n) * lat + (n - 1) * m / bw
  elseif op == "reduce_scatter" then
    A = (n - 1) * lat + (n - 1) * m / n / bw
    B = log2(n) * lat + (n - 1) * m / n / bw
  elseif op == "all_to_all" then
    A = (n - 1) * lat + m / bw
    B = log2(n) * lat + m / bw
  else
    return nil, string.format("Unknown op_type: '%s'", op)
  end
  return 1e6 * math.min(A, B)
end

function M.ratio(measured, predicted)
  if predicted == 0 then return math.huge end
  return measured / predicted
end

function M.status(ratio, tol)
  tol = tol or 2.0
  if ratio >= 1 / tol and ratio <= tol then return "PASS" end
  if ratio >= 1 / (2 * tol) and ratio <= 2 * tol then return "WARN" end
  return "FAIL"
end

-- Python int() of a cell (src/num.c's ps_num_int); nil for anything else.
local function pyint(s)
  if type(s) ~= "string" then return nil end
  return num.int(s)
end
M.pyint = pyint

-- Reads one hcom_*.csv: rows {message_bytes, num_devices, tier, measured, line}, and the
-- dropped rows {line, why}. nil, message when the file cannot be read.
function M.read_rows(path)
  local r, err = perf.csv.open(path, { trim = true })
  if not r then return nil, err end
  local h = r:header() or {}
  local idx = {}
  for i, name in ipairs(h) do idx[name] = i end
  local rows, dropped = {}, {}
  local ok, perr = pcall(function()
    for f in r:lines() do
      local line = r:line()
      local function cell(name) return idx[name] and f[idx[name]] or nil end
      local m, n = pyint(cell("message_bytes")), pyint(cell("num_devices"))
      local tier = 1
      if idx.topology_tier then tier = pyint(cell("topology_tier")) end
      local mcol = idx["Average Duration(us)"] and "Average Duration(us)" or "Duration(us)"
      local meas = cell(mcol) and numparse.float(cell(mcol))
      if not (m and n and tier and meas) then
        dropped[#dropped + 1] = { line, "missing or unparseable message_bytes, num_devices, " ..
                                        "topology_tier or " .. mcol }
      elseif not M.TIERS[tier] then
        dropped[#dropped + 1] = { line, string.format("unknown topology tier %d", tier) }
      else
        rows[#rows + 1] = { message_bytes = m, num_devices = n, tier = tier, measured = meas,
                            line = line }
      end
    end
  end)
  r:close()
  if not ok then return nil, tostring(perr) end
  return rows, dropped
end

-- Validates rows of one op: per-row results and a report {pass, warn, fail, mean, min, max, ok}.
function M.validate(op, rows, tol)
  local results = {}
  local rep = { PASS = 0, WARN = 0, FAIL = 0 }
  local sum, mn, mx = 0.0, math.huge, -math.huge
  for _, row in ipairs(rows) do
    local pred, err = M.predict(op, row.message_bytes, row.num_devices, row.tier)
    if not pred then return nil, err end
    local ratio = M.ratio(row.measured, pred)
    local st = M.status(ratio, tol)
    rep[st] = rep[st] + 1
    sum = sum + ratio
    mn, mx = math.min(mn, ratio), math.max(mx, ratio)
    results[#results + 1] = { row = row, predicted = pred, ratio = ratio, status = st }
  end
  local n = #results
  rep.n = n
  rep.mean = n > 0 and sum / n or 0 / 0
  rep.min = n > 0 and mn or 0 / 0
  rep.max = n > 0 and mx or 0 / 0
  rep.ok = rep.FAIL == 0
  return results, rep
end

return M
