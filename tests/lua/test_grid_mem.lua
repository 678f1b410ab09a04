-- perfscript.mem (docs/rules.md, Shape grids: memory filter; per-slot dtypes fixed).
local lu = require "luaunit"
local mem = require "perfscript.mem"

function test_dtype_bytes()
  lu.assertEquals(mem.dtype_bytes("dt_float16"), 2)
  lu.assertEquals(mem.dtype_bytes("Dt_Int32"), 4)
  lu.assertEquals(mem.dtype_bytes("dt_bfloat16"), 2)
  lu.assertEquals(mem.dtype_bytes("dt_bf16"), 2)
  lu.assertEquals(mem.dtype_bytes("  DT_FLOAT  "), 4)
  lu.assertEquals(mem.dtype_bytes("DT_BF16\n"), 2)
  lu.assertEquals(mem.dtype_bytes("UNKNOWN_TYPE"), 2)
  lu.assertEquals(mem.dtype_bytes(""), 2)
  lu.assertEquals(mem.dtype_bytes("DT_COMPLEX128"), 16)
  lu.assertEquals(mem.dtype_bytes("INT64"), 8)
  lu.assertEquals(mem.dtype_bytes("DT_UNDEFINED"), 2)
  lu.assertEquals(mem.dtype_bytes("UINT32"), 2)
end

function test_parse_dtypes()
  lu.assertEquals(#mem.parse_dtypes("DT_BF16;DT_BF16;DT_INT32"), 3)
  lu.assertEquals(#mem.parse_dtypes("DT_BF16 DT_BF16  DT_INT32"), 3)
  lu.assertEquals(mem.parse_dtypes("DT_FLOAT16"), { "DT_FLOAT16" })
  lu.assertEquals(mem.parse_dtypes(""), {})
  lu.assertEquals(mem.parse_dtypes('"DT_BF16;DT_INT32"'), { "DT_BF16", "DT_INT32" })
  lu.assertEquals(mem.parse_dtypes(nil), {})
  -- fixed: empty slots are kept, so slot indices stay aligned
  lu.assertEquals(mem.parse_dtypes("DT_BF16;;DT_INT32"), { "DT_BF16", "", "DT_INT32" })
end

function test_tensor_bytes()
  lu.assertEquals(mem.tensor_bytes({ 128, 5120 }, "DT_BF16"), 1310720)
  lu.assertEquals(mem.tensor_bytes({}, "DT_BF16"), 0)
  lu.assertEquals(mem.tensor_bytes({ 1024 }, "DT_FLOAT"), 4096)
  lu.assertEquals(mem.tensor_bytes({ 4096, 8192 }, "DT_INT8"), 33554432)
  lu.assertEquals(mem.tensor_bytes({ 0, 100 }, "DT_BF16"), 0)
  lu.assertEquals(mem.tensor_bytes({ 1 << 40, 1 << 40 }, "DT_BF16"), math.maxinteger)  -- saturates
end

function test_row_bytes()
  lu.assertEquals(mem.row_bytes({ { 128, 5120 }, { 5120, 768 } }, "DT_BF16;DT_BF16", { { 128, 768 } }, "DT_BF16"),
                  9371648)
  -- output dtypes absent: the input list is used
  lu.assertEquals(mem.row_bytes({ { 100, 200 } }, "DT_FLOAT32", { { 100, 300 } }), 200000)
  -- missing dtype: 2 bytes
  lu.assertEquals(mem.row_bytes({ { 10, 10 }, { 10, 20 } }, { "DT_BF16" }, { { 10, 20 } }, { "DT_BF16" }), 1000)
  lu.assertEquals(mem.row_bytes({ { 4096, 8192 } }, "DT_FLOAT8_E4M3", { { 4096, 4096 } }, "DT_FLOAT8_E4M3"), 50331648)
  lu.assertEquals(mem.row_bytes({}, "", { { 100, 200 } }, "DT_BF16"), 40000)
  lu.assertEquals(mem.row_bytes({ { 4096, 4096 } }, "DT_FLOAT16", { { 4096, 4096 } }, "DT_FLOAT16"), 67108864)
  -- each slot its own dtype, empty slots kept (the Python original shifted INT64 onto slot 2)
  lu.assertEquals(mem.row_bytes({ { 8 }, {}, { 8 } }, "DT_BF16;;DT_INT64", {}, ""), 16 + 64)
end

function test_budget()
  local B = mem.DEFAULT_BUDGET
  lu.assertEquals(B, 34359738368)
  lu.assertFalse(mem.exceeds(mem.row_bytes({ { 128, 5120 } }, "DT_BF16", { { 128, 768 } }, "DT_BF16"), B))
  lu.assertTrue(mem.exceeds(mem.row_bytes({ { 1 << 20, 4096 }, { 1 << 20, 4096 } }, "DT_FLOAT;DT_FLOAT",
                                          { { 1 << 20, 4096 } }, "DT_FLOAT"), B))
  lu.assertTrue(mem.exceeds(mem.row_bytes({ { 100, 100 } }, "DT_FLOAT", {}, "DT_FLOAT"), 1000))
  lu.assertFalse(mem.exceeds(mem.row_bytes({ { 100, 200 } }, "DT_BF16", {}, "DT_BF16"), 40000))
  lu.assertTrue(mem.exceeds(mem.row_bytes({ { 131072, 131072 } }, "DT_FLOAT16", { { 131072, 131072 } },
                                          "DT_FLOAT16"), B))
end

function test_format()
  lu.assertEquals(mem.format(500), "500 B")
  lu.assertEquals(mem.format(2048), "2.00 KiB")
  lu.assertEquals(mem.format(5 * 1024 * 1024), "5.00 MiB")
  lu.assertEquals(mem.format(3 * 1024 ^ 3 // 1), "3.00 GiB")
  lu.assertEquals(mem.format(0), "0 B")
  lu.assertEquals(mem.format(2 * 1024 ^ 3 // 1), "2.00 GiB")
  lu.assertEquals(mem.format(1073741), "1.02 MiB")
end

os.exit(lu.LuaUnit.run())
