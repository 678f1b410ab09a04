-- The grid does not write rows its own linter would call unreachable (issue 12): each
-- candidate is asked perfscript.db.reach.row_problems through grid_checker, the rows it flags
-- are skipped and counted by kind in the status; db:lint of the grown database (its rows
-- measured) then has no unreachable grid row.
local lu = require "luaunit"
local h = require "helpers"
local perf = require "perfscript"
local run = require "perfscript.grid.run"
local Reach = require "perfscript.db.reach"

local SEED = (os.getenv("PERFSCRIPT_SOURCE_DIR") or ".") ..
             "/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
local RULES = { patterns = require "perfscript.grids.patterns", assignments = require "perfscript.grids.assignments",
                grids = require "perfscript.grids.registry", scenes = require "perfscript.grids.fia_scenes" }

-- A mapping that routes attention without an MLA decomposer: the consumer then asks
-- sparse_mode 3 only, and the DeepSeek-V3 decode scenes (sparse_mode 0) are unreachable.
local MAPPING = [[
operator_mappings:
  "tensor_cast.attention.default":
    kernel_type: FusedInferAttentionScore
    query_mode: attention_special
  "aten.mm.default":
    kernel_type: MatMulV2
]]

local function make(dir)
  assert(perf.fs.mkdir_p(dir))
  for _, k in ipairs { "FusedInferAttentionScore", "MatMulV2" } do
    h.write(dir .. "/" .. k .. ".csv", h.read(SEED .. "/" .. k .. ".csv"))
  end
  h.write(dir .. "/op_mapping.yaml", MAPPING)
  return dir
end

TestGridLint = {}

function TestGridLint:test_checker_is_the_linters_rule()
  local dir = make(h.tmpdir() .. "/db")
  local check = Reach.grid_checker(dir)
  local row = { ["Input Shapes"] = '"1,128,1,512;16,1,128,512"', ["Input Data Types"] = "DT_BF16;DT_BF16",
                ["Runtime sparse_mode"] = "0", ["Runtime num_key_value_heads"] = "1" }
  local kind, why = check("FusedInferAttentionScore", function(c) return row[c] end)
  lu.assertEquals(kind, "unreachable runtime")
  lu.assertStrContains(why, "Runtime sparse_mode 0: the attention path always asks 3")
  row["Runtime sparse_mode"] = "3"
  lu.assertNil(check("FusedInferAttentionScore", function(c) return row[c] end))
end

function TestGridLint:test_grid_skips_rows_the_linter_flags()
  local dir = make(h.tmpdir() .. "/db")
  local by = {}
  for _, r in ipairs(run.run { dir = dir, models = { "deepseek-ai/DeepSeek-V3" }, rows = 0, seed = 0, rules = RULES }) do
    by[r.kernel] = r
  end
  local fia = by.FusedInferAttentionScore
  lu.assertTrue((fia.lint_skipped or 0) > 0, fia.status)
  lu.assertStrContains(fia.status, fia.lint_skipped .. " rows the linter would flag skipped (unreachable runtime: " ..
                       fia.lint_skipped .. ", e.g. Runtime sparse_mode 0")
  lu.assertNil(by.MatMulV2.lint_skipped)
  -- measured, no grid row is unreachable for a reason of its own
  h.fill_latencies(dir)
  local db = assert(perf.open(dir))
  local t = db:kernel("FusedInferAttentionScore"):table()
  local flagged = 0
  for _, f in ipairs(db:lint("FusedInferAttentionScore")) do
    if tostring(f.problem):find("unreachable runtime", 1, true) and f.line > 2 then flagged = flagged + 1 end
  end
  lu.assertEquals(flagged, 0)
  lu.assertEquals(#t, 1 + fia.appended)
end

os.exit(lu.LuaUnit.run())
