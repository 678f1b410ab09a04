-- db:lint flags every row the consumer could not reach, with the reason (issue 19): a dtype
-- spelling the consumer never asks for, shape/dtype/format slots it pairs differently from how
-- they were written, an attention query layout it cannot normalise, and a row whose own query
-- the consumer answers with another row (shadowed). Each on a small generated database; the
-- same kernels written right give no finding.
local lu = require "luaunit"
local perf = require "perfscript"
local h = require "tests.lua.helpers"

local HEAD = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Average Duration(us)\n"
local FIA_HEAD = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Runtime avg_seq_len," ..
                 "Runtime sparse_mode,Runtime num_key_value_heads,Runtime input_layout,Average Duration(us)\n"

local MAPPING = [[
operator_mappings:
  aten.mm.default: {kernel_type: MatMulV2, alternate_kernel_types: [MatMulV3]}
  tensor_cast.grouped_matmul.default: {kernel_type: GroupedMatmul}
  tensor_cast.grouped_matmul_swiglu_quant.default: {kernel_type: GroupedMatmulSwigluQuant, tc_input_count: 1}
  aten.add.Tensor: {kernel_type: Add, query_mode: elementwise}
  tensor_cast.attention.default: {kernel_type: FusedInferAttentionScore, query_mode: attention_special}
  tensor_cast.rope.default: {kernel_type: _triton_rope}
  tensor_cast.rope_cut.default: {kernel_type: ApplyRotaryPosEmb, tc_input_count: 2}
]]

-- files: name -> rows (text after the header)
local function make(files)
  local d = h.tmpdir()
  h.write(d .. "/op_mapping.yaml", MAPPING)
  for name, body in pairs(files) do
    h.write(d .. "/" .. name .. ".csv", (name == "FusedInferAttentionScore" and FIA_HEAD or HEAD) .. body)
  end
  return assert(perf.open(d))
end

