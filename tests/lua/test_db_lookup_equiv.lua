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

-- rng(a, b): an integer in [a, b] from a linear congruential generator seeded with seed
-- (deterministic, independent of math.random's state)
local function lcg(seed)
  return function(a, b)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return a + seed % (b - a + 1)
  end
end

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
  local rng = lcg(14)
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
  local rng = lcg(1414)
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

-- ---- the C exact match against the Lua scan it bypasses -------------------------------------
-- db:lookup answers a query without explain or MoE by the C exact match (perfscript.table's
-- ix:exact); db.lua_only = true sends every lookup through the Lua scan (the path before it).
-- Whole results are compared: title, verdict, notes, the record and the query.

local dbm = require "perfscript.db"

-- The old Lua query variants, slot variants and rule fold (moved to src/schema/lookup_key.c),
-- as the oracle of the C versions.
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
  local function copy(x) return table.move(x, 1, #x, 1, {}) end
  function REF.fold(rule, r)
    if r == "identity" then return rule end
    if r == "padding" then return rule == "identity" and r or rule end
    if r == "batch_strip+padding" then return (rule == "identity" or rule == "batch_strip") and r or rule end
    return r
  end
  function REF.variants(kernel, shapes)
    local out = { shapes }
    if match.MATMUL[kernel] then
      for i = 2, #shapes do
        local s = strip1(shapes[i])
        if not s.scalar and (#s == 2 or #s == 3) then
          local v = table.move(shapes, 1, #shapes, 1, {})
          local t = table.move(s, 1, #s, 1, {})
          t[#t - 1], t[#t] = t[#t], t[#t - 1]
          v[i] = t
          out[#out + 1] = v
        end
      end
    end
    for i = 1, #shapes do
      local s = strip1(shapes[i])
      if #s ~= 3 then s = shapes[i] end
      if not s.scalar and #s == 3 then
        if match.FLATTEN_3D[kernel] then
          local v = table.move(shapes, 1, #shapes, 1, {})
          v[i] = { s[1] * s[2], s[3] }
          out[#out + 1] = v
          if match.MERGE_LAST[kernel] then
            v = table.move(shapes, 1, #shapes, 1, {})
            v[i] = { s[1], s[2] * s[3] }
            out[#out + 1] = v
          end
        end
      end
      s = shapes[i]
      if kernel == "Index" and not s.scalar and #s == 2 and s[1] == 1 then
        local v = table.move(shapes, 1, #shapes, 1, {})
        v[i] = { s[2], 1 }
        out[#out + 1] = v
      end
    end
    return out
  end
  function REF.slot_variants(kernel, j, tc)
    if tc.scalar then return {} end
    local st = strip1(tc)
    local out = {}
    local function add(v) if not eq(v, tc) then out[#out + 1] = v end end
    add(st)
    local one = { 1 }
    for _, d in ipairs(st) do one[#one + 1] = d end
    add(one)
    if match.MATMUL[kernel] and j >= 2 and (#st == 2 or #st == 3) then
      local t = copy(st)
      t[#t - 1], t[#t] = t[#t], t[#t - 1]
      add(t)
    end
    if kernel == "Index" and #tc == 2 and tc[1] == 1 then add({ tc[2], 1 }) end
    local s3 = #st == 3 and st or #tc == 3 and tc or nil
    if s3 and match.FLATTEN_3D[kernel] then
      add({ s3[1] * s3[2], s3[3] })
      if match.MERGE_LAST[kernel] then add({ s3[1], s3[2] * s3[3] }) end
    end
    return out
  end
end

local function shapes_str(list)
  local parts = {}
  for i, s in ipairs(list) do parts[i] = match.format_shape(s) end
  return table.concat(parts, " ")
end

function TestRulesInC:test_variants_fold_equal_lua()
  local rng = lcg(1416)
  local kernels = { "MatMulV2", "BatchMatMulV2", "RmsNorm", "AscendQuantV2", "Index", "Add" }
  for _ = 1, 20000 do
    local k = kernels[rng(1, #kernels)]
    local q = {}
    for i = 1, rng(1, 4) do q[i] = rnd_shape(rng) end
    local want, got = REF.variants(k, q), match.variants(k, q)
    lu.assertEquals(#got, #want, k .. " variants of " .. shapes_str(q))
    for v = 1, #want do lu.assertEquals(shapes_str(got[v]), shapes_str(want[v]), k .. " variant " .. v) end
    local j = rng(1, #q)
    lu.assertEquals(shapes_str(match.slot_variants(k, j, q[j])), shapes_str(REF.slot_variants(k, j, q[j])),
                    k .. " slot variants of " .. match.format_shape(q[j]))
  end
  local rules = { "identity", "batch_strip", "singleton_axis_transpose", "transpose", "batched_transpose", "padding",
                  "batch_strip+padding", "flatten_3d", "flatten_3d+padding", "merge_last_dims", "merge_last_dims+padding" }
  for _, a in ipairs(rules) do
    for _, b in ipairs(rules) do lu.assertEquals(match.fold(a, b), REF.fold(a, b), a .. " then " .. b) end
  end
end

-- A result as text: every field a user or a caller reads.
local function dump(r)
  local out = { "title=" .. tostring(r.title), "miss=" .. tostring(r.miss), "reason=" .. tostring(r.reason) }
  for _, k in ipairs { "latency", "row", "line", "column", "rule", "source", "confidence", "latency_selection" } do
    out[#out + 1] = k .. "=" .. tostring(r[k])
  end
  out[#out + 1] = "rules=" .. (r.rules and table.concat(r.rules, ",") or "nil")
  out[#out + 1] = "notes=" .. table.concat(r.notes, " | ")
  out[#out + 1] = "columns=" .. table.concat(r.columns, ",")
  for i, rec in ipairs(r) do
    local keys = {}
    for key in pairs(rec) do keys[#keys + 1] = key end
    table.sort(keys)
    for _, key in ipairs(keys) do out[#out + 1] = string.format("[%d].%s=%s", i, key, tostring(rec[key])) end
  end
  out[#out + 1] = "query=" .. (r.query and (shapes_str(r.query.shapes) .. " " .. table.concat(r.query.dtypes or {}, ";")) or "nil")
  return table.concat(out, "\n")
end

-- Kernels of every rule kind (matmul transposes, flatten and merge, Index's singleton
-- transpose, none), rows near each other (leading 1s, transposes, paddings, FRACTAL_NZ
-- weights, repeats: ties) with 2 or 3 inputs, dtypes of the FLOAT group and others, latencies
-- missing or in the profiling column only.
local function gen_kernel(path, kernel, nrows, rng)
  local D = { 1, 2, 3, 16, 17, 32, 48, 64, 100, 112, 128, 130 }
  local lines = { "Input Shapes,Input Data Types,Input Formats,Average Duration(us),Profiling Average Duration(us)\n" }
  local rows = {}
  for r = 1, nrows do
    local prev = rows[rng(1, math.max(1, r - 1))]
    local shapes
    if prev and rng(1, 4) == 1 then
      shapes = {}
      for i, s in ipairs(prev.shapes) do shapes[i] = rng(1, 3) == 1 and related(rng, s) or s end
    else
      shapes = {}
      for i = 1, rng(2, 3) do
        local s = {}
        for d = 1, rng(1, 3) do s[d] = D[rng(1, #D)] end
        if rng(1, 5) == 1 then table.insert(s, 1, 1) end
        shapes[i] = s
      end
    end
    for i, s in ipairs(shapes) do if s.scalar or #s == 0 then shapes[i] = { 16 } end end
    local dts = {}
    for i = 1, #shapes do dts[i] = ({ "DT_BF16", "FLOAT", "INT8" })[rng(1, 3)] end
    local fms = {}
    for i = 1, #shapes do fms[i] = "ND" end
    local text = fmt_shapes(shapes)
    if rng(1, 12) == 1 then
      local s = shapes[#shapes]
      if #s == 2 and s[1] % 16 == 0 and s[2] % 16 == 0 and s[1] > 0 and s[2] > 0 then
        local raw = table.move(shapes, 1, #shapes, 1, {})
        raw[#raw] = { s[2] // 16, s[1] // 16, 16, 16 }
        fms[#fms] = "FRACTAL_NZ"
        text = fmt_shapes(raw)
      end
    end
    local avg, prof = string.format("%d.%d", rng(1, 50), rng(0, 9)), ""
    local roll = rng(1, 10)
    if roll == 1 then avg = "" elseif roll == 2 then avg, prof = "", "7.5" elseif roll == 3 then prof = "3.25" end
    if prev and rng(1, 6) == 1 then text, shapes, dts = prev.text, prev.shapes, prev.dts end  -- a repeat: a tie
    lines[#lines + 1] = string.format('"%s",%s,%s,%s,%s\n', text, table.concat(dts, ";"), table.concat(fms, ";"), avg, prof)
    rows[r] = { shapes = shapes, dts = dts, text = text }
  end
  h.write(path, table.concat(lines))
  return rows
end

TestExactInC = {}

function TestExactInC:test_c_path_equals_lua_scan()
  local rng = lcg(1417)
  local dir = h.tmpdir()
  local kernels = { "MatMulV2", "BatchMatMulV2", "RmsNorm", "AscendQuantV2", "Index", "Add" }
  local gen = {}
  for _, k in ipairs(kernels) do gen[k] = gen_kernel(dir .. "/" .. k .. ".csv", k, 200, rng) end
  local db_c, db_lua = assert(perf.open(dir)), assert(perf.open(dir))
  -- count the answers the C path gives (the rest fall back to the scan)
  local K = db_c.MatMulV2
  local ix = K:_lookup_index(0).ix
  local methods = getmetatable(ix).__index
  local exact, in_c = methods.exact, 0
  methods.exact = function(...)
    local r = table.pack(exact(...))
    if r[1] then
      in_c = in_c + 1
      -- the input rules also come joined (the record's "input rules")
      lu.assertEquals(r[9], table.concat(r[4], ","))
    end
    return table.unpack(r, 1, r.n)
  end
  local n, ties, padded = 0, 0, 0
  for _, k in ipairs(kernels) do
    for _, row in ipairs(gen[k]) do
      for _ = 1, 2 do
        local q = {}
        for i, s in ipairs(row.shapes) do
          local how = rng(1, 6)
          if how == 1 then
            q[i] = related(rng, s)
          elseif how == 2 then  -- one dimension padded up to a block of 16 or 32
            q[i] = table.move(s, 1, #s, 1, {})
            local d, b = rng(1, #s), rng(1, 2) * 16
            q[i][d] = (q[i][d] + b - 1) // b * b
          else
            q[i] = s
          end
        end
        local dts = rng(1, 5) == 1 and "bfloat16" or table.concat(row.dts, ";")
        local args = { fmt_shapes(q), dts }
        if rng(1, 10) == 1 then args = { q, dts, { n = 1 } } end
        dbm.lua_only = false
        local got = dump(db_c:lookup(k, table.unpack(args)))
        dbm.lua_only = true
        local want = dump(db_lua:lookup(k, table.unpack(args)))
        dbm.lua_only = false
        if got ~= want then
          lu.fail(string.format("%s %s %s:\n--- C\n%s\n--- Lua\n%s", k, type(args[1]) == "string" and args[1] or
                                fmt_shapes(args[1]), args[2], got, want))
        end
        n = n + 1
        if got:find("equally good rows", 1, true) then ties = ties + 1 end
        if got:find(", padded", 1, true) then padded = padded + 1 end
      end
    end
  end
  lu.assertTrue(n >= 2000, "queries: " .. n)
  methods.exact = exact
  lu.assertTrue(ties > 50 and padded > 10 and in_c > n // 5,
                string.format("ties %d, padded %d, answered in C %d of %d", ties, padded, in_c, n))
end

-- The key index and the slot index made from one parse of each row (t:index(comps, true))
-- equal the two made apart (t:index(comps), t:slot_index(n, ...)): the groups and their keys,
-- the rows left out, and the slot search's rows; with malformed cells and a FRACTAL_NZ slot
-- whose restore leaves int64 past the n compared.
function TestExactInC:test_one_parse_indexes_equal_separate()
  local rng = lcg(1418)
  local dir = h.tmpdir()
  local path = dir .. "/MatMulV2.csv"
  local rows = gen_kernel(path, "MatMulV2", 300, rng)
  local f = assert(io.open(path, "a"))
  f:write('"16,32;a,b",DT_BF16;DT_BF16,ND;ND,1.0,\n',
          '"16,32;4611686018427387904,2,16,16",DT_BF16;DT_BF16,ND;FRACTAL_NZ,1.0,\n',
          '"16,32;16,32;4611686018427387904,2,16,16",DT_BF16;DT_BF16;INT8,ND;ND;FRACTAL_NZ,1.0,\n',
          '"();16,32",DT_BF16;DT_BF16,ND;ND,2.0,\n', '"",DT_BF16,ND,2.0,\n')
  f:close()
  local T = require "perfscript.table"
  local t = assert(T.load(path))
  for _, n in ipairs { 0, 2 } do
    local comps = { { col = "Input Shapes", kind = "shapes", formats = "Input Formats", strip1 = true, n = n },
                    { col = "Input Data Types", kind = "list", float_group = true, n = n } }
    local a, sx = t:index(comps, true)
    local b = t:index(comps)
    local sy = t:slot_index(n, t:column("Input Shapes"), t:column("Input Formats"))
    lu.assertEquals(a:ngroups(), b:ngroups())
    for g = 1, a:ngroups() do lu.assertEquals(table.pack(a:group(g)), table.pack(b:group(g)), "group " .. g) end
    lu.assertEquals(a:skipped(), b:skipped())
    lu.assertTrue(#a:skipped() >= 2, "the malformed rows are left out")
    for _ = 1, 300 do
      local row = rows[rng(1, #rows)]
      local q = {}
      for i, s in ipairs(row.shapes) do q[i] = rng(1, 2) == 1 and related(rng, s) or s end
      local pairs_ = {}
      for j, tc in ipairs(q) do
        for _, v in ipairs(match.slot_variants("MatMulV2", j, tc)) do pairs_[#pairs_ + 1] = j; pairs_[#pairs_ + 1] = v end
        pairs_[#pairs_ + 1] = j
        pairs_[#pairs_ + 1] = tc
      end
      local upto = rng(1, #t + 1)
      local kind = match.kind("MatMulV2")
      lu.assertEquals(sx:rows(pairs_, upto, q, row.dts, kind, true, "Input Data Types"),
                      sy:rows(pairs_, upto, q, row.dts, kind, true, "Input Data Types"))
    end
  end
end

os.exit(lu.LuaUnit.run())
