-- The comm validation run (recipes/comm_validate.lua is its entry point): hcom_*.csv latencies
-- against the analytic alpha-beta model. main returns the exit status: 0 when no row FAILs.
local argparse = require "argparse"
local options = require "perfscript.options"
local comm = require "perfscript.analysis.comm"
local pyfmt = require "perfscript.analysis.pyfmt"
local lfs = require "lfs"

local M = {}

function M.parser()
  local parser = argparse("comm_validate.lua",
    "Checks hcom_*.csv latencies against the alpha-beta model: PASS within the tolerance factor, " ..
    "WARN within twice it, FAIL beyond.")
  options.database(parser, { required_path = true, aliases = { "--csv-dir" }, default = false,
    help = "Communication database directory with hcom_allReduce_.csv, hcom_allGather_.csv, ... "
      .. "(e.g. DB/ATLAS_800_A3_752T_128G_DIE/hccl/v8.5)." })
  parser:option("--tolerance", "Tolerance factor T: PASS when 1/T <= measured/predicted <= T.", "2.0")
    :convert(tonumber)
  options.verbose(parser, "List PASS rows too.")
  return parser
end

local function ratio_text(x) return pyfmt.fixed(x, 2) end

-- The rows of each comm.FILES file in dir, {op=, rows=} in that order; prints a SKIP line for a
-- missing file and warns about dropped rows. nil and the message when a file cannot be read.
function M.read_reports(dir, shown_dir)
  local reports = {}
  for _, fo in ipairs(comm.FILES) do
    local file, op = fo[1], fo[2]
    local path = dir .. "/" .. file
    if lfs.attributes(path, "mode") ~= "file" then
      print(string.format("  [SKIP] %s not found in %s", file, shown_dir))
    else
      local rows, dropped = comm.read_rows(path)
      if not rows then return nil, dropped end
      for _, d in ipairs(dropped) do
        io.stderr:write(string.format("warning: %s:%d: %s (row dropped)\n", path, d[1], d[2]))
      end
      reports[#reports + 1] = { op = op, rows = rows }
    end
  end
  return reports
end

-- Validates and prints one op's rows; returns its tally (comm.validate's report).
function M.print_op(r, T, verbose)
  local results, rep = comm.validate(r.op, r.rows, T)
  print("")
  print(string.rep("=", 70))
  print(string.format("  %s  (%d rows, tolerance=%sx)", r.op, rep.n, pyfmt.fixed(T, 1)))
  print(string.format("  PASS=%d  WARN=%d  FAIL=%d", rep.PASS, rep.WARN, rep.FAIL))
  if rep.n > 0 then
    print(string.format("  ratio: mean=%sx  min=%sx  max=%sx", ratio_text(rep.mean),
                        ratio_text(rep.min), ratio_text(rep.max)))
  end
  print(string.rep("=", 70))
  if verbose or rep.WARN + rep.FAIL > 0 then
    local header = string.format("  %-6s  %12s  %5s  %4s  %10s  %10s  %6s", "status", "msg_bytes",
                                 "n_dev", "tier", "measured", "predicted", "ratio")
    print(header)
    print("  " .. string.rep("-", #header - 2))
    for _, x in ipairs(results) do
      if verbose or x.status ~= "PASS" then
        print(string.format("  %-6s  %12d  %5d  %4d  %10s  %10s  %6sx", x.status,
                            x.row.message_bytes, x.row.num_devices, x.row.tier,
                            pyfmt.fixed(x.row.measured, 2), pyfmt.fixed(x.predicted, 2),
                            ratio_text(x.ratio)))
      end
    end
  end
  return rep
end

function M.main(argv)
  local parser = M.parser()
  local args = parser:parse(argv)
  args.csv_dir = args.database_path
  local dir = args.csv_dir:gsub("/+$", "")
  if dir == "" then dir = "/" end
  if lfs.attributes(dir, "mode") ~= "directory" then
    io.stderr:write("ERROR: " .. args.csv_dir .. " is not a directory\n")
    return 1
  end
  local T = args.tolerance
  if not T or T <= 0 then parser:error("--tolerance must be a positive number") end

  print("C9 Comm Alignment Validation")
  print("  csv_dir   : " .. args.csv_dir)
  print("  tolerance : " .. pyfmt.fixed(T, 1) .. "x")
  local reports, err = M.read_reports(dir, args.csv_dir)
  if not reports then
    io.stderr:write("ERROR: " .. err .. "\n")
    return 1
  end
  local total = { n = 0, PASS = 0, WARN = 0, FAIL = 0 }
  local ok_all = true
  for _, r in ipairs(reports) do
    local rep = M.print_op(r, T, args.verbose)
    total.n = total.n + rep.n
    for _, s in ipairs { "PASS", "WARN", "FAIL" } do total[s] = total[s] + rep[s] end
    ok_all = ok_all and rep.ok
  end

  print("")
  print(string.rep("=", 70))
  print(string.format("  TOTAL: %d rows  PASS=%d  WARN=%d  FAIL=%d", total.n, total.PASS, total.WARN,
                      total.FAIL))
  print("  Result: " .. (ok_all and "OK" or "FAILED"))
  print(string.rep("=", 70))
  return ok_all and 0 or 1
end

return M
