-- Column names and duration rules of the microbench write-back (docs/rules.md,
-- Write-back: columns, and Numbers and cells: the valid duration).
local M = {}

M.BASE_COLS = { "OP State", "Accelerator Core", "Input Shapes", "Input Data Types",
                "Input Formats", "Output Shapes", "Output Data Types", "Output Formats" }
M.MB_DUR = "Average Duration(us)"            -- holds the MINIMUM of the task durations
M.LEGACY_MB_DUR = "MicroBench Duration(us)"
M.DROPPED = { ["MicroBench Task Duration(us)"] = true, ["MicroBench Kernel Duration(us)"] = true }
M.PROF_AVG = "Profiling Average Duration(us)"
M.PROF_MED = "Profiling Median Duration(us)"
M.PROF_STD = "Profiling Std Duration(us)"
M.EP_SIZE = "EP Size"
M.DFC = "DispatchFFNCombine"

-- the 25 counters, in column order: the one list in C (src/schema/counters.c)
M.METRICS = require("perfscript.profile").metrics

function M.mb_col(metric) return "MicroBench " .. metric end
function M.prof_col(metric) return "Profiling Average " .. metric end

-- The 62 columns of a new file.
function M.default_columns()
  local cols = {}
  for _, c in ipairs(M.BASE_COLS) do cols[#cols + 1] = c end
  for _, c in ipairs { M.MB_DUR, M.PROF_AVG, M.PROF_MED, M.PROF_STD } do cols[#cols + 1] = c end
  for _, m in ipairs(M.METRICS) do
    cols[#cols + 1] = M.mb_col(m)
    cols[#cols + 1] = M.prof_col(m)
  end
  return cols
end

local trim = require("perfscript.path").trim
M.trim = trim

-- parse_float: trimmed float (Python float()); empty or unparsable gives 0.0; "nan" and "inf"
-- parse. The parser and the valid-duration rule are src/schema/num.c's.
local num = require "perfscript.num"
M.parse_float = num.or_zero

-- A duration is valid when it is a finite number > 0, as the database's consumer reads it.
M.is_real = num.is_duration

-- A sample that may enter a minimum: a valid duration (a blank never wins), as a number.
function M.valid_sample(s)
  if num.is_duration(s) then return num.parse(s) end
  return nil
end

function M.has_valid_duration(mb, prof)
  return M.is_real(mb) or M.is_real(prof)
end

M.fmt = num.fmt6 -- string.format("%.6f", v)

-- Existing file columns after the spec's migration (9.1): legacy columns dropped, the legacy
-- duration renamed in place, Average Duration(us) inserted after the 8 base columns when
-- absent, MicroBench <m> before each Profiling Average <m>. Returns cols and a source map
-- (output column -> source column name).
function M.migrate_columns(header)
  local cols, src = {}, {}
  local has = {}
  for _, c in ipairs(header) do has[c] = true end
  for _, c in ipairs(header) do
    if not M.DROPPED[c] then
      if c == M.LEGACY_MB_DUR and not has[M.MB_DUR] then
        cols[#cols + 1] = M.MB_DUR
        src[M.MB_DUR] = c
      else
        cols[#cols + 1] = c
        src[c] = c
      end
    end
  end
  local present = {}
  for _, c in ipairs(cols) do present[c] = true end
  if not present[M.MB_DUR] then
    local out = {}
    for _, c in ipairs(M.BASE_COLS) do out[#out + 1] = c; present[c] = true end
    out[#out + 1] = M.MB_DUR
    local base = {}
    for _, c in ipairs(M.BASE_COLS) do base[c] = true end
    for _, c in ipairs(cols) do if not base[c] then out[#out + 1] = c end end
    cols = out
    present[M.MB_DUR] = true
  end
  for _, m in ipairs(M.METRICS) do
    local p, mb = M.prof_col(m), M.mb_col(m)
    if present[p] and not present[mb] then
      for i, c in ipairs(cols) do
        if c == p then table.insert(cols, i, mb); present[mb] = true; break end
      end
    end
  end
  return cols, src
end

-- True when the file is a Git LFS pointer (perfscript.csv's check, src/io/csvsniff.c).
M.is_lfs_pointer = require("perfscript.csv").is_lfs_pointer

return M
