-- Run journals of microbench collections (docs/rules.md, Resume): a run's directory
-- <database>/.perfscript/runs/<id>/ holds run.json (who planned it against what) and
-- append-only journal files, one JSON object a line. Every append goes through the atomic
-- writer (perf.fs.write_atomic, append = true: copied, fsynced, renamed), so a kill -9 leaves
-- either the old file or the new one, never half a line. A process appends only to its own
-- file: journal.jsonl, or journal-shard<K>.jsonl under --shard K/N; the run's journal is the
-- union of every journal*.jsonl of the directory.
--
--   local j = journal.create(dbdir, {id = "...", version =, database =, plan_hash =,
--                                    identity = {cann =, torch =, device =}, argv = {...}})
--   local j = journal.open(run_dir, shard)            -- shard: nil or {k = 2, n = 4}
--   j:plan(cases)      -- {{id =, op =, sig =, device =, shard =, index =}, ...}
--   j:mark(case_id, "done" | "failed" | "timeout", reason)
--   j:marks({{case =, status =, reason =}, ...}, batch)  -- one atomic append; done marks
--                                                         -- name the staged batch they used
--   j:event(kind, fields)                            -- writeback-begin, written, ...
--   local info = journal.read(run_dir)  -- info.cases[id], info.order, info.shards[k], info.totals
--   journal.list(dbdir)  -> runs newest first;  journal.resolve(dbdir, "last" | id) -> run dir
--   journal.shard_of(index, n) -> the shard (1-based) of the case at plan index (0-based)
-- Lines: {"ev":"plan","case":id,"op":,"sig":,"device":,"shard":,"index":}
--        {"ev":"done"|"failed"|"timeout","case":id,"reason":,"batch":,"t":}
--        {"ev":"writeback-begin"|"written"|...,"t":, ...}
-- A case's status: done when any done mark names it (done cases are never measured again),
-- else its latest failed / timeout mark, else left.
local perf = require "perfscript"
local lfs = require "lfs"
local cjson = require "cjson"
local paths = require "perfscript.path"

local M = {}

M.DIR = ".perfscript/runs"
M.STATUSES = { done = true, failed = true, timeout = true }

-- Seconds since the epoch (marks of one second keep the order of their lines).
local function now() return os.time() end

function M.runs_dir(dbdir)
  return paths.join(dbdir, M.DIR)
end

local function check_id(id)
  if type(id) ~= "string" or not id:match("^[%w][%w._-]*$") then
    error(("journal: bad run id %q (letters, digits, '.', '_' and '-')"):format(tostring(id)), 3)
  end
end

-- The shard (1-based) of the plan's case at index (0-based) among n shards (--shard K/N takes
-- index % N == K-1), whichever process journals the case.
function M.shard_of(index, n) return (index % n) + 1 end

-- The journal file of a shard ({k =, n =} or nil).
function M.file_of(run_dir, shard)
  if shard then return ("%s/journal-shard%d.jsonl"):format(run_dir, shard.k) end
  return run_dir .. "/journal.jsonl"
end

local J = {}
J.__index = J

local function append(path, lines)
  if #lines == 0 then return true end
  local ok, err = perf.fs.write_atomic(path, table.concat(lines, "\n") .. "\n", { append = true, if_changed = false })
  if not ok then return nil, err end
  return true
end

-- Reads run.json: the table, or nil, message.
function M.meta(run_dir)
  local text, err = paths.read(run_dir .. "/run.json")
  if not text then return nil, err end
  local ok, v = pcall(cjson.decode, text)
  if not ok or type(v) ~= "table" then
    return nil, ("%s/run.json:1: not a JSON object (%s)"):format(run_dir, tostring(v))
  end
  return v
end

-- Creates the run (meta.id, else a new id from meta.new_id) or, when run.json already exists
-- (another shard made it), joins it. Returns the journal handle (j.created: this call wrote
-- run.json) or nil, message.
function M.create(dbdir, meta, shard)
  if type(meta) ~= "table" or not meta.id then error("journal.create: meta.id is needed", 2) end
  check_id(meta.id)
  local dir = paths.join(M.runs_dir(dbdir), meta.id)
  local ok, err = perf.fs.mkdir_p(dir .. "/staged")
  if not ok then return nil, err end
  local created = false
  if not paths.isfile(dir .. "/run.json") then
    local m = {}
    for k, v in pairs(meta) do m[k] = v end
    m.created = m.created or os.date("!%Y-%m-%dT%H:%M:%SZ")
    m.created_epoch = m.created_epoch or os.time()
    ok, err = perf.fs.write_atomic(dir .. "/run.json", cjson.encode(m) .. "\n")
    if not ok then return nil, err end
    created = true
  end
  local j, jerr = M.open(dir, shard)
  if j then j.created = created end
  return j, jerr
