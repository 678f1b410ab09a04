-- Coverage buckets (issue 12): a row whose tokens equal its hidden size stays in its hidden
-- size's bucket, buckets sort in numeric order, a one-point bucket says no gap is measurable,
-- a MoE kernel's per-token scale follows M (one bucket per expert layout, not one per row),
-- and the page has a colour legend.
local lu = require "luaunit"
local h = require "helpers"
local perf = require "perfscript"

local HEAD = "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Average Duration(us)\n"
local TOKENS = { 1, 4, 16, 64, 128, 256, 512, 1024, 1280, 2048, 4096, 7168, 10240 }
local HIDDEN = { 128, 1280, 7168, 10240 }

local function make()
  local d = h.tmpdir()
  local add = { HEAD }
  for _, hd in ipairs(HIDDEN) do
    for _, t in ipairs(TOKENS) do
      add[#add + 1] = string.format('"%d,%d;%d,%d",DT_BF16;DT_BF16,ND;ND,"%d,%d",DT_BF16,%s\n', t, hd, t, hd, t, hd,
                                    1 + t * hd / 1e6)
    end
  end
  add[#add + 1] = '"16,4096;16,4096",FLOAT;FLOAT,ND;ND,"16,4096",FLOAT,3\n'  -- a bucket of one point
  h.write(d .. "/Add.csv", table.concat(add))
  -- GroupedMatmul: x (M, K), weight (E, N, K), scale (E, N), group_list (E), per-token scale (M)
  local gm = { HEAD }
  for _, e in ipairs { 4, 8 } do
    for _, m in ipairs { 1, 2, 4, 8, 16, 32, 64, 128 } do
      gm[#gm + 1] = string.format('"%d,448;%d,128,448;%d,128;%d;%d",INT8;INT8;FLOAT;INT64;FLOAT,ND;ND;ND;ND;ND,"%d,128",DT_BF16,%d\n',
                                  m, e, e, e, m, m, 10 + m)
    end
  end
  h.write(d .. "/GroupedMatmul.csv", table.concat(gm))
  return assert(perf.open(d)), d
end

TestCoverage = {}

function TestCoverage:test_diagonal_rows_stay_in_their_bucket()
  local db = make()
  local r = db:coverage("Add", "tokens")
  lu.assertEquals(#r, 5)
  for i = 1, 4 do lu.assertEquals(r[i].points, #TOKENS, r[i].bucket) end
  local r2 = db:coverage("Add", "hidden")
  for _, b in ipairs(r2) do
    if b.dtypes == "DT_BF16;DT_BF16" then lu.assertEquals(b.points, #HIDDEN, b.bucket) end
  end
end

function TestCoverage:test_buckets_sort_numerically()
  local db = make()
  local r = db:coverage("Add", "tokens")
  local order = {}
  for i = 1, 4 do order[i] = r[i].bucket end
  lu.assertEquals(order, { "_,128;_,128", "_,1280;_,1280", "_,7168;_,7168", "_,10240;_,10240" })
end

function TestCoverage:test_one_point_bucket_has_no_measurable_gap()
  local db = make()
  local r = db:coverage("Add", "tokens")
  lu.assertEquals(r[5].points, 1)
  lu.assertEquals(r[5].gaps, "-")
  lu.assertStrContains(tostring(r), "1 bucket with 1 point: no gap measurable")
  local one = db:coverage("Add", "tokens", { dtypes = "FLOAT;FLOAT" })
  lu.assertStrContains(tostring(one), "1 point, no gap measurable")
  lu.assertNotStrContains(tostring(one), "0 gaps")
end

function TestCoverage:test_moe_per_token_scale_follows_m()
  local db = make()
  local r = db:coverage("GroupedMatmul", "M")
  lu.assertEquals(#r, 2, tostring(r))
  lu.assertEquals(r[1].points, 8)
  lu.assertEquals(r[2].points, 8)
  lu.assertEquals(r[1].bucket, "K=448 N=128 batch=/4 +4,128;4;_")
end

function TestCoverage:test_page_has_a_colour_legend()
  local _, dir = make()
  local out = dir .. "/cov.html"
  local bin = assert(os.getenv("PERFSCRIPT"))
  local src = os.getenv("PERFSCRIPT_SOURCE_DIR") or "."
  lu.assertTrue(os.execute(string.format("%q %q --database-path %q --kernel Add --html %q > /dev/null", bin,
                                         src .. "/recipes/db_coverage.lua", dir, out)))
  local page = h.read(out)
  lu.assertStrContains(page, '<p class="legend">Add latency (us): <span class="sw" style="background:#fff5dc">')
  lu.assertStrContains(page, '<span class="sw gap">gap</span>')
end

os.exit(lu.LuaUnit.run())
