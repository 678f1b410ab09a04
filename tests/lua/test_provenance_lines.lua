-- The provenance log's lines built in C (perfscript.provenance, agg:provenance) are the lines
-- lua-cjson writes for the same members: the reference below encodes each line in Lua the
-- way the log was first written, and the C text must equal it byte for byte, over escapes
-- (control bytes, quotes, slashes, DEL, UTF-8), numbers, absent members and per-row inputs.
local lu = require "luaunit"
local h = require "helpers"
local perf = require "perfscript"
local cjson = require "cjson"
local prov = require "perfscript.microbench.provenance"
local profile = require "perfscript.profile"

-- The reference: one line per written row, members in the log's order, each through cjson.
local function reference(common, results, input_of)
  local out = {}
  for _, res in ipairs(results) do
    for _, w in ipairs(res.written_rows or {}) do
      local key = ("%016x"):format(w.key)
      local file, xxh3
      if input_of then file, xxh3 = input_of(res.stem, key, w.row) end
      local samples, d = w.row._samples, tonumber(w.row["Average Duration(us)"])
      local parts = { common, '"kernel":' .. cjson.encode(res.stem), '"key":"' .. key .. '"',
        '"sig":' .. cjson.encode(perf.sig.display(w.row)) }
      if file then parts[#parts + 1] = '"input":' .. cjson.encode(file) end
      if xxh3 then parts[#parts + 1] = '"input_xxh3":' .. cjson.encode(xxh3) end
      if samples then parts[#parts + 1] = '"samples":' .. cjson.encode(samples) end
      if d then parts[#parts + 1] = '"duration_us":' .. cjson.encode(d) end
      out[#out + 1] = "{" .. table.concat(parts, ",") .. "}\n"
    end
  end
  return table.concat(out), #out
end

local ALL_BYTES = {}
for b = 0, 255 do ALL_BYTES[#ALL_BYTES + 1] = string.char(b) end
ALL_BYTES = table.concat(ALL_BYTES)

local function rows()
  return {
    { stem = "Add", written_rows = {
      { key = 0x0123456789abcdef, row = { ["Input Shapes"] = '"8,1;8,1"', ["Output Shapes"] = '"8,1"',
        _samples = 2, ["Average Duration(us)"] = "35.418" } },
      { key = -1, row = { ["Input Shapes"] = "", _samples = 3.5, ["Average Duration(us)"] = 1e-7 } },
      { key = 7, row = { ["Input Shapes"] = ALL_BYTES, ["Output Shapes"] = "a/b\\c\"d",
        ["Average Duration(us)"] = " 0x10 " } },
      { key = 8, row = { ["Input Shapes"] = "1,2", ["Output Shapes"] = 12, _samples = "n/a",
        ["Average Duration(us)"] = "not a number" } },
      { key = 9, row = { ["Input Shapes"] = "2,3", ["Output Shapes"] = "2,3", _samples = 123456789012345678,
        ["Average Duration(us)"] = 1234.56789012345678 } },
    } },
    { stem = "Mat/Mul\"V2", written_rows = {} },
    { stem = "Cast" },
    { stem = "Übung\127", written_rows = { { key = 0, row = {} } } },
  }
end

TestProvenanceLines = {}

function TestProvenanceLines:test_equals_cjson_uniform_inputs()
  local common = prov.common { run = "r/1", source = "measured", device = "910B3", cann = "8.5", torch = "2.9.0" }
  local text, n = perf.provenance.lines(common, rows(), "/db/in\"put.csv", "00ff")
  local want, wn = reference(common, rows(), function() return "/db/in\"put.csv", "00ff" end)
  lu.assertEquals(n, wn)
  lu.assertEquals(n, 6)
  lu.assertEquals(text, want)
  -- every line is JSON that reads back to its members
  for line in text:gmatch("[^\n]+") do
    local e = cjson.decode(line)
    lu.assertEquals(e.run, "r/1")
    lu.assertEquals(e.source, "measured")
  end
  lu.assertEquals(cjson.decode(text:match("[^\n]+")).sig, '"8,1;8,1" -> "8,1"')
end

function TestProvenanceLines:test_no_inputs_and_per_row_inputs()
  local common = prov.common { run = "r2", source = "simulated" }
  local text = perf.provenance.lines(common, rows())
  lu.assertEquals(text, (reference(common, rows())))
  lu.assertNil(text:find('"input"', 1, true))
  local seen = {}
  local function input_of(kernel, key, row)
    seen[#seen + 1] = kernel .. ":" .. key
    if key == "0000000000000007" then return nil end -- no input known for this row
    return kernel .. "/" .. key .. ".csv", (row["Input Shapes"] or ""):sub(1, 3)
  end
  text = perf.provenance.lines(common, rows(), nil, nil, input_of)
  local calls = #seen
  lu.assertEquals(text, (reference(common, rows(), input_of)))
  lu.assertEquals(calls, 6)
  lu.assertEquals(seen[1], "Add:0123456789abcdef")
  lu.assertEquals(seen[2], "Add:ffffffffffffffff")
end

-- cjson refuses NaN and infinities; the log leaves such a duration out instead of failing
-- the write-back that logs it.
function TestProvenanceLines:test_non_finite_duration_left_out()
  local res = { { stem = "Add", written_rows = { { key = 1, row = { ["Average Duration(us)"] = "1e999", _samples = 0 / 0 } } } } }
  local text, n = perf.provenance.lines('"run":"x"', res)
  lu.assertEquals(n, 1)
  lu.assertEquals(text, '{"run":"x","kernel":"Add","key":"0000000000000001","sig":"N\\/A -> N\\/A"}\n')
end

function TestProvenanceLines:test_bad_results_are_errors()
  lu.assertErrorMsgContains("stem", perf.provenance.lines, "", { { written_rows = {} } })
  lu.assertErrorMsgContains("key", perf.provenance.lines, "", { { stem = "A", written_rows = { { row = {} } } } })
  lu.assertErrorMsgContains("row", perf.provenance.lines, "", { { stem = "A", written_rows = { { key = 1 } } } })
  lu.assertErrorMsgContains("boom", perf.provenance.lines, "", rows(), nil, nil, function() error("boom") end)
end

-- The members a run shares come in one fixed order, whatever the table's.
function TestProvenanceLines:test_common_order()
  local c = prov.common { torch_npu = "2.9", torch = "2.9.0", cann = "8.5", device = "d", source = "imported",
    run = "r", time = "2026-01-01T00:00:00Z" }
  lu.assertEquals(c, '"run":"r","time":"2026-01-01T00:00:00Z","version":' .. cjson.encode(perf.version)
    .. ',"source":"imported","device":"d","cann":"8.5","torch":"2.9.0","torch_npu":"2.9"')
  lu.assertErrorMsgContains("source", prov.common, { run = "r", source = "guessed" })
end

-- agg:provenance (an import's new file, no Lua table per row) equals the lines of the same
-- rows built from agg:group and perf.sig.row, as the import logged them before.
function TestProvenanceLines:test_group_lines_equal_table_lines()
  local dir = h.tmpdir()
  local lines = { "Type,Accelerator Core,Duration(us),Input Shapes,Input Data Types,Input Formats,"
    .. "Output Shapes,Output Data Types,Output Formats" }
  for i = 1, 40 do
    local t = ({ "MatMulV2", "Add", "Cast", "Transpose" })[i % 4 + 1]
    local in_shapes = i % 7 == 0 and "" or string.format('"%d,%d;%d,%d"', i, 64, 64, i % 5 + 1)
    lines[#lines + 1] = string.format('%s,AI_CORE,%d.5,%s,FLOAT16;FLOAT16,ND;ND,"%d,%d",FLOAT16,ND',
      t, i, in_shapes, i, i % 5 + 1)
  end
  -- shapes that need escapes before, at and after a 16-byte block's end (the group lines
  -- escape 16 bytes at a time), and bytes >= 0x80
  local odd = { '"1,2;3,4/5\\6"', '\t"12345678901234/67890"\31x', 'a/b', '"0123456789abcdef"',
    '0123456789abcde/\\"', '\195\156,1;\128\159\255"', string.rep("7,", 20) .. '"/"' }
  for i, o in ipairs(odd) do
    local q = '"' .. o:gsub('"', '""') .. '"'
    lines[#lines + 1] = string.format('Add,AI_CORE,%d.5,%s,FLOAT16,ND,%s,FLOAT16,ND', i, q, q)
  end
  local path = dir .. "/kernel_details.csv"
  h.write(path, table.concat(lines, "\n") .. "\n")
  local agg = profile.new()
  assert(agg:add_file(path))
  local common = prov.common { run = "imp", source = "imported" }
  for _, ty in ipairs(agg:types()) do
    local stem = ty.type == "Add" and 'Add/"1\\' or ty.type   -- a stem escaped too
    local text, n = agg:provenance(ty.groups, stem, common, "/cap/kernel_details.csv", "abcd")
    local written = {}
    for _, i in ipairs(ty.groups) do
      local g = agg:group(i, false)
      local row = { ["OP State"] = g.op_state, ["Input Shapes"] = g.in_shapes, ["Input Data Types"] = g.in_dtypes,
        ["Input Formats"] = g.in_formats, ["Output Shapes"] = g.out_shapes, ["Output Data Types"] = g.out_dtypes,
        ["Output Formats"] = g.out_formats }
      local _, key = perf.sig.row(row, stem)
      written[#written + 1] = { key = key, row = row }
    end
    local want, wn = reference(common, { { stem = stem, written_rows = written } },
      function() return "/cap/kernel_details.csv", "abcd" end)
    lu.assertEquals(n, wn)
    lu.assertEquals(n, #ty.groups)
    lu.assertEquals(text, want)
  end
  lu.assertErrorMsgContains("out of range", agg.provenance, agg, { #agg + 1 }, "Add", common)
end
-- Escaping goes 8 plain bytes at a time: random texts of every length and mix (plain runs,
-- each byte that needs an escape, bytes 0x80-0x9f that look like one to the word test, UTF-8)
-- at every offset give cjson's text, and random keys their 16 hex digits.
function TestProvenanceLines:test_random_texts_equal_cjson()
  math.randomseed(11)
  local letters = "abcdefxyz0123456789,;_-:. ABC"
  local pool = { "a", "7", ",", ";", " ", "\"", "\\", "/", "\127", "\0", "\t", "\n", "\31", "\128",
    "\159", "\160", "\255", "\195\156", "x", "1", "2", "3" }
  local written = {}
  for k = 1, 3000 do
    local n, t = math.random(0, 40), {}
    local plain = math.random() < 0.5
    for i = 1, n do
      local j = math.random(#letters)
      t[i] = plain and math.random() < 0.95 and letters:sub(j, j) or pool[math.random(#pool)]
    end
    local u, o = {}, math.random(0, 20)
    for i = 1, o do u[i] = pool[math.random(#pool)] end
    written[k] = { key = math.random(math.mininteger, math.maxinteger),
                   row = { ["Input Shapes"] = table.concat(t), ["Output Shapes"] = table.concat(u) } }
  end
  local results = { { stem = "K/\"1", written_rows = written } }
  local common = prov.common { run = "r3", source = "imported" }
  local text, n = perf.provenance.lines(common, results, "/cap/a b/kernel_details.csv", "0123abcd")
  local want = reference(common, results, function() return "/cap/a b/kernel_details.csv", "0123abcd" end)
  lu.assertEquals(n, 3000)
  if text ~= want then   -- the first line that differs (luaunit's diff of the whole text is slow)
    local a, b = text:gmatch("[^\n]*\n"), want:gmatch("[^\n]*\n")
    local x, y
    repeat x, y = a(), b() until x ~= y
    lu.assertEquals(x, y)
  end
end

-- Numbers as cjson writes them (%.14g) over the kinds a log meets: microseconds of 1 to 6
-- decimals, counts, doubles with all their digits, both sides of the 1e-4 and 1e8 edges,
-- negatives, numbers and number texts alike; keys of every hex digit.
function TestProvenanceLines:test_numbers_equal_cjson()
  math.randomseed(7)
  local vals = { 1e-4, 9.9999e-5, 1e8, 99999999.999999, 99999999.9999999, 1e8 - 1e-6, 0.1, 0.5,
    1, 2, 0.000123, 0.0001234, 1234567.890123, -3.25, -0.0001, 5e-324, 1e300, 2 ^ 53, 1 / 3 }
  for _ = 1, 4000 do
    local k = math.random(0, 6)
    vals[#vals + 1] = math.random(0, 10 ^ math.random(1, 13)) / 10 ^ k
    vals[#vals + 1] = math.random() * 10 ^ math.random(-6, 9)
    vals[#vals + 1] = tonumber(("%.3f"):format(math.random() * 50))
  end
  local written = {}
  for i, v in ipairs(vals) do
    local d = i % 2 == 0 and ("%.17g"):format(v) or v
    written[i] = { key = math.random(math.mininteger, math.maxinteger),
                   row = { ["Input Shapes"] = "1", _samples = v, ["Average Duration(us)"] = d } }
  end
  local res = { { stem = "Add", written_rows = written } }
  local text, n = perf.provenance.lines('"run":"r"', res)
  local want, wn = reference('"run":"r"', res)
  lu.assertEquals(n, wn)
  lu.assertEquals(text, want)
end

os.exit(lu.LuaUnit.run())