end

-- Opens an existing run for appending (the shard's own file). Returns j or nil, message.
function M.open(run_dir, shard)
  local meta, err = M.meta(run_dir)
  if not meta then return nil, err end
  if shard ~= nil and (type(shard) ~= "table" or math.type(shard.k) ~= "integer" or math.type(shard.n) ~= "integer"
      or shard.k < 1 or shard.k > shard.n) then
    error("journal.open: shard must be {k =, n =} with 1 <= k <= n", 2)
  end
  return setmetatable({ dir = run_dir, id = meta.id, meta = meta, shard = shard,
    file = M.file_of(run_dir, shard) }, J)
end

-- Records the plan's cases (once per run and shard: a resumed run plans nothing again).
function J:plan(cases)
  local lines = {}
  for _, c in ipairs(cases) do
    lines[#lines + 1] = cjson.encode { ev = "plan", case = c.id, op = c.op, sig = c.sig, device = c.device,
      shard = c.shard, index = c.index }
  end
  return append(self.file, lines)
end

local function mark_line(case_id, status, reason, batch)
  if not M.STATUSES[status] then error(("journal: bad status %q (done, failed, timeout)"):format(tostring(status)), 3) end
  if type(case_id) ~= "string" then error("journal: the case id must be a string", 3) end
  return cjson.encode { ev = status, case = case_id, reason = reason, batch = batch, t = now() }
end

function J:mark(case_id, status, reason, batch)
  return append(self.file, { mark_line(case_id, status, reason, batch) })
end

-- Several marks in one atomic append (a batch's cases, after its results are staged).
function J:marks(list, batch)
  local lines = {}
  for _, m in ipairs(list) do lines[#lines + 1] = mark_line(m.case, m.status, m.reason, batch) end
  return append(self.file, lines)
end

function J:event(kind, fields)
  local o = { ev = kind, t = now(), pid = M.pid() }
  for k, v in pairs(fields or {}) do o[k] = v end
  return append(self.file, { cjson.encode(o) })
end

-- A run id two runs cannot share: local time plus the process id.
function M.new_id()
  return os.date("%Y%m%d_%H%M%S") .. "_" .. tostring(M.pid() or math.random(1, 999999))
end

function M.pid()
  local f = io.open("/proc/self/stat")
  local pid = f and f:read("n")
  if f then f:close() end
  return pid
end

-- The journal files of a run, sorted.
local function journal_files(run_dir)
  local out = {}
  if not paths.isdir(run_dir) then return out end
  for name in lfs.dir(run_dir) do
    if name:match("^journal.*%.jsonl$") and paths.isfile(run_dir .. "/" .. name) then out[#out + 1] = name end
  end
  table.sort(out)
  return out
end

local function counts() return { total = 0, done = 0, failed = 0, timeout = 0, left = 0 } end

-- The run: {meta =, dir =, cases = {[id] = {id=, op=, sig=, device=, shard=, index=, status=,
-- reason=, batch=}}, order = {ids by plan index}, shards = {[k] = counts}, totals = counts,
-- batches = {[batch] = true} (staged batches some done mark uses), events = {{ev =, ...}},
-- written = the number of finished write-backs}, or nil, "file:line: why".
function M.read(run_dir)
  local meta, err = M.meta(run_dir)
  if not meta then return nil, err end
  local info = { meta = meta, dir = run_dir, id = meta.id, cases = {}, order = {}, shards = {}, totals = counts(),
    batches = {}, events = {}, written = 0 }
  local marks = {}
  for _, name in ipairs(journal_files(run_dir)) do
    local path = run_dir .. "/" .. name
    local f, ferr = io.open(path, "rb")
    if not f then return nil, ferr end
    local n = 0
    for line in f:lines() do
      n = n + 1
      if line:match("%S") then
        local ok, o = pcall(cjson.decode, line)
        if not ok or type(o) ~= "table" or type(o.ev) ~= "string" then
          f:close()
          return nil, ("%s:%d: not a journal record (%s)"):format(path, n, ok and "no \"ev\" field" or tostring(o))
        end
        if o.ev == "plan" then
          if type(o.case) ~= "string" then f:close(); return nil, ("%s:%d: a plan record without a case id"):format(path, n) end
          if not info.cases[o.case] then
            info.cases[o.case] = { id = o.case, op = o.op, sig = o.sig, device = o.device, shard = o.shard,
              index = o.index }
            info.order[#info.order + 1] = o.case
          end
        elseif M.STATUSES[o.ev] then
          if type(o.case) ~= "string" then f:close(); return nil, ("%s:%d: a %s record without a case id"):format(path, n, o.ev) end
          marks[#marks + 1] = o
        else
          info.events[#info.events + 1] = o
          if o.ev == "written" then info.written = info.written + 1 end
        end
      end
    end
    f:close()
  end
  for _, m in ipairs(marks) do
    local c = info.cases[m.case]
    if c then
      if m.ev == "done" then
        if c.status ~= "done" then c.status, c.reason, c.batch, c.t = "done", nil, m.batch, m.t end
        if m.batch then info.batches[m.batch] = true end
      elseif c.status ~= "done" and (not c.t or (m.t or 0) >= c.t) then
        c.status, c.reason, c.t = m.ev, m.reason, m.t
      end
    end
  end
  table.sort(info.order, function(a, b)
    local x, y = info.cases[a].index or 0, info.cases[b].index or 0
    if x ~= y then return x < y end
    return a < b
  end)
  for _, id in ipairs(info.order) do
    local c = info.cases[id]
    local k = c.shard or 1
    local s = info.shards[k] or counts()
    info.shards[k] = s
    local st = c.status or "left"
    s.total, s[st] = s.total + 1, s[st] + 1
    info.totals.total, info.totals[st] = info.totals.total + 1, info.totals[st] + 1
  end
  return info
end

-- The runs of a database, newest first: {{id =, dir =, meta =}, ...} (unreadable ones carry
-- .error instead of .meta).
function M.list(dbdir)
  local root = M.runs_dir(dbdir)
  local out = {}
  if not paths.isdir(root) then return out end
  for name in lfs.dir(root) do
    local dir = root .. "/" .. name
    if name:sub(1, 1) ~= "." and paths.isdir(dir) then
      local meta, err = M.meta(dir)
      out[#out + 1] = { id = name, dir = dir, meta = meta, error = not meta and err or nil }
    end
  end
  table.sort(out, function(a, b)
    local x, y = a.meta and a.meta.created_epoch or 0, b.meta and b.meta.created_epoch or 0
    if x ~= y then return x > y end
    return a.id > b.id
  end)
  return out
end

-- The run directory of "last" (the newest run) or of an id; nil, message when there is none.
function M.resolve(dbdir, which)
  if which == "last" then
    for _, r in ipairs(M.list(dbdir)) do if r.meta then return r.dir, r.id end end
    return nil, ("%s: no run to resume (no %s/<id>/run.json)"):format(dbdir, M.DIR)
  end
  check_id(which)
  local dir = paths.join(M.runs_dir(dbdir), which)
  if not paths.isfile(dir .. "/run.json") then
    local ids = {}
    for i, r in ipairs(M.list(dbdir)) do if i <= 5 then ids[#ids + 1] = r.id end end
    return nil, ("%s: no run %s (no %s/run.json)%s"):format(dbdir, which, dir,
      #ids > 0 and ("; runs here, newest first: " .. table.concat(ids, ", ")) or "")
  end
  return dir, which
end

-- The summary lines of a run (journal.read's info): totals, then one line per shard.
function M.summary(info)
  local t = info.totals
  local lines = { ("[JOURNAL] run %s: %d case(s): %d done, %d failed, %d timed out, %d left%s"):format(info.id,
    t.total, t.done, t.failed, t.timeout, t.left,
    info.written > 0 and ("; written back " .. info.written .. " time(s)") or "; not written back yet") }
  local ks = {}
  for k in pairs(info.shards) do ks[#ks + 1] = k end
  table.sort(ks)
  if #ks > 1 then
    for _, k in ipairs(ks) do
      local s = info.shards[k]
      lines[#lines + 1] = ("[JOURNAL]   shard %d: %d case(s): %d done, %d failed, %d timed out, %d left"):format(k,
        s.total, s.done, s.failed, s.timeout, s.left)
    end
  end
  return lines
end

return M
