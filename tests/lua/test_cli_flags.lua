-- One command line (docs/rules.md, Command line): every recipe's parser takes --database-path
-- and --output where it has a database or a result file, old spellings still parse, lists are
-- repeatable comma lists, and every `--flag` the sources mention is a flag something accepts.
local lu = require "luaunit"
local paths = require "perfscript.path"

local SRC = os.getenv("PERFSCRIPT_SOURCE_DIR") or "."

-- recipe file name -> its run module's parser (read from the recipe's require).
local function recipe_parsers()
  local out = {}
  for name in require("lfs").dir(SRC .. "/recipes") do
    if name:match("%.lua$") then
      local text = assert(paths.read(SRC .. "/recipes/" .. name))
      local mod = text:match('require%("(perfscript[%w_.]+)"%)')
      assert(mod, name .. ": no run module")
      local m = require(mod)
      if m.parser then
        out[name] = m.parser({ name = name, description = "x" })
      else
        out[name] = false  -- no options (grid_density)
      end
    end
  end
  return out
end

-- Every name (shown or hidden) the parser accepts.
local function names_of(parser)
  local set = {}
  for _, o in ipairs(parser._options) do
    for _, a in ipairs(o._aliases) do set[a] = true end
  end
  return set
end

TestRecipes = {}

-- A recipe with a database takes --database-path; its --help states the default.
local DATABASE = {
  ["db_lint.lua"] = true, ["db_coverage.lua"] = true, ["dsv3_grid.lua"] = true,
  ["qwen3_grid.lua"] = true, ["shape_grid.lua"] = true, ["microbench.lua"] = true,
  ["parse_profile.lua"] = true, ["fill_fia_metadata.lua"] = true, ["comm_validate.lua"] = true,
  ["comm_bench.lua"] = true, ["op_comparison.lua"] = true,
}
-- A recipe that writes a result file or a database copy takes --output.
local OUTPUT = {
  ["db_lint.lua"] = true, ["db_coverage.lua"] = true, ["dsv3_grid.lua"] = true,
  ["qwen3_grid.lua"] = true, ["shape_grid.lua"] = true, ["microbench.lua"] = true,
  ["fill_fia_metadata.lua"] = true, ["op_comparison.lua"] = true, ["m6.lua"] = true,
  ["per_shape_comparison.lua"] = true, ["trace_to_csv.lua"] = true,
}

function TestRecipes:test_database_and_output_flags()
  for name, p in pairs(recipe_parsers()) do
    local n = p and names_of(p) or {}
    if DATABASE[name] then
      lu.assertTrue(n["--database-path"], name .. " has no --database-path")
      lu.assertStrContains(p:get_help(), "efault", false, name .. ": --help says no default")
    end
    if OUTPUT[name] then lu.assertTrue(n["--output"], name .. " has no --output") end
  end
end

-- Old spellings still parse, into the new flag's value.
function TestRecipes:test_old_spellings()
  local ps = recipe_parsers()
  local cases = {
    { "shape_grid.lua", { "--data-dir", "D" }, "database_path", "D" },
    { "shape_grid.lua", { "--out-dir", "O" }, "output", "O" },
    { "db_lint.lua", { "D" }, "database_positional", "D" },
    { "db_lint.lua", { "--csv", "f.csv" }, "output", "f.csv" },
    { "db_coverage.lua", { "D" }, "database_positional", "D" },
    { "db_coverage.lua", { "--csv", "f.csv" }, "output", "f.csv" },
    { "comm_validate.lua", { "--csv-dir", "H" }, "database_path", "H" },
    { "op_comparison.lua", { "--data-dir", "D" }, "database_path", "D" },
    { "m6.lua", { "--tc-trace", "t", "--prof-trace", "p", "--json-output", "j" }, "output", "j" },
    { "fill_fia_metadata.lua", { "--jsonl-path", "j", "--output-path", "o" }, "output", "o" },
    { "microbench.lua", { "--output-database", "O" }, "output_database", "O" },
    { "microbench.lua", { "--output", "O" }, "output_database", "O" },
  }
  for _, c in ipairs(cases) do
    local ok, args = ps[c[1]]:pparse(c[2])
    lu.assertTrue(ok, c[1] .. " " .. table.concat(c[2], " ") .. ": " .. tostring(args))
    lu.assertEquals(args[c[3]], c[4], c[1] .. " " .. table.concat(c[2], " "))
  end
end

