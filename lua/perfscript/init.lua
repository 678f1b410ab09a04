-- perfscript: the library recipes load with `local perf = require "perfscript"`.
-- C modules and Lua modules are reached as fields (perf.csv, perf.fs, ...) and loaded on
-- first use, so a recipe pays only for what it touches.
local perf = {
  version = "0.1.0",
}

-- A user error: the recipe knows what is wrong, so no traceback is printed, only
-- "perfscript: <message>", and the exit status is 1.
local UserError = {}
UserError.__index = UserError
UserError.__tostring = function(e) return e.message end

function perf.fail(fmt, ...)
  local msg = select("#", ...) > 0 and string.format(fmt, ...) or tostring(fmt)
  error(setmetatable({ message = msg }, UserError), 0)
end

function perf.is_user_error(e)
  return getmetatable(e) == UserError
end

-- Opens a database directory for queries (the REPL's `db`).
function perf.open(dir, opts)
  return require("perfscript.db").open(dir, opts)
end

return setmetatable(perf, {
  __index = function(t, name)
    local ok, mod = pcall(require, "perfscript." .. name)
    if not ok then
      if tostring(mod):find("module 'perfscript." .. name .. "' not found", 1, true) then
        return nil
      end
      error(mod, 2)
    end
    rawset(t, name, mod)
    return mod
  end,
})
