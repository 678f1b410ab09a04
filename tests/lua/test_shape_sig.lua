-- perfscript.shape and perfscript.sig from Lua: the shape grammar, dtype sizes and the
-- signature examples of docs/rules.md, Write-back signature (checked against the Python original).
local lu = require "luaunit"
local shape = require "perfscript.shape"
local sig = require "perfscript.sig"

TestShape = {}

function TestShape:test_parse_format()
  lu.assertEquals(shape.parse('"""128,4;;2048, 2048"""'), { { 128, 4 }, {}, { 2048, 2048 } })
  lu.assertEquals(shape.parse(""), {})
  lu.assertEquals(shape.parse("(1, 2);N/A;()"), { { 1, 2 }, {}, {} })
  local s, err = shape.parse("[1,2];3")
  lu.assertNil(s)
  lu.assertStrContains(err, "slot 1")
  lu.assertEquals(shape.parse("[1,2];3", true), { false, { 3 } })
  for _, text in ipairs { "", "1", "1,2;;3", ";;", "4,16;2,16,8;", "-1,5" } do
    lu.assertEquals(shape.format(assert(shape.parse(text))), text)
  end
  lu.assertEquals(shape.format { { 1, 2 }, false, {}, { 3 } }, "1,2;;;3")
  -- every integer as %d writes it (the digits are written in C without snprintf)
  local dims = { 0, -1, 9, 10, -10, 99999, 1234567890123, math.maxinteger, math.mininteger }
  local want = {}
  for i, d in ipairs(dims) do want[i] = string.format("%d", d) end
  lu.assertEquals(shape.format { dims, { 42 } }, table.concat(want, ",") .. ";42")
  lu.assertError(shape.format, { { 1.5 } })
end

-- shape.skeleton is the Lua patterns' slot layout of a plain cell (the grid's lint memo key).
function TestShape:test_skeleton()
  local function lua_form(c)
    if c:find("[^%d,;()]") then return nil end
    return (c:gsub("[^;]+", "x"))
  end
  for _, c in ipairs { "", ";", ";;", "1", "1,2;;3", "(1,2);();", "12,3;4;", ";5", "1, 2", "a;b", "N/A",
                       "-1,2", '"1,2"', "1\0;2", "1;2\n", "\t;" } do
    lu.assertEquals(shape.skeleton(c), lua_form(c), c)
  end
end

function TestShape:test_normalize_split()
  lu.assertEquals(shape.normalize('"1,128,1,512;();();2,16;()"'), "1,128,1,512;;;2,16;")
  lu.assertEquals(shape.normalize_slot(" ( 3 4 ) "), "3,4")
  lu.assertEquals(shape.normalize_slot("[1,2]"), "[1,2]")
  lu.assertEquals(shape.split(' "a; ;b;" '), { "a", "", "b", "" })
  lu.assertEquals(shape.split(""), {})
end

function TestShape:test_dtypes()
  lu.assertEquals(shape.dtype_bytes("DT_BF16"), 2)
  lu.assertEquals(shape.dtype_bytes("float"), 4)
  lu.assertEquals(shape.dtype_bytes("DT_UNDEFINED"), 2)
  lu.assertEquals(shape.dtype_bytes(), 2)
  -- D22
  lu.assertEquals(shape.dtype_normalize("FLOAT"), "DT_FLOAT")
  lu.assertEquals(shape.dtype_normalize(" INT64 "), "DT_INT64")
  lu.assertEquals(shape.dtype_normalize("bf16"), "DT_bf16")
  lu.assertEquals(shape.dtype_normalize(""), "DT_UNDEFINED")
  lu.assertEquals(shape.numel { 2, 3, 4 }, 24)
  lu.assertEquals(shape.numel {}, 1)
  lu.assertEquals(shape.nbytes({ 128, 4096 }, "DT_BF16"), 1048576)
  lu.assertEquals(shape.nbytes({}, "DT_BF16"), 0)
  -- D1
  lu.assertEquals(shape.nz_logical { 2, 3, 4, 5 }, { 12, 10 })
  lu.assertEquals(shape.nz_logical { 256, 32, 16, 16 }, { 512, 4096 })
  lu.assertNil(shape.nz_logical { 2, 3 })
  -- leading dims are batch dims: a grouped matmul's (E, n1, k1, k0, n0) -> (E, K, N)
  lu.assertEquals(shape.nz_logical { 32, 224, 8, 16, 32 }, { 32, 128, 7168 })
  lu.assertNil(shape.nz_logical { 1, 1 << 62, 4, 1 })
end

TestSig = {}

local function row(is, id, fm, os, od, extra)
  local r = { ["Input Shapes"] = is, ["Input Data Types"] = id, ["Input Formats"] = fm,
              ["Output Shapes"] = os, ["Output Data Types"] = od }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

local function tup(op, ...)
  return (sig.tuple(row(...), op))
end

