-- The refusal reasons of the checks the shape grid asks of every candidate (matmul,
-- BatchMatMulV2, QuantBatchMatmulV3): each reason exactly, from build (registry.check) and from
-- the check-only verdict alike. The grid counts refusals under these texts in its report, so a
-- change to how the checks run must keep every one of them.
local lu = require "luaunit"
local registry = require "perfscript.replay.registry"

local row = require("tests.lua.helpers").kernel_row

local CASES = {
  { "MatMulV2", row("16,7168", "DT_BF16", "ND", "16,2112", "DT_BF16"), "expects exactly 2 inputs, got 1" },
  { "MatMulV2", row("16,7168;2112,7168;2112", "DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND", "16,2112", "DT_BF16"),
    "expects exactly 2 inputs, got 3" },
  { "MatMulV2", row("4,16,7168;2112,7168", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16"), "matmul inputs must be 2-D" },
  { "MatMulV2", row("16,7168;2112,7000", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16"),
    "A [m,k] and recorded B [n,k] disagree on k (7168 vs 7000)" },
  { "MatMulV2", row("16,x;2112,7168", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16"),
    "shape cell '16,x;2112,7168': slot 1 is not a list of integer dims" },
  { "BatchMatMulV2", row("", "", "", "16,2112", "DT_BF16"), "no input shapes" },
  { "BatchMatMulV2", row("16,32,128", "DT_BF16", "ND", "16,32,512", "DT_BF16"), "expects at least 2 inputs" },
  { "BatchMatMulV2", row("16,32,128;16,128,512", "DT_BF16;DT_BF16", "ND;ND", "16,512", "DT_BF16"),
    "the batched path needs 3-D A, B and output" },
  { "BatchMatMulV2", row("16,32,128;16,128,512", "DT_BF16;DT_BF16", "ND;ND", "8,32,512", "DT_BF16"),
    "batch/m of A and the output disagree" },
  { "BatchMatMulV2", row("16,32,128;16,100,512", "DT_BF16;DT_BF16", "ND;ND", "16,32,512", "DT_BF16"),
    "second input 16,100,512 is not compatible with A 16,32,128" },
  { "BatchMatMulV2", row("16,7168;2112,7000", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16"),
    "A [m,k] and recorded B [n,k] disagree on k (7168 vs 7000)" },
  { "QuantBatchMatmulV3", row("16,7168;7168,4096;4096", "INT8;INT8;INT64", "ND;ND;ND", "16,4096;16,4096", "DT_BF16;DT_BF16"),
    "expects exactly one output" },
  { "QuantBatchMatmulV3", row("16,7168;7168,4096", "INT8;INT8", "ND;ND", "16,4096", "DT_BF16"), "expects 3 or 4 inputs, got 2" },
  { "QuantBatchMatmulV3", row("16,7168;7168,4096;4096", "DT_BF16;INT8;INT64", "ND;ND;ND", "16,4096", "DT_BF16"),
    "x and weight must be DT_INT8" },
  { "QuantBatchMatmulV3", row("16,7168;7168,4096;4096", "INT8;INT8;INT64", "ND;ND;ND", "16,4096", "DT_BOOL"),
    "unsupported output dtype DT_BOOL" },
}

TestRefusals = {}

function TestRefusals:test_each_reason_from_build_and_from_the_check_only_verdict()
  for _, c in ipairs(CASES) do
    local kernel, r, want = c[1], c[2], c[3]
    local case, why, kind = registry.check(kernel, r, { ep_size = 16 })
    lu.assertNil(case, kernel .. " accepted " .. r["Input Shapes"])
    lu.assertEquals(kind, "rejected", kernel)
    lu.assertEquals(why, want, kernel)
    local ok, vwhy = registry.verdict(kernel, r, { ep_size = 16 })
    lu.assertNil(ok, kernel)
    lu.assertEquals(vwhy, want, kernel)
  end
end

function TestRefusals:test_the_accepted_rows_stay_accepted()
  local good = {
    { "MatMulV2", row("16,7168;2112,7168", "DT_BF16;DT_BF16", "ND;ND", "16,2112", "DT_BF16") },
    { "BatchMatMulV2", row("16,32,128;16,128,512", "DT_BF16;DT_BF16", "ND;ND", "16,32,512", "DT_BF16") },
    { "BatchMatMulV2", row("16,32,128;16,512,128", "DT_BF16;DT_BF16", "ND;ND", "16,32,512", "DT_BF16") },
    { "QuantBatchMatmulV3", row("16,7168;7168,4096;4096", "INT8;INT8;INT64", "ND;ND;ND", "16,4096", "DT_BF16") },
  }
  for _, c in ipairs(good) do
    lu.assertNotNil(registry.check(c[1], c[2], { ep_size = 16 }), c[1])
    lu.assertTrue(registry.verdict(c[1], c[2], { ep_size = 16 }), c[1])
  end
end

os.exit(lu.LuaUnit.run())
