-- Shared by the Lua suites: scratch files and the real profiler exports.
local M = {}

local counter = 0

function M.tmpdir()
  local base = os.getenv("PERFSCRIPT_TEST_TMP") or "/tmp"
  counter = counter + 1
  local dir = string.format("%s/lua-%s-%d-%d", base, (arg and arg[0] or "t"):match("([%w_]+)%.lua$") or "t",
                            math.random(1, 1 << 30), counter)
  assert(require("perfscript.fs").mkdir_p(dir))
  return dir
end

function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The real exports (never copied into the repository). Returns nil and prints why when absent.
function M.real_data(rel)
  local root = os.getenv("PERFSCRIPT_REAL_DATA")
  if not root or root == "" then
    root = (os.getenv("PERFSCRIPT_SOURCE_DIR") or ".") .. "/../shared/data/real"
  end
  local path = rel and (root .. "/" .. rel) or root
  local f = io.open(path, "rb")
  if not f then
    print("SKIP: real data not found at " .. path .. " (set PERFSCRIPT_REAL_DATA)")
    return nil
  end
  f:close()
  return path
end

-- A CSV file's header and its rows as {[column] = cell} tables.
function M.read_rows(path)
  local r = assert(require("perfscript").csv.open(path))
  local header, rows = r:header(), {}
  for f in r:lines() do
    local row = {}
    for i, c in ipairs(header) do row[c] = f[i] end
    rows[#rows + 1] = row
  end
  r:close()
  return header, rows
end

-- Gives every row without a latency the latency 1.0 (Average Duration(us)), atomically.
function M.fill_latencies(dir)
  local perf = require "perfscript"
  for _, name in ipairs(assert(perf.open(dir)):names()) do
    local file = dir .. "/" .. name .. ".csv"
    local r = assert(perf.csv.open(file))
    local header, rows = r:header(), {}
    local col
    for j, c in ipairs(header) do if c == "Average Duration(us)" then col = j end end
    for f in r:lines() do rows[#rows + 1] = table.move(f, 1, #f, 1, {}) end
    r:close()
    if col then
      local w = assert(perf.csv.writer(file))
      assert(w:write(header))
      for _, f in ipairs(rows) do
        if (f[col] or "") == "" then
          for j = #f + 1, col do f[j] = "" end
          f[col] = "1.0"
        end
        assert(w:write(f))
      end
      assert(w:commit())
    end
  end
end

-- A small MatMulV2 database file's header and rows (the lookup tests' fixtures):
-- M.MM_HEAD .. M.mm(m, k, n, avg, prof[, formats[, dtypes]]) .. ...
M.MM_HEAD = "OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes," ..
            "Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)\n"

function M.mm(m, k, n, avg, prof, fmt, dt)
  return string.format('dynamic,AI_CORE,"""%d,%d;%d,%d""",%s,%s,"""%d,%d""",DT_BF16,ND,%s,%s\n', m, k, n, k,
                       dt or "DT_BF16;DT_BF16", fmt or "ND;ND", m, n, avg or "", prof or "")
end

-- A database row of one kernel for the replay registry's checks: the signature cells (missing
-- dtypes, formats and output cells ""), OP State "dynamic", and the cells of extra on top.
function M.kernel_row(is, id, fm, os, od, extra)
  local r = { ["OP State"] = "dynamic", ["Input Shapes"] = is, ["Input Data Types"] = id or "",
              ["Input Formats"] = fm or "", ["Output Shapes"] = os or "", ["Output Data Types"] = od or "",
              ["Output Formats"] = "" }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

return M
