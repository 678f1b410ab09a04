-- The import's work on several threads gives what one thread gives: the provenance lines of a
-- new file (agg:provenance, made in ranges of the groups on the aggregate's threads, the input
-- members encoded once) equal the merge path's lines of the same rows (perf.provenance.lines,
-- every member encoded per line), whatever the thread count; and the XXH3 of an input taken
-- while it is read (profile.new{hash = true}, on a thread of its own when the file is read by
-- several) is perfscript.sig.hash_file's.
local lu = require "luaunit"
local h = require "helpers"
local perf = require "perfscript"
local prov = require "perfscript.microbench.provenance"
local profile = require "perfscript.profile"

local HEAD = "Task ID,Type,OP State,Accelerator Core,Start Time(us),Duration(us),Input Shapes,"
  .. "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats"

-- A kernel_details of n rows over ngroups signatures of two types (one big enough for threads).
local function write_capture(n, ngroups)
  local dir = h.tmpdir()
  local lines = { HEAD }
  for i = 1, n do
    local g = i % ngroups
    local t = g % 9 == 0 and "Add" or "MatMulV2"
    lines[#lines + 1] = string.format('%d,%s,dynamic,AI_CORE,"%d.%03d\t",%d.%d,"""%d,%d;%d,%d""",'
      .. 'DT_BF16;DT_BF16,ND;ND,"""%d,%d""",DT_BF16,ND', i, t, 1736413971000 + i, i % 1000, 3 + g % 50,
      i % 10, g + 1, 128, 256, 128, g + 1, 256)
  end
  local path = dir .. "/kernel_details.csv"
  h.write(path, table.concat(lines, "\r\n") .. "\r\n")
  return path
end

TestProfileThreads = {}

