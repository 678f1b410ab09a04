-- The database explorer: perf.open(dir) (the REPL's `db` under `perfscript --db DIR`).
-- A version directory holds one CSV per kernel type. Each kernel is a field of the database
-- (db.MatMulV2, so tab completion finds it) and is loaded into a C table (perfscript.table)
-- on first use. Queries are methods of the database (kernel name first) and of each kernel;
-- they return results (perfscript.db.result) that print as aligned tables and save as CSV.
local perf = require "perfscript"
local T = require "perfscript.table"
local num = require "perfscript.num"
local lfs = require "lfs"
local R = require "perfscript.db.result"
local match = require "perfscript.db.match"

local M = {}

M.LATENCY = { "Average Duration(us)", "Profiling Average Duration(us)", "Duration(us)" }
M.IS, M.IDT, M.IF = "Input Shapes", "Input Data Types", "Input Formats"
M.OS, M.ODT, M.OF = "Output Shapes", "Output Data Types", "Output Formats"
-- runtime columns that are axes or exact fields of a query
M.EXTRAS = {
  { name = "seq", cols = { "Runtime avg_seq_len", "avg_seq_len" } },
  { name = "batch", cols = { "Runtime batch_size" } },
  { name = "ep", cols = { "EP Size" } },
  { name = "bytes", cols = { "message_bytes" } },
  { name = "devices", cols = { "num_devices" } },
  { name = "tier", cols = { "topology_tier" } },
}

-- One line per query for help() in the REPL.
M.help = {
  { "db:kernels()", "per kernel type: rows, rows with a valid latency, theory rows" },
  { "db:rows(k, filter)", "rows of kernel k; filter: {column = value, M = 128} or function(r)" },
  { "db:rows(k, {run = id})", "the rows a run wrote (also {source = \"simulated\"}); the provenance log's rows" },
  { "db:lookup(k, shapes, dtypes, {explain = true})", "the consumer's exact match; explain: each row's first failing input" },
  { "db:lookup(hcom_k, {bytes = b, devices = n})", "communication: exact, else the alpha-beta fit clamped to its bracket" },
  { "db:lookup(\"FusedInferAttentionScore\", {q = \"T,N,D\", seq = s})", "attention: runtime filters, nearest avg_seq_len within 16" },
  { "db:nearest(k, query, n)", "the n closest measured rows (log-space distance over the shape dims)" },
  { "db:coverage(k, axis, fixed)", "values measured along an axis (M, K, N, tokens, ...), gaps against the density standard" },
  { "db:interp(k, query)", "one-axis linear interpolation preview with its bracket (never extrapolates)" },
  { "db:accuracy(k, filter)", "leave-one-out: each measured signature predicted from the others as db:interp would; p50/p90/max error" },
  { "db:dups(k)", "rows the consumer cannot tell apart, and how it resolves them" },
  { "db:outliers(k)", "monotonicity breaks along an axis; microbench/profiling gaps outside [0.8, 1.2]" },
  { "db:lint([k])", "cells that crash or mislead the consumer (shapes, slots, dtypes, zero latencies, EP Size)" },
  { "db:diff(other, [k])", "the same signatures in another version directory: ratios and regressions" },
  { "db:mapping([op])", "op_mapping.yaml: the ops, or one op's kernels (CSV present, rows), mode and policies" },
  { "db:lookup(op, ...)", "a TC op (\"aten.mm.default\"): its mapped kernels in the consumer's order" },
  { "db.<Kernel>", "a kernel type (tab completes); the same queries without the kernel argument" },
}

local DB, Kernel = {}, {}
M.DB, M.Kernel = DB, Kernel
local DBmethods, Kmethods = {}, {}
DB.__index = DBmethods
Kernel.__index = Kmethods
M.DBmethods, M.Kmethods = DBmethods, Kmethods

local is_lfs_pointer = require("perfscript.csv").is_lfs_pointer

-- Opens a version directory. Returns the database, or nil and a message.
function M.open(dir, opts)
  if type(dir) ~= "string" then return nil, "open: the database directory must be a string" end
  dir = dir:gsub("/+$", "")
  if dir == "" then dir = "/" end
  local mode = lfs.attributes(dir, "mode")
  if mode ~= "directory" then return nil, dir .. ": not a directory" end
  local names, subdirs = {}, {}
  for name in lfs.dir(dir) do
    local path = dir .. "/" .. name
    if name:sub(-4) == ".csv" and lfs.attributes(path, "mode") == "file" then
      names[#names + 1] = name:sub(1, -5)
    elseif name ~= "." and name ~= ".." and lfs.attributes(path, "mode") == "directory" then
      subdirs[#subdirs + 1] = name
    end
  end
  -- communication kernels: the consumer reads hcom_* from op_mapping's communication_data_ref
  -- first (a CSV there shadows one of the same name here)
  local comm_dir, paths, shadowed = nil, {}, {}
  local ok, mapping = pcall(function()
    return require("perfscript.db.mapping").read(dir)
  end)
  local ref = ok and type(mapping) == "table" and mapping.communication_data_ref
  if type(ref) == "string" then
    comm_dir = ref:sub(1, 1) == "/" and ref or (dir .. "/" .. ref)
    comm_dir = comm_dir:gsub("/+$", "")
    if lfs.attributes(comm_dir, "mode") == "directory" then
      local have = {}
      for _, n in ipairs(names) do have[n] = true end
      for name in lfs.dir(comm_dir) do
        if name:match("^hcom_.*%.csv$") then
          local k = name:sub(1, -5)
          if have[k] then shadowed[#shadowed + 1] = k else names[#names + 1] = k end
          paths[k] = comm_dir .. "/" .. name
        end
      end
    end
  end
  table.sort(names)
  if #names == 0 then
    table.sort(subdirs)
    local hint = #subdirs > 0 and (" (directories in it: " .. table.concat(subdirs, ", ") ..
      "; a database is one version directory such as <root>/<DEVICE>/vllm_ascend/vllm<V>_torch<T>_cann<C>)") or ""
    return nil, dir .. ": no kernel CSV files" .. hint
  end
  local db = setmetatable({ _dir = dir, _names = names, _opts = opts or {}, _comm_dir = comm_dir,
                            _comm_ref = ref or nil, _shadowed = shadowed }, DB)
  if ok and type(mapping) == "table" then db._mapping = mapping end
  for _, name in ipairs(names) do
    local k = setmetatable({ name = name, path = paths[name] or (dir .. "/" .. name .. ".csv"), db = db, _ = {} }, Kernel)
    if DBmethods[name] == nil then rawset(db, name, k) end  -- else only db:kernel(name)
  end
  db._kernels = {}
  for _, name in ipairs(names) do db._kernels[name] = rawget(db, name) end
  return db
end

function DB:__tostring()
  return string.format("database %s (%d kernel types; db:kernels(), help())", self._dir, #self._names)
end

function DB:__help() return require("perfscript.db.help").summary(self) .. "\n  help() lists the queries; help(\"lookup\") shows examples" end
function Kernel:__help() return require("perfscript.db.help").kernel(self) end

function Kernel:__tostring()
  local s = self._
  if s.t then return string.format("kernel %s (%d rows)", self.name, #s.t) end
  return string.format("kernel %s (%s, not loaded yet)", self.name, self.path)
end

function DBmethods:dir() return self._dir end
function DBmethods:names() return table.move(self._names, 1, #self._names, 1, {}) end

-- The kernel object for a name; a user error naming the near misses when there is none.
function DBmethods:kernel(name)
  if getmetatable(name) == Kernel then return name end
  local k = self._kernels[name]
  if k then return k end
  if type(name) ~= "string" then perf.fail("expected a kernel name, got %s", type(name)) end
  local near = {}
  local lname = name:lower()
  for _, n in ipairs(self._names) do
    if n:lower():find(lname, 1, true) or lname:find(n:lower(), 1, true) then near[#near + 1] = n end
  end
  perf.fail("%s: no kernel type '%s'%s", self._dir, name,
            #near > 0 and (" (did you mean " .. table.concat(near, ", ", 1, math.min(#near, 5)) .. "?)") or "")
end

-- ---- per-kernel data ---------------------------------------------------------------------

function Kmethods:table()
  local s = self._
  if not s.t then
    if is_lfs_pointer(self.path) then
      perf.fail("%s: a Git LFS pointer, not data (run `git lfs pull` in the database's repository)", self.path)
    end
    local t, err = T.load(self.path)
    if not t then perf.fail("%s", err) end
    s.t = t
  end
  return s.t
end

function Kmethods:_has(col) return self:table():column(col) ~= nil end

-- Per row: the latency the consumer reads (first finite value > 0 along the column chain,
-- preferred column first) or false, and the column it came from.
function Kmethods:latencies()
  local s = self._
  if s.lat then return s.lat, s.latcol end
  local t = self:table()
  local cols, nums = {}, {}
  for _, c in ipairs(M.LATENCY) do
    if t:column(c) then cols[#cols + 1] = c; nums[#nums + 1] = t:nums(c) end
  end
  local lat, src = {}, {}
  local n = #t
  for i = 1, n do
    lat[i], src[i] = false, false
    for j = 1, #cols do
      local v = nums[j][i]
      if v and perf.num.is_duration(v) then lat[i], src[i] = v, cols[j]; break end
    end
  end
  s.lat, s.latcol, s.latcols = lat, src, cols
  return lat, src
end

-- The latency of one row without scanning the table (what a lookup needs).
function Kmethods:latency(i)
  local s = self._
  if s.lat then return s.lat[i], s.latcol[i] end
  local t = self:table()
  if not s.latcols then
    s.latcols, s.latidx = {}, {}
    for _, c in ipairs(M.LATENCY) do
      local j = t:column(c)
      if j then s.latcols[#s.latcols + 1] = c; s.latidx[#s.latidx + 1] = j end
    end
  end
  for j, c in ipairs(s.latidx) do
    local v = t:num(i, c)
    if v and perf.num.is_duration(v) then return v, s.latcols[j] end
  end
  return false, false
end

-- latency_policy.kernel_overrides.<kernel> of the directory's op_mapping.yaml, or {}.
function Kmethods:_latency_policy()
  local s = self._
  if s.lpol == nil then
    local ok, doc = pcall(require("perfscript.db.mapping").load, self.db)
    local lp = ok and doc and type(doc.latency_policy) == "table" and doc.latency_policy.kernel_overrides
    s.lpol = type(lp) == "table" and type(lp[self.name]) == "table" and lp[self.name] or {}
  end
  return s.lpol
end

-- query_selection_policy ... require_semantic_unique of the mapping; without a mapping that
-- has the policy, the v0.18 list.
function Kmethods:_semantic_unique()
  local s = self._
  if s.sunique == nil then s.sunique = self:_semantic_unique_policy() end  -- fixed, as the mapping is
  return s.sunique
end

function Kmethods:_semantic_unique_policy()
  local ok, doc = pcall(require("perfscript.db.mapping").load, self.db)
  local qs = ok and doc and type(doc.query_selection_policy) == "table" and doc.query_selection_policy.kernel_overrides
  if type(qs) == "table" then
    return type(qs[self.name]) == "table" and qs[self.name].require_semantic_unique == true
  end
  return match.SEMANTIC_UNIQUE[self.name] or false
end

function Kmethods:preferred_latency()
  self:latencies()
  return self._.latcols[1] or "Duration(us)"
end

local function need(self, col)
  if not self:_has(col) then perf.fail("%s: no '%s' column", self.path, col) end
end

-- The index the lookup uses: input shapes as the consumer compares them (FRACTAL_NZ restored,
-- one leading 1 stripped, first n slots) and input dtypes.
function Kmethods:_lookup_index(n)
  local s = self._
  s.lix = s.lix or {}
  n = n or 0
  if not s.lix[n] then
    local t = self:table()
    need(self, M.IS)
    local comps = { { col = M.IS, kind = "shapes", formats = t:column(M.IF) and M.IF or nil, strip1 = true, n = n } }
    if t:column(M.IDT) then
      comps[2] = { col = M.IDT, kind = "list", float_group = match.FLOAT_GROUP[self.name] or nil, n = n }
    end
    -- the query side of the components (no formats: a query's shapes are as given)
    -- the slot index of the same input slots comes from the same parse of every row
    local ix, sx = t:index(comps, true)
    s.slotix = s.slotix or {}
    s.slotix[n] = s.slotix[n] or sx
    s.lix[n] = { ix = ix, comps = comps,
                 shape_comp = { kind = "shapes", strip1 = true, n = n },
                 dtype_comp = comps[2] and { kind = "list", float_group = comps[2].float_group, n = n } }
  end
  return s.lix[n]
end

-- The rows by the shape of each input slot (FRACTAL_NZ restored, first n slots): the C slot
-- index of the lookup's slot search (perfscript.table's t:slot_index).
function Kmethods:_slot_index(n)
  local s = self._
  s.slotix = s.slotix or {}
  if not s.slotix[n] and self:_has(M.IS) then self:_lookup_index(n) end  -- made with it
  if not s.slotix[n] then
    local t = self:table()
    s.slotix[n] = t:slot_index(n, t:column(M.IS), t:column(M.IF) or false)
  end
  return s.slotix[n]
end

-- Input shapes (FRACTAL_NZ restored, as the consumer compares them) and dtypes of row i.
function Kmethods:_inputs(i)
  local t = self:table()
  local s = self._
  if s.cIS == nil then
    s.cIS, s.cIF, s.cIDT = t:column(M.IS) or false, t:column(M.IF) or false, t:column(M.IDT) or false
  end
  if s.cIS then
    -- t:shapes(cell, formats cell) and match.list(dtypes cell) in one call
    return t:inputs(i, s.cIS, s.cIF, s.cIDT)
  end
  local shapes, err = t:shapes(t:cell(i, s.cIS), s.cIF and t:cell(i, s.cIF) or nil)
  if not shapes then return nil, err end
  return shapes, s.cIDT and match.list(t:cell(i, s.cIDT)) or {}
end

-- The consumer's names of a dtypes text (match.dtype of each part): the same from query to
-- query, so remembered per kernel (bounded). Shared: read only.
function Kmethods:_dtype_names(dtypes)
  local s = self._
  local names = s.qdt and s.qdt[dtypes]
  if not names then
    names = {}
    for i, d in ipairs(match.list(dtypes)) do names[i] = match.dtype(d) end
    if not s.qdt or s.nqdt >= 256 then s.qdt, s.nqdt = {}, 0 end
    s.qdt[dtypes], s.nqdt = names, s.nqdt + 1
  end
  return names
end

-- A query: shapes as "a,b;c", {{a, b}, {c}} or {shapes = ..., dtypes = ..., seq = ...};
-- dtypes as "DT_BF16;DT_BF16", {"bfloat16", ...} or one name for every input.
-- formats ("ND;FRACTAL_NZ", or a list): the query is in a row's own terms, so its FRACTAL_NZ
-- slots are restored as the row's are (a row's own cells then find it; docs/rules.md, Lookups).
-- A record of db:rows() (its "Input Shapes" and neighbours) is a query in a row's terms too.
function Kmethods:_query(shapes, dtypes, formats)
  local q = { shapes = nil, formats = nil, dtypes = nil }  -- sized for them (no rehash)
  if type(shapes) == "table" and shapes.shapes == nil and type(shapes[M.IS]) == "string" then
    shapes = { shapes = shapes[M.IS], dtypes = shapes[M.IDT], formats = shapes[M.IF] }
  end
  if type(shapes) == "table" and shapes.shapes then
    for k, v in pairs(shapes) do q[k] = v end
    dtypes = dtypes or shapes.dtypes
    formats = formats or shapes.formats
    shapes = shapes.shapes
  end
  if type(formats) == "table" then formats = table.concat(formats, ";") end
  if formats ~= nil and type(formats) ~= "string" then perf.fail("query formats: expected a string like \"ND;FRACTAL_NZ\"") end
  if type(shapes) == "table" and formats then shapes = match.shapes_text(self:_query(shapes).shapes) end
  if type(shapes) == "string" then
    local parsed, err = self:table():shapes(shapes, formats)
    if not parsed then perf.fail("query shapes '%s': %s", shapes, err) end
    q.shapes = parsed
    q.formats = formats
  elseif type(shapes) == "table" then
    q.shapes = {}
    for i, s in ipairs(shapes) do
      if type(s) == "number" then perf.fail("query shapes: give a list of shapes, e.g. {{128, 4096}, {4096, 4096}}") end
      local dims = {}
      for j, d in ipairs(s) do dims[j] = math.tointeger(d) or perf.fail("query shapes: dimension %s is not an integer", tostring(d)) end
      q.shapes[i] = #dims == 0 and { scalar = true } or dims
    end
  else
    perf.fail("query shapes: expected a string like \"128,4096;4096,4096\" or a table of shapes")
  end
  if dtypes ~= nil then
    local out = {}
    if type(dtypes) == "string" then
      local names = self:_dtype_names(dtypes)  -- q gets its own copy
      table.move(names, 1, #names, 1, out)
    else
      local list = type(dtypes) == "table" and dtypes or match.list(dtypes)
      for i, d in ipairs(list) do out[i] = match.dtype(d) end
    end
    if #out == 1 and #q.shapes > 1 then for i = 2, #q.shapes do out[i] = out[1] end end
    q.dtypes = out
  else
    q.dtypes = nil
  end
  return q
end

local function shapes_label(shapes)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = match.format_shape(s) end
  return table.concat(parts, "x")
end
M.shapes_label = shapes_label

-- ---- kernels ----------------------------------------------------------------------------

function DBmethods:kernels()
  local res = R.new("kernel types in " .. self._dir,
                    { "kernel", "rows", "valid", "theory", "latency column", "KB" })
  local tot = { 0, 0, 0 }
  for _, name in ipairs(self._names) do
    local k = self._kernels[name]
    local rec = { kernel = name, KB = ((lfs.attributes(k.path, "size") or 0) + 512) // 1024 }
    local ok, err = pcall(function()
      local lat = k:latencies()
      local valid = 0
      for i = 1, #lat do if lat[i] then valid = valid + 1 end end
      rec.rows, rec.valid, rec.theory = #lat, valid, #lat - valid
      rec["latency column"] = k._.latcols[1] or "(none)"
    end)
    if not ok then
      rec["latency column"] = "unreadable: " .. tostring(perf.is_user_error(err) and err.message or err)
    else
      tot[1], tot[2], tot[3] = tot[1] + rec.rows, tot[2] + rec.valid, tot[3] + rec.theory
    end
    res[#res + 1] = rec
  end
  res:note("%d kernel types, %d rows, %d with a valid latency, %d without (theory or not yet measured)",
           #self._names, tot[1], tot[2], tot[3])
  return res
end

-- ---- rows -------------------------------------------------------------------------------

local ROW_COLS = { "line", M.IS, M.IDT, M.OS, "latency(us)", "column" }

-- lat, src: the row's latency and column when the caller has them (self:latency(i)).
function Kmethods:_row_record(i, lat, src)
  local t = self:table()
  if lat == nil then lat, src = self:latency(i) end
  -- sized for every field a lookup's record gets (row, line, latency(us), column, the four
  -- cells, rule, input rules: no rehash as they come)
  local r = T.new_table(0, 10)
  r.row, r.line = i, t:line(i)
  if lat then r["latency(us)"] = lat end
  if src then r.column = src end
  local s = self._
  if not s.show then
    -- the cells shown, then Input Formats: not shown, but a record is a query in the row's own
    -- terms (db:lookup(k, record)); their columns, false where the table has none
    s.show = { t:column(M.IS) or false, t:column(M.IDT) or false, t:column(M.OS) or false, t:column(M.IF) or false }
  end
  local show = s.show
  return t:unquoted_into(r, i, M.IS, show[1], M.IDT, show[2], M.OS, show[3], M.IF, show[4])
end

-- A row as a filter sees it: parsed shapes, dtypes, latency, and any cell by name.
function Kmethods:_row_view(i)
  local t = self:table()
  local lat, src = self:latency(i)
  local inputs, dtypes = self:_inputs(i)
  local outputs
  if t:column(M.OS) then
    local key = t:key({ kind = "shapes" }, t:cell(i, M.OS))
    outputs = key and match.parse(key) or nil
  end
  return setmetatable({ row = i, line = t:line(i), inputs = inputs, dtypes = dtypes, outputs = outputs,
                        latency = lat or nil, column = src or nil,
                        cell = function(_, name) return t:cell(i, name) end },
                      { __index = function(_, name) local c = t:column(name); return c and t:cell(i, c) or nil end })
end

-- ---- provenance (perfscript.microbench.provenance: who wrote each row) ----------------------

-- The database's provenance index (loaded once), or false when it has no log.
function DBmethods:_provenance()
  if self._prov == nil then
    local idx, err = require("perfscript.microbench.provenance").index(self._dir)
    if not idx and err then perf.fail("%s", err) end
    self._prov = idx or false
  end
  return self._prov
end

-- The provenance entry of row i (the latest run that wrote its values), or nil.
function Kmethods:provenance_of(i)
  local idx = self.db:_provenance()
  if not idx or not idx[self.name] then return nil end
  local t = self:table()
  local prov = require "perfscript.microbench.provenance"
  return prov.of(idx, self.name, prov.sig_row(function(c) return t:column(c) and t:cell(i, c) or nil end))
end

function Kmethods:rows(filter)
  local t = self:table()
  local n = #t
  local keep
  local errors, first_error = 0, nil
  if filter == nil then
    keep = function() return true end
  elseif type(filter) == "function" then
    -- a predicate that fails on a row (r.inputs[2] of a one-input row) rejects that row; the
    -- result says how many did and why, so a typo does not pass for an empty answer
    keep = function(i)
      local ok, v = pcall(filter, self:_row_view(i))
      if not ok then
        errors = errors + 1
        first_error = first_error or v
      end
      return ok and v
    end
  elseif type(filter) == "table" then
    local checks = {}
    local analysis = require "perfscript.db.analysis"
    for k, v in pairs(filter) do
      local c = t:column(k)
      if c then
        if k == M.IS or k == M.OS then
          local want = t:key({ kind = "shapes" }, tostring(v))
          local cache = {}
          checks[#checks + 1] = function(i)
            local cell = t:cell(i, c)
            if cache[cell] == nil then cache[cell] = t:key({ kind = "shapes" }, cell) == want end
            return cache[cell]
          end
        elseif k == M.IDT or k == M.ODT or k == M.IF or k == M.OF then
          local want = t:key({ kind = "list" }, tostring(v))
          checks[#checks + 1] = function(i) return t:key({ kind = "list" }, t:cell(i, c)) == want end
        else
          local want = tostring(v):gsub("^%s+", ""):gsub("%s+$", "")
          local wnum = num.finite(want)
          checks[#checks + 1] = function(i)
            local cell = t:cell(i, c)
            return cell == want or (wnum ~= nil and num.finite(cell) == wnum)
          end
        end
      elseif k == "run" or k == "source" then
        -- the provenance log's run id, or its source (measured, simulated, imported)
        if not self.db:_provenance() then
          perf.fail("rows: {%s = ...}: %s has no provenance log (.perfscript/provenance.jsonl)", k, self.db._dir)
        end
        local want = tostring(v)
        checks[#checks + 1] = function(i)
          local e = self:provenance_of(i)
          return e ~= nil and tostring(e[k]) == want
        end
      elseif analysis.is_axis(self, k) then
        checks[#checks + 1] = function(i) return analysis.row_axis(self, i, k) == v end
      else
        perf.fail("rows: '%s' is neither a column of %s nor an axis (%s)", k, self.name,
                  table.concat(analysis.axes(self), ", "))
      end
    end
    keep = function(i)
      for _, f in ipairs(checks) do if not f(i) then return false end end
      return true
    end
  else
    perf.fail("rows: filter must be a table of column values or a function")
  end
  local prov = self.db:_provenance() and true or false
  local cols = ROW_COLS
  if prov then
    cols = {}
    for _, c in ipairs(ROW_COLS) do cols[#cols + 1] = c end
    cols[#cols + 1] = "provenance"
  end
  local res = R.new(nil, cols)
  if prov then res.widths = { provenance = 160 } end
  local label = prov and require("perfscript.microbench.provenance").label
  for i = 1, n do
    if keep(i) then
      local r = self:_row_record(i)
      if prov then r.provenance = label(self:provenance_of(i)) end
      res[#res + 1] = r
    end
  end
  res.title = string.format("%s: %d of %d rows", self.name, #res, n)
  if errors > 0 then
    res:note("the filter raised an error on %d rows (taken as false); the first: %s", errors, tostring(first_error))
  end
  return res
end

-- ---- lookup -----------------------------------------------------------------------------

local function score_less(a, b)
  if a.distance ~= b.distance then return a.distance < b.distance end
  if a.pri ~= b.pri then return a.pri < b.pri end
  return a.row < b.row
end

-- The index keys of a query: dkey (its dtypes' key, or nil) and the keys of its shape
-- variants that have one, in variant order; what t:key(shape_comp, match.shapes_text(v)) and
-- t:key(dtype_comp, table.concat(q.dtypes, ";")) give. Shape keys are rendered by
-- t:shapes_key straight from the parsed shapes (the text path for unusual ones); dtype keys
-- repeat from query to query, so they are remembered per lookup index (bounded).
local DKEY_MAX = 1024
local miss_reason, nz_written
local function query_keys(self, L, n, q)
  local t = self:table()
  local keys = {}
  if q.dtypes and L.comps[2] then
    local text = table.concat(q.dtypes, ";")
    local dk = L.dkeys and L.dkeys[text]
    if dk == nil then
      dk = t:key(L.dtype_comp, text) or false
      if not L.dkeys or L.ndkeys >= DKEY_MAX then L.dkeys, L.ndkeys = {}, 0 end
      L.dkeys[text], L.ndkeys = dk, L.ndkeys + 1
    end
    keys.dkey = dk or nil
  end
  for _, v in ipairs(match.variants(self.name, q.shapes)) do
    local skey = t:shapes_key(v, n)
    if skey == false then skey = t:key(L.shape_comp, match.shapes_text(v)) end
    if skey then keys[#keys + 1] = skey end
  end
  return keys
end

-- Latency column priorities of a kernel (lower wins a tie) and its latency_policy: fixed once
-- the table is loaded (the latency columns and the mapping do not change), so made once.
local function latency_priorities(self)
  local s = self._
  local lpol = self:_latency_policy()
  if not s.lpri then
    self:latency(1)
    local pri = {}
    for j, c in ipairs(s.latcols) do pri[c] = j end
    -- latency_policy of op_mapping.yaml (v0.18): profiling rows first in ties
    if lpol.prefer_profiling_rows then
      pri["Profiling Average Duration(us)"], pri["Average Duration(us)"] = 0, 1
    end
    s.lpri = pri
  end
  return s.lpri, lpol
end

-- One compute lookup's scan state: the query, the rows checked (tried: row -> {ok, reason,
-- rule, ...}), their latency and its column (lat, src), the matching rows (cands).
local function new_scan(self, q, n, opts, pri, moe, ep)
  local s = self._
  s.inmemo = s.inmemo or {}
  s.inmemo[n] = s.inmemo[n] or {}
  return { k = self, t = self:table(), q = q, n = n, opts = opts, pri = pri, moe = moe, ep = ep,
           epcol = moe and self:table():column("EP Size"), inmemo = s.inmemo[n],
           lat = {}, src = {}, tried = {}, cands = {} }
end

-- The row's parsed inputs, truncated to n: made once per kernel and n (a lint asks every
-- row's own query, each scanning the rows before it).
local function scan_inputs(S, i)
  local memo = S.inmemo[i]
  if memo == nil then
    local shapes_i, dtypes_i = S.k:_inputs(i)
    local n = S.n
    if shapes_i and n > 0 then
      for j = n + 1, #shapes_i do shapes_i[j] = nil end
      for j = n + 1, #dtypes_i do dtypes_i[j] = nil end
    end
    memo = { shapes_i, dtypes_i }
    S.inmemo[i] = memo
  end
  return memo[1], memo[2]
end

-- explain: a failing input the row stores as FRACTAL_NZ says how it was written, so that a
-- restored shape such as (512,917504) is not a surprise ("input 2: ... (the row writes
-- (32,7168,128,16) FRACTAL_NZ, restored as the consumer does)").
function nz_written(S, i, why)
  local j = tonumber(why:match("^input (%d+):"))
  local t = S.t
  local cf = j and t:column(M.IF)
  if not cf then return why end
  local fm = match.list(t:cell(i, cf))
  if fm[j] ~= "FRACTAL_NZ" then return why end
  local raw = t:shapes(t:cell(i, M.IS))
  if not raw or not raw[j] then return why end
  return string.format("%s (the row writes %s FRACTAL_NZ, restored as the consumer does; a query in the row's terms " ..
                       "passes formats)", why, match.format_shape(raw[j]))
end

-- Checks row i against the query once: its verdict (a match joins S.cands).
local function scan_row(S, i)
  local tried = S.tried
  if tried[i] then return tried[i] end
  local res
  local t = S.t
  local li, ci = S.k:latency(i)
  S.lat[i], S.src[i] = li, ci
  if not li then
    res = { reason = "no valid latency (skipped by the consumer)" }
  elseif S.moe and math.tointeger(num.finite(t:cell(i, S.epcol))) ~= S.ep then
    res = { reason = "EP Size " .. (t:cell(i, S.epcol) == "" and "blank" or t:cell(i, S.epcol)) .. ", query ep " .. S.ep }
  else
    local shapes_i, dtypes_i = scan_inputs(S, i)
    if not shapes_i then
      res = { reason = "malformed Input Shapes: " .. dtypes_i .. " (the consumer would crash)" }
    else
      local m, why = match.row(S.k.name, S.q, shapes_i, dtypes_i, not S.opts.explain)
      if m then
        res = { ok = true, rule = m.rule, rules = m.rules, distance = m.distance, row = i,
                pri = S.pri[ci] or 9 }
      else
        res = { reason = S.opts.explain and nz_written(S, i, why) or why }
      end
    end
  end
  tried[i] = res
  if res.ok then S.cands[#S.cands + 1] = res end
  return res
end

-- The rows that can win beyond the key matches (bounded by `upto`), and whether the slot
-- index finds them. With two inputs or more a padded input followed by a transpose or a batch
-- strip reports distance 0 (match.fold); a MoE lookup takes the first matching row, padded or
-- not. Only rows before best_d0 can win when its latency column has the best priority.
local function scan_bound(S, best_d0, dkey)
  local name, opts = S.k.name, S.opts
  local s = S.k._
  local minpri = s.minpri
  if not minpri then  -- S.pri is the kernel's fixed latency_priorities
    minpri = math.huge
    for _, v in pairs(S.pri) do minpri = math.min(minpri, v) end
    s.minpri = minpri
  end
  local special = match.ROPE[name] or match.SWIGLU[name] or match.RESHAPE_AND_CACHE[name]
  if best_d0 and not opts.explain and dkey then
    if S.moe then return best_d0.row, false end
    if #S.q.shapes < 2 then return 0, false end
    return best_d0.pri <= minpri and best_d0.row or math.huge, not special
  end
  return math.huge, false
end

-- A distance-0 row the keys missed has an input matched by a rule that keeps its size (batch
-- strip, transpose, flatten, ...): one of its slots has a key of the query's slot variants, so
-- only the rows the slot index gives for those need a check.
local function scan_slots(S, upto)
  local name, t = S.k.name, S.t
  local pairs_ = {}
  for j, tc in ipairs(S.q.shapes) do
    for _, v in ipairs(match.slot_variants(name, j, tc)) do
      pairs_[#pairs_ + 1] = j
      pairs_[#pairs_ + 1] = v
    end
  end
  if #pairs_ == 0 then return end
  -- the C search drops the rows match.row would refuse (a kernel without a query rewrite:
  -- scan_bound's by_slots); scan_row still checks the others
  if upto > #t then upto = #t + 1 end
  local rows = S.k:_slot_index(S.n):rows(pairs_, upto, S.q.shapes, S.q.dtypes, match.kind(name),
                                         match.FLOAT_GROUP[name] or false, t:column(M.IDT) or false)
  for _, i in ipairs(rows) do scan_row(S, i) end
end

-- Every row before `upto`, group by group in order of their first row, then the rows the
-- index skipped. Rows of a group share the key, not the verdict: the first may have no valid
-- latency or another EP Size, or differ from the others by the leading 1 the key strips (which
-- padding, 1 -> 16, and the transposes see), so each row is checked.
local function scan_groups(S, ix, upto)
  for g = 1, ix:ngroups() do
    local size, first = ix:group(g)
    if first >= upto then break end
    if size == 1 then
      scan_row(S, first)
    else
      for _, i in ipairs(ix:rows(g)) do scan_row(S, i) end
    end
  end
  for _, i in ipairs(ix:skipped()) do scan_row(S, i) end
end

-- Fills S.cands: rows whose key equals a query variant's key first (the keys depend only on
-- the query text, so they are remembered per query text), then the rows that may still win.
local function scan(self, S)
  local L = self:_lookup_index(S.n)
  local ix = L.ix
  local keys = query_keys(self, L, S.n, S.q)
  local dkey = keys.dkey
  if dkey or not L.comps[2] then
    -- the rows of every variant's key in turn (ix:find(skey, dkey) or ix:find(skey) each)
    local rows = ix:find_keys(keys, dkey)
    for j = 1, #rows do scan_row(S, rows[j]) end
  end
  local best_d0
  for _, c in ipairs(S.cands) do
    if c.distance == 0 and (not best_d0 or score_less(c, best_d0)) then best_d0 = c end
  end
  local upto, by_slots = scan_bound(S, best_d0, dkey)
  if by_slots then
    scan_slots(S, upto)
  elseif upto > 0 then
    scan_groups(S, ix, upto)
  end
end

-- latency_policy's core-envelope substitution for scheduling outliers: a MIX_AIC profiling
-- row whose duration exceeds its core time by more than the ratio answers with the core time.
local function core_envelope(t, res, row, lpol)
  local env = lpol.profiling_core_envelope_fallback
  if type(env) == "table" and res.column == "Profiling Average Duration(us)" and t:column("Accelerator Core") and
     t:cell(row, "Accelerator Core") == "MIX_AIC" then
    local core = math.max(t:column("Profiling Average aicore_time(us)") and t:num(row, "Profiling Average aicore_time(us)") or 0,
                          t:column("Profiling Average aiv_time(us)") and t:num(row, "Profiling Average aiv_time(us)") or 0)
    local ratio = tonumber(env.max_duration_to_core_ratio) or 1.5
    if core > 0 and res.latency / core > ratio then
      res:note("profiling_core_envelope_fallback: %s us / max(aicore, aiv) %s us > %s, latency is the core time",
               R.fmt(res.latency), R.fmt(core), ratio)
      res.latency, res.latency_selection = core, "profiling_core_envelope_fallback"
    end
  end
end

-- The answer of a measured best row: its latency (the core envelope may replace it), the
-- fields and the title.
local function measured_fields(t, res, row, rule, rules, lat, col, lpol)
  res.latency, res.row, res.line = lat, row, t:line(row)
  res.column, res.rule, res.rules, res.source = col, rule, rules, "MEASURED"
  res.confidence = 1.0
  core_envelope(t, res, row, lpol)
end

local function measured_title(name, qlabel, lat, line, col, rule, padded)
  return string.format("lookup %s %s: MEASURED %s us from line %d (%s, rule %s%s)", name, qlabel,
                       R.fmt(lat), line, col, rule, padded and ", padded" or "")
end

local function measured(self, res, best, lat, col, qlabel, lpol)
  measured_fields(self:table(), res, best.row, best.rule, best.rules, lat, col, lpol)
  return measured_title(self.name, qlabel, res.latency, res.line, res.column, res.rule, best.distance > 0)
end

-- A query's label in titles: its shapes as the table writes them, then its dtypes.
local function query_label(t, q)
  return (t:shapes_label(q.shapes) or shapes_label(q.shapes)) .. (q.dtypes and (" " .. table.concat(q.dtypes, ";")) or "")
end

-- The note on the equally good rows the first in file order beat: n of them, rows the first
-- (at least 10) in file order.
local function ties_note(t, res, rows, n)
  if n == 0 then return end
  local lines = {}
  for j = 1, math.min(n, 10) do lines[j] = tostring(t:line(rows[j])) end
  res:note("%d equally good rows after the chosen one (lines %s%s): the first in file order wins",
           n, table.concat(lines, ", "), n > 10 and ", ..." or "")
end

-- The verdict for the best candidate: its latency (or the semantic-unique miss when equally
-- good rows disagree), the title, and a note on the ties the first row in file order beat.
local function choose(self, S, res, best, qlabel, lpol)
  local t, lat = S.t, S.lat
  local ties = {}
  for _, c in ipairs(S.cands) do
    if c ~= best and c.distance == best.distance and c.pri == best.pri then ties[#ties + 1] = c.row end
  end
  local ambiguous = false
  if self:_semantic_unique() then
    for _, r in ipairs(ties) do
      if string.format("%.12f", lat[r]) ~= string.format("%.12f", lat[best.row]) then ambiguous = true end
    end
  end
  local title
  if ambiguous then
    res.miss = "ambiguous_semantic_match:" .. self.name
    title = string.format("lookup %s %s: MISS %s", self.name, qlabel, res.miss)
  else
    title = measured(self, res, best, lat[best.row], S.src[best.row], qlabel, lpol)
  end
  ties_note(t, res, ties, #ties)
  return title
end

-- The cell widths and columns of a lookup's answer (read only; shared by the C path's answers).
local LOOKUP_WIDTHS = { ["rule or first failure"] = 200 }
local LOOKUP_COLUMNS = { "line", M.IS, M.IDT, "latency(us)", "column", "rule", "input rules" }

-- Where an answer's value came from, when the database has a provenance log: a column, and a
-- simulated value says SIMULATED in the title first (never MEASURED).

local function with_provenance(k, res, row)
  local db = k.db
  local prov = db._prov  -- db:_provenance() once it is known
  if prov == nil then prov = db:_provenance() end
  if not prov then return end
  local e = k:provenance_of(row)
  res[1].provenance = require("perfscript.microbench.provenance").label(e)
  res[1].provenance_entry = e
  local columns = table.move(res.columns, 1, #res.columns, 1, {})  -- its own (they may be shared)
  columns[#columns + 1] = "provenance"
  res.columns = columns
  local widths = { provenance = 160 }  -- its own (the C path's answers share LOOKUP_WIDTHS)
  for c, w in pairs(res.widths or {}) do widths[c] = w end
  res.widths = widths
  if e and e.source == "simulated" then
    res.title = res.title:gsub(": MEASURED ", ": SIMULATED ", 1)
    res:note("the answer is SIMULATED (run %s: a roofline model), not a measurement", tostring(e.run))
  end
end

-- The exact match in C (perfscript.table's ix:exact, src/store/exact.c) for the lookups it
-- answers as the scan would: no explain, no MoE, a kernel without a query rewrite whose ties
-- need no agreement. Returns the best row, its distance, rule and input rules, its latency
-- and column, and the ties (the first 10 rows, their count); or nil (then the Lua scan
-- answers).
-- shapes, dtypes: the query's (q.shapes, q.dtypes), or its shapes text and dtype names as
-- given (ix:exact parses the text as Kmethods:_query would; nil when it refuses it).
local function exact_in_c(self, shapes, dtypes, n, pri)
  local s = self._
  -- a prepared index with its slot index (every lookup after the first): straight to the match
  local L = s.cexact and dtypes and s.lix and s.lix[n]
  if L and L.sx and type(shapes) == "string" then
    local row, distance, rule, rules, lat, latpos, nties, ties, joined, line = L.ix:exact(L.sx, shapes, dtypes, L.kind, L.fg)
    if not row then return nil end
    return row, distance, rule, rules, lat, s.latcols[latpos], ties, nties, joined, line
  end
  local name = self.name
  if s.cexact == nil then
    s.cexact = not (match.ROPE[name] or match.SWIGLU[name] or match.RESHAPE_AND_CACHE[name] or self:_semantic_unique())
  end
  if not s.cexact or not dtypes then return nil end
  L = self:_lookup_index(n)
  if not L.prepared then
    local t = self:table()
    local cols, pris, minpri = {}, {}, math.huge
    for j, c in ipairs(s.latcols) do cols[j], pris[j] = t:column(c), pri[c] or 9 end
    for _, v in pairs(pri) do minpri = math.min(minpri, v) end
    if #cols > 8 or minpri == math.huge then return nil end
    L.ix:prepare(t:column(M.IS), t:column(M.IF) or false, t:column(M.IDT) or false, n, cols, pris, minpri)
    L.prepared, L.kind, L.fg = true, match.kind(name), match.FLOAT_GROUP[name] or false
  end
  local sx = false
  if type(shapes) == "string" or #shapes >= 2 then
    sx = L.sx
    if not sx then sx = self:_slot_index(n); L.sx = sx end
  end
  local row, distance, rule, rules, lat, latpos, nties, ties, joined, line = L.ix:exact(sx, shapes, dtypes, L.kind, L.fg)
  if not row then return nil end
  return row, distance, rule, rules, lat, s.latcols[latpos], ties, nties, joined, line
end

-- explain: every row tried with its verdict, and a count of the failures by kind.
local function explain_rows(S, res, best)
  local t, tried = S.t, S.tried
  local rows = {}
  for i in pairs(tried) do rows[#rows + 1] = i end
  table.sort(rows)
  local reasons = {}
  for _, i in ipairs(rows) do
    local r = tried[i]
    res[#res + 1] = { line = t:line(i), row = i,
                      result = (best and r == best and not res.miss) and "CHOSEN" or (r.ok and "match" or "no"),
                      ["rule or first failure"] = r.ok and (r.rule .. " (" .. table.concat(r.rules, ",") .. ")") or r.reason,
                      ["latency(us)"] = S.lat[i] or nil, column = S.src[i] or nil }
    if not r.ok then
      local kind = r.reason:gsub("^input %d+: ", "input: "):gsub(" vs row .*", ""):gsub("shape %b()", "shape")
      kind = kind:gsub("dtype %S+, row has %S+", "dtype differs"):gsub("input count: .*", "input count differs")
      reasons[kind] = (reasons[kind] or 0) + 1
    end
  end
  local summary = {}
  for k, v in pairs(reasons) do summary[#summary + 1] = string.format("%s: %d", k, v) end
  table.sort(summary)
  res:note("%d rows tried, %d match; failures: %s", #rows, #S.cands,
           #summary > 0 and table.concat(summary, "; ") or "none")
  if not S.q.dtypes then res:note("no dtypes given: dtypes were not compared") end
end

-- Why a compute lookup found nothing, naming what excluded the rows: the rows whose inputs
-- match but that have no valid latency (theory rows), another EP Size or other dtypes; else
-- the shape mismatch, with the FRACTAL_NZ hint when a query slot is a row's tile layout.
-- Scans every row (a miss is rare and this is what a user reads).
function miss_reason(self, S)
  local t, q, name = S.t, S.q, self.name
  local nolat, ep, dt, nz, nrows = 0, {}, {}, nil, #t
  local qnodt = { shapes = q.shapes }
  local counts, qcount = {}, nil  -- rows by their input count, the query's after the rewrite
  for i = 1, nrows do
    local shapes_i, dtypes_i = scan_inputs(S, i)
    if shapes_i then
      local nq = #match.normalize(name, qnodt, #shapes_i).shapes
      if nq ~= #shapes_i then
        counts[#shapes_i] = (counts[#shapes_i] or 0) + 1
        qcount = nq
      end
      local shape_ok = match.row(name, qnodt, shapes_i, dtypes_i, true)
      if shape_ok then
        if q.dtypes and not match.row(name, q, shapes_i, dtypes_i, true) then
          local k = table.concat(dtypes_i, ";")
          dt[k] = (dt[k] or 0) + 1
        elseif not S.k:latency(i) then
          nolat = nolat + 1
        elseif S.moe then
          local e = t:cell(i, S.epcol)
          ep[e] = (ep[e] or 0) + 1
        end
      elseif not nz then
        -- a query slot written as the row's FRACTAL_NZ tile: restored, would it compare?
        local fcell = t:column(M.IF) and t:cell(i, M.IF)
        if fcell and fcell:find("FRACTAL_NZ", 1, true) then
          local restored = t:shapes(match.shapes_text(q.shapes), fcell)
          if restored and match.row(name, { shapes = restored }, shapes_i, dtypes_i, true) then
            nz = string.format("the query gives a FRACTAL_NZ tile layout (line %d's Input Formats %s); the consumer compares " ..
                               "the restored ND shapes %s: ask those, or pass formats = \"%s\"", t:line(i),
                               (fcell:gsub('"', "")), match.shapes_text(restored), (fcell:gsub('"', "")))
          end
        end
      end
    end
  end
  local function top(counts)
    local best, n, total = nil, 0, 0
    for k, c in pairs(counts) do total = total + c; if c > n or (c == n and k < best) then best, n = k, c end end
    return best, n, total
  end
  local dk, dn, dtot = top(dt)
  local ek, _, etot = top(ep)
  if nolat > 0 and dtot == 0 and etot == 0 then
    return string.format("no_valid_latency: %d row%s match%s these inputs but ha%s no valid latency (theory rows: " ..
                         "microbench measures them)", nolat, nolat == 1 and "" or "s", nolat == 1 and "es" or "",
                         nolat == 1 and "s" or "ve")
  end
  if etot > 0 then
    return string.format("ep_mismatch: %d row%s match%s these inputs with EP Size %s, the query asks ep %s",
                         etot, etot == 1 and "" or "s", etot == 1 and "es" or "", ek == "" and "blank" or ek, tostring(S.ep))
  end
  if dtot > 0 then
    return string.format("dtype_mismatch: %d row%s ha%s these shapes but other dtypes (%s%s)%s", dtot,
                         dtot == 1 and "" or "s", dtot == 1 and "s" or "ve", dk, dn < dtot and ", ..." or "",
                         nolat > 0 and string.format("; %d more have no valid latency", nolat) or "")
  end
  if nz then return "shape_mismatch: " .. nz end
  local ncount, nc = 0, {}
  for c, k in pairs(counts) do ncount = ncount + k; nc[#nc + 1] = string.format("%d (%d rows)", c, k) end
  if ncount == nrows and nrows > 0 then
    table.sort(nc)
    return string.format("input_count: the query compares %d inputs (after the consumer's rewrite), every row has " ..
                         "another count: %s", qcount, table.concat(nc, ", "))
  end
  return string.format("shape_mismatch: no row has these input shapes (%d rows; db:nearest(\"%s\", query) lists the closest)",
                       nrows, name)
end

-- The makers of the C exact match's fields made when first read (R.Result's snap of several
-- fields): the title, the query (asked by texts) and the row's record. The snap:
-- { makers, kernel, table, shapes text, dtypes text, row, latency, column, rule, input rules
--   joined, padded, the title's latency (the core envelope's when it applies), line }
local function lazy_exact_title(z, r)
  return measured_title(z[2].name, query_label(z[3], r.query), z[12], z[13], z[8], z[9], z[11])
end
local function lazy_exact_record(z)
  local rec = z[2]:_row_record(z[6], z[7], z[8])
  rec.rule, rec["input rules"] = z[9], z[10]
  return rec
end
local EXACT_LAZY_Q = { title = lazy_exact_title, [1] = lazy_exact_record }
local EXACT_LAZY = { title = lazy_exact_title, [1] = lazy_exact_record,
                     query = function(z) return z[2]:_query(z[4], z[5]) end }

-- The answer of the C exact match (exact_in_c's values): the fields measured_fields gives,
-- the query (q nil: made when first read from shapes and dtypes), and the title and the
-- row's record made when first read (most answers are read for their latency only).
local function exact_answer(self, t, q, shapes, dtypes, lpol, row, distance, rule, rules, lat, col, ties, nties, joined, line)
  local z = { q and EXACT_LAZY_Q or EXACT_LAZY, self, t, shapes, dtypes, row, lat, col, rule,
              joined or table.concat(rules, ","), distance > 0, lat, line }
  -- R.new(nil, LOOKUP_COLUMNS) with measured_fields' fields, in one constructor (sized for them
  -- and for the query, title, notes and record to come)
  local res = setmetatable({ widths = LOOKUP_WIDTHS, columns = LOOKUP_COLUMNS, latency = lat, row = row,
                             line = line, column = col, rule = rule, rules = rules, source = "MEASURED",
                             confidence = 1.0, _lazy = z }, R.Result)
  if q then res.query = q end
  if lpol.profiling_core_envelope_fallback ~= nil then
    core_envelope(t, res, row, lpol)
    z[12] = res.latency
  end
  if nties > 0 then ties_note(t, res, ties, nties) end
  if self.db._prov ~= false then with_provenance(self, res, row) end  -- false: no provenance log
  return res
end

-- The common lookup (a shapes text, a dtypes text, no options that change the query) in C
-- from the texts: no query tables made unless the answer's query is read. nil when the
-- general path must answer (MoE, a text the parse refuses, no C answer).
local function exact_from_text(self, t, shapes, dtypes)
  local s = self._
  -- every lookup after the first (the index prepared with its slot index, dtypes seen)
  local L, names = s.fast, s.qdt and s.qdt[dtypes]
  if L and names then
    local row, distance, rule, rules, lat, latpos, nties, ties, joined, line = L.ix:exact(L.sx, shapes, names, L.kind, L.fg)
    if not row then return nil end
    return exact_answer(self, t, nil, shapes, dtypes, s.lpol, row, distance, rule, rules, lat, s.latcols[latpos],
                        ties, nties, joined, line)
  end
  local pri, lpol = s.lpri, s.lpol
  if not s.textok then  -- rows, the priorities and no MoE (fixed once known)
    if s.nrows == nil then s.nrows = #t end
    if s.nrows == 0 then return nil end
    if not pri or lpol == nil then pri, lpol = latency_priorities(self) end
    if s.has_ep == nil then s.has_ep = t:column("EP Size") and true or false end
    if s.has_ep and self.name == "DispatchFFNCombine" then return nil end
    s.textok = true
  end
  names = names or self:_dtype_names(dtypes)
  local row, distance, rule, rules, lat, col, ties, nties, joined, line = exact_in_c(self, shapes, names, 0, pri)
  if s.cexact and not s.fast then  -- exact_in_c's prepared path, taken straight from now on
    L = s.lix and s.lix[0]
    if L and L.prepared and L.sx then s.fast = L end
  end
  if not row then return nil end
  return exact_answer(self, t, nil, shapes, dtypes, lpol, row, distance, rule, rules, lat, col, ties, nties, joined, line)
end

-- The consumer's compute exact match: every row is a candidate, the best (distance, latency
-- column priority) wins and the first row in file order breaks ties (MoE: the first matching
-- row). The index finds the distance-0 candidates at once; padded matches need a scan over
-- the distinct signatures.
local function compute_lookup(self, shapes, dtypes, opts)
  local t = self:table()
  if type(shapes) == "string" and type(dtypes) == "string" and opts.formats == nil and not opts.explain and
     not opts.moe and not M.lua_only and (opts.n or opts.tc_input_count or 0) == 0 then
    local res = exact_from_text(self, t, shapes, dtypes)
    if res then return res end
  end
  local q = self:_query(shapes, dtypes, opts.formats)
  local n = opts.n or opts.tc_input_count or 0
  if n > 0 then
    for i = n + 1, #q.shapes do q.shapes[i] = nil end
    if q.dtypes then for i = n + 1, #q.dtypes do q.dtypes[i] = nil end end
  end
  local pri, lpol = latency_priorities(self)
  -- MoE (DispatchFFNCombine, docs/rules.md, Lookups): a file with an EP Size column needs the
  -- query's ep; rows must equal it, and the first matching row wins
  local ep = opts.ep or opts.ep_size
  local s = self._
  if s.has_ep == nil then s.has_ep = t:column("EP Size") and true or false end
  local moe = s.has_ep and (self.name == "DispatchFFNCombine" or opts.moe)
  if moe and not ep then
    local res = R.new(string.format("lookup %s: MISS ep_size_not_configured (the file has EP Size; pass {ep = n})", self.name), {})
    res.miss = "ep_size_not_configured"
    return res
  end
  if not opts.explain and not moe and not M.lua_only then
    local row, distance, rule, rules, lat, col, ties, nties, joined, line = exact_in_c(self, q.shapes, q.dtypes, n, pri)
    if row then return exact_answer(self, t, q, nil, nil, lpol, row, distance, rule, rules, lat, col, ties, nties, joined, line) end
  end
  local qlabel = query_label(t, q)
  local S = new_scan(self, q, n, opts, pri, moe, ep)
  scan(self, S)
  table.sort(S.cands, moe and function(a, b) return a.row < b.row end or score_less)
  local best = S.cands[1]
  local res = R.new(nil, opts.explain and { "line", "result", "rule or first failure", "latency(us)", "column" }
                          or { "line", M.IS, M.IDT, "latency(us)", "column", "rule", "input rules" })
  res.query = q
  res.widths = { ["rule or first failure"] = 200 }
  if best then
    res.title = choose(self, S, res, best, qlabel, lpol)
  else
    res.miss = "shape_mismatch"  -- the consumer's code; res.reason says what excluded the rows
    -- (a scan of every row: a caller that only needs the verdict says reason = false)
    if opts.reason == false then
      res.title = string.format("lookup %s %s: MISS shape_mismatch", self.name, qlabel)
    else
      res.reason = miss_reason(self, S)
      res.title = string.format("lookup %s %s: MISS %s (the consumer reports shape_mismatch)", self.name, qlabel, res.reason)
    end
    if not opts.explain then
      res.columns = {}  -- nothing to show: no "(no rows)" under the verdict
      res:note("db:lookup(..., {explain = true}) lists every row's verdict")
    end
  end
  if opts.explain then
    explain_rows(S, res, best)
  elseif best and not res.miss then
    res[1] = self:_row_record(best.row, S.lat[best.row], S.src[best.row])
    res[1].rule, res[1]["input rules"] = best.rule, table.concat(best.rules, ",")
    with_provenance(self, res, best.row)
  end
  return res
end

-- lookup(shapes, dtypes, opts): the row the consumer answers a query with, by the kernel's
-- kind: collectives (message_bytes), attention (a query with seq), elementwise (opts.out),
-- else the compute exact match.
-- The query a row is its own answer to, as the consumer would ask it (docs/rules.md, Lookups):
-- communication {bytes, devices[, tier]}; attention {q, seq, dtype and the runtime filters the
-- row has}; else its inputs (FRACTAL_NZ restored) in the TC layout with its dtypes (and ep
-- when the file has EP Size). Returns the query table for lookup, or nil, why.
function Kmethods:own_query(i)
  local t = self:table()
  if math.type(i) ~= "integer" or i < 1 or i > #t then perf.fail("own_query: row %s is not in 1..%d", tostring(i), #t) end
  local function cnum(c) return t:column(c) and num.finite(t:cell(i, c)) or nil end
  if t:column("message_bytes") and not t:column(M.IS) then
    local bytes, devs = cnum("message_bytes"), cnum("num_devices")
    if not bytes or not devs then return nil, "no message_bytes or num_devices" end
    return { bytes = bytes, devices = devs, tier = cnum("topology_tier") }
  end
  if t:column("Runtime avg_seq_len") or t:column("avg_seq_len") then
    local shapes = t:shapes(t:cell(i, M.IS))
    local seq = cnum("Runtime avg_seq_len") or cnum("avg_seq_len")
    if not seq or not shapes or not shapes[1] then return nil, "no avg_seq_len or query shape" end
    local q = { q = shapes[1], seq = math.floor(seq), dtype = t:column(M.IDT) and match.list(t:cell(i, M.IDT))[1],
                sparse_mode = cnum("Runtime sparse_mode"), kv_heads = cnum("Runtime num_key_value_heads") }
    if #shapes[1] == 2 and shapes[2] and not shapes[2].scalar then q.head_dim = shapes[2][#shapes[2]] end
    local lay = t:column("Runtime input_layout") and t:cell(i, "Runtime input_layout")
    if lay and lay ~= "" then q.layout = lay end
    return q
  end
  local shapes, dtypes = self:_inputs(i)
  if not shapes then return nil, "malformed Input Shapes: " .. tostring(dtypes) end
  -- the slots the consumer compares: tc_input_count of the op_mapping route naming the kernel
  local s = self._
  if s.route == nil then s.route = require("perfscript.db.reach").route(self.db, self.name) end
  local n = s.route.n
  if n then
    for j = n + 1, #shapes do shapes[j] = nil end
    for j = n + 1, #dtypes do dtypes[j] = nil end
  end
  shapes, dtypes = match.tc_layout(self.name, shapes, dtypes)
  local q = { shapes = shapes, dtypes = t:column(M.IDT) and dtypes or nil, n = n }
  if t:column("EP Size") then
    q.ep = math.tointeger(cnum("EP Size"))
    if not q.ep then return nil, "EP Size is not an integer" end
  end
  return q
end

-- Options a query table may carry itself: db:lookup(k, {shapes = ..., explain = true}).
local QUERY_OPTS = { "explain", "n", "tc_input_count", "ep", "ep_size", "moe", "out", "out_dtype" }

-- The options of a lookup given none (read only: shared by every such call).
local NOOPTS = setmetatable({}, { __newindex = function() error("lookup: the default options are read only", 2) end })

function Kmethods:lookup(shapes, dtypes, opts)
  -- the common form (a shapes text, a dtypes text, no options) of a compute kernel already
  -- asked once (s.comm false: its table is loaded): straight to the C exact match
  local s = self._
  local L, names = s.fast, nil  -- exact_from_text's prepared path, its dtypes text seen (s.qdt: strings only)
  if L and opts == nil and type(shapes) == "string" and not M.lua_only then
    names = s.qdt[dtypes]
    if names then
      local row, distance, rule, rules, lat, latpos, nties, ties, joined, line = L.ix:exact(L.sx, shapes, names, L.kind, L.fg)
      if row then
        return exact_answer(self, s.t, nil, shapes, dtypes, s.lpol, row, distance, rule, rules, lat, s.latcols[latpos],
                            ties, nties, joined, line)
      end
    end
  end
  if opts == nil and s.comm == false and type(shapes) == "string" and type(dtypes) == "string" and
     not M.lua_only and not names then  -- names: the C path above had no answer
    local res = exact_from_text(self, s.t, shapes, dtypes)
    if res then return res end
  end
  if type(dtypes) == "table" and not dtypes[1] and next(dtypes) ~= nil and opts == nil then
    opts, dtypes = dtypes, nil
  end
  opts = opts or NOOPTS
  if type(shapes) == "table" then
    local copy
    for _, k in ipairs(QUERY_OPTS) do
      if shapes[k] ~= nil and opts[k] == nil then copy = copy or setmetatable({}, { __index = opts }); copy[k] = shapes[k] end
    end
    opts = copy or opts
    -- a record of this kernel's db:rows(): the row's own query
    local t = self:table()
    if math.type(shapes.row) == "integer" and shapes[M.IS] and shapes.row >= 1 and shapes.row <= #t and
       t:column(M.IS) and t:unquoted(shapes.row, t:column(M.IS)) == shapes[M.IS] then
      local q, why = self:own_query(shapes.row)
      if not q then perf.fail("%s line %d: no query can ask for this row (%s)", self.name, t:line(shapes.row), why) end
      return self:lookup(q, nil, opts)
    end
  end
  local t = self:table()
  if s.comm == nil then s.comm = (t:column("message_bytes") and not t:column(M.IS)) and true or false end
  if s.comm then
    return require("perfscript.db.comm").lookup(self, shapes, opts)
  end
  if type(shapes) == "table" and shapes.seq and (t:column("Runtime avg_seq_len") or t:column("avg_seq_len")) then
    return require("perfscript.db.attention").lookup(self, shapes, opts)
  end
  if opts.out then
    -- elementwise (query_mode elementwise): the output shape is the key
    return require("perfscript.db.mapping").elementwise_kernel(self, opts.out, opts.out_dtype)
  end
  return compute_lookup(self, shapes, dtypes, opts)
end

-- ---- database-level forms of the kernel queries ------------------------------------------

for _, name in ipairs { "rows", "lookup", "nearest", "coverage", "interp", "dups", "outliers" } do
  DBmethods[name] = function(self, kernel, ...)
    local k = self:kernel(kernel)
    return k[name](k, ...)
  end
end

-- lookup also takes a TC op of op_mapping.yaml ("aten.mm.default"): its kernels in order.
function DBmethods:lookup(kernel, ...)
  if type(kernel) == "string" and not self._kernels[kernel] then
    local mapping = require "perfscript.db.mapping"
    if mapping.entry(self, kernel) then return mapping.lookup(self, kernel, ...) end
  end
  local k = self:kernel(kernel)
  return k:lookup(...)
end

-- The analysis and data-quality queries live in their own files and add their methods here.
require("perfscript.db.analysis").install(M)
require("perfscript.db.quality").install(M)
require("perfscript.db.mapping").install(M)
require("perfscript.db.reach").install(M)
require("perfscript.db.accuracy").install(M)

return M
