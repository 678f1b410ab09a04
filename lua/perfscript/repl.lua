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

-- help(topic) topics: name -> function(arg) returning the text; M.add_topic("lookup", fn).
-- Objects answer help(obj) through a __help metamethod (a database, a kernel type).
local topics, topic_names = {}, {}
function M.add_topic(name, fn)
  if not topics[name] then topic_names[#topic_names + 1] = name end
  topics[name] = fn
end
M.add_topic("save", function() return require("perfscript.db.help").save() end)

-- help() lists the calls; help("topic"), help(obj) or help("KernelName") say more.
function M.help(topic)
  if topic == nil then
    local width = 0
    for _, h in ipairs(helps) do width = math.max(width, #h[1]) end
    for _, h in ipairs(helps) do io.write(string.format("  %-" .. width .. "s  %s\n", h[1], h[2])) end
    local names = {}
    for i, n in ipairs(topic_names) do names[i] = string.format("help(%q)", n) end
    io.write("  more: ", table.concat(names, ", "), _G.db and ", help(db), help(db.<Kernel>)" or "", "\n")
    return
  end
  local mt = getmetatable(topic)
  local text
  if type(mt) == "table" and type(rawget(mt, "__help")) == "function" then
    text = mt.__help(topic)
  elseif type(topic) == "string" and topics[topic] then
    text = topics[topic](topic)
  elseif type(topic) == "string" and type(_G.db) == "table" and rawget(_G.db, "_kernels") and _G.db._kernels[topic] then
    local k = _G.db._kernels[topic]
    text = getmetatable(k).__help(k)
  elseif type(topic) == "function" then
    for _, h in ipairs(helps) do
      local name = h[1]:match("^[%w_]+")
      if name and _G[name] == topic then text = h[1] .. "  " .. h[2] end
    end
  end
  if not text then
    local names = {}
    for i, n in ipairs(topic_names) do names[i] = string.format("%q", n) end
    text = string.format("no help on %s; topics: %s%s", type(topic) == "string" and string.format("%q", topic) or type(topic),
                         table.concat(names, ", "), _G.db and ", db, a kernel type (help(db.MatMulV2))" or "")
  end
  io.write(text, "\n")
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

-- --db DIR: the database as `db`, its help lines and topics; the REPL then opens with a banner
-- of its summary (M.interactive).
function M.open_db(dir)
  local db, err = perf.open(dir)
  if not db then perf.fail("%s", err) end
  _G.db = db
  for _, h in ipairs(require("perfscript.db").help) do M.add_help(h[1], h[2]) end
  local H = require "perfscript.db.help"
  M.add_topic("lookup", function() return H.lookup(_G.db) end)
  M.add_topic("coverage", H.coverage)
  M.add_topic("lint", H.lint)
  M.opened = db  -- the REPL's banner says what it is (a script run with --db prints nothing)
  return db
end

-- The interactive REPL started (src/host/repl.c): it keeps the last result in `_`, so a cut
-- result says how to save all of it.
function M.interactive()
  require("perfscript.db.result").more_hint = 'save(_, "out.csv") writes them: _ is the last result'
  if M.opened then print(require("perfscript.db.help").banner(M.opened)) end
end

_G.help = _G.help or M.help
_G.save = _G.save or M.save
_G.perf = _G.perf or perf

return M