function TestSig:test_vectors()
  lu.assertEquals(tup("RmsNorm", '"128,4096;4096"', "DT_BF16;DT_BF16", "ND;ND", '"128,4096;128,1"', "DT_BF16;FLOAT"),
                  { "128,4096;4096", "DT_BF16;DT_BF16", "ND;ND", "128,4096;128,1", "DT_BF16;FLOAT" })
  lu.assertEquals(tup("Foo", "1,2;;3", "A;B;C", "ND;NULL;ND", "", "X"), { "1,2;;3", "A;;C", "ND;;ND", "", "" })
  lu.assertEquals(tup("Foo", "N/A;None;NULL;none;NA;()", "a;b;c;d;e;f", "", "5", "g;h"), { "", "", "", "5", "g" })
  local s7 = { "24,512;4096,512", "DT_BF16;DT_BF16", "ND;ND", "24,4096", "DT_BF16" }
  lu.assertEquals(tup("MatMulV3", "512,24;512,4096", "DT_BF16;DT_BF16", "ND;ND", "24,4096", "DT_BF16"), s7)
  local t, canonical = sig.tuple(row("24,512;512,4096", "DT_BF16;DT_BF16", "ND;ND", "24,4096", "DT_BF16"), "MatMulCommon")
  lu.assertEquals(t, s7)
  lu.assertTrue(canonical)
  lu.assertEquals(tup("MatMulV2", "64,64;64,128", "A;B", "ND;ND", "32,128", "C"), { "32,64;128,64", "A;B", "ND;ND", "32,128", "C" })
  lu.assertEquals(tup("Index", "64,1728", "DT_BF16", "ND", "16,1728", "DT_BF16"),
                  { "64,1728;16", "DT_BF16;DT_BF16", "ND;ND", "16,1728", "DT_BF16" })
  lu.assertEquals(tup("Slice", "4,768;2;2", "DT_BF16;INT64;INT64", "NCL;ND;ND", "2,768", "DT_BF16"),
                  { "4,768", "DT_BF16", "ND", "2,768", "DT_BF16" })
  -- S19 / S20: EP Size for DispatchFFNCombine
  local r = row("4,16;2,16,8", "DT_BF16;DT_BF16", "ND;ND", "4,16", "DT_BF16", { ["EP Size"] = " 16 " })
  lu.assertEquals(#sig.tuple(r, "DispatchFFNCombine_run.py"), 6)
  lu.assertEquals(sig.tuple(r, "DispatchFFNCombine")[6], "16")
  lu.assertEquals(sig.tuple { ["OP Type"] = "DispatchFFNCombine.csv", ["Input Shapes"] = "4,16" },
                  { "4,16", "", "", "", "", "" })
  -- S21: op from OP State
  lu.assertEquals(sig.tuple(row("64,1728;16", "DT_BF16;INT64", "ND;ND", "16,1728", "DT_BF16", { ["OP State"] = "Index" })),
                  { "64,1728;16", "DT_BF16;INT64", "ND;ND", "16,1728", "DT_BF16" })
end

function TestSig:test_text_hash_record()
  local a = row('"5,6144;2048,6144"', nil, nil, '"5,2048"', nil, { ["OP State"] = "dynamic" })
  local b = row("5,6144;2048,6144", nil, nil, "5,2048", nil, { ["OP Type"] = "MatMulV2" })
  local ta, ha = sig.row(a, "MatMulV2")
  local tb, hb = sig.row(b)
  lu.assertEquals(ta, tb)
  lu.assertEquals(ha, hb)
  lu.assertEquals(ha, sig.hash(ta))
  lu.assertEquals(math.type(ha), "integer")
  lu.assertEquals(ta, table.concat({ "5,6144;2048,6144", "", "", "5,2048", "" }, sig.SEP))
  -- the record form over a CSV header gives the same text
  local header = { "OP State", "Accelerator Core", "Input Shapes", "Input Data Types", "Input Formats",
                   "Output Shapes", "Output Data Types", "Output Formats" }
  local cols = sig.columns(header)
  local tr, hr = sig.record({ "dynamic", "AI_CORE", "5,6144;2048,6144", "", "", "5,2048", "", "ND" }, cols, "MatMulV2.csv")
  lu.assertEquals(tr, ta)
  lu.assertEquals(hr, ha)
end

function TestSig:test_helpers()
  lu.assertEquals(sig.display(row("(1, 2);( 3 4 )", nil, nil, "(1,2)")), "(1, 2);( 3 4 ) -> (1,2)")
  lu.assertEquals(sig.display(row("1,2;;3", nil, nil, "")), "1,2;;3 -> N/A")
  lu.assertEquals(sig.op_name("PadV3_run"), "PadV3")
  lu.assertEquals(sig.op_name("X_run.csv"), "X_run")
  lu.assertTrue(sig.is_matmul("MatMulV2.csv"))
  lu.assertFalse(sig.is_matmul("BatchMatMulV2"))
end

-- sig.hash_file streams the file (256 KiB pieces) and equals sig.hash of its whole text.
function TestSig:test_hash_file_equals_hash_of_text()
  local h = require "tests.lua.helpers"
  local dir = h.tmpdir()
  local parts = {}
  for i = 1, 70000 do parts[i] = ("%d,row %d,%x\n"):format(i, i * 7919, i * 104729) end
  local text = table.concat(parts) -- about 1.5 MiB: the last piece is a partial one
  for _, t in ipairs { "", "x", text, text:sub(1, 1 << 18), text:sub(1, (1 << 18) + 1), text:sub(1, (1 << 18) - 1) } do
    h.write(dir .. "/f", t)
    lu.assertEquals(sig.hash_file(dir .. "/f"), sig.hash(t))
  end
  local v, err = sig.hash_file(dir .. "/missing")
  lu.assertNil(v)
  lu.assertStrContains(err, dir .. "/missing: ")
end

-- sig.row_hash: sig.row's hash without its text (the shape grid keys every candidate with it)
function TestSig:test_row_hash_equals_row()
  local rows = {
    { row('"5,6144;2048,6144"', nil, nil, '"5,2048"', nil, { ["OP State"] = "dynamic" }), "MatMulV2" },
    { row("5,6144;2048,6144", nil, nil, "5,2048", nil, { ["OP Type"] = "MatMulV2" }) },
    { row("512,24;512,4096", "DT_BF16;DT_BF16", "ND;ND", "24,4096", "DT_BF16"), "MatMulV3" },
    { row("N/A;None;NULL;none;NA;()", "a;b;c;d;e;f", "", "5", "g;h"), "Foo" },
    { row("4,16;2,16,8", "DT_BF16;DT_BF16", "ND;ND", "4,16", "DT_BF16", { ["EP Size"] = " 16 " }), "DispatchFFNCombine" },
    { row("64,1728;16", "DT_BF16;INT64", "ND;ND", "16,1728", "DT_BF16", { ["OP State"] = "Index" }) },
    { {}, "Add" },
  }
  for n, c in ipairs(rows) do
    local _, h = sig.row(c[1], c[2])
    lu.assertEquals(sig.row_hash(c[1], c[2]), h, n)
    lu.assertEquals(math.type(sig.row_hash(c[1], c[2])), "integer")
  end
  lu.assertErrorMsgContains("table expected", sig.row_hash, "not a row")
end

-- shape.parse_plain reads exactly the cells the old Lua check called plain (after cutting blanks
-- and quotes around them), with the integers the general path reads (split, trim, num.int per
-- dim, empty slots dropped); any other text is nil. 20k random cells over the characters that
-- matter (digits, zeros, commas, semicolons, quotes, blanks, letters, long numbers).
local function plain_reference(cell)
  if cell:find('[%s"]') then cell = cell:gsub('^[%s"]+', ""):gsub('[%s"]+$', "") end
  if cell:find("[^%d,;]") or cell:find(",[,;]") or cell:find(";,") or cell:byte(1) == 44
    or cell:byte(-1) == 44 or cell:find("%f[%d]0%d") or cell:find("%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d") then
    return nil
  end
  local out = {}
  for _, part in ipairs(shape.split(cell)) do
    if part ~= "" then
      local dims = {}
      for d in part:gmatch("[^,]+") do dims[#dims + 1] = assert(require("perfscript.num").int(d)) end
      out[#out + 1] = dims
    end
  end
  return out
end

function TestShape:test_parse_plain()
  lu.assertEquals(shape.parse_plain('"2,128,1,512;32,1,128,512;;;2;;"'), { { 2, 128, 1, 512 }, { 32, 1, 128, 512 }, { 2 } })
  lu.assertEquals(shape.parse_plain(' """4096,7168;;1""" '), { { 4096, 7168 }, { 1 } })
  lu.assertEquals(shape.parse_plain(""), {})
  lu.assertEquals(shape.parse_plain("0;10"), { { 0 }, { 10 } })
  for _, bad in ipairs { "1,,2", "1,;2", "1;,2", ",1", "1,", "01", "1,02", "1234567890123456", "(1,2)", "1 ,2", "a", "-1" } do
    lu.assertNil(shape.parse_plain(bad), bad)
    lu.assertNil(plain_reference(bad), bad)
  end
  lu.assertEquals(shape.parse_plain("123456789012345"), { { 123456789012345 } })
  local alphabet = { "1", "2", "9", "0", "0", "7", ",", ",", ";", ";", '"', " ", "\t", "x", "123456789", "99999999" }
  local seed = 12345
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
  for _ = 1, 20000 do
    local parts = {}
    local n = rnd(2) == 1 and #alphabet or 10  -- half the cells from digits, ',' and ';' only
    for i = 1, rnd(14) - 1 do parts[i] = alphabet[rnd(n)] end
    local cell = table.concat(parts)
    if rnd(3) == 1 then cell = '"' .. cell .. '"' end
    local want = plain_reference(cell)
    local got = shape.parse_plain(cell)
    if want == nil then lu.assertNil(got, cell) else lu.assertEquals(got, want, cell) end
  end
  lu.assertError(shape.parse_plain, nil)
end

os.exit(lu.LuaUnit.run())
