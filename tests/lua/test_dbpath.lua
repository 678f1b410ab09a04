-- Database layout rules (docs/rules.md, Database paths; docs/database.md, Layout).
local lu = require "luaunit"
local argparse = require "argparse"
local dbpath = require "perfscript.dbpath"

TestVersion = {}

function TestVersion:test_accepted()
  for _, v in ipairs { "0.18.0", "v0.13.0", "2.9.0+cpu", "8.5", "0.18.0rc1", "1_2-3+4",
                       "vllm0.18.0_torch2.9.0_cann8.5" } do
    lu.assertEquals(dbpath.check_version(v), v)
  end
  lu.assertEquals(dbpath.check_version(" 1.2 "), "1.2")
end

function TestVersion:test_rejected()
  for _, v in ipairs { "bad version", "1..2", ".1", "1.", "a/b", "", "  ", "1.\xc3\xa9" } do
    local ok, err = dbpath.check_version(v)
    lu.assertNil(ok, v)
    lu.assertEquals(err, "Invalid version value: '" .. v .. "'. Expected something like "
      .. "0.9.2, 2.9.0, 8.5, or vllm0.13.0_torch2.8.0_cann8.3.")
  end
end

TestName = {}

function TestName:test_components()
  lu.assertEquals(dbpath.version_dir("V0.18.0", "Torch2.9.0+cu121", "CANN8.5.0"),
    "vllm0.18.0_torch2.9.0_cann8.5.0")
  lu.assertEquals(dbpath.version_dir("0.18.0", "2.9.0", "8.5"), "vllm0.18.0_torch2.9.0_cann8.5")
  lu.assertEquals(dbpath.version_dir("vllm0.13.0", "torch2.8.0", "cann8.3"),
    "vllm0.13.0_torch2.8.0_cann8.3")
  lu.assertEquals(dbpath.normalize_component("cann", " 8.5 "), "8.5")
  lu.assertEquals(dbpath.normalize_component("torch", "2.9.0+cpu"), "2.9.0")
  -- only vllm drops a lone v
  lu.assertEquals(dbpath.normalize_component("cann", "v8.5"), "v8.5")
end

function TestName:test_full_name_pattern()
  lu.assertTrue(dbpath.is_version_dir("vllm0.18.0_torch2.9.0_cann8.5"))
  lu.assertTrue(dbpath.is_version_dir("vllm0.18.0_torch2.9.0_cann8.5_shape_generated"))
  lu.assertFalse(dbpath.is_version_dir("0.18.0"))
  lu.assertFalse(dbpath.is_version_dir("vllm_torch_cann"))
end

TestResolve = {}

function TestResolve:test_database_path_wins()
  lu.assertEquals(dbpath.resolve { database_path = "/x/y", vllm_version = "bad version",
                                   device = "nope" }, "/x/y")
end

function TestResolve:test_three_versions()
  lu.assertEquals(dbpath.resolve { database_root = "/data/", vllm_version = "0.18.0",
                                   torch_version = "2.9.0", cann_version = "8.5" },
    "/data/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5")
  lu.assertEquals(dbpath.resolve { database_root = "db", device = " TEST_DEVICE ",
                                   vllm_version = "v0.13.0", torch_version = "2.8.0+cpu",
                                   cann_version = "cann8.3" },
    "db/TEST_DEVICE/vllm_ascend/vllm0.13.0_torch2.8.0_cann8.3")
end

function TestResolve:test_full_name_alone()
  lu.assertEquals(dbpath.resolve { database_root = "r", device = "ATLAS_800_A2_376T_64G",
                                   vllm_version = "vllm0.18.0_torch2.9.0_cann8.5_shape_generated" },
    "r/ATLAS_800_A2_376T_64G/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5_shape_generated")
  -- with another version given, the full name is only the vllm component
  local d = dbpath.resolve { database_root = "r", vllm_version = "vllm1_torch2_cann3",
                             torch_version = "2.9.0", cann_version = "8.5" }
  lu.assertEquals(d, "r/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm1_torch2_cann3_torch2.9.0_cann8.5")
end

function TestResolve:test_missing()
  local d, err = dbpath.resolve { database_root = "r", vllm_version = "0.18.0" }
  lu.assertNil(d)
  lu.assertStrContains(err, "version(s): PyTorch, CANN. Specify --database-path")
  d, err = dbpath.resolve { database_root = "r" }
  lu.assertStrContains(err, "vLLM-Ascend, PyTorch, CANN")
  d, err = dbpath.resolve { vllm_version = "1", torch_version = "2", cann_version = "3",
                            database_root = "" }
  if os.getenv(dbpath.ROOT_ENV) == nil then
    -- no root named: ./perfdb, the same default as the grid recipes'
    lu.assertEquals(d, "perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm1_torch2_cann3")
  end
  d, err = dbpath.resolve { database_root = "r", device = "GPU", vllm_version = "1",
                            torch_version = "2", cann_version = "3" }
  lu.assertNil(d)
  lu.assertStrContains(err, "unknown device 'GPU'")
  d, err = dbpath.resolve { database_root = "r", vllm_version = "1..2", torch_version = "2",
                            cann_version = "3" }
  lu.assertStrContains(err, "Invalid version value: '1..2'")
end

function TestResolve:test_split()
  local p = dbpath.split("/data/TEST_DEVICE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5_shape_generated/")
  lu.assertEquals(p, { root = "/data", device = "TEST_DEVICE",
                       version_dir = "vllm0.18.0_torch2.9.0_cann8.5_shape_generated",
                       vllm = "0.18.0", torch = "2.9.0", cann = "8.5", suffix = "shape_generated" })
  lu.assertEquals(dbpath.split("db/D/vllm_ascend/vllm1_torch2_cann3").cann, "3")
  lu.assertNil(dbpath.split("/tmp/somewhere"))
