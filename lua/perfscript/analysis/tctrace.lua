-- TensorCast Chrome traces (docs/rules.md, Analysis): reading, the choice of the
-- performance model (process id), and the meaning of the args the analysis tools read.
-- A trace is decoded at once with lua-cjson (TC traces are a few MB), or streamed through
-- perfscript.trace (libyajl) when it is larger than STREAM_BYTES; errors read
-- "file:line:column: why". Both roots are accepted: {"traceEvents": [...]} and a bare array.
local cjson = require "cjson"
local pyfmt = require "perfscript.analysis.pyfmt"
local pylit = require "perfscript.analysis.pylit"

local M = {}

local NULL = cjson.null

-- args values as Lua values (JSON null -> nil).
local function val(v)
  if v == NULL then return nil end
  return v
end
M.val = val

-- Python truthiness of a JSON value.
function M.truthy(v)
  v = val(v)
  if v == nil or v == false or v == "" or v == 0 then return false end
  if type(v) == "table" and next(v) == nil then return false end
  return true
end

local function line_col(text, pos)
  local line, last = 1, 0
  for i in text:sub(1, pos - 1):gmatch("()\n") do line = line + 1; last = i end
  return line, pos - last
end

local function decode(path, text)
  local ok, doc = pcall(cjson.decode, text)
  if ok then return doc end
  local msg = tostring(doc)
  local pos = tonumber(msg:match("at character (%d+)"))
  if pos then
    local line, col = line_col(text, pos)
    return nil, string.format("%s:%d:%d: malformed JSON: %s", path, line, col,
                              msg:gsub(" at character %d+", ""))
  end
  return nil, string.format("%s: malformed JSON: %s", path, msg)
end

-- Traces larger than this are streamed through perfscript.trace (libyajl) when the binary has
-- it, so memory stays bounded; smaller ones are decoded at once with lua-cjson.
M.STREAM_BYTES = 64 * 1024 * 1024

local function open_check(path)
  local f, err = io.open(path, "rb")
  if not f then
    return nil, string.format("TC trace not found: %s (%s)", path, err:gsub("^[^:]*: ", ""))
  end
  local head, rerr = f:read(64)
  if rerr then f:close(); return nil, string.format("%s: %s", path, rerr) end
  head = head or ""
  local size = f:seek("end")
  f:close()
  if head:find("^%s*$") then return nil, path .. ":1:1: empty file, not a JSON trace" end
  if require("perfscript.csv").is_lfs_pointer(path) then
    return nil, path .. ": a Git LFS pointer, not a trace (fetch it with 'git lfs pull')"
  end
  return size
end

