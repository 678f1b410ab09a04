-- perfscript.csv from Lua: records, quirks, column aliases, errors and the atomic writer.
local lu = require "luaunit"
local csv = require "perfscript.csv"
local h = require "tests.lua.helpers"

local dir = h.tmpdir()

local function records(path, opts)
  local r = assert(csv.open(path, opts))
  local out = {}
  for f in r:lines() do out[#out + 1] = f end
  return r:header(), out, r
end

TestReader = {}

function TestReader:test_header_and_records()
  local p = h.write(dir .. "/a.csv", "\239\187\191Name,Type\r\nadd,Add\r\n\"mul,x\",Mul")
  local header, rows = records(p)
  lu.assertEquals(header, { "Name", "Type" })
  lu.assertEquals(rows, { { "add", "Add" }, { "mul,x", "Mul" } })
end

function TestReader:test_ragged_rows_keep_their_length()
  local _, rows = records(h.write(dir .. "/r.csv", "a,b,c\n1,2\n1,2,3,4\n"))
  lu.assertEquals(#rows[1], 2)
  lu.assertEquals(#rows[2], 4)
end

function TestReader:test_trim_removes_tab_guards()
  local p = h.write(dir .. "/t.csv", "Start Time(us),Input Shapes\n\"1736413971558972.912\t\",\"\"\"1,2\"\"\"\n")
  local _, raw = records(p)
  lu.assertEquals(raw[1][1], "1736413971558972.912\t")
  local _, trimmed = records(p, { trim = true })
  lu.assertEquals(trimmed[1], { "1736413971558972.912", "\"1,2\"" })
end

function TestReader:test_column_lookup_with_aliases()
  local p = h.write(dir .. "/op.csv", "Op Name,OP Type,Block Num,Task Duration(us)\nx,MatMulV2,24,3.5\n")
  local r <close> = assert(csv.open(p))
  lu.assertEquals(r:column("Name"), 1)
  lu.assertEquals(r:column("Type"), 2)
  lu.assertEquals(r:column("Block Dim"), 3)
  lu.assertEquals(r:column("Duration(us)"), 4)
  lu.assertNil(r:column("Input Shapes"))
  local cols = assert(r:columns { "Type", "Block Dim" })
  lu.assertEquals(cols, { Type = 2, ["Block Dim"] = 3 })
  local none, msg = r:columns { "Type", "Input Shapes", "Output Shapes" }
  lu.assertNil(none)
  lu.assertStrContains(msg, "op.csv: missing columns: Input Shapes, Output Shapes")
end

function TestReader:test_line_numbers_follow_quoted_newlines()
  local p = h.write(dir .. "/ml.csv", "a,b\n\"x\ny\nz\",1\nlast,2\n")
  local r <close> = assert(csv.open(p))
  lu.assertEquals(r:read(), { "x\ny\nz", "1" })
  lu.assertEquals(r:line(), 2)
  r:read()
  lu.assertEquals(r:line(), 5)
  lu.assertNil(r:read())
end

function TestReader:test_reuse_hands_out_one_table()
  local p = h.write(dir .. "/reuse.csv", "a,b,c\n1,2,3\n4\n")
  local r <close> = assert(csv.open(p, { reuse = true }))
  local first = r:read()
  lu.assertEquals(first, { "1", "2", "3" })
  local second = r:read()
  lu.assertIs(first, second)
  lu.assertEquals(second, { "4" })
end

function TestReader:test_bad_input_is_nil_and_message()
  local r, msg = csv.open(dir .. "/missing.csv")
  lu.assertNil(r)
  lu.assertStrContains(msg, "missing.csv: No such file or directory")
  r, msg = csv.open(h.write(dir .. "/lfs.csv", "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 9\n"))
  lu.assertNil(r)
  lu.assertStrContains(msg, "lfs.csv:1: a Git LFS pointer")
  r, msg = csv.open(h.write(dir .. "/bin.csv", "\0\1\2\3binary"))
  lu.assertNil(r)
  lu.assertStrContains(msg, "bin.csv:1: binary data")
end

function TestReader:test_unterminated_quote_raises_in_loop_and_returns_from_read()
  local p = h.write(dir .. "/open.csv", "a,b\n1,2\n3,\"oops\n")
  local r = assert(csv.open(p))
  local ok, err = pcall(function() for _ in r:lines() do end end)
  lu.assertFalse(ok)
  lu.assertStrContains(err, "open.csv:3: unterminated quoted field")
  r = assert(csv.open(p))
  lu.assertEquals(r:read(), { "1", "2" })
  local none, msg = r:read()
  lu.assertNil(none)
  lu.assertStrContains(msg, "open.csv:3:")
end

function TestReader:test_closed_reader_is_an_error()
  local r = assert(csv.open(h.write(dir .. "/c.csv", "a\n1\n")))
  r:close()
  lu.assertErrorMsgContains("closed CSV reader", function() r:read() end)
end

function TestReader:test_empty_file()
  local header, rows = records(h.write(dir .. "/empty.csv", ""))
  lu.assertEquals(header, {})
  lu.assertEquals(rows, {})
end

TestWriter = {}

function TestWriter:test_round_trip_and_results()
  local p = dir .. "/w.csv"
  os.remove(p)
  local w = assert(csv.writer(p))
  w:write { "Input Shapes", "Duration(us)" }
  w:write { "\"8,16;16,32\"", 12.5 }
  w:write { "", 3 }
  lu.assertEquals(w:rows(), 3)
  lu.assertEquals(w:commit(), "created")
  lu.assertEquals(h.read(p), "Input Shapes,Duration(us)\n\"\"\"8,16;16,32\"\"\",12.5\n,3\n")
  local _, rows = records(p)
  lu.assertEquals(rows[1], { "\"8,16;16,32\"", "12.5" })
  -- same content again: the file is not rewritten
  w = assert(csv.writer(p))
  w:write { "Input Shapes", "Duration(us)" }
  w:write { "\"8,16;16,32\"", "12.5" }
  w:write { "", "3" }
  lu.assertEquals(w:commit(), "unchanged")
end

function TestWriter:test_close_without_commit_keeps_the_original()
  local p = h.write(dir .. "/keep.csv", "a\r\n1\r\n")
  do
    local w <close> = assert(csv.writer(p))
    w:write { "a" }
    w:write { "changed" }
  end
  lu.assertEquals(h.read(p), "a\r\n1\r\n")
  local w = assert(csv.writer(p))
  w:write { "a" }
  w:write { "2" }
  lu.assertEquals(w:commit(), "replaced")
  lu.assertEquals(h.read(p), "a\r\n2\r\n")  -- CRLF kept
end

function TestWriter:test_bad_fields_and_paths()
  local w = assert(csv.writer(dir .. "/bad.csv"))
  lu.assertErrorMsgContains("row field 2 is a table", function() w:write { "a", {} } end)
  w:abort()
  local none, msg = csv.writer("/nonexistent-dir/x.csv")
  lu.assertNil(none)
  lu.assertStrContains(msg, "cannot create a temporary file")
end

function TestWriter:test_quote_and_format_row_are_the_writers()
  lu.assertEquals(csv.quote("plain"), "plain")
  lu.assertEquals(csv.quote('a,"b"'), '"a,""b"""')
  lu.assertEquals(csv.quote("two\nlines"), '"two\nlines"')
  lu.assertEquals(csv.quote(1.5), "1.5")
  lu.assertEquals(csv.quote(true), "true")
  lu.assertEquals(csv.format_row({ "a", "b,c", 'd"e', "", 7 }, "\r\n"), 'a,"b,c","d""e",,7\r\n')
  lu.assertEquals(csv.format_row({ "" }), '""')
  lu.assertEquals(csv.format_row({}), "")
  lu.assertError(csv.format_row, "not a table")
  -- what the writer writes, byte for byte
  local rows = { { "x", 'q"q', "a,b" }, { "" }, { " sp ", "cr\r", "" } }
  local p = dir .. "/same.csv"
  local w = assert(csv.writer(p, { eol = "\n" }))
  local want = {}
  for _, r in ipairs(rows) do w:write(r); want[#want + 1] = csv.format_row(r, "\n") end
  assert(w:commit())
  lu.assertEquals(h.read(p), table.concat(want))
end

TestLfs = {}

-- One check for every caller (db, microbench merge, trace loading): the C one in csvsniff.c.
function TestLfs:test_is_lfs_pointer()
  local ptr = "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 9\n"
  lu.assertTrue(csv.is_lfs_pointer(h.write(dir .. "/p.csv", ptr)))
  lu.assertTrue(csv.is_lfs_pointer(h.write(dir .. "/pbom.csv", "\239\187\191" .. ptr)))
  lu.assertFalse(csv.is_lfs_pointer(h.write(dir .. "/d.csv", "Name,Type\nadd,Add\n")))
  lu.assertFalse(csv.is_lfs_pointer(h.write(dir .. "/e.csv", "")))
  lu.assertFalse(csv.is_lfs_pointer(dir .. "/missing.csv"))
  lu.assertIs(require("perfscript.microbench.schema").is_lfs_pointer, csv.is_lfs_pointer)
  lu.assertError(csv.is_lfs_pointer)
end

TestFs = {}

function TestFs:test_lock_and_atomic_write()
  local fs = require "perfscript.fs"
  local lock = assert(fs.lock(dir))
  local other, msg = fs.lock(dir, { wait = false })
  lu.assertNil(other)
  lu.assertStrContains(msg, "locked by another perfscript run")
  lock:release()
  local again <close> = assert(fs.lock(dir, { wait = false }))
  local p = dir .. "/text.txt"
  os.remove(p)
  lu.assertEquals(fs.write_atomic(p, "hello"), "created")
  lu.assertEquals(fs.write_atomic(p, "hello"), "unchanged")
  lu.assertEquals(fs.write_atomic(p, "bye"), "replaced")
  lu.assertEquals(h.read(p), "bye")
  lu.assertTrue(fs.mkdir_p(dir .. "/x/y/z"))
  local ok, err = fs.mkdir_p(p .. "/sub")
  lu.assertNil(ok)
  lu.assertStrContains(err, "cannot create directory")
end

-- A writer killed mid-write leaves its temporary file; the next lock holder removes it (and
-- only it: files of live writers and other files stay).
function TestFs:test_lock_removes_leftovers_of_killed_writers()
  local fs, proc = require "perfscript.fs", require "perfscript.proc"
  local d = h.tmpdir()
  local target = h.write(d .. "/Add.csv", "a\n1\n")
  local ready = d .. "/ready"
  local bin = os.getenv("PERFSCRIPT") or "build/perfscript"
  local p = assert(proc.spawn { argv = { bin, "-e", ([[
    local w = assert(require('perfscript.csv').writer(%q)); w:write{'a'}; w:write{'2'}
    io.open(%q, 'w'):close(); while true do end]]):format(target, ready) } })
  for _ = 1, 200 do
    if io.open(ready) then break end
    proc.run { argv = { "sleep", "0.05" } }
  end
  p:kill(0) -- SIGTERM then SIGKILL: no chance to clean up
  local function leftovers()
    local n = {}
    for name in require("lfs").dir(d) do if name:find("%.tmp%.") then n[#n + 1] = name end end
    table.sort(n)
    return n
  end
  local left = leftovers()
  lu.assertEquals(#left, 1, "leftovers: " .. table.concat(left, " "))
  lu.assertStrContains(left[1], (".Add.csv.tmp.%d."):format(p:pid()))
  local mine = h.write(d .. "/.Live.csv.tmp." .. h.read("/proc/self/stat"):match("^%d+") .. ".aB9xYz", "busy")
  h.write(d .. "/.Old.csv.tmp.aB9xYz", "unknown writer")
  local lock <close> = assert(fs.lock(d, { quiet = true }))
  lu.assertEquals(lock:recovered(), { d .. "/" .. left[1] })
  lu.assertEquals(leftovers(), { ".Live.csv.tmp." .. mine:match("tmp%.(%d+)") .. ".aB9xYz", ".Old.csv.tmp.aB9xYz" })
  lu.assertEquals(h.read(target), "a\n1\n")
end

-- The text in pieces from a function (the import's provenance log, one table's lines at a
-- time): written in order, plain, appended and staged; an error in the function leaves the
-- file untouched.
function TestFs:test_atomic_write_of_pieces()
  local fs = require "perfscript.fs"
  local function pieces(list)
    local i = 0
    return function() i = i + 1; return list[i] end
  end
  local p = dir .. "/pieces.txt"
  os.remove(p)
  lu.assertEquals(fs.write_atomic(p, pieces { "ab", "", "cd\n" }), "created")
  lu.assertEquals(h.read(p), "abcd\n")
  lu.assertEquals(fs.write_atomic(p, pieces { "ab", "cd\n" }), "unchanged")
  lu.assertEquals(fs.write_atomic(p, pieces { "e\n" }, { append = true, if_changed = false }), "replaced")
  lu.assertEquals(h.read(p), "abcd\ne\n")
  local st <close> = fs.stage()
  lu.assertEquals(fs.write_atomic(p, pieces { "f", "\n" }, { append = true, if_changed = false, stage = st }), "replaced")
  lu.assertEquals(h.read(p), "abcd\ne\n")
  assert(st:commit())
  lu.assertEquals(h.read(p), "abcd\ne\nf\n")
  lu.assertErrorMsgContains("boom", fs.write_atomic, p, function() error("boom") end, { append = true })
  lu.assertErrorMsgContains("not a string", fs.write_atomic, p, pieces { "x", {} })
  lu.assertEquals(h.read(p), "abcd\ne\nf\n")
  local left = {}
  for name in require("lfs").dir(dir) do if name:find("pieces.txt.tmp", 1, true) then left[#left + 1] = name end end
  lu.assertEquals(left, {})
end

os.exit(lu.LuaUnit.run(...))
