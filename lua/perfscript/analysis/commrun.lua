-- Runs comm microbench sessions one after another through perfscript.proc: each from its argv
-- (no shell), with a timeout that kills the whole process group, output to a log file per session.
local perf = require "perfscript"

local M = {}

function M.run_all(sessions, opts)
  local ok, proc = pcall(require, "perfscript.proc")
  if not ok or type(proc) ~= "table" then
    perf.fail("--do-run needs the perfscript.proc module, which this build does not have yet")
  end
  return M.run_with(proc, sessions, opts)
end

function M.run_with(proc, sessions, opts)
  perf.fail("--do-run: perfscript.proc support is not wired yet")
end

return M
