-- One op_mapping.yaml reader (perfscript.db.mapping): the database, the grid's routing and the
-- analysis tools read the file through it, so they agree on what a good or a malformed file is.
local lu = require "luaunit"
local H = require "helpers"
local perf = require "perfscript"
local reader = require "perfscript.db.mapping"
local route = require "perfscript.grid.route"
local opmap = require "perfscript.analysis.opmap"

function test_malformed_file_same_message_everywhere()
  local dir = H.tmpdir()
  local path = H.write(dir .. "/op_mapping.yaml", "operator_mappings:\n  a: [1, 2\n  b: c\n")
  local doc, err = reader.read_file(path)
  lu.assertFalse(doc)
  lu.assertStrContains(err, path .. ": malformed YAML: ")
  local m, merr = opmap.load_dir(dir)
  lu.assertNil(m); lu.assertEquals(merr, err)
  local meta, rerr = route.load_meta(path)
  lu.assertNil(meta); lu.assertEquals(rerr, err)
  local ok, e = pcall(reader.read, dir)
  lu.assertFalse(ok); lu.assertTrue(perf.is_user_error(e)); lu.assertEquals(e.message, err)
end

function test_good_and_missing_file()
  local dir = H.tmpdir()
  lu.assertNil(reader.read_file(dir .. "/op_mapping.yaml"))
  lu.assertNil(reader.read(dir))
  lu.assertEquals(route.load_meta(dir .. "/op_mapping.yaml"), {})
  local path = H.write(dir .. "/op_mapping.yaml",
    "operator_mappings:\n  aten.add.Tensor: {kernel_type: Add, zero_cost: true}\n")
  local doc, text = reader.read_file(path)
  lu.assertEquals(doc.operator_mappings["aten.add.Tensor"].kernel_type, "Add")
  lu.assertStrContains(text, "aten.add.Tensor")
  lu.assertEquals(opmap.load_dir(dir):kernel_type("torch.ops.aten.add.Tensor"), "Add")
  lu.assertTrue(route.load_meta(path).Add.zero_cost)
  lu.assertEquals(reader.read(dir)._path, path)
end

os.exit(lu.LuaUnit.run())
