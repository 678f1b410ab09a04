-- The plan side of the golden replay (issue 15): a --validate plan carries each row's parsed
-- output slots (plan.outputs), an NPU plan does not change, and the executor is written with its
-- golden package (perfscript.library.list: the embedded files; the live tree's are added).
local lu = require "luaunit"
local perf = require "perfscript"
local h = require "tests.lua.helpers"
local plan = require "perfscript.microbench.plan"

TestGoldenPlan = {}

function TestGoldenPlan:test_outputs()
  lu.assertEquals(plan.outputs { ["Output Shapes"] = '"16,7168;16,1;;"', ["Output Data Types"] = "DT_BF16;FLOAT;;INT64" },
    { { shape = { 16, 7168 }, dtype = "DT_BF16" }, { shape = { 16, 1 }, dtype = "DT_FLOAT" }, { dtype = "DT_UNDEFINED" },
      { dtype = "DT_INT64" } })
  lu.assertEquals(plan.outputs { ["Output Shapes"] = "8", ["Output Data Types"] = "" }, { { shape = { 8 }, dtype = "DT_UNDEFINED" } })
  lu.assertEquals(plan.outputs {}, {})
  local o, err = plan.outputs { ["Output Shapes"] = "16,x", ["Output Data Types"] = "DT_BF16" }
  lu.assertNil(o)
  lu.assertStrContains(err, "Output Shapes: ")
end

function TestGoldenPlan:test_build_carries_outputs_only_when_asked()
  local dir = h.tmpdir()
  h.write(dir .. "/RmsNorm.csv", 'Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types\n'
    .. '"16,7168;7168",DT_BF16;DT_BF16,ND;ND,"16,7168;16,1",DT_BF16;FLOAT\n'
    .. '"16,7168;7168",DT_BF16;DT_BF16,ND;ND,"16,x",DT_BF16\n')
  local files = { { op = "RmsNorm", path = dir .. "/RmsNorm.csv" } }
  local npu = assert(plan.build(files, { mode = "all" }))
  lu.assertEquals(#npu.cases, 2)
  lu.assertNil(npu.cases[1].outputs)
  lu.assertNil(npu.cases[2].outputs_error)
  local v = assert(plan.build(files, { mode = "all", outputs = true }))
  lu.assertEquals(v.cases[1].outputs, { { shape = { 16, 7168 }, dtype = "DT_BF16" }, { shape = { 16, 1 }, dtype = "DT_FLOAT" } })
  lu.assertNil(v.cases[2].outputs)
  lu.assertStrContains(v.cases[2].outputs_error, "Output Shapes: ")
end

function TestGoldenPlan:test_executor_with_its_golden_package()
  local library = require "perfscript.library"
  local embedded = library.list("perfscript/replay/golden")
  local has = {}
  for _, n in ipairs(embedded) do has[n] = true end
  for _, n in ipairs { "__init__.py", "matmul.py", "norm.py", "quant.py", "elementwise.py" } do
    lu.assertTrue(has[n], n .. " is embedded")
  end
  local sorted = { table.unpack(embedded) }
  table.sort(sorted)
  lu.assertEquals(embedded, sorted)
  lu.assertEquals(library.list("perfscript/no/such/dir"), {})
  local dir = h.tmpdir()
  assert(plan.write_executor(dir .. "/executor.py"))
  lu.assertNil(io.open(dir .. "/golden/__init__.py"), "no golden package unless asked")
  assert(plan.write_executor(dir .. "/executor.py", { golden = true }))
  for _, n in ipairs(embedded) do
    lu.assertEquals(h.read(dir .. "/golden/" .. n), (library.read("perfscript/replay/golden/" .. n)))
  end
end

os.exit(lu.LuaUnit.run())
