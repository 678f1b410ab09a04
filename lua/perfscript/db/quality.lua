-- Data quality: dups (rows the consumer cannot tell apart), lint (cells that crash or mislead
-- the consumer; docs/database.md: Values; Order, duplicates and shadowing) and diff across
-- two version directories.
local perf = require "perfscript"
local R = require "perfscript.db.result"
local match = require "perfscript.db.match"
local num = require "perfscript.num"
local shape = require "perfscript.shape"
local analysis = require "perfscript.db.analysis"

local nz_tile_problem
local Q = {}
local D

-- Dtype spellings: perfscript.shape (src/schema/shape.c) knows them and the consumer's; formats:
Q.FORMATS = {}
for _, f in ipairs { "ND", "NULL", "FRACTAL_NZ", "NCHW", "NHWC", "NC1HWC0", "FRACTAL_Z", "NCL", "NCDHW",
                     "NDHWC", "FORMAT_ND", "ND_RNN_BIAS", "FRACTAL_NZ_C0_16", "FRACTAL_NZ_C0_32" } do
  Q.FORMATS[f] = true
end

-- The strict signature as the consumer sees it: every signature cell in its canonical view,
-- plus EP Size and the runtime columns.
local function signature_index(K)
  local s = K._
  if s.six then return s.six end
  local t = K:table()
  local comps = {}
  local function add(c) if #comps < 8 then comps[#comps + 1] = c end end
  if t:column(D.IS) then add { col = D.IS, kind = "shapes" } end
  if t:column(D.IDT) then add { col = D.IDT, kind = "list" } end
  if t:column(D.IF) then add { col = D.IF, kind = "list" } end
  if t:column(D.OS) then add { col = D.OS, kind = "shapes" } end
  if t:column(D.ODT) then add { col = D.ODT, kind = "list" } end
  for _, c in ipairs(t:columns()) do
    if c == "EP Size" or c == "message_bytes" or c == "num_devices" or c == "topology_tier" or
       c:match("^Runtime ") and not c:match("case_id") and not c:match("source_profile") then
      add { col = c, kind = "raw" }
    end
  end
  if #comps == 0 then perf.fail("%s: no signature columns", K.path) end
  s.six = { ix = t:index(comps), comps = comps }
  return s.six
end
Q.signature_index = signature_index

