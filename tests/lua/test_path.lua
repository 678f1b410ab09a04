-- perfscript.path: the one home of the path and tree helpers (trim, basename, dirname, join,
-- abspath, walk, copy_tree, rmtree) that six modules used to write for themselves.
local lu = require "luaunit"
local lfs = require "lfs"
local path = require "perfscript.path"
local H = require "helpers"

TestPath = {}

function TestPath:test_names()
  lu.assertEquals(path.trim("  a b \t\n"), "a b")
  lu.assertEquals(path.trim(nil), "")
  lu.assertEquals(path.trim(12), "12")
  lu.assertEquals(path.basename("a/b/c.csv"), "c.csv")
  lu.assertEquals(path.basename("a/b/"), "b")
  lu.assertEquals(path.basename("c"), "c")
  lu.assertEquals(path.dirname("a/b/c.csv"), "a/b")
  lu.assertEquals(path.dirname("c.csv"), ".")
  lu.assertEquals(path.dirname("/c"), "")
  lu.assertEquals(path.join("/root/", "/dev/", "v"), "/root/dev/v")
  lu.assertEquals(path.join("a"), "a")
  lu.assertEquals(path.abspath("/x/y"), "/x/y")
  lu.assertEquals(path.abspath("./y"), lfs.currentdir() .. "/y")
end

function TestPath:test_walk_copy_rmtree()
  local dir = H.tmpdir()
  assert(require("perfscript.fs").mkdir_p(dir .. "/src/b/PROF_1"))
  assert(require("perfscript.fs").mkdir_p(dir .. "/src/reports"))
  H.write(dir .. "/src/z.csv", "z")
  H.write(dir .. "/src/b/a.csv", "a")
  H.write(dir .. "/src/.lock", "")
  H.write(dir .. "/src/reports/r.md", "r")
  assert(lfs.link(dir .. "/src/b", dir .. "/src/link", true))
  local seen = {}
  path.walk(dir .. "/src", function(_, _, mode, rel) seen[#seen + 1] = rel .. ":" .. mode end)
  lu.assertEquals(seen, { ".lock:file", "b:directory", "b/PROF_1:directory", "b/a.csv:file",
                          "link:link", "reports:directory", "reports/r.md:file", "z.csv:file" })
  seen = {}
  path.walk(dir .. "/src", function(_, name, mode, rel)
    if mode == "file" then seen[#seen + 1] = rel end
    return name ~= "reports"
  end, { follow = true })
  lu.assertEquals(seen, { ".lock", "b/a.csv", "link/a.csv", "z.csv" })

  H.write(dir .. "/dst_z.csv", "")
  assert(require("perfscript.fs").mkdir_p(dir .. "/dst"))
  H.write(dir .. "/dst/z.csv", "kept")
  lu.assertEquals(path.copy_tree(dir .. "/src", dir .. "/dst", { skip = { reports = true }, keep_existing = true }), 2)
  lu.assertEquals(H.read(dir .. "/dst/z.csv"), "kept")
  lu.assertEquals(H.read(dir .. "/dst/b/a.csv"), "a")
  lu.assertNil(lfs.attributes(dir .. "/dst/reports"))
  lu.assertNil(lfs.attributes(dir .. "/dst/.lock"))
  local n, err = path.copy_tree(dir .. "/src/z.csv", dir .. "/dst2")
  lu.assertNil(n)
  lu.assertStrContains(err, "z.csv")
  lu.assertTrue(path.rmtree(dir))
  lu.assertNil(lfs.attributes(dir))
  lu.assertTrue(path.rmtree(dir))
end

function TestPath:test_normalize()
  lu.assertEquals(path.normalize("recipes/../data/./seed_db//x/"), "data/seed_db/x")
  lu.assertEquals(path.normalize("/w/main/recipes/../data"), "/w/main/data")
  lu.assertEquals(path.normalize("../a/../../b"), "../../b")
  lu.assertEquals(path.normalize("/../a"), "/a")
  lu.assertEquals(path.normalize("a/.."), ".")
  lu.assertEquals(path.normalize("./"), ".")
  lu.assertEquals(path.abspath("/x/./y/../z"), "/x/z")
  lu.assertNil(path.abspath("recipes/../x"):find("..", 1, true))
end

os.exit(lu.LuaUnit.run())
