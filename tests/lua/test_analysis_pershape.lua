-- generate_per_shape_comparison worked examples (docs/rules.md, Analysis: per-shape comparison).
local lu = require "luaunit"
local fx = require "analysis_fixtures"
local tctrace = require "perfscript.analysis.tctrace"
local pershape = require "perfscript.analysis.pershape"

local function rows(tc_events, prof_rows)
  local tr = assert(tctrace.load(fx.trace(tc_events)))
  local tc = pershape.tc_side(tr, (tctrace.select_pid(tr)))
  local pr = assert(pershape.prof_side(fx.prof(prof_rows)))
  return pershape.rows(tc, pr)
end

local function find(rs, kt, key)
  for _, r in ipairs(rs) do if r.kernel_type == kt and r.shape_key == key then return r end end
end

TestShapeKey = {}

function TestShapeKey:test_vectors()
  local cases = {
    { "[[100,200],[200,300]]", "100,200;200,300" }, { '""', "" }, { "[", "[" }, { "[[]]", "" },
    { "[]", "" }, { "[[4, 8], []]", "4,8;" }, { '"""4,8"""', "4,8" }, { "N/A", "N/A" },
    { "4, 8", "4,8" }, { "[[1.0, 2]]", "1.0,2" }, { "[[True]]", "True" },
    { "[4,8]", "4,8" },   -- the Python original crashed on a flat list
    { "[[16, 5120], [5120, 768]]", "16,5120;5120,768" }, { "", "" },
  }
  for _, c in ipairs(cases) do lu.assertEquals(pershape.shape_key(c[1]), c[2], c[1]) end
end

TestPerShape = {}

