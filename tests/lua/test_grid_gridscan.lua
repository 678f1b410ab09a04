-- perfscript.gridscan (the grid's C pass over existing rows) gives the keys, signatures and
-- templates the Lua path gives, and the indexed answer sets of perfscript.db.reach answer as
-- a scan of every row does (issue 14: the grid's cost on 20k-row files).
local lu = require "luaunit"
local perf = require "perfscript"
local gridscan = require "perfscript.gridscan"
local answer = require "perfscript.db.reach"
local match = require "perfscript.db.match"
local sig = require "perfscript.sig"
require "perfscript.db"  -- installs the column names perfscript.db.reach reads

local TMP = (os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp") .. "/grid_gridscan." .. tostring(os.time())
local rm_rf = require("perfscript.path").rmtree

local function write(path, text)
  local f = assert(io.open(path, "wb")); f:write(text); f:close()
end

local HEADER = { "OP State", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                 "Output Data Types", "EP Size", "Duration(us)" }
local REACH = { "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "EP Size" }

-- The key perfscript.db.reach files a compute row under (Set:add), from its cells.
local function lua_key(row, n)
  local v = answer.view(function(c) return row[c] end, "compute", n)
  if not v then return nil end
  return match.shapes_text(v.shapes) .. "|" .. table.concat(v.dtypes, ";") .. "|" .. v.ep
end

-- Plain cells (the C key) and every odd spelling the Lua path must take (rows handed back).
local CASES = {
  { "1024,7168;7168,2048", "DT_BF16;DT_BF16", "ND;ND", "" },
  { "8,1024,7168;7168,2048;;()", "DT_BF16;DT_BF16;;INT32", "ND;ND;;ND", "16" },
  { "2,3,16,16;4,4", "FLOAT16;FLOAT16", "FRACTAL_NZ;ND", "" },
  { "007,8;9", "INT8;INT8", "ND;ND", "" },
  { " 8,9 ; 10", "INT8; INT8", "ND;ND", "" },
  { '"8,9;10"', "INT8;INT8", "ND;ND", "" },
  { "8,,9;10", "INT8;INT8", "ND;ND", "" },
  { "(8,9);10", "INT8;INT8", "ND;ND", "" },
  { "1234567890123456789,2", "INT8", "ND", "" },
  { "9223372036854775807,2,16,16", "INT8", "FRACTAL_NZ", "" },
  { "", "", "", "" },
  { ";;", "DT_BF16", "", " 4 " },
  { "4,5;6", "DT_BF16;DT_BF16;DT_UNDEFINED", "ND;;ND", "8" },
  { "x,5", "DT_BF16", "ND", "" },
  { '"1024,7168;7168,2048"', '"DT_BF16;DT_BF16"', "ND;ND", ' "8" ' },
  { '  "4,5;;6"\t', "DT_BF16;DT_BF16", '"ND; ND"', "" },
  { '"4,5;6" x', "DT_BF16;DT_BF16", "ND;ND", "" },
}

local function csv_text(rows)
  local lines = { table.concat(HEADER, ",") }
  for _, r in ipairs(rows) do
    local cells = { "MatMulV2", r[1], r[2], r[3], "4,4", "DT_BF16", r[4], "1.5" }
    for i, c in ipairs(cells) do cells[i] = perf.csv.quote(c) end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

function test_compute_keys_match_lua()
  assert(perf.fs.mkdir_p(TMP))
  for _, n in ipairs { -1, 0, 1, 2 } do
    for ci, case in ipairs(CASES) do
      local path = TMP .. "/MatMulV2.csv"
      write(path, csv_text { case })
      local sc = assert(gridscan.scan(path, { op = "MatMulV2", key_n = n, reach_cols = REACH,
                                              variant_cols = { "OP State" } }))
      local row = {}
      for i, h in ipairs(HEADER) do row[h] = ({ "MatMulV2", case[1], case[2], case[3], "4,4", "DT_BF16", case[4] })[i] end
      local want = lua_key(row, n >= 0 and n or nil)
      if sc.rows.n == 1 then
        -- handed back, column by column: the Lua path makes its view from the same cells
        for _, c in ipairs(REACH) do lu.assertEquals(sc.rows[c][1], row[c], "case " .. ci .. ", " .. c) end
      else
        lu.assertEquals(sc.rows.n, 0)
        lu.assertNotNil(want, "case " .. ci .. ": C keyed a row Lua cannot read")
        lu.assertTrue(sc.keys:has(want), string.format("case %d, n %d: C key differs from %q", ci, n, want))
      end
    end
  end
  -- the plain ones are keyed in C, quoted shape cells (as a database writes them) too
  write(TMP .. "/MatMulV2.csv", csv_text { CASES[1], CASES[2], CASES[3], CASES[15] })
  local sc = assert(gridscan.scan(TMP .. "/MatMulV2.csv", { op = "MatMulV2", key_n = -1, reach_cols = REACH }))
  lu.assertEquals(sc.rows.n, 0)
  lu.assertEquals(sc.nrows, 4)
  lu.assertTrue(sc.keys:has("1024,7168;7168,2048|DT_BF16;DT_BF16|8"))
  lu.assertTrue(sc.keys:has("1024,7168;7168,2048|DT_BF16;DT_BF16|"))
  lu.assertTrue(sc.keys:has("32,48;4,4|FLOAT16;FLOAT16|"))  -- FRACTAL_NZ restored
  lu.assertFalse(sc.keys:has("2,3,16,16;4,4|FLOAT16;FLOAT16|"))
  rm_rf(TMP)
end

function test_signatures_templates_and_header_match_the_reader()
  assert(perf.fs.mkdir_p(TMP))
  local path = TMP .. "/MatMulV2.csv"
  local rows = {}
  for i = 1, 40 do rows[i] = { i .. ",64;64,32", i % 3 == 0 and "FLOAT;FLOAT" or "DT_BF16;DT_BF16", "ND;ND", "" } end
  write(path, (csv_text(rows):gsub("\n", "\r\n")))
  local sc = assert(gridscan.scan(path, { op = "MatMulV2", variants = true, reach_cols = REACH,
                                          variant_cols = { "OP State", "Input Data Types", "Missing" } }))
  local r <close> = assert(perf.csv.open(path, { header = true }))
  lu.assertEquals(sc.header, r:header())
  lu.assertEquals(sc.eol, "\r\n")
  local key = sig.columns(r:header())
  local n, templates = 0, {}
  for f in r:lines() do
    n = n + 1
    local _, h = sig.record(f, key, "MatMulV2")
    lu.assertTrue(sc.existing[h], "row " .. n)
    if n == 1 or n == 3 then templates[#templates + 1] = f end
  end
  lu.assertEquals(sc.nrows, 40)
  lu.assertEquals(sc.templates, templates)  -- the first row of each dtype variant
  lu.assertEquals(sc.rows.n, 40)             -- no key_n: every row handed back, by column
  for i = 1, 40 do
    lu.assertEquals(sc.rows["Input Shapes"][i], rows[i][1])
    lu.assertEquals(sc.rows["Input Data Types"][i], rows[i][2])
  end
  -- without variants (rows past the first read for their signature and reach cells only): the
  -- same signatures, every row's (the second row's too) and the same reach cells
  local sc3 = assert(gridscan.scan(path, { op = "MatMulV2", reach_cols = REACH, variant_cols = { "OP State" } }))
  lu.assertEquals(sc3.existing, sc.existing)
  lu.assertEquals(sc3.rows, sc.rows)
  lu.assertEquals(sc3.templates, { templates[1] })
  -- a reach column the file lacks: an empty column (nil cells)
  local sc2 = assert(gridscan.scan(path, { op = "MatMulV2", reach_cols = { "Missing", "EP Size" } }))
  lu.assertEquals(sc2.rows.n, 40)
  lu.assertEquals(sc2.rows.Missing, {})
  lu.assertEquals(sc2.rows["EP Size"][40], "")  -- an empty cell is "", as the reader reads it
  lu.assertNil(sc.keys)
  rm_rf(TMP)
end

function test_unreadable_file_is_an_error()
  assert(perf.fs.mkdir_p(TMP))
  write(TMP .. "/Bad.csv", 'a,b\n"x,1\n')
  local sc, err = gridscan.scan(TMP .. "/Bad.csv", { op = "Bad" })
  lu.assertNil(sc)
  lu.assertStrContains(err, "Bad.csv")
  rm_rf(TMP)
end

-- The indexed sets answer as a scan of every row does, on shapes around the bucket edges.
local function rand_shape(rnd, rank)
  local s = {}
  for i = 1, rank do s[i] = rnd(4) == 1 and 1 or ({ 63, 64, 65, 96, 127, 128, 129, 191, 192, 200 })[rnd(10)] end
  return s
end

function test_elementwise_index_answers_as_the_scan()
  local seed = 7
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
  local set = answer.answer_set("Add", "elementwise")
  local rows = {}
  for _ = 1, 300 do
    local v = { out = rand_shape(rnd, rnd(3) + 1) }
    rows[#rows + 1] = v
    set:add(v)
  end
  local hits = 0
  for _ = 1, 2000 do
    local q = { out = rand_shape(rnd, rnd(3) + 1) }
    local want = false
    for _, r in ipairs(rows) do
      if match.out_answers(match.strip1(q.out), r.out) then want = true; break end
    end
    lu.assertEquals(set:answers(q, "Add"), want, match.shapes_text({ q.out }))
    if want then hits = hits + 1 end
  end
  lu.assertTrue(hits > 100 and hits < 1900, "the test needs both answers: " .. hits)
end

function test_moe_index_answers_as_the_scan()
  local seed = 11
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
  local kernel = "DispatchFFNCombine"
  local set = answer.answer_set(kernel, "moe_fused")
  lu.assertTrue(set.moe_index)
  local rows = {}
  local function view()
    local shapes = { rand_shape(rnd, rnd(3)), rand_shape(rnd, 2) }
    return { shapes = shapes, dtypes = { "DT_BF16", "DT_BF16" }, ep = tostring(rnd(2) * 8) }
  end
  for _ = 1, 300 do local v = view(); rows[#rows + 1] = v; set:add(v) end
  local hits = 0
  for _ = 1, 1500 do
    local v = view()
    local want = false
    for _, r in ipairs(rows) do
      if r.ep == v.ep and match.row(kernel, { shapes = v.shapes, dtypes = v.dtypes }, r.shapes, r.dtypes) then
        want = true; break
      end
    end
    lu.assertEquals(set:answers(v, kernel), want)
    if want then hits = hits + 1 end
  end
  lu.assertTrue(hits > 50 and hits < 1450, "the test needs both answers: " .. hits)
end

function test_attention_index_answers_as_the_scan()
  local seed = 5
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
  local set = answer.answer_set("FusedInferAttentionScore", "attention")
  local rows = {}
  for _ = 1, 400 do
    local v = { key = "DT_BF16|" .. rnd(2), T = rnd(700) }
    rows[#rows + 1] = v
    set:add(v)
  end
  local hits = 0
  for _ = 1, 3000 do
    local v = { key = "DT_BF16|" .. rnd(3), T = rnd(900) }
    local want = false
    for _, r in ipairs(rows) do
      if r.key == v.key and match.t_compatible(v.T, r.T) then want = true; break end
    end
    lu.assertEquals(set:answers(v, "FusedInferAttentionScore"), want, v.key .. " " .. v.T)
    if want then hits = hits + 1 end
  end
  lu.assertTrue(hits > 100 and hits < 2900, "the test needs both answers: " .. hits)
end

-- gridscan.keep (the grid's compute-mode keep in C) decides as the Lua sets do (view, the
-- earlier kernel's set and the own set answering over match.variants, then add), on the
-- kernels of every variant class: transposed matmul weights, 3-D flatten and merge, Index's
-- [1,n] -> [n,1], and leading 1s; the cells in the form a grid writes (run.lua's cells.text).
local function empty_keys(kernel)
  assert(perf.fs.mkdir_p(TMP))
  local path = TMP .. "/" .. kernel .. ".csv"
  write(path, table.concat(HEADER, ",") .. "\n")
  local sc = assert(gridscan.scan(path, { op = kernel, key_n = -1, reach_cols = REACH }))
  return assert(sc.keys)
end

local flags = require("perfscript.grid.reach").variant_flags

function test_keep_in_c_decides_as_the_lua_sets()
  local seed = 3
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
  local DIMS = { 1, 1, 2, 3, 4, 6, 8, 12 }
  local function slot()
    local r = rnd(6)
    if r == 6 then return "()" elseif r == 5 then return "" end
    local d = {}
    for i = 1, rnd(4) do d[i] = DIMS[rnd(#DIMS)] end
    return table.concat(d, ",")
  end
  for _, pair in ipairs { { "MatMulV2", "MatMulV3" }, { "RmsNorm", "AscendQuantV2" }, { "Add", "Index" },
                          { "Index", "QuantBatchMatmulV3" } } do
    local before, kernel = pair[1], pair[2]
    local lua_before, lua_own = answer.answer_set(before, "compute"), answer.answer_set(kernel, "compute")
    local c_before, c_own = empty_keys(before), empty_keys(kernel)
    local counts = { [true] = 0, [false] = 0 }
    for step = 1, 3000 do
      local slots = {}
      for i = 1, rnd(3) do slots[i] = slot() end
      local is = table.concat(slots, ";")
      local dts = {}
      for i = 1, #slots do dts[i] = rnd(4) == 1 and "FLOAT" or "DT_BF16" end
      local fms = {}
      for i = 1, #slots do fms[i] = rnd(8) == 1 and "FRACTAL_NZ" or "ND" end
      local ep = rnd(3) == 1 and "8" or ""
      local n = rnd(3) == 1 and 1 or -1
      local cells = { ["Input Shapes"] = is, ["Input Data Types"] = table.concat(dts, ";"),
                      ["Input Formats"] = table.concat(fms, ";"), ["EP Size"] = ep }
      local v = answer.view(function(c) return cells[c] end, "compute", n >= 0 and n or nil)
      lu.assertNotNil(v, is)
      -- the first third of the rows fill the earlier kernel's sets, the rest are the kernel's
      local lset, cset, k = lua_own, c_own, kernel
      if step <= 1000 then lset, cset, k = lua_before, c_before, before end
      local want = not (lset ~= lua_before and lua_before:answers(v, before)) and not lset:answers(v, k)
      if want then lset:add(v) end
      local got
      if lset == lua_before then
        got = gridscan.keep(cells["Input Shapes"], cells["Input Data Types"], cells["Input Formats"], ep, n,
                            cset, flags(k))
      else
        got = gridscan.keep(cells["Input Shapes"], cells["Input Data Types"], cells["Input Formats"], ep, n,
                            cset, flags(k), c_before, flags(before))
      end
      lu.assertEquals(got, want, string.format("%s after %s, step %d: %s | %s | %s | n %d", kernel, before, step,
                                               is, cells["Input Data Types"], cells["Input Formats"], n))
      counts[want] = counts[want] + 1
    end
    lu.assertTrue(counts[true] > 100 and counts[false] > 100, "the test needs both answers")
  end
  -- cells the Lua path must read (quoted or spaced): nil, the caller's fallback
  lu.assertNil(gridscan.keep("4, 5", "DT_BF16", "ND", "", -1, empty_keys("MatMulV2"), 1))
  -- misuse raises: a set without its flags, or no set
  local set = empty_keys("MatMulV2")
  lu.assertError(gridscan.keep, "4,5", "DT_BF16", "ND", "", -1, set)
  lu.assertError(gridscan.keep, "4,5", "DT_BF16", "ND", "", -1, set, 1, set)
  lu.assertError(gridscan.keep, "4,5", "DT_BF16", "ND", "", -1, {}, 1)
  rm_rf(TMP)
end

-- gridscan.keep_rows decides a run of rows with shared dtype, format and EP cells as
-- gridscan.keep does one row at a time, in order (a row's key added before the next is asked),
-- and stops at the first row keep answers nil for.
function test_keep_rows_decides_as_keep_row_by_row()
  local seed = 11
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
  local DIMS = { 1, 2, 3, 4, 8, 16 }
  local cells, idx = {}, {}
  for i = 1, 2000 do
    local a, b = {}, {}
    for j = 1, rnd(3) do a[j] = DIMS[rnd(#DIMS)] end
    for j = 1, rnd(2) do b[j] = DIMS[rnd(#DIMS)] end
    cells[i] = table.concat(a, ",") .. ";" .. table.concat(b, ",")
    if rnd(2) == 1 then idx[#idx + 1] = i end  -- every other row or so, in order
  end
  for _, pair in ipairs { { "MatMulV2", "MatMulV3" }, { "Add", "Index" } } do
    local before, kernel = pair[1], pair[2]
    local one_b, one_k, all_b, all_k = empty_keys(before), empty_keys(kernel), empty_keys(before), empty_keys(kernel)
    for i = 1, 300 do  -- the earlier kernel holds some keys
      gridscan.keep(cells[i], "DT_BF16;DT_BF16", "ND;ND", "", -1, one_b, flags(before))
      gridscan.keep(cells[i], "DT_BF16;DT_BF16", "ND;ND", "", -1, all_b, flags(before))
    end
    local want, shadowed = {}, 0
    for _, i in ipairs(idx) do
      local r = gridscan.keep(cells[i], "DT_BF16;DT_BF16", "ND;ND", "", -1, one_k, flags(kernel), one_b, flags(before))
      if r then want[#want + 1] = i else shadowed = shadowed + 1 end
    end
    local out = { 0 }  -- appended to
    local got_shadowed, stop = gridscan.keep_rows(cells, idx, 1, "DT_BF16;DT_BF16", "ND;ND", "", -1, out,
                                                  all_k, flags(kernel), all_b, flags(before))
    lu.assertNil(stop)
    lu.assertEquals(got_shadowed, shadowed)
    table.remove(out, 1)
    lu.assertEquals(out, want)
    lu.assertTrue(shadowed > 50 and #want > 50, "the test needs both answers")
  end
  -- a row in a form the C path does not read: the position it stopped at
  local out = {}
  local n, stop = gridscan.keep_rows({ "4,5", "4, 6", "7,8" }, { 1, 2, 3 }, 1, "DT_BF16", "ND", "", -1, out,
                                     empty_keys("MatMulV2"), 1)
  lu.assertEquals({ n, stop, out }, { 0, 2, { 1 } })
  rm_rf(TMP)
end

-- gridscan.order sorts perfscript.shape.sort_key strings as table.sort does (byte order in the
-- C locale) and reads each key's row index off its tail: negative, zero and huge dims, slots of
-- unequal counts, a common prefix, equal shapes told apart by their index.
function test_order_is_table_sort_order()
  local shape = require "perfscript.shape"
  local seed = 12345
  local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
  local DIMS = { 0, 1, 2, 7, 128, 255, 256, 65536, -1, -300, math.maxinteger, math.mininteger }
  local keys, rows = {}, {}
  for n = 1, 3000 do
    local shapes = {}
    for s = 1, 1 + rand(3) do
      local d = {}
      for j = 1, rand(4) do d[j] = DIMS[1 + rand(#DIMS)] end
      shapes[s] = d
    end
    rows[n] = shapes
    keys[n] = shape.sort_key(shapes, n)
  end
  local sorted = table.move(keys, 1, #keys, 1, {})
  table.sort(sorted)
  local want = {}
  for i, k in ipairs(sorted) do want[i] = string.unpack(">I4", k, #k - 3) end
  lu.assertEquals(gridscan.order(keys, #keys), want)
  lu.assertEquals(gridscan.order(keys, 0), {})
  lu.assertErrorMsgContains("not a string", gridscan.order, { 1 }, 1)
  lu.assertErrorMsgContains("shorter", gridscan.order, { "ab" }, 1)
end

os.exit(lu.LuaUnit.run())
