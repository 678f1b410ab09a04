-- What the REPL adds to the globals: help(), and `db` when a database is opened with --db.
local perf = require "perfscript"
local M = {}

local helps = {
  { "help()", "this list" },
  { "perf", "the perfscript library: perf.csv, perf.fs, ..." },
  { "save(rows, path)", "write an array of rows (arrays or records) to a CSV file, atomically" },
}

-- Lets a module add its own lines to help(): M.add_help("db:kernels()", "rows per kernel").
function M.add_help(call, what) helps[#helps + 1] = { call, what } end

function M.help()
  local width = 0
  for _, h in ipairs(helps) do width = math.max(width, #h[1]) end
  for _, h in ipairs(helps) do io.write(string.format("  %-" .. width .. "s  %s\n", h[1], h[2])) end
end

-- save(rows, path): rows are arrays, or records (tables with named fields) whose columns are
-- the union of their keys in first-seen order.
function M.save(rows, path)
  assert(type(rows) == "table", "save: rows must be a table")
  assert(type(path) == "string", "save: path must be a string")
  local header = 0
  if type(rows.matrix) == "function" then rows, header = rows:matrix(), 1 end  -- a db query result
  local w = assert(perf.csv.writer(path))
  local columns, index = nil, {}
  if rows[1] and #rows[1] == 0 and next(rows[1]) ~= nil then
    columns = {}
    for _, r in ipairs(rows) do
      for k in pairs(r) do
        if not index[k] then index[k] = true; columns[#columns + 1] = k end
      end
    end
    table.sort(columns, function(a, b) return tostring(a) < tostring(b) end)
    assert(w:write(columns))
  end
  for _, r in ipairs(rows) do
    local out = r
    if columns then
      out = {}
      for i, c in ipairs(columns) do
        local v = r[c]
        out[i] = v == nil and "" or tostring(v)
      end
    else
      for i = 1, #r do if type(r[i]) ~= "string" and type(r[i]) ~= "number" then
        out = {}
        for j = 1, #r do out[j] = tostring(r[j]) end
        break
      end end
    end
    assert(w:write(out))
  end
  local how = assert(w:commit())
  print(string.format("%s %s (%d rows)", how, path, #rows - header))
  return path
end

-- Completion inside a string argument: for `obj:method("pre` (or obj.method), the names that
-- obj:names() lists (a database's kernel types), filtered by the prefix typed so far.
function M.complete_string(word, before)
  local path = before:match("([%a_][%w_%.]*)[:.][%a_][%w_]*%s*%(%s*$")
    or before:match("([%a_][%w_%.]*)%s*%[%s*$")
  if not path then return {} end
  local obj = _G
  for part in path:gmatch("[^.]+") do
    if type(obj) ~= "table" and type(obj) ~= "userdata" then return {} end
    local ok, v = pcall(function() return obj[part] end)
    if not ok then return {} end
    obj = v
  end
  local ok, names = pcall(function() return obj:names() end)
  if not ok or type(names) ~= "table" then return {} end
  local out = {}
  for _, n in ipairs(names) do
    if type(n) == "string" and n:sub(1, #word) == word then out[#out + 1] = n end
  end
  table.sort(out)
  return out
end

function M.open_db(dir)
  local db, err = perf.open(dir)
  if not db then perf.fail("%s", err) end
  _G.db = db
  for _, h in ipairs(require("perfscript.db").help) do M.add_help(h[1], h[2]) end
  return db
end

_G.help = _G.help or M.help
_G.save = _G.save or M.save
_G.perf = _G.perf or perf

return M
