-- Database explorer benchmark helper (not a test), driven by tests/bench/db_bench.sh.
--   db_bench.lua gen DIR ROWS   write DIR/MatMulV2.csv with ROWS distinct matmul signatures
--                               (profiler-style triple-quoted shapes, 12 columns) and a small
--                               RmsNorm.csv beside it
--   db_bench.lua first DIR ROWS open + first query (CPU time) and peak RSS
--   db_bench.lua run DIR ROWS   the same, then exact lookup latency (20,000 distinct existing
--                               signatures spread over the file, CPU time per lookup), a
--                               full-scan baseline from the same run and the peak RSS
-- Targets (issue 14, 1M rows): open + first query <= 1 s, lookup <= 10 us, peak RSS <= 200 MB.
local perf = require "perfscript"

-- Peak resident memory of this process so far (VmHWM), in MB.
local function peak_rss_mb()
  local f = io.open("/proc/self/status", "r")
  if not f then return 0 end
  local s = f:read("a")
  f:close()
  return (tonumber(s:match("VmHWM:%s*(%d+)")) or 0) / 1024
end
local mode, dir, rows = arg[1], arg[2], tonumber(arg[3] or "1000000")

local function shape(i)  -- distinct (m, k, n) per i
  local m = 1 + i // 1000
  local k = 128 * (1 + i % 1000 // 40)
  local n = 128 * (1 + i % 40)
  return m, k, n
end

if mode == "gen" then
  perf.fs.mkdir_p(dir)
  local f = assert(io.open(dir .. "/MatMulV2.csv", "wb"))
  f:write("OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,",
          "Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us),",
          "Profiling Median Duration(us),Profiling Std Duration(us)\n")
  local buf = {}
  for i = 0, rows - 1 do
    local m, k, n = shape(i)
    buf[#buf + 1] = string.format('dynamic,AI_CORE,"""%d,%d;%d,%d""",DT_BF16;DT_BF16,ND;ND,"""%d,%d""",DT_BF16,ND,%.6f,%.6f,%.6f,%.6f\n',
                                  m, k, n, k, m, n, 1 + (i * 7919 % 100000) / 1000, 1 + (i * 104729 % 100000) / 1000,
                                  1 + (i * 1299709 % 100000) / 1000, (i * 15485863 % 3000) / 1000)
    if #buf == 10000 then f:write(table.concat(buf)); buf = {} end
  end
  f:write(table.concat(buf))
  f:close()
  local g = assert(io.open(dir .. "/RmsNorm.csv", "wb"))
  g:write('Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)\n',
          '"128,7168;7168",DT_BF16;DT_BF16,ND;ND,"128,7168",DT_BF16,ND,5.5\n')
  g:close()
  return
end

assert(mode == "run" or mode == "first", "usage: db_bench.lua gen|first|run DIR ROWS")
local t0 = os.clock()
local db = assert(perf.open(dir))
local m, k, n = shape(rows // 2)
local first = db:lookup("MatMulV2", string.format("%d,%d;%d,%d", m, k, n, k), "DT_BF16;DT_BF16")
local t_first = os.clock() - t0
assert(first.latency, "first lookup missed")
local mem, nstr = db.MatMulV2:table():memory()
print(string.format("open+first query: %.3f s CPU (%d rows, table %.0f MB, %d strings; peak RSS %.0f MB; " ..
                    "targets <= 1 s, <= 200 MB)", t_first, rows, mem / 1e6, nstr, peak_rss_mb()))
if mode == "first" then return end

-- exact lookups of existing signatures, spread over the table
local N = 20000
local queries = {}
for j = 1, N do
  local mm, kk, nn = shape((j * 7919) % rows)
  queries[j] = string.format("%d,%d;%d,%d", mm, kk, nn, kk)
end
local K = db.MatMulV2
t0 = os.clock()
local hits = 0
for j = 1, N do
  local r = K:lookup(queries[j], "DT_BF16;DT_BF16")
  if r.latency then hits = hits + 1 end
end
local per = (os.clock() - t0) / N * 1e6
print(string.format("exact lookup: %.1f us per lookup (%d lookups, %d hits; target <= 10 us)", per, N, hits))

-- the consumer's cost structure as a baseline in the same run: one pass over every row per
-- lookup (what its DataFrame iterrows scan does), here with the table already in memory
local t = K:table()
local ci = t:column("Input Shapes")
t0 = os.clock()
local SCANS = 3
for j = 1, SCANS do
  local want = '"' .. queries[j] .. '"'
  for i = 1, #t do if t:cell(i, ci) == want then break end end
end
local scan = (os.clock() - t0) / SCANS * 1e6
print(string.format("baseline full-scan lookup (consumer's O(rows) per query): %.0f us per lookup; indexed is %.0fx faster",
                    scan, scan / per))
print(string.format("peak RSS: %.0f MB (target <= 200 MB)", peak_rss_mb()))
