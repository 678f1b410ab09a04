-- Communication lookups (docs/rules.md, Lookups): the key is (message_bytes,
-- num_devices[, topology_tier]). The first row with equal bytes wins; otherwise the alpha-beta
-- line lat = a + b * bytes, least squares over every row of that device count (and tier),
-- evaluated at the query and clamped to the latencies of the bracketing rows. No
-- extrapolation: without a row on both sides the lookup misses.
local perf = require "perfscript"
local R = require "perfscript.db.result"

local C = {}

function C.lookup(K, q, opts)
  opts = opts or {}
  if type(q) ~= "table" or not q.bytes or not q.devices then
    perf.fail("%s: a communication lookup takes {bytes = message bytes, devices = ranks[, tier = t]}", K.name)
  end
  local t = K:table()
  if not t:column("num_devices") then perf.fail("%s: no num_devices column (csv_format_raw)", K.path) end
  local bytes, devs = t:nums("message_bytes"), t:nums("num_devices")
  local tiers = q.tier and t:column("topology_tier") and t:nums("topology_tier") or nil
  local pts = {}
  for i = 1, #t do
    local lat = K:latency(i)
    if lat and bytes[i] and devs[i] == q.devices and (not tiers or tiers[i] == q.tier) then
      pts[#pts + 1] = { x = bytes[i], y = lat, row = i }
    end
  end
  local res = R.new(nil, { "line", "message_bytes", "latency(us)", "fit(us)", "residual(us)", "role" })
  local label = string.format("%s %s B on %d devices%s", K.name, q.bytes, q.devices, q.tier and (" tier " .. q.tier) or "")
  local lo, hi
  for _, p in ipairs(pts) do
    if p.x == q.bytes then
      res.latency, res.source, res.confidence, res.line, res.rule = p.y, "MEASURED", 0.9, t:line(p.row), "comm"
      res.title = string.format("lookup %s: MEASURED %s us from line %d (exact)", label, R.fmt(p.y), res.line)
      res[1] = { line = res.line, message_bytes = p.x, ["latency(us)"] = p.y, role = "exact" }
      return res
    end
    if p.x < q.bytes and (not lo or p.x > lo.x) then lo = p end
    if p.x > q.bytes and (not hi or p.x < hi.x) then hi = p end
  end
  if not lo or not hi then
    res.miss = "shape_mismatch"
    res.title = string.format("lookup %s: MISS shape_mismatch (%d rows for these devices; no extrapolation outside %s..%s)",
                              label, #pts, lo and lo.x or (pts[1] and "" or "-"), hi and hi.x or "")
    return res
  end
  local n, sx, sy = #pts, 0, 0
  for _, p in ipairs(pts) do sx, sy = sx + p.x, sy + p.y end
  local mx, my = sx / n, sy / n
  local sxx, sxy = 0, 0
  for _, p in ipairs(pts) do sxx, sxy = sxx + (p.x - mx) ^ 2, sxy + (p.x - mx) * (p.y - my) end
  local beta = sxx > 0 and sxy / sxx or 0
  local alpha = my - beta * mx
  local raw = alpha + beta * q.bytes
  local low, high = math.min(lo.y, hi.y), math.max(lo.y, hi.y)
  local lat = math.min(math.max(raw, low), high)
  local linear = lo.y + (hi.y - lo.y) * (q.bytes - lo.x) / (hi.x - lo.x)
  if opts.method == "bracket_linear" then lat = linear end
  table.sort(pts, function(a, b) return a.x < b.x end)
  for _, p in ipairs(pts) do
    local f = alpha + beta * p.x
    res[#res + 1] = { line = t:line(p.row), message_bytes = p.x, ["latency(us)"] = p.y, ["fit(us)"] = f,
                      ["residual(us)"] = p.y - f, role = p == lo and "bracket low" or p == hi and "bracket high" or nil }
  end
  res.latency, res.source, res.confidence, res.rule = lat, "INTERPOLATED", 0.8, "comm"
  res.alpha, res.beta, res.raw, res.bracket_linear = alpha, beta, raw, linear
  res.title = string.format("lookup %s: INTERPOLATED %s us (%s between lines %d and %d)", label, R.fmt(lat),
                            opts.method == "bracket_linear" and "bracket_linear" or "alpha_beta", t:line(lo.row), t:line(hi.row))
  res:note("alpha %s us, beta %.6g us/B (%s GB/s); raw fit %s us, clamped to [%s, %s]; bracket_linear would give %s us",
           R.fmt(alpha), beta, beta > 0 and R.fmt(1e-3 / beta) or "inf", R.fmt(raw), R.fmt(low), R.fmt(high), R.fmt(linear))
  return res
end

return C