function TestProfileThreads:test_provenance_lines_any_threads()
  local path = write_capture(3000, 700)
  local common = prov.common { run = "r", source = "imported", time = "2026-01-01T00:00:00Z" }
  local inputs = { { "/cap/a b/kernel_details.csv", "00ff" }, { '/in"put\\x.csv', nil }, { nil, nil } }
  local first
  for _, threads in ipairs { 1, 2, 3, 8 } do
    local agg = profile.new { threads = threads }
    assert(agg:add_file(path))
    local all = {}
    for _, ty in ipairs(agg:types()) do
      local written = {}
      for _, i in ipairs(ty.groups) do
        local g = agg:group(i, false)
        local row = prov.sig_row(function(c)
          return ({ ["OP State"] = g.op_state, ["Input Shapes"] = g.in_shapes, ["Input Data Types"] = g.in_dtypes,
            ["Input Formats"] = g.in_formats, ["Output Shapes"] = g.out_shapes,
            ["Output Data Types"] = g.out_dtypes })[c]
        end)
        local _, key = perf.sig.row(row, ty.type)
        written[#written + 1] = { key = key, row = row }
      end
      for _, inp in ipairs(inputs) do
        local text, n = agg:provenance(ty.groups, ty.type, common, inp[1], inp[2])
        local want, wn = perf.provenance.lines(common, { { stem = ty.type, written_rows = written } }, inp[1], inp[2])
        lu.assertEquals(n, wn)
        lu.assertEquals(n, #ty.groups)
        lu.assertEquals(text, want)
        all[#all + 1] = text
      end
    end
    lu.assertTrue(#agg:types()[1].groups >= 600)   -- enough rows for several threads
    local joined = table.concat(all)
    if first then lu.assertEquals(joined, first) else first = joined end
    lu.assertEquals(select(2, agg:provenance({}, "Add", common)), 0)
    lu.assertErrorMsgContains("out of range", agg.provenance, agg, { 1, #agg + 1 }, "Add", common)
    agg:close()
  end
end

-- A function that writes a text to path with fs.write_atomic and returns what the file holds.
local function writer(path)
  return function(text)
    assert(perf.fs.write_atomic(path, text, { if_changed = false }))
    local f = assert(io.open(path, "rb"))
    local got = f:read("a")
    f:close()
    return got
  end
end

-- The texts as perfscript.text (C buffers, a piece per thread: as_text) write the same bytes
-- as the strings, written by fs.write_atomic alone or among string pieces, and are emptied by
-- the write (the import's big texts are never copied into Lua).
function TestProfileThreads:test_texts_as_c_buffers()
  local path = write_capture(3000, 700)
  local common = prov.common { run = "r", source = "imported", time = "2026-01-01T00:00:00Z" }
  local written = writer(h.tmpdir() .. "/out.txt")
  for _, threads in ipairs { 1, 2, 3 } do
    local agg = profile.new { threads = threads }
    assert(agg:add_file(path))
    local ty = agg:types()[1]
    lu.assertTrue(#ty.groups >= 600)   -- several pieces
    local want = agg:csv_text(ty.groups, nil, "\r\n")
    local t = agg:csv_text(ty.groups, nil, "\r\n", true)
    lu.assertEquals(#t, #want)
    lu.assertEquals(written(t), want)
    lu.assertEquals(#t, 0)             -- written: its buffers are freed
    lu.assertEquals(written(t), "")
    local extra = { [ty.groups[2]] = { "a,b", 'q"' } }
    local parts = { "head\r\n", agg:csv_text(ty.groups, extra, "\n", true), "x",
                    agg:provenance(ty.groups, ty.type, common, "/in.csv", "00ff", true), "" }
    local k = 0
    lu.assertEquals(written(function() k = k + 1; return parts[k] end),
      "head\r\n" .. agg:csv_text(ty.groups, extra, "\n") .. "x"
      .. agg:provenance(ty.groups, ty.type, common, "/in.csv", "00ff"))
    local empty, n = agg:provenance({}, "Add", common, nil, nil, true)
    lu.assertEquals({ #empty, n }, { 0, 0 })
    lu.assertEquals(#agg:csv_text({}, nil, "\n", true), 0)
    t = agg:csv_text(ty.groups, nil, "\n", true)
    t:free()
    lu.assertEquals(#t, 0)
    agg:close()
  end
end

-- agg:csv_renderer (a new database's files, rendered ahead on the aggregate's threads) gives
-- each list's rows as csv_text does, whatever the thread count, the order of the takes and the
-- lists' sizes (items of 512 rows: a list of 600 is two); a list is taken once; a closed
-- renderer or aggregate refuses to take; a group in two lists is rendered as twice in a row.
function TestProfileThreads:test_renderer_as_csv_text()
  local path = write_capture(6000, 1400)
  local written = writer(h.tmpdir() .. "/out.txt")
  for _, threads in ipairs { 1, 2, 3, 8 } do
    local want_agg, agg = profile.new { threads = 1 }, profile.new { threads = threads }
    assert(want_agg:add_file(path))
    assert(agg:add_file(path))
    local types = agg:types()
    lu.assertTrue(#types[1].groups > 1024)   -- three items
    local lists = { types[1].groups, {}, types[2].groups }
    local want = {}
    for i, l in ipairs(lists) do want[i] = want_agg:csv_text(l, nil, "\r\n") end
    local r = agg:csv_renderer(lists)
    lu.assertEquals(written(r:take(1)), want[1])
    lu.assertEquals(written(r:take(3)), want[3])   -- list 2 skipped (made all the same)
    lu.assertEquals(written(r:take(2)), "")
    lu.assertErrorMsgContains("taken before", r.take, r, 1)
    lu.assertErrorMsgContains("out of range", r.take, r, 4)
    r:close()
    lu.assertErrorMsgContains("closed", r.take, r, 1)
    -- a group in two lists: rendered twice, one after the other
    local g = { types[2].groups[3] }
    r = agg:csv_renderer({ g, g })
    lu.assertEquals(written(r:take(1)), want_agg:csv_text(g, nil, "\r\n"))
    lu.assertEquals(written(r:take(2)), want_agg:csv_text(g, nil, "\r\n"))
    -- line ends of the caller's, extra cells; taken out of order; the aggregate closed under
    -- a live renderer
    local extra = { [types[1].groups[2]] = { "a,b", 'q"' }, [types[1].groups[700]] = { "", 7 } }
    r = agg:csv_renderer({ types[2].groups, types[1].groups }, "\n", { [2] = extra })
    lu.assertEquals(written(r:take(2)), want_agg:csv_text(types[1].groups, extra, "\n"))
    lu.assertStrContains(written(want_agg:csv_text(types[1].groups, extra, "\n", true)), ',"a,b","q"""\n')
    lu.assertErrorMsgContains("out of range", agg.csv_renderer, agg, { { 1, #agg + 1 } })
    lu.assertErrorMsgContains("out of range", agg.csv_renderer, agg, { { 0 } })
    agg:close()
    lu.assertErrorMsgContains("closed", r.take, r, 1)
    want_agg:close()
  end
end

function TestProfileThreads:test_file_xxh3_while_reading()
  local path = write_capture(4000, 300)
  local want = perf.sig.hash_file(path)
  lu.assertNotNil(want)
  for _, threads in ipairs { 1, 2, 4 } do
    -- split_min 1: the file is read by several threads (the hash on a thread of its own)
    local agg = profile.new { threads = threads, split_min = 1, hash = true }
    assert(agg:add_file(path))
    assert(agg:add_file(path))
    lu.assertEquals(agg:file_xxh3(1), want)
    lu.assertEquals(agg:file_xxh3(2), want)
    lu.assertNil(agg:file_xxh3(3))
    lu.assertNil(agg:file_xxh3(0))
    agg:close()
  end
  local plain = profile.new { threads = 2, split_min = 1 }
  assert(plain:add_file(path))
  lu.assertNil(plain:file_xxh3(1))   -- not asked for
  -- profimport.aggregate hands them out per file, and provenance.inputs takes them
  local imp = require "perfscript.profimport"
  local agg, per_file = imp.aggregate({ path }, { threads = 2, hash = true })
  lu.assertEquals(per_file[1].xxh3, want)
  local input, xxh3 = prov.inputs({ path }, "/x", { per_file[1].xxh3 })
  lu.assertEquals({ input, xxh3 }, { path, prov.key_hex(want) })
  lu.assertEquals({ prov.inputs({ path, path }, "/x", { want }) }, { prov.inputs({ path, path }, "/x") })
  agg:close()
end

os.exit(lu.LuaUnit.run())
