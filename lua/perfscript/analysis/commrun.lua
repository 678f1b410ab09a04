-- Runs comm microbench sessions one after another through perfscript.proc: each from its argv
-- (no shell), with a timeout that kills the whole process group, its output in log files.
-- As run_comm_bench.sh did, a SIGSEGV at shutdown (status 139) counts as harmless; other
-- failures are reported and the next session still runs.
local perf = require "perfscript"

local M = {}

-- opts: timeout (s), log_dir, out_dir, proc (a stand-in for tests). Returns the failure count.
function M.run_all(sessions, opts)
  local proc = opts.proc or require "perfscript.proc"
  local exe = sessions[1].argv[1]
  if not exe:find("/", 1, true) and not proc.which(exe) then
    perf.fail("%s not found on PATH (give its path with --torchrun)", exe)
  end
  for _, dir in ipairs { opts.log_dir, opts.out_dir } do
    if dir then
      local ok, err = perf.fs.mkdir_p(dir)
      if not ok then perf.fail("%s", err) end
    end
  end
  local failed = 0
  for i, s in ipairs(sessions) do
    local base = string.format("%s/%02d_%s_n%d_tier%d", opts.log_dir, i, s.op, s.num_devices, s.tier)
    io.stdout:write(string.format("[%d/%d] %s n=%d tier=%d ... ", i, #sessions, s.op, s.num_devices, s.tier))
    io.stdout:flush()
    local t0 = os.time()
    local code, how = proc.run { argv = s.argv, stdout = base .. ".out", stderr = base .. ".err",
                                 stdin_null = true, timeout = opts.timeout }
    local took = os.difftime(os.time(), t0)
    if code == nil then
      failed = failed + 1
      print("FAILED: " .. tostring(how))
    elseif how == "timeout" then
      failed = failed + 1
      print(string.format("TIMEOUT after %ds (process group killed); log %s.err", opts.timeout, base))
    elseif code == 0 then
      print(string.format("ok (%ds)", took))
    elseif code == 139 then
      print(string.format("ok (%ds; SIGSEGV at shutdown, harmless)", took))
    else
      failed = failed + 1
      print(string.format("FAILED with status %d (%s); log %s.err", code, how, base))
    end
  end
  print(string.format("%d of %d sessions succeeded; results in %s, logs in %s", #sessions - failed,
                      #sessions, opts.out_dir or "?", opts.log_dir))
  return failed
end

return M