-- "kernel:line reason" of every finding that says unreachable
local function unreachable(db)
  local r = db:lint()
  local out = {}
  for _, x in ipairs(r) do
    if x.problem:find("unreachable", 1, true) then
      out[#out + 1] = string.format("%s %s:%s %s", x.severity, x.kernel, tostring(x.line), x.problem)
    end
  end
  return out, r
end

local function has(list, pattern)
  for _, s in ipairs(list) do if s:find(pattern, 1, true) then return true end end
  return false
end

local function find(list, pattern)
  for _, s in ipairs(list) do if s:find(pattern, 1, true) then return s end end
  return nil
end

local BAD = {
  -- line 2: DT_INT8 where the consumer asks INT8 (cause 1 of the issue)
  -- line 3: an empty middle slot; its dtypes keep the placeholder, so dtype 2 pairs with slot 3
  GroupedMatmul =
    '"16,7168;32,7168,2048",DT_BF16;DT_INT8,ND;ND,"16,2048",DT_BF16,28.4\n' ..
    '"16,7168;;32,7168,2048",DT_BF16;DT_UNDEFINED;INT8,ND;NULL;ND,"16,2048",DT_BF16,28.4\n',
  -- line 2: a 4-D BNSD query with S = 4096 (the consumer converts only (B,N,1,D))
  FusedInferAttentionScore =
    '"1,128,4096,192;1,128,4096,192",DT_BF16;DT_BF16,ND;ND,"1,128,4096,128",DT_BF16,4096,3,128,BNSD_NBSD,900\n',
  -- line 3 (M=16) is answered by line 2 (M=1 pads to 16, first row wins): cause 4 of the issue
  Add = '"1,7168;1,7168",DT_BF16;DT_BF16,ND;ND,"1,7168",DT_BF16,1.9\n' ..
        '"16,7168;16,7168",DT_BF16;DT_BF16,ND;ND,"16,7168",DT_BF16,2.4\n',
  -- line 3 repeats line 2; line 5's M pads from line 4's and its weight is line 4's transposed:
  -- the consumer reports "transpose" at distance 0 and the first row wins
  MatMulV2 = '"128,512;1024,512",DT_BF16;DT_BF16,ND;ND,"128,1024",DT_BF16,10\n' ..
             '"128,512;1024,512",DT_BF16;DT_BF16,ND;ND,"128,1024",DT_BF16,11\n' ..
             '"100,256;2048,256",DT_BF16;DT_BF16,ND;ND,"100,2048",DT_BF16,12\n' ..
             '"112,256;256,2048",DT_BF16;DT_BF16,ND;ND,"112,2048",DT_BF16,13\n',
  -- line 2: aten.mm.default tries MatMulV2 first, whose line 2 answers the same query
  -- line 3: only this kernel has it
  MatMulV3 = '"128,512;1024,512",DT_BF16;DT_BF16,ND;ND,"128,1024",DT_BF16,9\n' ..
             '"256,512;1024,512",DT_BF16;DT_BF16,ND;ND,"256,1024",DT_BF16,19\n',
  -- the consumer rewrites a rope query to K and Q (cos and sin only with 4 inputs): without a
  -- tc_input_count of 2 a three-slot row never matches (cause 5 of the issue)
  _triton_rope = '"41040,4,128;41040,1,128;81920,128",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"41040,4,128",DT_BF16,55\n',
  ApplyRotaryPosEmb = '"41040,4,128;41040,1,128;81920,128",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"41040,4,128",DT_BF16,55\n',
  -- no route reads it
  Pack = '"16,7168",DT_BF16,ND,"16,7168",DT_BF16,1\n',
  -- tc_input_count 1 cuts the empty slot: reachable
  GroupedMatmulSwigluQuant = '"16,7168;;32,7168,2048",DT_BF16;DT_UNDEFINED;INT8,ND;NULL;ND,"16,2048",DT_BF16,30\n',
}

TestLintReach = {}

function TestLintReach:test_unknown_dtype_spelling()
  local u = unreachable(make(BAD))
  local s = find(u, "GroupedMatmul:2 ")
  lu.assertNotNil(s, table.concat(u, "\n"))
  lu.assertStrContains(s, "error")
  lu.assertStrContains(s, "unknown dtype spelling DT_INT8 in input slot 2: the consumer asks for INT8")
end

function TestLintReach:test_misaligned_slots()
  local u = unreachable(make(BAD))
  local s = find(u, "GroupedMatmul:3 ")
  lu.assertNotNil(s, table.concat(u, "\n"))
  lu.assertStrContains(s, "misaligned slots: empty shape slot before slot 3 (32,7168,2048): the consumer pairs it with dtype DT_UNDEFINED")
  lu.assertStrContains(s, "no tc_input_count")
  -- the same row where op_mapping.yaml cuts the inputs to 1 is reachable
  lu.assertFalse(has(u, "GroupedMatmulSwigluQuant"), table.concat(u, "\n"))
end

function TestLintReach:test_unconvertible_layout()
  local u = unreachable(make(BAD))
  local s = find(u, "FusedInferAttentionScore:2 ")
  lu.assertNotNil(s, table.concat(u, "\n"))
  lu.assertStrContains(s, "unconvertible layout: query slot 1,128,4096,192")
  lu.assertStrContains(s, "BNSD with S > 1")
end

function TestLintReach:test_shadowed_rows()
  local u = unreachable(make(BAD))
  lu.assertStrContains(find(u, "Add:3 ") or "", "shadowed by line 2")
  lu.assertFalse(has(u, "Add:2 "))
  lu.assertStrContains(find(u, "MatMulV2:3 ") or "", "shadowed by line 2")
  lu.assertStrContains(find(u, "MatMulV2:5 ") or "", "shadowed by line 4")
  lu.assertStrContains(find(u, "MatMulV2:5 ") or "", "(transpose)")
  lu.assertFalse(has(u, "MatMulV2:2 "))
  lu.assertFalse(has(u, "MatMulV2:4 "))
  -- another kernel of the route answers first
  lu.assertStrContains(find(u, "MatMulV3:2 ") or "", "shadowed by MatMulV2 line 2")
  lu.assertStrContains(find(u, "MatMulV3:2 ") or "", "aten.mm.default tries MatMulV2 first")
  lu.assertFalse(has(u, "MatMulV3:3 "))
  lu.assertEquals(#u, 8, table.concat(u, "\n"))
end

function TestLintReach:test_own_query_misses_with_the_failing_input()
  local u, r = unreachable(make(BAD))
  lu.assertStrContains(find(u, "_triton_rope:2 ") or "", "its own query misses (shape_mismatch): input count: row has 3, query has 2")
  lu.assertFalse(has(u, "ApplyRotaryPosEmb"), table.concat(u, "\n"))  -- tc_input_count 2 cuts it
  lu.assertStrContains(tostring(r), "no op in op_mapping.yaml routes Pack")
end

function TestLintReach:test_clean_database_has_no_finding()
  local _, r = unreachable(make {
    GroupedMatmul = '"16,7168;32,7168,2048",DT_BF16;INT8,ND;ND,"16,2048",DT_BF16,28.4\n',
    GroupedMatmulSwigluQuant = '"16,7168;32,7168,2048",DT_BF16;INT8,ND;ND,"16,2048",DT_BF16,30\n',
    MatMulV3 = '"256,512;1024,512",DT_BF16;DT_BF16,ND;ND,"256,1024",DT_BF16,19\n',
    -- all four rope inputs: the consumer keeps them
    _triton_rope = '"1,136,4,128;1,136,1,128;1,136,1,128;1,136,1,128",DT_BF16;DT_BF16;DT_BF16;DT_BF16,ND;ND;ND;ND,' ..
                   '"1,136,4,128",DT_BF16,12.5\n',
    ApplyRotaryPosEmb = '"41040,4,128;41040,1,128;81920,128",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"41040,4,128",DT_BF16,55\n',
    FusedInferAttentionScore =
      '"4096,128,192;1,128,4096,192",DT_BF16;DT_BF16,ND;ND,"4096,128,128",DT_BF16,4096,3,128,TND,900\n' ..
      '"4,128,1,192;1,128,4096,192",DT_BF16;DT_BF16,ND;ND,"4,128,1,128",DT_BF16,4096,3,128,BNSD_NBSD,90\n',
    -- M=16 before M=1: the M=1 query does not pad to 16, so each row answers its own query
    Add = '"16,7168;16,7168",DT_BF16;DT_BF16,ND;ND,"16,7168",DT_BF16,2.4\n' ..
          '"1,7168;1,7168",DT_BF16;DT_BF16,ND;ND,"1,7168",DT_BF16,1.9\n',
    MatMulV2 = '"128,512;1024,512",DT_BF16;DT_BF16,ND;ND,"128,1024",DT_BF16,10\n' ..
               '"112,256;256,2048",DT_BF16;DT_BF16,ND;ND,"112,2048",DT_BF16,13\n' ..
               '"100,256;2048,256",DT_BF16;DT_BF16,ND;ND,"100,2048",DT_BF16,12\n',
  })
  lu.assertEquals(r.errors, 0, tostring(r))
  lu.assertEquals(r.warnings, 0, tostring(r))
end

-- 340 rows with one problem print as one line with the count (issue 12); verbose and the
-- result's rows keep every finding.
TestLintGrouped = {}

function TestLintGrouped:test_one_kind_prints_once_with_its_count()
  local rows = {}
  for m = 1, 340 do rows[#rows + 1] = string.format('"%d,64;64,64",DT_BF16;DT_BF16,ND;ND,"%d,64",DT_BF16,0\n', m, m) end
  local db = make { MatMulV2 = table.concat(rows) }
  local r = db:lint("MatMulV2")
  lu.assertEquals(#r, 340)                       -- every finding stays in the result
  local text = tostring(r)
  local _, zeros = text:gsub("Average Duration%(us%)", "")
  lu.assertEquals(zeros, 1, text)
  lu.assertStrContains(text, "warning   MatMulV2   340  2,3,4,5,...  Average Duration(us)  0 (leave it blank")
  lu.assertStrContains(text, '340 findings in 1 kinds; db:lint("MatMulV2", {verbose = true}) lists each; r = db:lint("MatMulV2") then save(r, "lint.csv") writes them')
  local _, all = tostring(db:lint("MatMulV2", { verbose = true })):gsub("0 %(leave it blank", "")
  lu.assertEquals(all, 40)                       -- every row, cut as any result is
end

-- A FRACTAL_NZ weight whose tail is not a block restores to a shape no query asks (issue 12:
-- "(32,7168,128,16) compared as (512,917504)"); a real NZ tile is fine.
function TestLintGrouped:test_fractal_nz_shape_that_is_not_a_tile()
  local db = make { GroupedMatmul = '"16,7168;32,7168,128,16",INT8;INT8,ND;FRACTAL_NZ,"16,4096",DT_BF16,5\n' ..
                                    '"16,7168;32,128,448,16,32",INT8;INT8,ND;FRACTAL_NZ,"16,4096",DT_BF16,5\n' }
  local r = db:lint("GroupedMatmul", { verbose = true })
  local found = {}
  for _, f in ipairs(r) do if f.problem:find("FRACTAL_NZ input", 1, true) then found[#found + 1] = f end end
  lu.assertEquals(#found, 1, tostring(r))
  lu.assertEquals(found[1].line, 2)
  lu.assertStrContains(found[1].problem, "FRACTAL_NZ input 2 (32,7168,128,16) does not end in a 16x16, 16x32 or 16x8 block: " ..
                       "the consumer restores it to (512,917504)")
end

os.exit(lu.LuaUnit.run())
