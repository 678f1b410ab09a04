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

return M
