-- Seed corpora for the fuzz targets, generated from the repository's own test fixtures and
-- bundled seed database (never from real profiler data), run by perfscript:
--   perfscript fuzz/seeds.lua SOURCE_DIR OUT_DIR
-- writes OUT_DIR/<target>/<n> for csv, trace, keys and num (fuzz/README.md).
local perf = require "perfscript"
local path = require "perfscript.path"
local lfs = require "lfs"
local src, out = arg[1], arg[2]
if not (src and out) then perf.fail("usage: perfscript fuzz/seeds.lua SOURCE_DIR OUT_DIR") end

local counts = {}
local function seed(target, bytes)
  local dir = path.join(out, target)
  if not counts[target] then lfs.mkdir(out); lfs.mkdir(dir); counts[target] = 0 end
  counts[target] = counts[target] + 1
  local f = assert(io.open(path.join(dir, string.format("seed%04d", counts[target])), "wb"))
  f:write(bytes)
  f:close()
end

-- a file's head, cut after a line end, at most n bytes: small seeds mutate fastest
local function head(text, n)
  if #text <= n then return text end
  local cut = text:sub(1, n):match("^.*\n") or text:sub(1, n)
  return cut
end

local files = {}
for _, root in ipairs { "tests/fixtures", "data/seed_db" } do
  path.walk(path.join(src, root), function(p)
    if p:match("%.csv$") or p:match("%.json$") then files[#files + 1] = p end
  end)
end
table.sort(files)

-- in fuzz_keys.c's order: the type, then these cells
local KEYCOLS = { "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                  "Output Data Types", "EP Size" }
local keys, nums, seen = 0, 0, {}
for _, p in ipairs(files) do
  local text = assert(path.read(p))
  if p:match("%.json$") then
    seed("trace", head(text, 4096))
  else
    seed("csv", head(text, 2048))
    local r <close> = assert(perf.csv.open(p))
    local header = r:header() or {}
    local col = {}
    for i, name in ipairs(header) do col[name] = i end
    local stem = path.basename(p):gsub("%.csv$", "")
    for f in r:lines() do
      local cells = { stem }
      for i, name in ipairs(KEYCOLS) do cells[i + 1] = col[name] and f[col[name]] or "" end
      local k = table.concat(cells, "\n")
      if keys < 300 and not seen[k] then seen[k] = true; keys = keys + 1; seed("keys", k) end
      for _, v in ipairs(f) do
        if nums < 300 and v:match("^%s*[-+%d.]") and not seen[v] then
          seen[v] = true; nums = nums + 1; seed("num", v)
        end
      end
    end
  end
end
-- the grammar's corners, spelled out (the fixtures are all well-formed)
for _, t in ipairs { '\239\187\191a,b\r\n"x ""q""\ny",2\r\n', 'a\rb\r"c\rd"\r', 'a,"b"c ,\t d \v\n\n' } do
  seed("csv", t)
  seed("csv", "\181" .. t)   -- 0xB5: fuzz_csv puts it across the engine's buffer boundary
end
seed("trace", '[{"name":"k","ph":"X","ts":1736412474714258.990,"dur":1.5,"args":{"a":[1,{"b":null}],"c":true}}')
for _, t in ipairs { "1_000.5e-3", " -inf ", "nan", "1e308", "4.9e-324", "0.000001", "12345678901234567890" } do
  seed("num", t)
end
-- the expressions of the bundled grid rules (lua/perfscript/grids/), and the language's corners
local seen_expr = {}
path.walk(path.join(src, "lua/perfscript/grids"), function(p)
  if not p:match("%.lua$") then return end
  for q, e in assert(path.read(p)):gmatch('([\'"])(.-)%1') do
    if e:find("[%w_]") and e:find("[-+*/%%<>=()]") and not seen_expr[e] and #e < 200 then
      seen_expr[e] = true
      seed("expr", e)
    end
  end
end)
for _, e in ipairs { "a if b > 2 else -c // 3", "1 < a <= b != 3", "align(a, 16) ** 2 % 7", "not a or b and c",
                     "max(1, a, b,) - min(c,)", "-2 ** 2", "1_000 * (a - -b)" } do
  seed("expr", e)
end
for target, n in pairs(counts) do io.stderr:write(string.format("seeds: %s %d\n", target, n)) end