function TestPerShape:test_one_row_match()
  local rs = rows({ fx.ev("aten.mm.default", 20, { kernel_type = "MatMulV2", source = "MEASURED",
                                                   simulation_shapes = "[[4112, 5120], [5120, 768]]" }) },
                  { { "MatMulV2", "25.0", 0, "4112,5120;5120,768" } })
  lu.assertEquals(#rs, 1)
  lu.assertEquals(rs[1].tc_dur_us, 20.0); lu.assertEquals(rs[1].prof_dur_us, 25.0)
  lu.assertEquals(rs[1].delta_pct, -20.0); lu.assertEquals(rs[1].source, "MEASURED")
end

function TestPerShape:test_composite_splits_by_sub_kernel_durations()
  local rs = rows({ fx.ev("mla", 77, { kernel_type = "BMNd,FIA,TBMM", simulation_shapes = "[[4, 512]]",
                    sub_kernel_durations = "[('BMNd', 9.0), ('FIA', 55.0), ('TBMM', 13.0)]" }) },
                  { { "BMNd", "10", 0, "4,512" }, { "FIA", "50", 20, "4,512" }, { "TBMM", "14", 80, "4,512" } })
  local r = find(rs, "FIA", "4,512")
  lu.assertEquals(r.tc_dur_us, 55.0); lu.assertEquals(r.prof_dur_us, 50.0)
  lu.assertEquals(#rs, 3)
end

function TestPerShape:test_one_sided_and_sums()
  local rs = rows({ fx.ev("a", 20, { kernel_type = "K", simulation_shapes = "[[1]]" }),
                    fx.ev("a", 30, { kernel_type = "K", simulation_shapes = "[[1]]" }),
                    fx.ev("b", 5, { kernel_type = "T", simulation_shapes = "[[2]]" }) },
                  { { "K", "22", 0, "1" }, { "K", "28", 40, "1" }, { "P", "3", 90, "3" } })
  local k = find(rs, "K", "1")
  lu.assertEquals(k.tc_dur_us, 50.0); lu.assertEquals(k.prof_dur_us, 50.0); lu.assertEquals(k.tc_count, 2)
  local t = find(rs, "T", "2")
  lu.assertEquals(t.prof_dur_us, 0); lu.assertEquals(math.type(t.prof_dur_us), "integer")
  lu.assertEquals(t.delta_pct, math.huge)
  local p = find(rs, "P", "3")
  lu.assertEquals(p.tc_dur_us, 0); lu.assertEquals(p.delta_pct, -100.0)
end

function TestPerShape:test_hcom_dedup_and_aicpu()
  local rs = rows({}, { { "hcom_allReduce_", "100.0", "1000.0", "128,5120" },
                        { "hcom_allReduce_", "80.0", "1000.0", "128,5120" },
                        { "allgatherAicpuKernel", "100", "2000", "" } })
  lu.assertEquals(#rs, 1)
  lu.assertEquals(rs[1].prof_dur_us, 100.0); lu.assertEquals(rs[1].prof_count, 1)
end

function TestPerShape:test_spec_example_output()
  local tc = {
    fx.ev("aten.mm.default", 20, { kernel_type = "MatMulV2", source = "MEASURED",
                                   simulation_shapes = "[[16, 5120], [5120, 768]]" }),
    fx.ev("tensor_cast.matmul_all_reduce.default", 31, { kernel_type = "MatMulV2,hcom_allReduce_",
      source = "INTERPOLATED", simulation_shapes = "[[16, 512], [512, 5120]]",
      sub_kernel_durations = "[('MatMulV2', 22.77), ('hcom_allReduce_', 8.29)]" }),
    fx.ev("tensor_cast.all_reduce.default", 9, { kernel_type = "hcom_allReduce_", source = "MEASURED",
                                                 simulation_shapes = "[[16, 5120]]" }),
  }
  local prof = {
    { "MatMulV2", "25.5", "1733971188345000.0", '"16,5120;5120,768"' },
    { "MatMulV2", "21.0", "1733971188345100.0", '"16,512;512,5120"' },
    { "hcom_allReduce_", "10.0", "1733971188345289.25", "N/A" },
    { "hcom_allReduce_", "12.0", "1733971188345289.25", "N/A" },  -- spec: ...289.75; copies share their start
    { "allgatherAicpuKernel", "100", "1733971188345400.0", "N/A" },
    { "Add", "2.0", "1733971188345500.0", '"16,5120;16,5120"' },
  }
  local tr = assert(tctrace.load(fx.trace(tc)))
  local t = pershape.tc_side(tr, (tctrace.select_pid(tr)))
  local p = assert(pershape.prof_side(fx.prof(prof)))
  lu.assertEquals(pershape.csv(pershape.rows(t, p)), table.concat({
    "kernel_type,shape_key,tc_dur_us,prof_dur_us,delta_pct,tc_count,prof_count,source",
    'MatMulV2,"16,5120;5120,768",20.0,25.5,-21.6,1,1,MEASURED',
    'MatMulV2,"16,512;512,5120",22.77,21.0,8.4,1,1,INTERPOLATED',
    "hcom_allReduce_,N/A,0,12.0,-100.0,0,1,",
    'hcom_allReduce_,"16,5120",9.0,0,inf,1,0,MEASURED',
    'hcom_allReduce_,"16,512;512,5120",8.29,0,inf,1,0,INTERPOLATED',
    'Add,"16,5120;16,5120",0,2.0,-100.0,0,1,', "" }, "\r\n"))
end

function TestPerShape:test_kernel_shapes_option()
  local ev = fx.ev("tensor_cast.mla.default", 77, {
    kernel_type = "BatchMatMulV2,FusedInferAttentionScore", simulation_shapes = "[[4, 512]]",
    sub_kernel_durations = "[('BatchMatMulV2', 22.0), ('FusedInferAttentionScore', 55.0)]",
    sub_kernel_shapes = '[{"kernel_type": "FusedInferAttentionScore", "simulation_shapes": "[[4, 512]]", ' ..
                        '"kernel_shapes": "[[4, 16, 1, 512], [1135, 1, 128, 512]]", "shape_match_rule": "exact"}]' })
  local mm = fx.ev("aten.mm.default", 20, { kernel_type = "MatMulV2", simulation_shapes = "[[4, 7168], [7168, 512]]",
                                            kernel_shapes = "[[4, 7168], [512, 7168]]" })
  local tr = assert(tctrace.load(fx.trace { ev, mm }))
  local pid = tctrace.select_pid(tr)
  local plain = pershape.tc_side(tr, pid)
  local _, order = pershape.tc_side(tr, pid, { kernel_shapes = true })
  lu.assertNotNil(plain["FusedInferAttentionScore\0" .. "4,512"])
  local keys = {}
  for _, e in ipairs(order) do keys[#keys + 1] = e.kernel_type .. " " .. e.shape_key end
  lu.assertEquals(keys, { "BatchMatMulV2 4,512", "FusedInferAttentionScore 4,16,1,512;1135,1,128,512",
                          "MatMulV2 4,7168;512,7168" })
end

function TestPerShape:test_ties_are_deterministic()
  local rs = rows({}, { { "B", "5", 0, "2" }, { "A", "5", 10, "9" }, { "A", "5", 20, "1" } })
  lu.assertEquals({ rs[1].kernel_type, rs[1].shape_key }, { "A", "1" })
  lu.assertEquals({ rs[2].kernel_type, rs[2].shape_key }, { "A", "9" })
  lu.assertEquals(rs[3].kernel_type, "B")
end

os.exit(lu.LuaUnit.run())
