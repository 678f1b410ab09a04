-- The indexed compute lookup against the consumer's definition (issue 14): the input rules in C
-- (match.rule, match.padded, match.pads) against the Lua rules they replaced, on many shapes; and
-- db:lookup on a generated database against a scan of every row (each row with a valid latency
-- matched by match.row, the best by distance, latency column and file order), over thousands
-- of queries built to reach the key index, the slot search (transposes, batch strips and
-- paddings together) and the misses.
local lu = require "luaunit"
local h = require "tests.lua.helpers"
local perf = require "perfscript"
local match = require "perfscript.db.match"

-- ---- the Lua rules before they moved to C (src/schema/lookup_key.c), as the oracle --------

local REF = {}
do
  local function eq(a, b)
    if a.scalar or b.scalar then return a.scalar == b.scalar end
    if #a ~= #b then return false end
    for i = 1, #a do if a[i] ~= b[i] then return false end end
    return true
  end
  local function strip1(s)
    if s.scalar or #s <= 1 or s[1] ~= 1 then return s end
    return table.move(s, 2, #s, 1, {})
  end
  function REF.padded(tc, csv)
    if tc <= csv or tc - csv >= 64 then return false end
    return tc == (csv + 15) // 16 * 16 or tc == (csv + 31) // 32 * 32 or tc == (csv + 63) // 64 * 64 or
           (csv >= 64 and tc == (csv + 7) // 8 * 8)
  end
  local function dims_padded(tc, csv)
    if tc.scalar or csv.scalar or #tc ~= #csv then return false end
    local any = false
    for i = 1, #tc do
      if tc[i] ~= csv[i] then
        if not REF.padded(tc[i], csv[i]) then return false end
        any = true
      end
    end
    return any
  end
  REF.pads = dims_padded
  function REF.rule(kernel, i, tc, csv)
    if eq(tc, csv) then return "identity" end
    local st, sc = strip1(tc), strip1(csv)
    if eq(st, sc) or eq(st, csv) then return "batch_strip" end
    if tc.scalar or csv.scalar then return nil end
    if kernel == "Index" and #tc == 2 and #csv == 2 and tc[1] == 1 and csv[2] == 1 and csv[1] == tc[2] then
      return "singleton_axis_transpose"
    end
    if match.MATMUL[kernel] and i >= 2 then
      if #st == 2 and #csv == 2 and st[1] == csv[2] and st[2] == csv[1] then return "transpose" end
      if #st == 3 and #csv == 3 and st[1] == csv[1] and st[2] == csv[3] and st[3] == csv[2] then
        return "batched_transpose"
      end
    end
    if dims_padded(st, csv) then return "padding" end
    if dims_padded(st, sc) then return "batch_strip+padding" end
    if match.FLATTEN_3D[kernel] and #csv == 2 then
      local s3 = #st == 3 and st or #tc == 3 and tc or nil
      if s3 then
        local f = { s3[1] * s3[2], s3[3] }
        if eq(f, csv) then return "flatten_3d" end
        if dims_padded(f, csv) then return "flatten_3d+padding" end
        if match.MERGE_LAST[kernel] then
          f = { s3[1], s3[2] * s3[3] }
          if eq(f, csv) then return "merge_last_dims" end
          if dims_padded(f, csv) then return "merge_last_dims+padding" end
        end
      end
    end
    return nil
  end
end

local DIMS = { 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 48, 56, 63, 64, 65, 72, 100, 112, 120, 128, 130, 136,
               192, 960, 1000, 1024, 4096, 0, -1, -17, math.maxinteger, math.mininteger, math.mininteger + 5 }

local function rnd_shape(rng)
  local r = rng(0, 4)
  if r == 0 then return rng(1, 2) == 1 and { scalar = true } or {} end
  local s = {}
  for d = 1, r do s[d] = DIMS[rng(1, #DIMS)] end
  if rng(1, 3) == 1 then s[1] = 1 end
  return s
end

-- A row shape related to tc the way the rules relate them (so that most rules are met).
local function related(rng, tc)
  if tc.scalar or #tc == 0 then return rnd_shape(rng) end
  local s = table.move(tc, 1, #tc, 1, {})
  local how = rng(1, 7)
  if how == 1 and #s >= 2 then s[#s - 1], s[#s] = s[#s], s[#s - 1]
  elseif how == 2 then table.insert(s, 1, 1)
  elseif how == 3 and s[1] == 1 and #s > 1 then table.remove(s, 1)
  elseif how == 4 then local d = rng(1, #s); s[d] = s[d] - rng(1, 70)
  elseif how == 5 and #s == 3 then s = { s[1] * s[2], s[3] - rng(0, 1) * rng(1, 20) }
  elseif how == 6 and #s == 3 then s = { s[1], s[2] * s[3] }
  elseif how == 7 and #s == 2 then s = { s[2], 1 }
  end
  return s
end

TestRulesInC = {}

function TestRulesInC:test_rule_padded_pads_equal_lua()
  local seed = 14
  local function rng(a, b)  -- deterministic, independent of math.random's state
    seed = (seed * 1103515245 + 12345) % 2147483648
    return a + seed % (b - a + 1)
  end
  local kernels = { "MatMulV2", "BatchMatMulV2", "RmsNorm", "AscendQuantV2", "Index", "Add" }
  local n, hits = 0, 0
  for _ = 1, 60000 do
    local tc = rnd_shape(rng)
    local csv = rng(1, 4) == 1 and rnd_shape(rng) or related(rng, tc)
    local k = kernels[rng(1, #kernels)]
    local i = rng(1, 3)
    local want, got = REF.rule(k, i, tc, csv), match.rule(k, i, tc, csv)
    if want ~= got then
      lu.fail(string.format("rule(%s, %d, %s, %s): Lua %s, C %s", k, i, match.format_shape(tc),
                            match.format_shape(csv), tostring(want), tostring(got)))
    end
    if want then hits = hits + 1 end
    if not tc.scalar and not csv.scalar then
      lu.assertEquals(match.pads(tc, csv), REF.pads(tc, csv))
    end
    n = n + 1
  end
  lu.assertTrue(hits > n // 4, "the generator meets the rules often: " .. hits .. " of " .. n)
  for _, a in ipairs(DIMS) do
    for _, b in ipairs(DIMS) do
      for _, d in ipairs { 0, 1, 7, 8, 15, 16, 31, 32, 63, 64 } do
        lu.assertEquals(match.padded(a, b), REF.padded(a, b))
        local c = b + d
        if math.type(c) == "integer" then lu.assertEquals(match.padded(c, b), REF.padded(c, b)) end
      end
    end
  end
end

-- ---- db:lookup against a scan of every row --------------------------------------------------

local HEAD = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Average Duration(us),Profiling Average Duration(us)\n"

local function fmt_shapes(shapes)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = table.concat(s, ",") end
  return table.concat(parts, ";")
end

-- A MatMulV2 table dense in near signatures: transposed weights, leading 1s, padded and
-- FRACTAL_NZ rows, FLOAT/BF16 dtypes, rows without latency or with profiling only, repeats.
local function gen_matmul(path, nrows, rng)
  local M_ = { 1, 16, 17, 32, 48, 64, 100, 112, 128 }
  local K_ = { 16, 32, 48, 64, 128 }
  local lines = { HEAD }
  local rows = {}
  for r = 1, nrows do
    local m, k, n = M_[rng(1, #M_)], K_[rng(1, #K_)], K_[rng(1, #K_)]
    local a, b = { m, k }, { n, k }
    if rng(1, 4) == 1 then b = { k, n } end
    if rng(1, 6) == 1 then table.insert(a, 1, 1) end
    if rng(1, 8) == 1 then table.insert(b, 1, 1) end
    local dt = ({ "DT_BF16;DT_BF16", "FLOAT;DT_BF16", "DT_BF16;INT8", "FLOAT;FLOAT" })[rng(1, 4)]
    local fm, shapes_text = "ND;ND", fmt_shapes { a, b }
    if rng(1, 10) == 1 and #b == 2 and b[1] % 16 == 0 and b[2] % 16 == 0 then
      -- the weight as a FRACTAL_NZ tile: (W/16, H/16, 16, 16) restores to (H, W)
      fm, shapes_text = "ND;FRACTAL_NZ", fmt_shapes { a, { b[2] // 16, b[1] // 16, 16, 16 } }
    end
    local avg, prof = string.format("%d.%d", rng(1, 500), rng(0, 9)), ""
    local roll = rng(1, 10)
    if roll == 1 then avg = "" elseif roll == 2 then avg, prof = "", "7.5" elseif roll == 3 then prof = "3.25" end
    lines[#lines + 1] = string.format('"%s",%s,%s,"%d,%d",%s,%s\n', shapes_text, dt, fm, m, n, avg, prof)
    rows[r] = { a = a, b = b, dt = dt }
  end
  h.write(path, table.concat(lines))
  return rows
end

-- The consumer's answer by definition: every row, best (distance, latency column, row).
local function reference(K, q)
  local t = K:table()
  local pri = {}
  for j, c in ipairs(K._.latcols) do pri[c] = j end
  local best
  for i = 1, #t do
    local lat, col = K:latency(i)
    if lat then
      local shapes, dtypes = K:_inputs(i)
      if shapes then
        local m = match.row(K.name, q, shapes, dtypes, true)
        if m then
          local c = { row = i, distance = m.distance, pri = pri[col] or 9, rule = m.rule, lat = lat }
          if not best or c.distance < best.distance or (c.distance == best.distance and
             (c.pri < best.pri or (c.pri == best.pri and c.row < best.row))) then
            best = c
          end
        end
      end
    end
  end
  return best
end

TestLookupEquiv = {}

function TestLookupEquiv:test_lookup_equals_full_scan()
  local seed = 1414
  local function rng(a, b)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return a + seed % (b - a + 1)
  end
  local dir = h.tmpdir()
  local rows = gen_matmul(dir .. "/MatMulV2.csv", 400, rng)
  local db = assert(perf.open(dir))
  local K = db.MatMulV2
  K:latencies()
  local n, hits, misses, slot_rows = 0, 0, 0, 0
  local function check(shapes, dtypes)
    local q = K:_query(shapes, dtypes)
    local want = reference(K, q)
    local r = K:lookup(shapes, dtypes)
    n = n + 1
    local label = string.format("query %s %s", type(shapes) == "string" and shapes or fmt_shapes(shapes),
                                tostring(dtypes))
    if not want then
      lu.assertNotNil(r.miss, label .. ": the scan finds nothing, the lookup " .. tostring(r.title))
      misses = misses + 1
      return
    end
    lu.assertNil(r.miss, label .. ": " .. tostring(r.title))
    lu.assertEquals(r.row, want.row, label .. ": " .. r.title)
    lu.assertEquals(r.rule, want.rule, label)
    lu.assertEquals(r.latency, want.lat, label)
    if want.rule ~= "identity" and want.rule ~= "batch_strip" then slot_rows = slot_rows + 1 end
    hits = hits + 1
  end
  local DTS = { "DT_BF16;DT_BF16", "FLOAT;DT_BF16", "DT_BF16;INT8", "bfloat16", nil }
  for _, row in ipairs(rows) do
    local a, b = row.a, row.b
    local variants = {
      { a, b },
      { a, { b[#b], b[#b - 1] } },                              -- the weight transposed
      { { a[#a - 1] + (16 - a[#a - 1] % 16) % 16, a[#a] }, b },  -- M padded up to 16
      { { a[#a - 1] + (32 - a[#a - 1] % 32) % 32, a[#a] }, { b[#b], b[#b - 1] } },
      { { 1, a[#a - 1], a[#a] }, b },                            -- a leading 1
    }
    for _, v in ipairs(variants) do
      check(fmt_shapes(v), row.dt)
      check(fmt_shapes(v), DTS[rng(1, 4)])
      if rng(1, 3) == 1 then check(v, nil) end                  -- no dtypes: not compared
    end
  end
  lu.assertTrue(n >= 2000, "queries: " .. n)
  lu.assertTrue(hits > n // 2 and misses > 0 and slot_rows > 50,
                string.format("the queries reach every path: %d hits (%d by non-key rules), %d misses", hits,
                              slot_rows, misses))
end

os.exit(lu.LuaUnit.run())
