-- Bounded memos of pure functions of a string: a grid or an import asks the same few cell texts
-- (dtype names, format lists, split cells) thousands of times, and a bounded table keeps that
-- cheap without growing with the data.
local M = {}

-- memo.bounded(fn[, limit]) -> get, cache. get(s) is fn(s)'s first value, remembered; cache is
-- the table get fills, for a hot path to read inline (`cache[s] or get(s)`). Past limit
-- entries (default 512) it starts over, emptied in place so cache stays the table to read.
-- fn must not give nil or false; what it gives is shared between callers: read only.
function M.bounded(fn, limit)
  limit = limit or 512
  local cache, n = {}, 0
  local function get(s)
    local v = cache[s]
    if v ~= nil then return v end
    if n >= limit then
      for k in pairs(cache) do cache[k] = nil end
      n = 0
    end
    v = fn(s)
    cache[s], n = v, n + 1
    return v
  end
  return get, cache
end

return M
