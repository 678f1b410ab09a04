-- op_mapping.yaml of a version directory (docs/database.md, Layout): the routing
-- from a TC op ("aten.mm.default") to kernel CSVs. db:mapping(op) shows an entry with its
-- kernels (CSV present? rows?) and policies; db:lookup(op, ...) tries the entry's kernels in
-- the consumer's order on the compute path.
local perf = require "perfscript"
local R = require "perfscript.db.result"

local Mp = {}
local D

-- The one op_mapping.yaml reader (the database, the grid's routing and the analysis tools
-- call it). decode(text, path) -> the document, or false, "path: malformed YAML: <lyaml's
-- line and column>".
function Mp.decode(text, path)
  local ok, doc = pcall(require("lyaml").load, text)
  if not ok then
    return false, string.format("%s: malformed YAML: %s", path or "op_mapping.yaml",
                                (tostring(doc):gsub("^.-:%d+: ", "")))
  end
  return doc
end

-- read_file(path) -> document, text; nil when there is no such file; false, message when it
-- cannot be read or is not YAML.
function Mp.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text, err = f:read("a")
  f:close()
  if not text then return false, path .. ": " .. tostring(err) end
  local doc, derr = Mp.decode(text, path)
  if doc == false then return false, derr end
  return doc, text
end

-- The mapping of a directory, nil when it has none; a user error when it is not YAML.
function Mp.read(dir)
  local path = dir .. "/op_mapping.yaml"
  local doc, err = Mp.read_file(path)
  if doc == nil then return nil end
  if not doc or type(doc) ~= "table" then perf.fail("%s", err or (path .. ": malformed YAML: not a mapping")) end
  doc._path = path
  return doc
end

local function load(db)
  if db._mapping ~= nil then return db._mapping or nil end
  db._mapping = Mp.read(db._dir) or false
  return db._mapping or nil
end
Mp.load = load

-- The entry of an op (with or without its overload suffix), or nil.
function Mp.entry(db, op)
  local doc = load(db)
  local ops = doc and doc.operator_mappings
  if type(ops) ~= "table" then return nil end
  local e = ops[op] or ops[(op:gsub("%.[^.]+$", ""))] or ops[op .. ".default"]
  return e, doc
end

