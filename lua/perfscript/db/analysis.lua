-- Axes, buckets and the queries over them: nearest, coverage, interp, outliers.
-- A point is one distinct signature (input shapes with FRACTAL_NZ restored, input dtypes and
-- the runtime columns that are axes); duplicates are merged into their median latency, as the
-- consumer's interpolation does. An axis (matmul M, K, N; tokens, hidden, axis_0, a position
-- "in2.1" = input 2 dim 1; runtime seq, batch, bytes, ...) splits a point into its value and
-- the rest; points whose rest is equal form the bucket the consumer interpolates in.
local perf = require "perfscript"
local R = require "perfscript.db.result"
local match = require "perfscript.db.match"
local density = require "perfscript.db.density"

local A = {}
local D  -- the db module, set by install

local function median(v)
  table.sort(v)
  local n = #v
  if n == 0 then return nil end
  if n % 2 == 1 then return v[(n + 1) // 2] end
  return (v[n // 2] + v[n // 2 + 1]) / 2
end
A.median = median

-- Distinct signatures of a kernel with their median latency (cached).
function A.points(K)
  local s = K._
  if s.points then return s.points end
  local t = K:table()
  -- communication files have no shapes: their points are (message_bytes, num_devices, tier)
  local has_is = t:column(D.IS) ~= nil
  local has_dt = has_is and t:column(D.IDT) ~= nil
  local comps = {}
  if has_is then comps[1] = { col = D.IS, kind = "shapes", formats = t:column(D.IF) and D.IF or nil } end
  if has_dt then comps[#comps + 1] = { col = D.IDT, kind = "list" } end
  local extras = {}
  for _, e in ipairs(D.EXTRAS) do
    for _, c in ipairs(e.cols) do
      if t:column(c) and #comps < 8 then
        extras[#extras + 1] = { name = e.name, col = c }
        comps[#comps + 1] = { col = c, kind = "raw" }
        break
      end
    end
  end
  if #comps == 0 then perf.fail("%s: neither '%s' nor runtime columns such as message_bytes", K.path, D.IS) end
  local ix = t:index(comps)
  local lat = K:latencies()
  local points = {}
  local off = 3 + (has_is and 1 or 0) + (has_dt and 1 or 0)
  for g = 1, ix:ngroups() do
    local v = table.pack(ix:group(g))
    local p = { size = v[1], first = v[2], shapes = has_is and match.parse(v[3]) or {},
                dtypes = has_dt and v[4] or "", extras = {} }
    for j, e in ipairs(extras) do
      -- runtime integers: the consumer's interpolation rejects fractional or negative values
      local x = math.tointeger(tonumber(v[off + j - 1]))
      p.extras[e.name] = x and x >= 0 and x or nil
    end
    if p.size == 1 then
      p.lat = lat[p.first] or nil
    else
      p.rows = ix:rows(g)
      local vals = {}
      for _, r in ipairs(p.rows) do if lat[r] then vals[#vals + 1] = lat[r] end end
      p.lat = median(vals)
      p.nvalid = #vals
    end
    points[#points + 1] = p
  end
  s.points, s.extras = points, extras
  return points
end

local function is_matmul(K) return match.MATMUL[K.name] or false end

function A.default_axes(K)
  A.points(K)
  local ex = {}
  for _, e in ipairs(K._.extras) do ex[e.name] = true end
  if is_matmul(K) then return { "M", "K", "N" } end
  if ex.bytes then return { "bytes" } end
  if ex.seq then return { "seq", "batch" } end
  return { "tokens", "hidden" }
end

function A.axes(K)
  local list = A.default_axes(K)
  local seen = {}
  for _, a in ipairs(list) do seen[a] = true end
  for _, a in ipairs { "tokens", "hidden", "axis_0" } do
    if not seen[a] then list[#list + 1] = a; seen[a] = true end
  end
  for _, e in ipairs(K._.extras) do
    if not seen[e.name] then list[#list + 1] = e.name; seen[e.name] = true end
  end
  list[#list + 1] = "in<slot>.<dim>"
  return list
end

function A.is_axis(K, name)
  if type(name) ~= "string" then return false end
  if name:match("^in%d+%.%d+$") then return true end
  for _, a in ipairs(A.axes(K)) do if a == name then return true end end
  return false
end

local function slot_text(s, blank)
  if s.scalar then return "()" end
  local parts = {}
  for i, d in ipairs(s) do parts[i] = blank and blank(d, i) and "_" or tostring(d) end
  return table.concat(parts, ",")
end

-- blank(d, slot, dim, rank) -> true to write the dim as "_" (it follows the axis)
local function shapes_text(shapes, blank)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = slot_text(s, blank and function(d, j) return blank(d, i, j, #s) end) end
  return table.concat(parts, ";")
end

-- Text in natural order: runs of digits compare as numbers ("_,1280" before "_,10240").
local function natural_less(a, b)
  local i, j = 1, 1
  while i <= #a and j <= #b do
    local na, ea = a:match("^(%d+)()", i)
    local nb, eb = b:match("^(%d+)()", j)
    if na and nb then
      if #na ~= #nb then return #na < #nb end  -- no leading zeros in shapes: length orders
      if na ~= nb then return na < nb end
      i, j = ea, eb
    else
      local ca, cb = a:sub(i, i), b:sub(j, j)
      if ca ~= cb then return ca < cb end
      i, j = i + 1, j + 1
    end
  end
  return #a - i < #b - j
end
A.natural_less = natural_less

local function extras_text(p, skip)
  if next(p.extras) == nil then return "" end
  local names = {}
  for k in pairs(p.extras) do if k ~= skip then names[#names + 1] = k end end
  table.sort(names)
  local parts = {}
  for i, k in ipairs(names) do parts[i] = k .. "=" .. tostring(p.extras[k]) end
  return table.concat(parts, ",")
end

local matmul_axes_of
-- (cached in the point: the three axes of a matmul point are split from one reading)
local function matmul_axes(p)
  local c = p.mm
  if c then return c[1], c[2], c[3] end
  local ax, tail, layout = matmul_axes_of(p)
  p.mm = { ax, tail, layout }
  return ax, tail, layout
end

function matmul_axes_of(p)
  local a, b = p.shapes[1], p.shapes[2]
  if not a or not b or a.scalar or b.scalar or #a < 2 or #b < 2 then return nil end
  local m, k = a[#a - 1], a[#a]
  local n, layout
  if b[#b - 1] == k then n, layout = b[#b], "k,n" else n, layout = b[#b - 1], "n,k" end
  local batch = {}
  for i = 1, #a - 2 do batch[#batch + 1] = a[i] end
  local bb = {}
  for i = 1, #b - 2 do bb[#bb + 1] = b[i] end
  local rest = {}
  for i = 3, #p.shapes do rest[#rest + 1] = slot_text(p.shapes[i]) end
  -- the rhs layout (k,n or n,k) is not part of the consumer's regime key
  local b_txt = (#batch > 0 or #bb > 0) and (" batch=" .. table.concat(batch, ",") .. "/" .. table.concat(bb, ",")) or ""
  return { M = m, K = k, N = n }, b_txt .. (#rest > 0 and (" +" .. table.concat(rest, ";")) or ""), layout
end

-- The value of point p on a shape axis, the axis's own positions (own(slot, dim) -> true) and
-- whether a dim value elsewhere carries it (carries(d)); nil when p has no such axis.
local function axis_of(K, p, axis)
  local s1 = p.shapes[1]
  if axis == "tokens" then
    if not s1 or s1.scalar or #s1 < 2 then return nil end
    local v, lead = 1, {}
    for i = 1, #s1 - 1 do v = v * s1[i]; lead[s1[i]] = true end
    lead[v] = true
    return v, function(i, j) return i == 1 and j < #s1 end, function(d) return lead[d] end
  end
  local si, di
  if axis == "hidden" then
    if not s1 or s1.scalar or #s1 < 2 then return nil end
    si, di = 1, #s1
  elseif axis == "axis_0" then
    if not s1 or s1.scalar or #s1 < 1 then return nil end
    si, di = 1, #s1 - #match.strip1(s1) + 1
  else
    local a, b = axis:match("^in(%d+)%.(%d+)$")
    if not a then perf.fail("%s: unknown axis '%s' (axes: %s)", K.name, tostring(axis), table.concat(A.axes(K), ", ")) end
    si, di = tonumber(a), tonumber(b)
    local s = p.shapes[si]
    if not s or s.scalar or not s[di] then return nil end
  end
  local v = p.shapes[si][di]
  return v, function(i, j) return i == si and j == di end, function(d) return d == v end
end

-- The positions (slot, dim, rank) outside the axis's own that carry its value in most of the
-- kernel's points: they follow the axis (an elementwise kernel's second (tokens, D) input,
-- GroupedMatmul's per-token scale (M)). A value equal by chance (tokens = hidden, M = the
-- expert count) is in few points, so its position does not follow and the point stays in
-- its bucket. first: the first slot that may follow (3 for matmul axes). Cached per axis.
local function follows(K, axis, first, value_of)
  local s = K._
  s.follows = s.follows or {}
  if s.follows[axis] then return s.follows[axis] end
  local eq, total = {}, {}
  for _, p in ipairs(A.points(K)) do
    local v, own, carries = value_of(p)
    if v then
      for i = first, #p.shapes do
        local sh = p.shapes[i]
        if not sh.scalar then
          for j, d in ipairs(sh) do
            if not (own and own(i, j)) then
              local key = i .. "." .. j .. "." .. #sh
              total[key] = (total[key] or 0) + 1
              if carries(d) then eq[key] = (eq[key] or 0) + 1 end
            end
          end
        end
      end
    end
  end
  local f = {}
  for key, n in pairs(total) do if (eq[key] or 0) * 2 > n then f[key] = true end end
  s.follows[axis] = f
  return f
end

-- value, rest description (without dtypes) of point p on axis; nil when p has no such axis.
-- The rest writes the axis's positions, and those that follow it, as "_".
function A.split(K, p, axis)
  local ex = extras_text(p, axis)
  if is_matmul(K) and (axis == "M" or axis == "K" or axis == "N") then
    local ax, tail = matmul_axes(p)
    if not ax then return nil end
    local f = follows(K, axis, 3, function(q)
      local a = matmul_axes(q)
      if not a then return nil end
      return a[axis], nil, function(d) return d == a[axis] end
    end)
    if next(f) then
      local rest = {}
      for i = 3, #p.shapes do
        local sh = p.shapes[i]
        rest[#rest + 1] = slot_text(sh, function(d, j) return f[i .. "." .. j .. "." .. #sh] and d == ax[axis] end)
      end
      tail = tail:gsub(" %+.*$", "") .. (#rest > 0 and (" +" .. table.concat(rest, ";")) or "")
    end
    local others = {}
    for _, a in ipairs { "M", "K", "N" } do if a ~= axis then others[#others + 1] = a .. "=" .. ax[a] end end
    return ax[axis], table.concat(others, " ") .. tail .. (ex ~= "" and (" " .. ex) or "")
  end
  for _, e in ipairs(D.EXTRAS) do
    if e.name == axis then
      local v = p.extras[axis]
      if v == nil then return nil end
      return v, shapes_text(p.shapes) .. (ex ~= "" and (" " .. ex) or "")
    end
  end
  local v, own, carries = axis_of(K, p, axis)
  if not v then return nil end
  local f = follows(K, axis, 1, function(q) return axis_of(K, q, axis) end)
  local blank = function(d, i, j, n) return own(i, j) or (f[i .. "." .. j .. "." .. n] and carries(d)) end
  return v, shapes_text(p.shapes, blank) .. (ex ~= "" and (" " .. ex) or "")
end

-- Buckets along an axis: key "rest|dtypes" -> {rest, dtypes, pts = sorted {v, lat, p}}.
-- Only points with a valid latency count (density gate 7).
function A.buckets(K, axis)
  local s = K._
  s.buckets = s.buckets or {}
  if s.buckets[axis] then return s.buckets[axis] end
  local t = K:table()
  local map, list = {}, {}
  for _, p in ipairs(A.points(K)) do
    if p.lat then
      local v, rest = A.split(K, p, axis)
      if v then
        local key = rest .. "|" .. p.dtypes
        local b = map[key]
        if not b then
          b = { key = key, rest = rest, dtypes = p.dtypes, pts = {}, rep = p }
          map[key] = b
          list[#list + 1] = b
        end
        b.pts[#b.pts + 1] = { v = v, lat = p.lat, p = p, line = t:line(p.first), rows = p.size }
      end
    end
  end
  for _, b in ipairs(list) do
    table.sort(b.pts, function(x, y) if x.v ~= y.v then return x.v < y.v end return x.p.first < y.p.first end)
    -- the same value twice (runtime columns differ elsewhere): keep the median, as the consumer
    local merged = {}
    for _, pt in ipairs(b.pts) do
      local last = merged[#merged]
      if last and last.v == pt.v then
        last.all = last.all or { last.lat }
        last.all[#last.all + 1] = pt.lat
        -- which point gave which latency: a point left out leaves the others' median
        last.members = last.members or { last.p }
        last.members[#last.members + 1] = pt.p
        last.rows = last.rows + pt.rows
      else
        merged[#merged + 1] = pt
      end
    end
    for _, pt in ipairs(merged) do if pt.all then pt.lat = median(table.move(pt.all, 1, #pt.all, 1, {})) end end
    b.pts = merged
  end
  s.buckets[axis] = { map = map, list = list }
  return s.buckets[axis]
end

-- The point of a query (shapes, dtypes, runtime values such as seq = 2048).
local function query_point(K, query, dtypes)
  local q = K:_query(query, dtypes)
  local p = { shapes = q.shapes, dtypes = q.dtypes and table.concat(q.dtypes, ";") or nil, extras = {} }
  if type(query) == "table" then
    for _, e in ipairs(D.EXTRAS) do
      if query[e.name] ~= nil then p.extras[e.name] = tonumber(query[e.name]) end
    end
  end
  return p, q
end

A.query_point = query_point

local function fixed_ok(K, b, fixed)
  if not fixed then return true end
  for k, v in pairs(fixed) do
    if k == "dtypes" then
      local want = K:table():key({ kind = "list" }, type(v) == "table" and table.concat(v, ";") or tostring(v))
      if b.dtypes ~= want then return false end
    else
      local got = A.split(K, b.rep, k)
      if got ~= v then return false end
    end
  end
  return true
end

-- ---- coverage -------------------------------------------------------------------------------

function A.coverage(K, axis, fixed, opts)
  opts = opts or {}
  if type(axis) == "table" and fixed == nil then axis, fixed = nil, axis end
  axis = axis or A.default_axes(K)[1]
  local grid = opts.grid or density.grid_for(K.name, axis, is_matmul(K))
  local bks = A.buckets(K, axis)
  local list = {}
  for _, b in ipairs(bks.list) do if fixed_ok(K, b, fixed) then list[#list + 1] = b end end
  -- most points first, then the bucket in natural order (128 before 1280 before 10240)
  table.sort(list, function(x, y) if #x.pts ~= #y.pts then return #x.pts > #y.pts end return natural_less(x.key, y.key) end)
  local fixed_txt = {}
  for k, v in pairs(fixed or {}) do fixed_txt[#fixed_txt + 1] = k .. "=" .. tostring(v) end
  table.sort(fixed_txt)
  local where = #fixed_txt > 0 and (" where " .. table.concat(fixed_txt, ", ")) or ""
  if #list == 1 or (opts.detail and #list > 0) then
    local b = list[1]
    local values = {}
    for i, pt in ipairs(b.pts) do values[i] = pt.v end
    local problems, at = density.check(grid, values)
    local res = R.new(nil, { axis, "latency(us)", "line", "rows", "gap" })
    for _, pt in ipairs(b.pts) do
      res[#res + 1] = { [axis] = pt.v, ["latency(us)"] = pt.lat, line = pt.line, rows = pt.rows, gap = at[pt.v] }
    end
    res.title = string.format("coverage %s along %s%s: %d values %s..%s in bucket [%s] %s (standard: %s)", K.name, axis, where,
                              #values, values[1], values[#values], b.rest, b.dtypes, grid or "none for this axis")
    local ngaps = 0
    for _, pr in ipairs(problems) do
      if pr.value then ngaps = ngaps + 1 else res:note("%s", pr.why) end
    end
    if #values < 2 then
      res:note("1 point, no gap measurable: nothing can interpolate here (insufficient_filtered_candidates)")
    else
      res:note("%d gaps against the standard; a target inside %s..%s interpolates between its neighbours, outside it misses (outside_axis_boundary)",
               ngaps, values[1], values[#values])
    end
    res.values, res.axis, res.bucket, res.grid, res.problems = values, axis, b, grid, problems
    return res
  end
  local res = R.new(nil, { "bucket", "dtypes", "points", "min", "max", "gaps" })
  local ones = 0
  for _, b in ipairs(list) do
    local values = {}
    for i, pt in ipairs(b.pts) do values[i] = pt.v end
    local problems = density.check(grid, values)
    local gaps = 0
    for _, pr in ipairs(problems) do if pr.value then gaps = gaps + 1 end end
    if #values < 2 then ones = ones + 1; gaps = "-" end  -- one point: no gap to measure
    res[#res + 1] = { bucket = b.rest, dtypes = b.dtypes, points = #values, min = values[1], max = values[#values],
                      gaps = gaps, _bucket = b }
  end
  if ones > 0 then
    res:note("%d bucket%s with 1 point: no gap measurable (gaps -), and nothing interpolates there", ones, ones == 1 and "" or "s")
  end
  res.title = string.format("coverage %s along %s%s: %d buckets (standard: %s)", K.name, axis, where, #list,
                            grid or "none for this axis")
  res:note("fix the other axes for one bucket's values, e.g. db:coverage(\"%s\", \"%s\", {%s})", K.name, axis,
           is_matmul(K) and (axis == "M" and "K = 7168, N = 2048" or "M = 128") or
             (axis == "tokens" and "hidden = 7168" or "tokens = 128"))
  res.axis, res.buckets, res.grid = axis, list, grid
  return res
end

-- ---- interp -------------------------------------------------------------------------------

-- First index of a bucket's sorted points whose value is >= v.
local function find(pts, v)
  local lo, hi = 1, #pts + 1
  while lo < hi do
    local mid = (lo + hi) // 2
    if pts[mid].v < v then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- The consumer's bracket of qv in a bucket (points sorted by distinct value): lo = the last
-- point at or below qv, hi = the first at or above. skip (a point of A.points, on value skipv)
-- is left out, as if its rows were not in the file (leave-one-out accuracy): a value that
-- other points share keeps their median. Returns lo, hi (nil when a side is missing) and the
-- number of points left.
function A.bracket(pts, qv, skip, skipv)
  local j, stand
  if skip then
    local i = find(pts, skipv)
    local pt = pts[i]
    if pt and pt.v == skipv then
      if pt.members then
        local others, found = {}, false
        for m, p in ipairs(pt.members) do
          if p == skip then found = true else others[#others + 1] = pt.all[m] end
        end
        if found then
          j = i
          if #others > 0 then
            stand = setmetatable({ lat = median(others), rows = pt.rows - skip.size }, { __index = pt })
          end
        end
      elseif pt.p == skip then
        j = i
      end
    end
  end
  local n = #pts - ((j and not stand) and 1 or 0)
  local i, m = find(pts, qv), #pts
  local hi, lo
  -- the skipped index answers with its stand-in (nil: gone)
  if i == j then hi = stand; if not hi and i < m then hi = pts[i + 1] end
  elseif i <= m then hi = pts[i] end
  if hi and hi.v == qv then lo = hi
  elseif i - 1 == j then lo = stand; if not lo and i > 2 then lo = pts[i - 2] end
  elseif i > 1 then lo = pts[i - 1] end
  return lo, hi, n
end

-- The axis transform the mapping's interpolation policy sets for kernel K (FIA: sqrt_seq on
-- seq), unless opts.transform simulates another: a function of the axis value.
function A.transform(K, axis, opts)
  local transform = opts and opts.transform
  if transform == nil then
    local s = K._
    if s.policy == nil then
      local doc = require("perfscript.db.mapping").load(K.db)
      local ov = doc and type(doc.interpolation_policy) == "table" and doc.interpolation_policy.kernel_overrides
      s.policy = type(ov) == "table" and type(ov[K.name]) == "table" and ov[K.name] or {}
    end
    transform = s.policy.axis_transform
  end
  if axis == "seq" and transform == "sqrt_seq" then return math.sqrt end
  return nil
end

-- One axis of the consumer's 1-D interpolation: qv in the bucket's points pts, skip left out
-- (A.bracket), f the axis transform (nil: linear). Returns the record db:interp prints
-- (status, latency(us), lower, upper ...), the bracket's lo and hi, and the weight.
function A.solve(pts, qv, f, skip, skipv)
  local rec = {}
  local lo, hi, n = A.bracket(pts, qv, skip, skipv)
  rec.points = n
  if n == 0 then
    rec.status = "regime_key_unmatched (no measured row with the other axes equal)"
  elseif lo and hi and lo.v == qv then
    rec.status, rec["latency(us)"] = "exact_axis_value", lo.lat
    rec.lower, rec["lower(us)"], rec.upper, rec["upper(us)"] = lo.v, lo.lat, lo.v, lo.lat
    return rec, lo, lo
  elseif n < 2 then
    rec.status = "insufficient_filtered_candidates"
  elseif not lo or not hi then
    local _, first = A.bracket(pts, -math.huge, skip, skipv)
    local last = A.bracket(pts, math.huge, skip, skipv)
    rec.status = string.format("outside_axis_boundary [%s, %s]", first.v, last.v)
  else
    local w
    if f then w = (f(qv) - f(lo.v)) / (f(hi.v) - f(lo.v)) else w = (qv - lo.v) / (hi.v - lo.v) end
    rec["latency(us)"] = lo.lat + (hi.lat - lo.lat) * w
    rec.status = f == math.sqrt and "interpolated (linear_1d_sqrt)" or "interpolated (linear_1d)"
    rec.lower, rec["lower(us)"], rec.upper, rec["upper(us)"] = lo.v, lo.lat, hi.v, hi.lat
    return rec, lo, hi, w
  end
  return rec
end

-- A one-axis linear interpolation preview: per axis, the bucket of the query, its bracket,
-- and the result; the first axis that succeeds answers. Never extrapolates. opts.exclude: a
-- row (its index) or a point of A.points left out, as if not in the file (leave-one-out).
function A.interp(K, query, dtypes, opts)
  if type(dtypes) == "table" and not dtypes[1] and opts == nil then opts, dtypes = dtypes, nil end
  opts = opts or {}
  local p = query_point(K, query, dtypes)
  local axes = opts.axis and { opts.axis } or A.default_axes(K)
  local res = R.new(nil, { "axis", "target", "status", "points", "lower", "lower(us)", "upper", "upper(us)", "latency(us)" })
  local t = K:table()
  local skip = opts.exclude
  if math.type(skip) == "integer" then skip = A.point_of_row(K, skip) end
  for _, axis in ipairs(axes) do
    local qv, qrest = A.split(K, p, axis)
    local rec = { axis = axis, target = qv }
    if qv == nil then
      rec.status = "missing_target_axis"
    else
      local bks = A.buckets(K, axis)
      local b
      if p.dtypes then
        b = bks.map[qrest .. "|" .. t:key({ kind = "list" }, p.dtypes)]
      else
        for _, x in ipairs(bks.list) do if x.rest == qrest then b = x; break end end
      end
      local skipv = skip and (A.split(K, skip, axis))
      local r, lo, hi, w = A.solve(b and b.pts or {}, qv, A.transform(K, axis, opts), skip, skipv)
      for k, v in pairs(r) do rec[k] = v end
      if lo == hi and lo then res.bracket = { lo, lo }
      elseif lo and not res.latency then res.bracket = { lo, hi }; res.weight = w end
      if b then rec.bucket = b.rest .. " " .. b.dtypes end
    end
    res[#res + 1] = rec
    if rec["latency(us)"] and not res.latency then
      res.latency, res.axis = rec["latency(us)"], axis
      res.source = rec.status == "exact_axis_value" and "MEASURED" or "INTERPOLATED"
      if not opts.all then break end
    end
  end
  local label = D.shapes_label(p.shapes) .. (p.dtypes and (" " .. p.dtypes) or "")
  if res.latency then
    local lo, hi = res.bracket[1], res.bracket[2]
    res.title = string.format("interp %s %s: %s %s us on %s (%s=%s line %d .. %s=%s line %d)", K.name, label,
                              res.source, R.fmt(res.latency), res.axis, res.axis, lo.v, lo.line, res.axis, hi.v, hi.line)
    if res.source == "INTERPOLATED" then res.confidence = 0.7 end
  else
    res.title = string.format("interp %s %s: no interpolation on %s", K.name, label, table.concat(axes, ", "))
    res.miss = "wrapper_interpolation_failed"
  end
  if skip then res:note("left out: line %d (%d row%s), as if not in the file", K:table():line(skip.first), skip.size,
                        skip.size == 1 and "" or "s") end
  if not p.dtypes then res:note("no dtypes given: the first bucket with the same other axes was used") end
  return res
end

-- The point (distinct signature, A.points) row i belongs to.
function A.point_of_row(K, i)
  local s = K._
  if not s.row_point then
    local map = {}
    for _, p in ipairs(A.points(K)) do
      if p.rows then for _, r in ipairs(p.rows) do map[r] = p end else map[p.first] = p end
    end
    s.row_point = map
  end
  local p = s.row_point[i]
  if not p then perf.fail("%s: no row %s", K.name, tostring(i)) end
  return p
end

-- ---- nearest ------------------------------------------------------------------------------

function A.nearest(K, query, k, opts)
  if type(k) == "table" then opts, k = k, nil end
  opts = opts or {}
  k = k or opts.k or 5
  local p = query_point(K, query, opts.dtypes)
  local t = K:table()
  local want_dt = p.dtypes and t:key({ kind = "list" }, p.dtypes)
  local best = {}
  local function dist(a)
    if #a.shapes ~= #p.shapes then return nil end
    local sum = 0
    for i, s in ipairs(p.shapes) do
      local r = a.shapes[i]
      if (s.scalar or false) ~= (r.scalar or false) or (not s.scalar and #s ~= #r) then return nil end
      if not s.scalar then
        for j = 1, #s do
          local d = math.log(math.max(s[j], 1)) - math.log(math.max(r[j], 1))
          sum = sum + d * d
        end
      end
    end
    for name, v in pairs(p.extras) do
      local x = a.extras[name]
      if x == nil then return nil end
      if name == "seq" or name == "batch" or name == "bytes" then
        local d = math.log(math.max(v, 1)) - math.log(math.max(x, 1))
        sum = sum + d * d
      elseif x ~= v then
        return nil
      end
    end
    return math.sqrt(sum)
  end
  local considered = 0
  for _, a in ipairs(A.points(K)) do
    if (a.lat or opts.all) and (not want_dt or a.dtypes == want_dt) then
      local d = dist(a)
      if d then
        considered = considered + 1
        if #best < k or d < best[#best].d then
          local e = { d = d, p = a }
          local pos = #best + 1
          while pos > 1 and best[pos - 1].d > d do pos = pos - 1 end
          table.insert(best, pos, e)
          if #best > k then best[#best] = nil end
        end
      end
    end
  end
  local res = R.new(nil, { "rank", "line", D.IS, D.IDT, "latency(us)", "rows", "distance" })
  for i, e in ipairs(best) do
    local rec = K:_row_record(e.p.first)
    rec.rank, rec.rows, rec.distance, rec["latency(us)"] = i, e.p.size, e.d, e.p.lat
    res[#res + 1] = rec
  end
  res.title = string.format("nearest %s to %s%s: %d of %d comparable signatures (same slots, ranks%s)", K.name,
                            D.shapes_label(p.shapes), p.dtypes and (" " .. p.dtypes) or "", #best, considered,
                            want_dt and ", dtypes" or "")
  res:note("distance: Euclidean over log(dim) of every input dimension (0 = the same shape)")
  return res
end

-- ---- outliers -----------------------------------------------------------------------------

function A.outliers(K, opts)
  opts = opts or {}
  local tol = opts.tolerance or 0.1
  local res = R.new(nil, { "kind", "line", "axis", "from", "to", "from(us)", "to(us)", "ratio", "bucket" })
  local axes = opts.axis and { opts.axis } or A.default_axes(K)
  local breaks = 0
  for _, axis in ipairs(axes) do
    for _, b in ipairs(A.buckets(K, axis).list) do
      for i = 2, #b.pts do
        local a, c = b.pts[i - 1], b.pts[i]
        if c.lat < a.lat * (1 - tol) then
          breaks = breaks + 1
          res[#res + 1] = { kind = "monotonicity", line = c.line, axis = axis, from = a.v, to = c.v,
                            ["from(us)"] = a.lat, ["to(us)"] = c.lat, ratio = c.lat / a.lat,
                            bucket = b.rest .. " " .. b.dtypes }
        end
      end
    end
  end
  local t = K:table()
  local gaps = 0
  local ca, cp = t:column("Average Duration(us)"), t:column("Profiling Average Duration(us)")
  if ca and cp then
    local av, pv = t:nums(ca), t:nums(cp)
    for i = 1, #t do
      local a, p = av[i], pv[i]
      if a and p and a > 0 and p > 0 then
        local r = a / p
        if r < 0.8 or r > 1.2 then
          gaps = gaps + 1
          res[#res + 1] = { kind = "microbench/profiling", line = t:line(i), ["from(us)"] = p, ["to(us)"] = a,
                            ratio = r, bucket = (t:cell(i, D.IS):gsub('"', "")) }
        end
      end
    end
  end
  res.title = string.format("outliers %s: %d monotonicity breaks (a larger %s more than %d%% faster), %d microbench/profiling gaps outside [0.8, 1.2]",
                            K.name, breaks, table.concat(axes, "/"), math.floor(tol * 100 + 0.5), gaps)
  if not (ca and cp) then res:note("no microbench/profiling pair: the file lacks one of the two columns") end
  return res
end

-- The value of an axis for one row (rows{M = 128}).
function A.row_axis(K, i, axis)
  local t = K:table()
  local shapes, dtypes = K:_inputs(i)
  if not shapes then return nil end
  local p = { shapes = shapes, dtypes = table.concat(dtypes, ";"), extras = {} }
  for _, e in ipairs(D.EXTRAS) do
    for _, c in ipairs(e.cols) do
      if t:column(c) then p.extras[e.name] = tonumber(t:cell(i, c)); break end
    end
  end
  return (A.split(K, p, axis))
end

function A.install(db)
  D = db
  local K = db.Kmethods
  K.nearest = function(self, ...) return A.nearest(self, ...) end
  K.coverage = function(self, ...) return A.coverage(self, ...) end
  K.interp = function(self, ...) return A.interp(self, ...) end
  K.outliers = function(self, ...) return A.outliers(self, ...) end
  K.axes = function(self) return A.axes(self) end
end

return A