end

TestOptions = {}

local function parser()
  local p = argparse("x", "test")
  dbpath.add_options(p)
  return p
end

function TestOptions:test_parse_and_resolve()
  local args = parser():parse { "--database-root", "/d", "--vllm-version", " 0.18.0 ",
                                "--torch-version", "2.9.0", "--cann-version", "8.5" }
  lu.assertEquals(args.vllm_version, "0.18.0")
  lu.assertEquals(args.device, dbpath.DEFAULT_DEVICE)
  lu.assertEquals(dbpath.from_args(args),
    "/d/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5")
  args = parser():parse { "--database-path", "some/dir" }
  lu.assertEquals(dbpath.from_args(args), "some/dir")
end

function TestOptions:test_every_device_accepted()
  for _, dev in ipairs(dbpath.DEVICES) do
    lu.assertEquals(parser():parse { "--device", dev }.device, dev)
  end
end

function TestOptions:test_bad_values_rejected()
  for _, argv in ipairs { { "--device", "GPU" }, { "--vllm-version", "" },
                          { "--cann-version", "a/b" }, { "--unknown", "1" } } do
    local ok = parser():pparse(argv)
    lu.assertFalse(ok, table.concat(argv, " "))
  end
end

function TestOptions:test_from_args_user_error()
  local perf = require "perfscript"
  local ok, err = pcall(dbpath.from_args, { database_root = "r" })
  lu.assertFalse(ok)
  lu.assertTrue(perf.is_user_error(err))
end

function TestOptions:test_help_mentions_flags()
  local help = parser():get_help()
  for _, flag in ipairs { "--database-path", "--database-root", "--device", "--vllm-version",
                          "--torch-version", "--cann-version" } do
    lu.assertStrContains(help, flag)
  end
end

-- The default database (docs/rules.md, Database paths): the grown database when it exists,
-- else the bundled seed; a writer copies the seed first. A scratch root stands for ./perfdb
-- and a scratch repository for the recipe's checkout.
TestDefault = {}

local h = require "helpers"
local paths = require "perfscript.path"

local function scratch()
  local t = h.tmpdir()
  local seed = t .. "/repo/data/seed_db/" .. dbpath.SEED_VERSION
  assert(require("perfscript").fs.mkdir_p(seed))
  h.write(seed .. "/Add.csv", "Type\nAdd\n")
  return t, t .. "/repo/recipes/db_lint.lua"
end

function TestDefault:test_seed_when_nothing_grown()
  local t, script = scratch()
  local dir, how, info = dbpath.default({ database_root = t .. "/perfdb" }, { script = script })
  lu.assertEquals(how, "seed")
  lu.assertEquals(dir, t .. "/repo/data/seed_db/" .. dbpath.SEED_VERSION)
  lu.assertEquals(info.grown, t .. "/perfdb/" .. dbpath.SEED_VERSION)
  lu.assertFalse(paths.isdir(t .. "/perfdb"))  -- a reader creates nothing
  lu.assertStrContains(dbpath.default_note(dir, how, info), "default: the bundled seed database")
end

function TestDefault:test_grown_preferred()
  local t, script = scratch()
  local grown = t .. "/perfdb/" .. dbpath.SEED_VERSION
  assert(require("perfscript").fs.mkdir_p(grown))
  local dir, how = dbpath.default({ database_root = t .. "/perfdb" }, { script = script })
  lu.assertEquals(how, "grown")
  lu.assertEquals(dir, grown)
  dir, how = dbpath.default({ database_root = t .. "/perfdb" }, { script = script, write = true })
  lu.assertEquals(how, "grown")
  lu.assertEquals(dir, grown)
end

function TestDefault:test_writer_copies_the_seed()
  local t, script = scratch()
  local dir, how, info = dbpath.default({ database_root = t .. "/perfdb" }, { script = script, write = true })
  lu.assertEquals(how, "created")
  lu.assertEquals(dir, t .. "/perfdb/" .. dbpath.SEED_VERSION)
  lu.assertEquals(info.copied, 1)
  lu.assertTrue(paths.isfile(dir .. "/Add.csv"))
end

function TestDefault:test_seed_path_normalized()
  lu.assertEquals(dbpath.seed_dir("recipes/../recipes/db_lint.lua"), "data/seed_db/" .. dbpath.SEED_VERSION)
  lu.assertEquals(dbpath.seed_dir("/a/b/recipes/x.lua"), "/a/b/data/seed_db/" .. dbpath.SEED_VERSION)
  lu.assertEquals(dbpath.seed_dir("x.lua"), "../data/seed_db/" .. dbpath.SEED_VERSION)  -- run from recipes/
end

function TestDefault:test_from_args_takes_the_default_and_says_so()
  local t, script = scratch()
  local said = {}
  local dir, how = dbpath.from_args({ database_root = t .. "/perfdb" },
    { script = script, say = function(s) said[#said + 1] = s end })
  lu.assertEquals(how, "seed")
  lu.assertEquals(#said, 1)
  lu.assertStrContains(said[1], "Database: " .. dir)
  -- a named database is used as given, silently
  said = {}
  lu.assertEquals(dbpath.from_args({ database_path = "x" }, { script = script,
    say = function(s) said[#said + 1] = s end }), "x")
  lu.assertEquals(#said, 0)
end

os.exit(lu.LuaUnit.run())