-- Candidate kernel types in the consumer's order: a rank-specific list first, then the
-- kernel type and its alternates, de-duplicated.
function Mp.kernels(e, rank)
  local list, seen = {}, {}
  local function add(k) if type(k) == "string" and not seen[k] then seen[k] = true; list[#list + 1] = k end end
  if rank and type(e.kernel_types_by_input_rank) == "table" then
    for _, k in ipairs(e.kernel_types_by_input_rank[rank] or e.kernel_types_by_input_rank[tostring(rank)] or {}) do add(k) end
  end
  add(e.kernel_type)
  for _, k in ipairs(type(e.alternate_kernel_types) == "table" and e.alternate_kernel_types or {}) do add(k) end
  return list
end

local function mode(e)
  if e.composite then return "composite" end
  if e.category == "communication" then return "communication" end
  if e.query_mode then return e.query_mode end
  if e.zero_cost then return "zero_cost" end
  if e.accepted_miss then return "accepted_miss" end
  return "compute"
end
Mp.mode = mode

local function policies(doc, kernels)
  local out = {}
  for _, section in ipairs { "interpolation_policy", "latency_policy", "query_selection_policy" } do
    local ov = type(doc[section]) == "table" and doc[section].kernel_overrides
    if type(ov) == "table" then
      for _, k in ipairs(kernels) do
        if ov[k] ~= nil then out[#out + 1] = section .. "." .. k .. " = " .. require("perfscript.pretty").format(ov[k]) end
      end
    end
  end
  return out
end

function Mp.show(db, op)
  local doc = load(db)
  if not doc then perf.fail("%s: no op_mapping.yaml", db._dir) end
  if op == nil then
    local res = R.new(nil, { "op", "mode", "kernels", "csv", "tc_input_count" })
    local names = {}
    for k in pairs(doc.operator_mappings or {}) do names[#names + 1] = k end
    table.sort(names)
    local missing = 0
    for _, name in ipairs(names) do
      local e = doc.operator_mappings[name]
      local ks = Mp.kernels(e)
      local have = {}
      for _, k in ipairs(ks) do have[#have + 1] = db._kernels[k] and k or (k .. "(missing)") end
      if ks[1] and not db._kernels[ks[1]] then missing = missing + 1 end
      res[#res + 1] = { op = name, mode = mode(e), kernels = table.concat(ks, ","),
                        csv = #ks == 0 and "" or table.concat(have, ","), tc_input_count = e.tc_input_count }
    end
    res.title = string.format("op_mapping.yaml of %s: %d ops (version %s), %d whose kernel type has no CSV", db._dir,
                              #names, tostring(doc.version), missing)
    return res
  end
  local e = Mp.entry(db, op)
  if not e then perf.fail("%s: no mapping for '%s' (db:mapping() lists them)", doc._path, op) end
  local ks = Mp.kernels(e)
  local res = R.new(nil, { "kernel", "csv", "rows", "valid" })
  for _, k in ipairs(ks) do
    local K = db._kernels[k]
    local rec = { kernel = k, csv = K and "yes" or "missing" }
    if K then
      local ok = pcall(function()
        local lat = K:latencies()
        local v = 0
        for i = 1, #lat do if lat[i] then v = v + 1 end end
        rec.rows, rec.valid = #lat, v
      end)
      if not ok then rec.csv = "unreadable" end
    end
    res[#res + 1] = rec
  end
  res.title = string.format("%s: %s%s%s", op, mode(e), e.tc_input_count and (", tc_input_count " .. e.tc_input_count) or "",
                            e.sub_kernels and (", sub_kernels " .. table.concat(e.sub_kernels, ",")) or "")
  if e.notes then res:note("notes: %s", tostring(e.notes)) end
  for _, p in ipairs(policies(doc, ks)) do res:note("%s", p) end
  res.entry = e
  return res
end

-- The modes answered without the compute path: zero_cost / accepted_miss (0 us), elementwise
-- with an output, attention with a seq, communication (kernel_type only: the consumer ignores
-- alternates). nil when the compute path answers.
local function special_lookup(db, op, e, m, shapes, opts)
  if m == "zero_cost" or m == "accepted_miss" then
    local res = R.new(string.format("lookup %s: MEASURED 0 us (%s%s)", op, m,
                                    e.accepted_miss and (": " .. tostring(e.accepted_miss)) or ""), {})
    res.latency, res.source, res.rule, res.confidence = 0.0, "MEASURED", m, 1.0
    return res
  end
  if m == "elementwise" and opts.out then return Mp.elementwise(db, op, e, opts) end
  if m == "attention_special" and type(shapes) == "table" and shapes.seq then
    local K = db._kernels[e.kernel_type or ""]
    if K then
      local res = require("perfscript.db.attention").lookup(K, shapes, opts)
      res.title = string.format("lookup %s -> %s", op, res.title)
      return res
    end
  end
  if m == "communication" then
    local K = db._kernels[e.kernel_type or ""]
    if not K then
      local res = R.new(string.format("lookup %s: MISS csv_not_found (%s)", op, tostring(e.kernel_type)), {})
      res.miss = "csv_not_found"
      return res
    end
    local res = require("perfscript.db.comm").lookup(K, shapes, opts)
    res.title = string.format("lookup %s -> %s", op, res.title)
    return res
  end
  return nil
end

-- The rank of the query's first input shape (picks the entry's kernels by rank), or nil.
local function first_rank(shapes)
  if type(shapes) == "string" then
    return select(2, shapes:match("^[^;]*"):gsub(",", ",")) + 1
  elseif type(shapes) == "table" and type(shapes[1]) == "table" then
    return #shapes[1]
  end
end

-- Each kernel of ks in turn: the best (distance, kernel index) answer, and every result.
local function best_of_kernels(db, ks, shapes, dtypes, o, explain)
  local best, best_idx, results = nil, nil, {}
  for idx, k in ipairs(ks) do
    local K = db._kernels[k]
    -- a distance-0 row of an earlier kernel wins over every row of the later ones
    if best and best.d == 0 and not explain then break end
    if K then
      local r = K:lookup(shapes, dtypes, o)
      results[#results + 1] = { kernel = k, r = r, idx = idx }
      if r.latency then
        local d = r.rule and r.rule:find("padding", 1, true) and 1 or 0
        if not best or d < best.d or (d == best.d and idx < best_idx) then best, best_idx = { d = d, r = r, kernel = k }, idx end
      end
    end
  end
  return best, results
end

-- lookup by op: the entry's kernels in order; the best (distance, kernel index) wins, then the
-- kernel's own order (latency column, first row).
function Mp.lookup(db, op, shapes, dtypes, opts)
  if type(dtypes) == "table" and not dtypes[1] and next(dtypes) ~= nil and opts == nil then opts, dtypes = dtypes, nil end
  opts = opts or {}
  local e = Mp.entry(db, op)
  if not e then perf.fail("%s: no kernel type or mapping entry '%s'", db._dir, op) end
  local m = mode(e)
  local special = special_lookup(db, op, e, m, shapes, opts)
  if special then return special end
  if m ~= "compute" and m ~= "mtp_projection" and m ~= "elementwise" and m ~= "moe_fused" then
    perf.fail("%s: query mode '%s' is not reproduced by the explorer (compute path only); look up its kernels (%s) directly",
              op, m, table.concat(Mp.kernels(e), ", "))
  end
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.n = o.n or math.tointeger(e.tc_input_count)
  if not opts.explain then o.reason = false end  -- each kernel's miss reason only when explained
  if m == "moe_fused" then o.moe, o.n = true, nil end  -- shapes as the 7 physical inputs
  local ks = Mp.kernels(e, first_rank(shapes))
  local best, results = best_of_kernels(db, ks, shapes, dtypes, o, opts.explain)
  local res
  if best then
    res = best.r
    res.title = string.format("lookup %s -> %s", op, res.title)
    res.kernel = best.kernel
  else
    res = R.new(string.format("lookup %s: MISS %s (kernels tried: %s%s)", op,
                              #results == 0 and "csv_not_found" or "shape_mismatch", table.concat(ks, ", "),
                              (#results > 0 and not opts.explain) and "; {explain = true} says why for each" or ""), {})
    res.miss = #results == 0 and "csv_not_found" or "shape_mismatch"
  end
  res:note("mapping: %s, kernels in order %s%s", m, table.concat(ks, ", "),
           o.n and (", tc_input_count " .. o.n) or "")
  if opts.explain then
    for _, x in ipairs(results) do
      if x.r ~= res then res:note("%s: %s", x.kernel, x.r.title) end
    end
  end
  return res
end

-- Elementwise exact on one kernel (docs/rules.md, Lookups; the consumer's _lookup_elementwise
-- checker): the key is the output shape with a leading 1 stripped; the FIRST row with a valid
-- latency (any dtype) whose first output slot equals it, stripped or not, or pads to it, or (a
-- 3-D target) whose 2-D slot is its (B*M, D) flattening, wins. Another dtype scales the latency
-- by element size when the consumer knows both sizes (confidence 0.9), else the row is passed
-- over.
function Mp.elementwise_kernel(K, out, out_dtype, label)
  local match = require "perfscript.db.match"
  local shape = require "perfscript.shape"
  local t = K:table()
  out_dtype = out_dtype and match.dtype(out_dtype) or nil
  local q = K:_query(out, out_dtype)
  local target = match.strip1(q.shapes[1])
  local tried = {}
  local cos, codt = t:column(D.OS), t:column(D.ODT)
  label = label or K.name
  for i = 1, cos and #t or 0 do
    local lat, col = K:latency(i)
    local shapes = lat and t:shapes(t:cell(i, cos))
    local csv = shapes and shapes[1]
    if csv then
      -- the consumer reports every hit as rule "elementwise"; how says why it matched
      local how = match.out_rule(target, csv)
      local rule = how and "elementwise"
      if rule then
        local row_dt = codt and match.list(t:cell(i, codt))[1] or nil
        local latency, conf, note = lat, 1.0, nil
        if not (out_dtype and row_dt and out_dtype == row_dt) then
          local ok = out_dtype and row_dt and shape.dtype_consumer_scales(out_dtype) and shape.dtype_consumer_scales(row_dt)
          if ok then
            local a, b = shape.dtype_bytes(out_dtype), shape.dtype_bytes(row_dt)
            latency, conf = lat * a / b, 0.9
            note = string.format("dtype_scale %s -> %s: x%s", row_dt, out_dtype, a / b)
          else
            rule = nil
            tried[#tried + 1] = string.format("%s line %d: dtype %s vs %s with no known size", K.name, t:line(i),
                                              tostring(row_dt), tostring(out_dtype))
          end
        end
        if rule then
          local res = R.new(string.format("lookup %s out %s: MEASURED %s us from line %d (%s, rule %s%s)", label,
                                          D.shapes_label({ target }), R.fmt(latency), t:line(i), col, rule .. how,
                                          note and (", " .. note) or ""),
                            { "line", D.IS, D.OS, "latency(us)", "column" })
          res[1] = K:_row_record(i)
          res.latency, res.kernel, res.row, res.line, res.rule = latency, K.name, i, t:line(i), rule
          res.source, res.confidence, res.column = "MEASURED", conf, col
          res:note("elementwise: the first matching row in file order wins, whatever its dtype")
          for _, x in ipairs(tried) do res:note("skipped %s", x) end
          return res
        end
      end
    end
  end
  local res = R.new(string.format("lookup %s out %s: MISS elementwise_output_shape_mismatch", label,
                                  D.shapes_label({ target })), {})
  res.miss = "elementwise_output_shape_mismatch"
  for _, x in ipairs(tried) do res:note("skipped %s", x) end
  return res
end

-- Elementwise by op: only the entry's kernel_type (the consumer ignores the alternates here).
function Mp.elementwise(db, op, e, opts)
  local K = db._kernels[e.kernel_type or ""]
  if not K then
    local res = R.new(string.format("lookup %s: MISS elementwise_output_shape_mismatch (no CSV for %s)", op,
                                    tostring(e.kernel_type)), {})
    res.miss = "elementwise_output_shape_mismatch"
    return res
  end
  return Mp.elementwise_kernel(K, opts.out, opts.out_dtype, op .. " -> " .. K.name)
end

function Mp.install(db)
  D = db
  db.DBmethods.mapping = function(self, op) return Mp.show(self, op) end
end

return Mp
