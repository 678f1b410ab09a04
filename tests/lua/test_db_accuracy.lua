-- Leave-one-out accuracy (issue 18): the errors of a small generated matmul kernel, computed
-- here independently (linear interpolation between each point's two neighbours along M in its
-- own (K, N) bucket, the ends unpredictable), equal db:accuracy's; a duplicated signature is
-- left out whole; db:interp with {exclude = row} gives the same prediction; a filter selects
-- the targets.
local lu = require "luaunit"
local h = require "helpers"
local perf = require "perfscript"

local HEAD = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Average Duration(us)\n"
local MS = { 16, 32, 64, 128, 256, 512, 1024 }
local BUCKETS = { { k = 7168, n = 2048 }, { k = 1536, n = 576 } }

local function lat(m, k, n) return 2 + (m ^ 1.3) * k * n / 3e8 end

-- rows (M, K, N, latency) in file order; the M = 128 point of the first bucket twice
local function rows()
  local out = {}
  for _, b in ipairs(BUCKETS) do
    for _, m in ipairs(MS) do out[#out + 1] = { m = m, k = b.k, n = b.n, lat = lat(m, b.k, b.n) } end
  end
  out[#out + 1] = { m = 128, k = 7168, n = 2048, lat = lat(128, 7168, 2048) * 1.5, dup = true }
  return out
end

local function make()
  local d = h.tmpdir()
  local text = { HEAD }
  for _, r in ipairs(rows()) do
    text[#text + 1] = string.format('"%d,%d;%d,%d",DT_BF16;DT_BF16,ND;ND,"%d,%d",DT_BF16,%.6f\n', r.m, r.k, r.n, r.k,
                                    r.m, r.n, r.lat)
  end
  h.write(d .. "/MatMulV2.csv", table.concat(text))
  return assert(perf.open(d))
end

-- The expected errors by (M, K): the median of a signature's rows, its neighbours along M.
local function expected()
  local by = {}
  for _, r in ipairs(rows()) do
    local key = r.m .. "," .. r.k
    by[key] = by[key] or { m = r.m, k = r.k, n = r.n, lats = {} }
    table.insert(by[key].lats, tonumber(string.format("%.6f", r.lat)))
  end
  for _, p in pairs(by) do
    table.sort(p.lats)
    p.lat = #p.lats == 2 and (p.lats[1] + p.lats[2]) / 2 or p.lats[1]
  end
  local out = {}
  for _, b in ipairs(BUCKETS) do
    for i, m in ipairs(MS) do
      local p = by[m .. "," .. b.k]
      if i > 1 and i < #MS then
        local lo, hi = by[MS[i - 1] .. "," .. b.k], by[MS[i + 1] .. "," .. b.k]
        local pred = lo.lat + (hi.lat - lo.lat) * (m - lo.m) / (hi.m - lo.m)
        out[m .. "," .. b.k] = (pred - p.lat) / p.lat
      else
        out[m .. "," .. b.k] = false
      end
    end
  end
  return out
end

TestAccuracy = {}

function TestAccuracy:test_errors_match_an_independent_computation()
  local db = make()
  local res = db:accuracy("MatMulV2")
  local want = expected()
  local seen, errs = 0, {}
  for _, r in ipairs(res.records) do
    local key = r.p.shapes[1][1] .. "," .. r.p.shapes[1][2]
    lu.assertNotNil(want[key], key)
    if want[key] then
      lu.assertAlmostEquals(r.err, want[key], 1e-12, key)
      lu.assertEquals(r.axis, "M")
      errs[#errs + 1] = math.abs(want[key])
    else
      lu.assertNil(r.err, key)
      lu.assertStrContains(r.miss, "M: outside_axis_boundary")
    end
    seen = seen + 1
  end
  lu.assertEquals(seen, #MS * #BUCKETS)  -- one record per signature, the duplicate included once
  table.sort(errs)
  lu.assertEquals(res.summary.predicted, #errs)
  lu.assertEquals(res.summary.missed, 4)
  lu.assertAlmostEquals(res.summary.max, errs[#errs], 1e-15)
  lu.assertAlmostEquals(res.summary.p90, errs[math.ceil(0.9 * #errs)], 1e-15)
  lu.assertAlmostEquals(res.summary.p50, errs[math.ceil(0.5 * #errs)], 1e-15)
  lu.assertStrContains(res.title, "14 signatures, 10 predicted, 4 cannot be")
  lu.assertStrContains(table.concat(res.notes, "\n"), "cannot be predicted: 4 by M: outside_axis_boundary")
  -- the worst row first, with its neighbours
  lu.assertAlmostEquals(math.abs(res[1]["error%"]), errs[#errs] * 100, 1e-9)
  lu.assertStrContains(res[1].lower, "line")
end

function TestAccuracy:test_duplicate_signature_is_left_out_whole()
  local db = make()
  local res = db:accuracy("MatMulV2")
  for _, r in ipairs(res.records) do
    if r.p.shapes[1][1] == 128 and r.p.shapes[1][2] == 7168 then
      lu.assertEquals(r.rows, 2)
      lu.assertEquals(r.lo.v, 64)
      lu.assertEquals(r.hi.v, 256)
    end
  end
end

function TestAccuracy:test_interp_exclude_gives_the_same_prediction()
  local db = make()
  local res = db:accuracy("MatMulV2")
  local checked = 0
  for _, r in ipairs(res.records) do
    local q = string.format("%d,%d;%d,%d", r.p.shapes[1][1], r.p.shapes[1][2], r.p.shapes[2][1], r.p.shapes[2][2])
    local plain = db:interp("MatMulV2", q, "DT_BF16")
    lu.assertEquals(plain.source, "MEASURED")
    local left = db:interp("MatMulV2", q, "DT_BF16", { exclude = r.p.first })
    if r.err then
      lu.assertEquals(left.source, "INTERPOLATED")
      lu.assertEquals(left.latency, r.predicted)
      checked = checked + 1
    else
      lu.assertNil(left.latency)
    end
    lu.assertStrContains(table.concat(left.notes, "\n"), "left out: line " .. r.line)
  end
  lu.assertEquals(checked, 10)
end

function TestAccuracy:test_filter_selects_targets_not_neighbours()
  local db = make()
  local res = db:accuracy("MatMulV2", { K = 1536 })
  lu.assertEquals(res.summary.n, #MS)
  lu.assertEquals(res.summary.predicted, #MS - 2)
  local all = db:accuracy("MatMulV2")
  lu.assertEquals(all.summary.n, 2 * #MS)
end

function TestAccuracy:test_a_shared_axis_value_keeps_the_others_median()
  -- two points of one bucket on the same M (they differ in a runtime column the bucket ignores):
  -- leaving one out, the other answers exactly, as the consumer's bucket would
  local A = require "perfscript.db.analysis"
  local p1, p2, p3 = { size = 1 }, { size = 1 }, { size = 1 }
  local pts = { { v = 16, lat = 1, p = p3, line = 2, rows = 1 },
                { v = 32, lat = 3, p = p1, line = 3, rows = 2, all = { 2, 4 }, members = { p1, p2 } } }
  local lo, hi, n = A.bracket(pts, 32, p2, 32)
  lu.assertEquals(n, 2)
  lu.assertIs(lo, hi)
  lu.assertEquals(lo.lat, 2)
  lo, hi, n = A.bracket(pts, 24, p3, 16)
  lu.assertNil(lo)
  lu.assertEquals(hi.v, 32)
  lu.assertEquals(n, 1)
end

os.exit(lu.LuaUnit.run())
