-- One number parser and one valid-duration rule (src/schema/num.c): every module that reads a cell
-- agrees with Python's float() and with the consumer's "finite and > 0".
local lu = require "luaunit"
local schema = require "perfscript.microbench.schema"
local numparse = require "perfscript.analysis.numparse"
local profile = require "perfscript.profile"

TestNum = {}

function TestNum:test_python_float()
  for _, f in ipairs { numparse.float, profile.number } do
    lu.assertEquals(f(" 1.5 "), 1.5)
    lu.assertEquals(f("1_000"), 1000.0)          -- Python takes underscores between digits
    lu.assertEquals(f("1e3"), 1000.0)
    lu.assertNil(f("0x10"))                      -- and no hex
    lu.assertNil(f("1__0"))
    lu.assertNil(f(""))
  end
  lu.assertEquals(schema.parse_float("1_000"), 1000.0)
  lu.assertEquals(schema.parse_float("0x10"), 0.0)
  lu.assertEquals(schema.parse_float(" bad "), 0.0)
  lu.assertTrue(schema.parse_float("nan") ~= schema.parse_float("nan"))
  lu.assertEquals(schema.parse_float("-inf"), -math.huge)
end

function TestNum:test_valid_duration_is_one_rule()
  for _, s in ipairs { "1", " 0.5 ", "2e1", "1_0" } do
    lu.assertTrue(schema.is_real(s), s)
    lu.assertNotNil(schema.valid_sample(s), s)
  end
  for _, s in ipairs { "", "0", "-1", "inf", "Infinity", "nan", "0x10", "abc" } do
    lu.assertFalse(schema.is_real(s), s)
    lu.assertNil(schema.valid_sample(s), s)
    lu.assertFalse(schema.has_valid_duration(s, s), s)
  end
  lu.assertTrue(schema.has_valid_duration("0", "3"))
end

-- Integer cells (message_bytes, num_devices, EP Size) follow Python's int(): one rule, in C.
function TestNum:test_python_int()
  local num = require "perfscript.num"
  local comm = require "perfscript.analysis.comm"
  for _, f in ipairs { num.int, comm.pyint } do
    lu.assertEquals(f(" 8 "), 8)
    lu.assertEquals(f("+4"), 4)
    lu.assertEquals(f("007"), 7)
    lu.assertEquals(f("1_2_3"), 123)             -- int() takes every single underscore
    lu.assertEquals(math.type(f("16")), "integer")
    for _, s in ipairs { "4.0", "1e3", "0x10", "1__0", "_1", "", "inf", "99999999999999999999" } do
      lu.assertNil(f(s), s)
    end
  end
end

-- The database's numeric cells (avg_seq_len, sparse_mode, EP Size) go through the one parser:
-- hex is no number (Lua's tonumber took "0x10").
function TestNum:test_db_cells_are_python_numbers()
  local num = require "perfscript.num"
  lu.assertNil(num.finite("0x10"))
  lu.assertEquals(num.finite(3), 3.0)            -- a number passes through when finite
  lu.assertNil(num.finite(math.huge))
end

-- num.fmt6 is string.format("%.6f", x) byte for byte (the write-back's and the report's
-- numbers): ties, tiny and huge values, negative zero, nan and inf, integers.
function TestNum:test_fmt6_is_percent_6f()
  local num = require "perfscript.num"
  local vals = { 0, -0.0, 1, 3, -12.5, 0.0000005, 0.0000015, 2.5e-7, 1e-300, 0.1, 123.4567895,
                 8999999999.9999995, 9e9, 1e15, 1e300, -1e300, math.huge, -math.huge, 0 / 0,
                 math.maxinteger, math.mininteger }
  for e = 0, 15 do -- digit-count boundaries of the integer part, rounding across them
    local p = 10.0 ^ e
    for _, v in ipairs { p, p - 1, p - 0.0000005, p - 0.0000004, p + 0.0000005, -p, p * 9.99 } do
      vals[#vals + 1] = v
    end
  end
  local seed = 12345
  for _ = 1, 20000 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    local v = (seed / 2147483648 - 0.5) * 10 ^ (seed % 23 - 8)
    vals[#vals + 1] = v
    vals[#vals + 1] = math.floor(v * 1e6 + 0.5) / 1e6 + 5e-7 -- near a rounding tie
  end
  for _, v in ipairs(vals) do
    lu.assertEquals(num.fmt6(v), string.format("%.6f", v), tostring(v))
  end
  lu.assertEquals(num.fmt6("2.5"), "2.500000") -- a numeric string, as string.format takes it
end

os.exit(lu.LuaUnit.run())