-- Groups of rows by the write-back's signature (perfscript.sig, docs/rules.md, Write-back
-- signature: what a merge treats as one row), in order of first row: {{rows...}, ...} and the
-- text of each.
local function writer_groups(K)
  local s = K._
  if s.wgroups then return s.wgroups, s.wkeys end
  local sig = require "perfscript.sig"
  local t = K:table()
  local header, idx = {}, {}
  for _, c in ipairs { "OP Type", "OP State", D.IS, D.IDT, D.IF, D.OS, D.ODT, "EP Size" } do
    local j = t:column(c)
    if j then header[#header + 1] = c; idx[#idx + 1] = j end
  end
  local cols = sig.columns(header)
  local groups, keys, by = {}, {}, {}
  local fields = {}
  for i = 1, #t do
    for j, c in ipairs(idx) do fields[j] = t:cell(i, c) end
    local text = sig.record(fields, cols, K.name)
    local g = by[text]
    if not g then
      g = {}
      by[text] = g
      groups[#groups + 1] = g
      keys[#keys + 1] = text
    end
    g[#g + 1] = i
  end
  s.wgroups, s.wkeys = groups, keys
  return groups, keys
end
Q.writer_groups = writer_groups

function Q.dups(K, opts)
  opts = opts or {}
  local t = K:table()
  local lat = K:latencies()
  local ix = signature_index(K).ix
  local groups
  if opts.writer then
    groups = {}
    for _, g in ipairs((writer_groups(K))) do if #g > 1 then groups[#groups + 1] = g end end
  else
    groups = ix:groups(2)
  end
  local res = R.new(nil, { "line", "count", "lines", D.IS, "first(us)", "median(us)", "min(us)", "max(us)",
                           "spread(%)", "consumer" })
  local unique = K:_semantic_unique()
  local conflicting = 0
  for _, rows in ipairs(groups) do
    local vals, lines = {}, {}
    for j, r in ipairs(rows) do
      lines[j] = t:line(r)
      if lat[r] then vals[#vals + 1] = lat[r] end
    end
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(vals) do lo, hi = math.min(lo, v), math.max(hi, v) end
    local spread = #vals > 1 and (hi - lo) / lo * 100 or 0
    local first
    for _, r in ipairs(rows) do if lat[r] then first = lat[r]; break end end
    local rec = K:_row_record(rows[1])
    rec.count, rec.lines = #rows, table.concat(lines, ",", 1, math.min(#lines, 8)) .. (#lines > 8 and ",..." or "")
    rec["first(us)"], rec["median(us)"] = first, analysis.median(vals)
    rec["min(us)"], rec["max(us)"], rec["spread(%)"] = #vals > 0 and lo or nil, #vals > 0 and hi or nil, spread
    if unique and spread > 0 then
      rec.consumer = "MISS (ambiguous_semantic_match)"
    else
      rec.consumer = "exact: first row; interp: median"
    end
    if spread > (opts.conflicting or 10) then conflicting = conflicting + 1 end
    if not opts.conflicting or spread > opts.conflicting then res[#res + 1] = rec end
  end
  res.title = string.format("dups %s: %d signatures on more than one row, %d with latencies more than %s%% apart (%s)",
                            K.name, #groups, conflicting, opts.conflicting or 10,
                            opts.writer and "the write-back's signature" or "as the consumer compares rows")
  return res
end

-- ---- lint -------------------------------------------------------------------------------------

-- The file-level checks (columns the lookups need); returns the context the row checks use.
local function lint_columns(K, t, add)
  local C = { K = K, t = t, comm = K.name:sub(1, 5) == "hcom_", ncols = t:ncols(),
              cIS = t:column(D.IS), cIF = t:column(D.IF), cOS = t:column(D.OS), sigcols = {} }
  for _, c in ipairs { D.IS, D.IDT, D.IF, D.OS, D.ODT } do
    if t:column(c) then C.sigcols[#C.sigcols + 1] = c end
  end
  if C.comm then
    for _, c in ipairs { "message_bytes", "num_devices" } do
      if not t:column(c) then add("error", nil, c, "communication CSV without '" .. c .. "' (every lookup misses: csv_format_raw)") end
    end
  elseif not C.cIS then
    add("error", nil, D.IS, "no Input Shapes column")
  end
  C.latcols = {}
  for _, c in ipairs(D.LATENCY) do if t:column(c) then C.latcols[#C.latcols + 1] = c end end
  if #C.latcols == 0 then add("warning", nil, nil, "no latency column (" .. table.concat(D.LATENCY, ", ") .. ")") end
  C.cEP = t:column("EP Size")
  if K.name == "DispatchFFNCombine" and not C.cEP then
    add("warning", nil, "EP Size", "DispatchFFNCombine without an EP Size column")
  end
  C.cseq = t:column("Runtime avg_seq_len") or t:column("avg_seq_len")
  C.shape_ok, C.list_cache, C.nums = {}, {}, {}
  for _, c in ipairs(C.latcols) do C.nums[c] = t:nums(c) end
  return C
end

-- A shapes cell's problem: false when fine, "empty", or why it is malformed (per distinct cell).
local function shape_problem(C, cell)
  local r = C.shape_ok[cell]
  if r == nil then
    local key, why = C.t:key({ kind = "shapes" }, cell)
    r = key and false or why
    if key and key == "" then r = "empty" end
    C.shape_ok[cell] = r
  end
  return r
end

-- Signature cells beyond the limits of shape.h (damaged data the import refuses); returns the
-- set of such columns, whose other checks are then left out.
local function lint_row_limits(C, i, line, add)
  local over
  for _, c in ipairs(C.sigcols) do
    local why = shape.over_limit(C.t:cell(i, c))
    if why then
      add("error", line, c, ("%s cell too big: %s (damaged data; the import refuses such cells)"):format(c, why))
      over = over or {}
      over[c] = true
    end
  end
  return over
end

-- A FRACTAL_NZ slot is [..., H, W, 16, 16|32|8] (the block of its dtype); another tail (a
-- weight written as (E, K, N/16, 16)) restores, as the consumer restores it, to a shape no query
-- asks: (32,7168,128,16) -> (512,917504). Per distinct (shapes, formats) pair.
local NZ_BLOCKS = { ["16,16"] = true, ["16,32"] = true, ["16,8"] = true }
function nz_tile_problem(C, scell, fcell)
  C.nz_cache = C.nz_cache or {}
  local key = scell .. "\0" .. fcell
  local r = C.nz_cache[key]
  if r == nil then
    r = false
    local raw = C.t:shapes(scell)
    local fm = match.list(fcell)
    for j, f in ipairs(fm) do
      local sh = raw and raw[j]
      if f == "FRACTAL_NZ" and sh and not sh.scalar and #sh >= 4 and not NZ_BLOCKS[sh[#sh - 1] .. "," .. sh[#sh]] then
        local restored = C.t:shapes(match.shapes_text({ sh }), "FRACTAL_NZ")
        r = string.format("FRACTAL_NZ input %d %s does not end in a 16x16, 16x32 or 16x8 block: the consumer restores it to %s, " ..
                          "which no query asks", j, match.format_shape(sh), match.format_shape(restored[1]))
        break
      end
    end
    C.nz_cache[key] = r
  end
  return r
end

-- Shapes and formats of row i.
local function lint_row_shapes(C, i, line, add)
  local t = C.t
  local over = lint_row_limits(C, i, line, add)
  if over and over[D.IS] then -- its slots are not checked one by one
  elseif C.cIS and not C.comm then
    local pr = shape_problem(C, t:cell(i, C.cIS))
    if pr == "empty" then add("error", line, D.IS, "empty Input Shapes (the consumer crashes on it)")
    elseif pr then add("error", line, D.IS, "malformed Input Shapes: " .. pr .. " (the consumer crashes on it)") end
  end
  if over and over[D.OS] then -- as above
  elseif C.cOS and not C.comm then
    local pr = shape_problem(C, t:cell(i, C.cOS))
    if pr == "empty" then add("warning", line, D.OS, "empty Output Shapes (elementwise, scatter and quant-scale lookups crash on it)")
    elseif pr then add("error", line, D.OS, "malformed Output Shapes: " .. pr) end
  end
  if C.cIF then
    local cell = t:cell(i, C.cIF)
    local msg = C.list_cache[cell]
    if msg == nil then
      msg = false
      for _, f in ipairs(match.list(cell)) do
        if not Q.FORMATS[f] then msg = "unknown format: " .. f; break end
      end
      C.list_cache[cell] = msg
    end
    if msg then add("warning", line, D.IF, msg) end
    if cell:find("FRACTAL_NZ", 1, true) and C.cIS then
      local why = nz_tile_problem(C, t:cell(i, C.cIS), cell)
      if why then add("warning", line, D.IS, why) end
    end
  end
end

-- Latencies, EP Size and avg_seq_len of row i.
local function lint_row_numbers(C, i, line, add)
  local t = C.t
  for _, c in ipairs(C.latcols) do
    local cell = t:cell(i, c)
    if cell ~= "" then
      local v = C.nums[c][i]
      if v == false then add("error", line, c, "not a number: " .. cell)
      elseif v == 0 then add("warning", line, c, "0 (leave it blank when not measured; zeros are skipped and pollute stats)")
      elseif v < 0 or v ~= v or v == math.huge then add("error", line, c, "not a positive finite latency: " .. cell) end
    end
  end
  if C.cEP and C.K.name == "DispatchFFNCombine" then
    local v = t:cell(i, C.cEP)
    if v == "" then add("error", line, "EP Size", "blank EP Size: the row never matches")
    elseif not math.tointeger(num.finite(v)) then add("error", line, "EP Size", "EP Size is not an integer: " .. v) end
  end
  if C.cseq then
    local v = num.finite(t:cell(i, C.cseq))
    if v and v ~= math.floor(v) then
      add("warning", line, t:columns()[C.cseq], "fractional avg_seq_len " .. t:cell(i, C.cseq) .. " (matches exactly, never interpolates)")
    end
  end
end

local function lint_kernel(K, res)
  local reach = require "perfscript.db.reach"
  local function add(sev, line, col, what)
    res[#res + 1] = { severity = sev, kernel = K.name, line = line, column = col, problem = what }
  end
  local ok, err = pcall(K.table, K)
  if not ok then
    add("error", nil, nil, "cannot read: " .. tostring(perf.is_user_error(err) and err.message or err))
    return
  end
  local t = err
  local C = lint_columns(K, t, add)
  for i = 1, #t do
    local line = t:line(i)
    if t:nfields(i) ~= C.ncols then
      add("warning", line, nil, string.format("%d fields, the header has %d", t:nfields(i), C.ncols))
    end
    lint_row_shapes(C, i, line, add)
    lint_row_numbers(C, i, line, add)
  end
  -- rows the consumer cannot reach with their own query, and why
  local ok, err2 = pcall(reach.kernel, K, add)
  if not ok then add("error", nil, nil, "reachability check failed: " .. tostring(perf.is_user_error(err2) and err2.message or err2)) end
end

-- The kind of a finding: its problem with the row's own numbers and quoted cells left out,
-- so that 340 rows with one problem are one kind.
function Q.kind(problem)
  return (tostring(problem):gsub("'[^']*'", "'…'"):gsub("%d+", "#"))
end

-- The findings grouped by severity, kernel, column and kind, in order of first appearance:
-- a result with the count, the first lines and one example each (what db:lint prints).
local function grouped(res)
  local groups, by = {}, {}
  for _, f in ipairs(res) do
    local key = table.concat({ f.severity, f.kernel, f.column or "", Q.kind(f.problem) }, "\0")
    local g = by[key]
    if not g then
      g = { severity = f.severity, kernel = f.kernel, column = f.column, rows = 0, lines = {}, example = f.problem }
      by[key] = g
      groups[#groups + 1] = g
    end
    g.rows = g.rows + 1
    if f.line and #g.lines < 4 then g.lines[#g.lines + 1] = f.line end
    if f.line and g.rows == 5 then g.lines[#g.lines + 1] = "..." end
  end
  local out = R.new(res.title, { "severity", "kernel", "rows", "lines", "column", "example" })
  out.widths = { example = 160 }
  for _, g in ipairs(groups) do
    g.lines = table.concat(g.lines, ",")
    out[#out + 1] = g
  end
  for _, n in ipairs(res.notes) do out:note("%s", n) end
  if #groups < #res then
    local k = res.kernel and string.format("%q, ", res.kernel) or ""
    out:note("%d findings in %d kinds; %s", #res, #groups,
             res.hint or string.format("db:lint(%s{verbose = true}) lists each; r = db:lint(%s) then save(r, \"lint.csv\") writes them",
                                       k, k:gsub(", $", "")))
  end
  return out
end
Q.grouped = grouped

-- db:lint([kernel], {verbose = true}): every finding is a row of the result (save writes them
-- all); it prints grouped by kind unless verbose.
function Q.lint(db, kernel, opts)
  opts = opts or {}
  local res = R.new(nil, { "severity", "kernel", "line", "column", "problem" })
  if not opts.verbose then res.view = grouped end
  res.widths = { problem = 160 }
  local names = kernel and { db:kernel(kernel).name } or db._names
  for _, name in ipairs(names) do lint_kernel(db:kernel(name), res) end
  if not kernel then
    local function add(sev, what) res[#res + 1] = { severity = sev, kernel = "", column = "op_mapping.yaml", problem = what } end
    local ok, doc = pcall(require("perfscript.db.mapping").load, db)
    if not ok then
      add("error", tostring(perf.is_user_error(doc) and doc.message or doc))
    elseif not doc then
      add("warning", "no op_mapping.yaml: the consumer needs one in the version directory")
    else
      if db._comm_ref then
        if require("lfs").attributes(db._comm_dir, "mode") ~= "directory" then
          add("warning", string.format("communication_data_ref %s does not exist: hcom_* lookups use this directory only", db._comm_ref))
        end
      end
      for _, k in ipairs(db._shadowed or {}) do
        add("warning", string.format("%s.csv here is shadowed by the one in communication_data_ref %s", k, db._comm_ref))
      end
      local missing, seen = {}, {}
      local mp = require "perfscript.db.mapping"
      for _, e in pairs(doc.operator_mappings or {}) do
        if type(e) == "table" and not e.zero_cost and not e.accepted_miss then
          for _, k in ipairs(mp.kernels(e)) do
            if not db._kernels[k] and not seen[k] then seen[k] = true; missing[#missing + 1] = k end
          end
        end
      end
      table.sort(missing)
      if #missing > 0 then
        add("warning", string.format("%d mapped kernel types have no CSV (their lookups miss: csv_not_found): %s",
                                     #missing, table.concat(missing, ", ")))
      end
    end
  end
  local errors, warnings = 0, 0
  for _, r in ipairs(res) do if r.severity == "error" then errors = errors + 1 else warnings = warnings + 1 end end
  res.errors, res.warnings = errors, warnings
  res.title = string.format("lint %s: %d errors, %d warnings in %d kernel types", kernel and names[1] or db._dir,
                            errors, warnings, #names)
  res.kernel = kernel and names[1] or nil
  if errors + warnings == 0 then res:note("clean") end
  return res
end

-- ---- diff -------------------------------------------------------------------------------------

-- signature text -> {row, latency} of the first row with that signature
local function signature_map(K, writer)
  if writer then
    local lat = K:latencies()
    local groups, keys = writer_groups(K)
    local map = {}
    for g, rows in ipairs(groups) do
      local l
      for _, r in ipairs(rows) do if lat[r] then l = lat[r]; break end end
      map[keys[g]] = { row = rows[1], lat = l }
    end
    return map
  end
  local six = signature_index(K)
  local ix = six.ix
  local lat = K:latencies()
  local map, n = {}, 0
  for g = 1, ix:ngroups() do
    local v = table.pack(ix:group(g))
    local key = table.concat(v, "\31", 3, v.n)
    local first = v[2]
    local l = lat[first]
    if not l and v[1] > 1 then
      for _, r in ipairs(ix:rows(g)) do if lat[r] then l = lat[r]; break end end
    end
    map[key] = { row = first, lat = l or nil }
    n = n + 1
  end
  return map, n
end

local function diff_kernel(KA, KB, tol, writer)
  local ma = signature_map(KA, writer)
  local mb = signature_map(KB, writer)
  local common, onlyA, onlyB, ratios, worse, better = 0, 0, 0, {}, 0, 0
  local pairs_list = {}
  for k, a in pairs(ma) do
    local b = mb[k]
    if b then
      common = common + 1
      if a.lat and b.lat then
        local r = b.lat / a.lat
        ratios[#ratios + 1] = r
        if r > 1 + tol then worse = worse + 1 elseif r < 1 - tol then better = better + 1 end
        pairs_list[#pairs_list + 1] = { a = a, b = b, r = r }
      end
    else
      onlyA = onlyA + 1
    end
  end
  for k in pairs(mb) do if not ma[k] then onlyB = onlyB + 1 end end
  return { common = common, onlyA = onlyA, onlyB = onlyB, ratios = ratios, worse = worse, better = better,
           pairs = pairs_list }
end

function Q.diff(db, other, kernel, opts)
  if type(kernel) == "table" and getmetatable(kernel) ~= D.Kernel then opts, kernel = kernel, nil end
  opts = opts or {}
  local tol = opts.tolerance or 0.1
  if type(other) == "string" then other = assert(D.open(other)) end
  if getmetatable(other) ~= D.DB then perf.fail("diff: other must be a database or a directory path") end
  if kernel then
    local KA, KB = db:kernel(kernel), other:kernel(type(kernel) == "string" and kernel or kernel.name)
    local d = diff_kernel(KA, KB, tol, opts.writer)
    table.sort(d.pairs, function(x, y) return math.abs(math.log(x.r)) > math.abs(math.log(y.r)) end)
    local res = R.new(nil, { "line A", "line B", D.IS, D.IDT, "A(us)", "B(us)", "B/A", "change" })
    local ta, tb = KA:table(), KB:table()
    for _, pr in ipairs(d.pairs) do
      local rec = KA:_row_record(pr.a.row)
      res[#res + 1] = { ["line A"] = ta:line(pr.a.row), ["line B"] = tb:line(pr.b.row), [D.IS] = rec[D.IS],
                        [D.IDT] = rec[D.IDT], ["A(us)"] = pr.a.lat, ["B(us)"] = pr.b.lat, ["B/A"] = pr.r,
                        change = pr.r > 1 + tol and "slower" or pr.r < 1 - tol and "faster" or "" }
    end
    res.title = string.format("diff %s: %s vs %s: %d common signatures (%d with both latencies), %d only in A, %d only in B; median B/A %s, %d slower and %d faster by more than %d%%",
                              KA.name, db._dir, other._dir, d.common, #d.ratios, d.onlyA, d.onlyB,
                              R.fmt(analysis.median(d.ratios) or 0), d.worse, d.better, math.floor(tol * 100 + 0.5))
    return res
  end
  local names, seen = {}, {}
  for _, n in ipairs(db._names) do names[#names + 1] = n; seen[n] = true end
  for _, n in ipairs(other._names) do if not seen[n] then names[#names + 1] = n end end
  table.sort(names)
  local res = R.new(nil, { "kernel", "rows A", "rows B", "common", "only A", "only B", "median B/A", "slower", "faster" })
  for _, n in ipairs(names) do
    local KA, KB = db._kernels[n], other._kernels[n]
    local rec = { kernel = n }
    if KA and KB then
      local ok, d = pcall(diff_kernel, KA, KB, tol, opts.writer)
      if ok then
        rec["rows A"], rec["rows B"] = #KA:table(), #KB:table()
        rec.common, rec["only A"], rec["only B"] = d.common, d.onlyA, d.onlyB
        rec["median B/A"], rec.slower, rec.faster = analysis.median(d.ratios), d.worse, d.better
      else
        rec.common = "unreadable"
      end
    elseif KA then
      rec["rows A"] = "file only in A"
    else
      rec["rows B"] = "file only in B"
    end
    res[#res + 1] = rec
  end
  res.title = string.format("diff %s (A) vs %s (B): %d kernel types", db._dir, other._dir, #names)
  res:note("signatures compared %s; db:diff(other, \"Kernel\") lists each one",
           opts.writer and "by the write-back's signature (perfscript.sig)" or "as the consumer sees them ({writer = true}: perfscript.sig)")
  return res
end

function Q.install(db)
  D = db
  db.Kmethods.dups = function(self, ...) return Q.dups(self, ...) end
  db.Kmethods.lint = function(self, opts) return Q.lint(self.db, self.name, opts) end
  db.DBmethods.lint = function(self, kernel, opts)
    if type(kernel) == "table" and getmetatable(kernel) ~= D.Kernel then kernel, opts = nil, kernel end
    return Q.lint(self, kernel, opts)
  end
  db.DBmethods.diff = function(self, other, kernel, opts) return Q.diff(self, other, kernel, opts) end
  db.Kmethods.diff = function(self, other, opts)
    if type(other) == "table" and getmetatable(other) == D.Kernel then other = other.db end
    return Q.diff(self.db, other, self.name, opts)
  end
end

return Q