-- Lists: comma lists, repeated flags add up; microbench's --ops A B still works.
function TestRecipes:test_lists()
  local ps = recipe_parsers()
  lu.assertEquals(ps["microbench.lua"]:parse { "--ops", "Add,Mul", "--ops", "Cast" }.ops, { "Add", "Mul", "Cast" })
  lu.assertEquals(ps["microbench.lua"]:parse { "--ops", "Add", "Mul" }.ops, { "Add", "Mul" })
  lu.assertEquals(ps["microbench.lua"]:parse { "--devices", "0,1", "--devices", "2" }.devices, { "0", "1", "2" })
  lu.assertEquals(ps["shape_grid.lua"]:parse { "--target-models", "a,b", "--target-models", "c" }.target_models,
    { "a", "b", "c" })
  lu.assertEquals(ps["db_lint.lua"]:parse { "--kernel", "Add,Cast", "--kernel", "Mul" }.kernel, { "Add", "Cast", "Mul" })
  lu.assertEquals(ps["comm_bench.lua"]:parse { "--num-devices", "8,4", "--num-devices", "2" }.num_devices, { 8, 4, 2 })
  lu.assertEquals(ps["comm_bench.lua"]:parse {}.num_devices, { 16, 8, 4, 2 })
  lu.assertEquals(ps["comm_bench.lua"]:parse {}.ops[1], "all_reduce")
  local ok, err = ps["comm_bench.lua"]:pparse { "--bytes-grid", "1,x" }
  lu.assertFalse(ok)
  lu.assertStrContains(err, "--bytes-grid: 'x' is not a whole number")
  lu.assertNil(ps["microbench.lua"]:parse {}.ops)
end

TestFlagNames = {}

-- Flags of programs perfscript starts or describes, which no recipe parser has.
local EXTERNAL = {
  ["--export"] = "msprof",
  ["--nproc_per_node"] = "torchrun", ["--master_port"] = "torchrun", ["--master_addr"] = "torchrun",
  ["--nnodes"] = "torchrun", ["--node_rank"] = "torchrun",
  ["--build"] = "cmake", ["--defined-only"] = "nm",  -- insight_trace's build and symbol lookup
  ["--account"] = "sbatch", ["--job-name"] = "sbatch", ["--array"] = "sbatch", ["--ntasks"] = "sbatch",
  ["--gres"] = "sbatch", ["--parsable"] = "sbatch", ["--dependency"] = "sbatch",
}

-- Every flag the perfscript host (perfscript --help) and the replay executor (executor.py's
-- add_argument calls) accept.
local function program_flags(set)
  local bin = os.getenv("PERFSCRIPT")
  if bin then
    local f = assert(io.popen("'" .. bin .. "' --help 2>&1"))
    for flag in f:read("a"):gmatch("%-%-[%a][%w_-]*") do set[flag] = true end
    f:close()
  else
    set["--db"], set["--lua-dir"] = true, true
  end
  local py = assert(paths.read(SRC .. "/lua/perfscript/replay/executor.py"))
  for flag in py:gmatch('add_argument%("(%-%-[%a][%w_-]*)"') do set[flag] = true end
end

-- "--name" mentions in a text: "--" after a character that is not "-" or a word character,
-- followed by a letter (a Lua comment marker is followed by a blank, "[" or "-").
local function mentions(text)
  local out = {}
  local line = 1
  local pos = 1
  for start, flag in text:gmatch("()(%-%-%a[%w_-]*)") do
    local prev = start > 1 and text:sub(start - 1, start - 1) or ""
    if not prev:match("[%w_-]") then
      local _, nl = text:sub(pos, start):gsub("\n", "")
      line, pos = line + nl, start + 1
      out[#out + 1] = { flag = (flag:gsub("%-+$", "")), line = line }
    end
  end
  return out
end

function TestFlagNames:test_every_mentioned_flag_exists()
  local known = { ["--help"] = true }
  for _, p in pairs(recipe_parsers()) do
    if p then for n in pairs(names_of(p)) do known[n] = true end end
  end
  program_flags(known)
  local unknown = {}
  local function scan(path)
    for _, m in ipairs(mentions(assert(paths.read(path)))) do
      if not known[m.flag] and not EXTERNAL[m.flag] then
        unknown[#unknown + 1] = ("%s:%d: %s"):format(path:sub(#SRC + 2), m.line, m.flag)
      end
    end
  end
  paths.walk(SRC .. "/lua", function(p)
    if p:match("%.lua$") or p:match("%.py$") then scan(p) end
  end)
  for name in require("lfs").dir(SRC .. "/recipes") do
    if name:match("%.lua$") then scan(SRC .. "/recipes/" .. name) end
  end
  lu.assertEquals(unknown, {}, "flags named in messages or comments that no parser accepts")
end

function TestFlagNames:test_mentions()
  local m = mentions("-- a comment --ep-size x\nerror('--foo-bar: bad')\nx = '---' --[[ c ]] a--b")
  lu.assertEquals(#m, 2)
  lu.assertEquals(m[1], { flag = "--ep-size", line = 1 })
  lu.assertEquals(m[2], { flag = "--foo-bar", line = 2 })
end

os.exit(lu.LuaUnit.run())
