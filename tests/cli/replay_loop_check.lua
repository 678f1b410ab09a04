-- The accounting of the grid -> microbench loop (used by test_grid_replay_loop.sh):
--   perfscript replay_loop_check.lua BEFORE_DB AFTER_DB REPORT_JSON [--no-builder-allowed]
-- Per CSV: rows without a valid duration before (to measure) and after (not measured); every
-- row not measured must be listed by the run's report (row by row, or counted under "no
-- builder"). Prints one line per kernel type and "unaccounted N"; exits 1 on a mismatch, or
-- when a "no builder" row is listed without --no-builder-allowed.
local perf = require "perfscript"
local lfs = require "lfs"
local schema = require "perfscript.microbench.schema"
local cjson = require "cjson"

local before, after, json_path, allow_nb = arg[1], arg[2], arg[3], arg[4] == "--no-builder-allowed"

local function missing(path)
  local r = perf.csv.open(path)
  if not r then return 0, 0 end
  local h, n, total = r:header(), 0, 0
  local col = {}
  for i, c in ipairs(h) do col[c] = i end
  for f in r:lines() do
    total = total + 1
    local mb = f[col[schema.MB_DUR] or col[schema.LEGACY_MB_DUR] or 0]
    if not schema.has_valid_duration(mb, f[col[schema.PROF_AVG] or 0]) then n = n + 1 end
  end
  r:close()
  return n, total
end

local f = assert(io.open(json_path))
local rep = cjson.decode(f:read("a"))
f:close()
local listed, nb = {}, {}
for _, u in ipairs(rep.unreplayable or {}) do
  local op = u.csv:match("([^/]+)%.csv$")
  listed[op] = (listed[op] or 0) + 1
end
for op, x in pairs(type(rep.no_builder) == "table" and rep.no_builder or {}) do nb[op] = x.rows end

local names = {}
for name in lfs.dir(before) do if name:match("%.csv$") then names[#names + 1] = name:sub(1, -5) end end
table.sort(names)
local bad, tot = 0, { 0, 0, 0, 0, 0 }
print(("%-32s %9s %9s %9s %9s"):format("kernel", "to_measure", "measured", "rejected", "no_builder"))
for _, k in ipairs(names) do
  local m0 = missing(before .. "/" .. k .. ".csv")
  local m1 = missing(after .. "/" .. k .. ".csv")
  local l, n = listed[k] or 0, nb[k] or 0
  if m0 > 0 then
    print(("%-32s %9d %9d %9d %9d"):format(k, m0, m0 - m1, l, n))
  end
  tot[1], tot[2], tot[3], tot[4] = tot[1] + m0, tot[2] + m0 - m1, tot[3] + l, tot[4] + n
  if m1 ~= l + n then
    bad = bad + math.abs(m1 - l - n)
    print(("  %s: %d row(s) not measured, %d listed"):format(k, m1, l + n))
  end
end
print(("%-32s %9d %9d %9d %9d"):format("total", tot[1], tot[2], tot[3], tot[4]))
print(("unaccounted %d"):format(bad))
if bad > 0 then os.exit(1) end
if tot[4] > 0 and not allow_nb then print("no-builder rows listed"); os.exit(1) end