local function load_memory(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  local doc, derr = decode(path, text)
  local repaired = false
  if not doc and text:match("^%s*%[") then
    -- An interrupted export leaves the array without its closing ']'.
    local fixed = text:gsub("[%s,]*$", "") .. "]"
    doc = decode(path, fixed)
    repaired = doc ~= nil
  end
  if not doc then return nil, derr end
  local events
  local first = text:match("^%s*(.)")
  if first == "{" then
    events = val(doc.traceEvents)
    if events == nil then
      events = {}
    elseif type(events) ~= "table" then
      return nil, path .. ": traceEvents is not an array"
    end
  elseif first == "[" then
    events = doc   -- a bare array, as in Ascend trace_view.json
  else
    return nil, path .. ":1:1: the JSON root is neither an object nor an array"
  end
  for i = 1, #events do
    if type(events[i]) ~= "table" then
      return nil, string.format("%s: traceEvents[%d] is not an object", path, i - 1)
    end
  end
  return { path = path, events = events, repaired = repaired }
end

-- "near byte N" in a streaming error -> line:column.
local function stream_error(path, msg)
  local at = tonumber(msg:match("near byte (%d+)"))
  if not at then return msg end
  local f = io.open(path, "rb")
  if not f then return msg end
  local line, col, done = 1, 1, 0
  while done < at do
    local chunk = f:read(math.min(65536, at - done))
    if not chunk then break end
    for nl in chunk:gmatch("()\n") do line = line + 1; col = #chunk - nl + 1 end
    if not chunk:find("\n") then col = col + #chunk end
    done = done + #chunk
  end
  f:close()
  local why = msg:sub(#path + 3):gsub("^invalid JSON near byte %d+: ", ""):match("^[^\n]*")
  return string.format("%s:%d:%d: malformed JSON: %s", path, line, col, why)
end

-- Streamed events come as text: numbers back to numbers for the members the tools compute with.
local function normalize(ev)
  ev.pid = tonumber(ev.pid) or ev.pid
  ev.dur = tonumber(ev.dur) or ev.dur
  return ev
end

-- Loads a trace: {path, events = {...}} in memory, or {path, stream = module} read anew at each
-- pass. Returns the trace or nil, "file:line:column: why".
function M.load(path, opts)
  local size, err = open_check(path)
  if not size then return nil, err end
  local limit = (opts and opts.stream_bytes) or M.STREAM_BYTES
  if size > limit then
    local ok, stream = pcall(require, "perfscript.trace")
    if ok and type(stream) == "table" then
      local tr = { path = path, stream = stream }
      local n, perr = 0, nil
      -- a first pass checks the document, so that errors surface before any output
      local okp, e = pcall(function() for _ in M.each(tr) do n = n + 1 end end)
      if not okp then perr = tostring(e) end
      if perr then return nil, perr end
      return tr
    end
  end
  return load_memory(path)
end

-- Iterates every event of the trace, in file order.
function M.each(trace)
  if trace.events then
    local evs, i = trace.events, 0
    return function()
      i = i + 1
      return evs[i]
    end
  end
  local r, err = trace.stream.open(trace.path)
  if not r then error(err, 0) end
  return function()
    local ev, rerr = r:read()
    if ev then return normalize(ev) end
    if rerr then
      r:close()
      error(stream_error(trace.path, rerr), 0)
    end
    trace.repaired = r:truncated()
    r:close()
    return nil
  end
end

-- Python str() of a JSON value (lists as "[1, 2]"); nil stays nil.
function M.pystr(v)
  v = val(v)
  if v == nil then return nil end
  if type(v) ~= "table" then return pyfmt.str(v) end
  local function repr(x)
    x = val(x)
    if x == nil then return "None" end
    if type(x) == "string" then return "'" .. x:gsub("\\", "\\\\"):gsub("'", "\\'") .. "'" end
    if type(x) ~= "table" then return pyfmt.str(x) end
    local parts = {}
    if #x > 0 or next(x) == nil then
      for i = 1, #x do parts[i] = repr(x[i]) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    local keys = {}
    for k in pairs(x) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for i, k in ipairs(keys) do parts[i] = repr(k) .. ": " .. repr(x[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return repr(v)
end

-- The process names of "M" process_name events, by pid.
function M.process_names(trace)
  local names, order = {}, {}
  for ev in M.each(trace) do
    if ev.ph == "M" and ev.name == "process_name" and val(ev.pid) ~= nil then
      local args = type(val(ev.args)) == "table" and ev.args or {}
      local n = val(args.name)
      if type(n) == "string" and names[ev.pid] == nil then
        names[ev.pid] = n
        order[#order + 1] = ev.pid
      end
    end
  end
  return names, order
end

local function pid_text(p)
  return math.type(p) == "float" and math.tointeger(p) and tostring(math.tointeger(p))
         or tostring(p)
end

-- Chooses the performance model whose events are analysed (docs/rules.md, Analysis: TC trace):
-- opts.pid, else opts.model (substring of the process name, case-insensitive), else the first
-- process named like "empirical" or "profiling", else the sole pid of the X events.
-- Returns pid (nil when the trace has no X events), note | nil; or false, error message.
function M.select_pid(trace, opts)
  opts = opts or {}
  local names, order = M.process_names(trace)
  local xpids, xorder = {}, {}
  for ev in M.each(trace) do
    local p = val(ev.pid)
    if ev.ph == "X" and p ~= nil and not xpids[p] then
      xpids[p] = true
      xorder[#xorder + 1] = p
    end
  end
  local function list()
    local t = {}
    for _, p in ipairs(xorder) do
      t[#t + 1] = names[p] and string.format("%s (%s)", pid_text(p), names[p]) or pid_text(p)
    end
    return #t > 0 and table.concat(t, ", ") or "none"
  end
  if opts.pid ~= nil then
    local want = tonumber(opts.pid)
    if not xpids[want] then
      return false, string.format("%s: no events with pid %s (pids with events: %s)",
                                  trace.path, tostring(opts.pid), list())
    end
    return want
  end
  if opts.model then
    local needle = opts.model:lower()
    for _, p in ipairs(order) do
      if names[p]:lower():find(needle, 1, true) then return p end
    end
    return false, string.format("%s: no process named like '%s' (pids: %s)", trace.path,
                                opts.model, list())
  end
  for _, p in ipairs(order) do
    local n = names[p]:lower()
    if n:find("profiling", 1, true) or n:find("empirical", 1, true) then return p end
  end
  if #xorder == 1 then
    return xorder[1], string.format("profiling PID not found by name in %s, using sole PID %s",
                                    trace.path, pid_text(xorder[1]))
  end
  if #xorder == 0 then return nil, trace.path .. ": the trace has no complete (X) events" end
  return false, string.format("%s: cannot tell which model to analyse; pids: %s " ..
                              "(choose one with --model NAME or --pid N)", trace.path, list())
end

-- Iterates the X events of one pid (all pids when pid is nil), in file order.
function M.x_events(trace, pid)
  local nxt = M.each(trace)
  return function()
    while true do
      local ev = nxt()
      if ev == nil then return nil end
      if ev.ph == "X" and (pid == nil or val(ev.pid) == pid) then return ev end
    end
  end
end

function M.args(ev)
  local a = val(ev.args)
  return type(a) == "table" and a or {}
end

-- The event's duration in us as a number (0 when absent or not a number).
function M.dur(ev)
  local d = val(ev.dur)
  if type(d) == "string" then d = tonumber(d) end
  return type(d) == "number" and d or 0
end

-- Op name with every "torch.ops." removed, as the Python original's tables show it.
function M.short_name(op)
  return (tostring(op):gsub("torch%.ops%.", ""))
end

-- args.kernel_type as text, or nil when absent, empty or the "?" sentinel.
function M.kernel_type(args)
  local kt = val(args.kernel_type)
  if not M.truthy(kt) then return nil end
  kt = M.pystr(kt)
  if kt:match("^%s*%??%s*$") then return nil end
  return kt
end

-- "A, B,,C" -> {"A", "B", "C"} (the same table for the same text: callers must not change it)
local split_cache = {}
local split_count = 0

function M.split_kernel_types(kt)
  local cached = split_cache[kt]
  if cached then return cached end
  local t = {}
  for part in (kt .. ","):gmatch("([^,]*),") do
    part = part:match("^%s*(.-)%s*$")
    if part ~= "" then t[#t + 1] = part end
  end
  if split_count < 100000 then   -- kernel-type lists repeat; the cache stays small
    split_cache[kt] = t
    split_count = split_count + 1
  end
  return t
end

local skd_cache, skd_count = {}, 0

-- args.sub_kernel_durations as {{name, us}, ...}; nil when absent, not a list of pairs, or
-- empty. Accepts the Python literal text of the real traces and a JSON array of pairs.
function M.sub_kernel_durations(args)
  local raw = val(args.sub_kernel_durations)
  if not M.truthy(raw) then return nil end
  local v
  if type(raw) == "string" then
    v = skd_cache[raw]
    if v == nil then
      v = pylit.parse(raw) or false
      if skd_count < 100000 then skd_cache[raw] = v; skd_count = skd_count + 1 end
    end
    if not (pylit.is_seq(v) and v.kind == "list") then return nil end
  elseif type(raw) == "table" then
    v = raw
  else
    return nil
  end
  local out = {}
  for i = 1, #v do
    local p = v[i]
    if type(p) ~= "table" or #p ~= 2 then return nil end
    local name, d = val(p[1]), val(p[2])
    if type(name) ~= "string" or type(d) ~= "number" then return nil end
    out[i] = { name, d }
  end
  if #out == 0 then return nil end
  return out
end

-- A zero-cost op by the trace's own word (docs/rules.md, Analysis: op comparison).
function M.trace_zero_cost(args)
  local z = val(args.zero_cost)
  if z == true or (type(z) == "string" and z:lower() == "true") then return true end
  return val(args.shape_match_rule) == "zero_cost"
end

function M.accepted_miss(args)
  return val(args.kernel_type) == "accepted_miss" or val(args.shape_match_rule) == "accepted_miss"
end

-- args.source as text ("" when absent).
function M.source(args)
  local s = val(args.source)
  if s == nil then return "" end
  return pyfmt.str(s)
end

-- A source filter from "MEASURED,INTERPOLATED": items stripped, empty items dropped
-- (the Python original's trailing-comma quirk admitted source-less events), "*" admits any source.
function M.source_filter(text, default)
  if text == nil or text:match("^%s*$") then text = default end
  local set, names = {}, {}
  for part in (text .. ","):gmatch("([^,]*),") do
    part = part:match("^%s*(.-)%s*$")
    if part ~= "" and not set[part] then
      set[part] = true
      names[#names + 1] = part
    end
  end
  table.sort(names)
  local any = set["*"] or false
  return {
    names = names,
    any = any,
    admits = function(src) return any or (src ~= "" and set[src] == true) end,
  }
end

return M
