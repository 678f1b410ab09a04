-- Attention exact lookups (docs/rules.md, Lookups; FusedInferAttentionScore): rows are
-- filtered on the query's slot 0 normalised to 3-D (T, N, D), its dtype, the runtime columns
-- the row has (sparse mode, kv heads, layout), |avg_seq_len - seq| <= 16 and T equal or
-- block-padded either way; the nearest avg_seq_len wins (+0.5 for legacy metadata), the first
-- row on ties. Confidence 0.9, rule "attention".
local perf = require "perfscript"
local R = require "perfscript.db.result"
local match = require "perfscript.db.match"
local num = require "perfscript.num"

local A = {}
local TOLERANCE = 16

local function q3d(s, head_dim)
  if #s == 3 then return { s[1], s[2], s[3] } end
  if #s == 4 and s[3] == 1 then return { s[1], s[2], s[4] } end
  if #s == 2 and head_dim and head_dim > 0 and s[2] % head_dim == 0 then return { s[1], s[2] // head_dim, head_dim } end
  return nil
end

local function column(t, names)
  for _, n in ipairs(names) do if t:column(n) then return n end end
end

-- Why row i does not answer the query Q (its first failing check), or nil when it does; the
-- second result names the check ("latency", "seq", "shape", "dtype", "N,D", a filter's column,
-- "avg_seq_len", "T") so that a miss can say which one excluded the rows.
local function row_why(Q, i, lat, rowseq)
  local t, target = Q.t, Q.target
  local shapes = t:shapes(t:cell(i, "Input Shapes"))
  local s0 = shapes and shapes[1] and not shapes[1].scalar and q3d(shapes[1], target[3])
  if not rowseq or rowseq ~= rowseq or rowseq < 0 then return "no avg_seq_len", "seq" end
  if not s0 then return "slot 0 is not a (T, N, D) shape", "shape" end
  if Q.dtype and Q.cdt and match.list(t:cell(i, Q.cdt))[1] ~= Q.dtype then
    return "dtype " .. tostring(match.list(t:cell(i, Q.cdt))[1]), "dtype"
  end
  if s0[2] ~= target[2] or s0[3] ~= target[3] then return string.format("N,D %d,%d", s0[2], s0[3]), "N,D" end
  for _, f in ipairs(Q.filters) do
    if f.want ~= nil and t:column(f.col) then
      local cell = t:cell(i, f.col)
      if not (f.blank_ok and cell == "") then
        local ok = f.num and num.finite(cell) == num.finite(f.want) or (not f.num and cell == tostring(f.want))
        if not ok then return f.col .. " " .. cell, f.col, cell end
      end
    end
  end
  if math.abs(math.floor(rowseq) - Q.seq) > TOLERANCE then
    return string.format("avg_seq_len %s is more than %d from %d", t:cell(i, Q.seqcol), TOLERANCE, Q.seq), "avg_seq_len"
  end
  if not match.t_compatible(s0[1], target[1]) then
    return string.format("T %d vs %d, not block-padded", s0[1], target[1]), "T"
  end
  -- the latency last: a theory row of the right shape is "no valid latency", not a shape miss
  if not lat then return "no valid latency", "latency" end
  return nil
end

-- Every row's verdict: the nearest avg_seq_len (+0.5 for legacy metadata) wins, the first on
-- ties; returns best {d, row, lat, col} or nil, and the rows tried {line, why}.
local function scan(K, Q)
  local t, cmeta = Q.t, Q.t:column("Runtime metadata_completeness")
  local best, tried = nil, {}
  for i = 1, #t do
    local lat, col = K:latency(i)
    local rowseq = num.finite(t:cell(i, Q.seqcol))
    local why, check, cell = row_why(Q, i, lat, rowseq)
    if why then
      tried[#tried + 1] = { line = t:line(i), why = why, check = check, cell = cell }
    else
      local d = math.abs(math.floor(rowseq) - Q.seq)
      if cmeta then
        local m = t:cell(i, cmeta)
        if m == "" or m == "legacy" then d = d + 0.5 end
      end
      tried[#tried + 1] = { line = t:line(i), why = string.format("match, distance %s", d) }
      if not best or d < best.d then best = { d = d, row = i, lat = lat, col = col } end
    end
  end
  return best, tried
end

-- The query's slot 0 as given (a "T,N,D" text, a shape, or a list of shapes).
local function query_shape(t, q)
  local qs = q.q or q.shapes
  if type(qs) == "string" then qs = assert(t:shapes(qs))[1] elseif type(qs) == "table" and type(qs[1]) == "table" then qs = qs[1] end
  if type(qs) ~= "table" then perf.fail("attention lookup: give q = \"T,N,D\" (the query tensor's shape)") end
  return qs
end

-- q: {q = "T,N,D" | {T, N, D}, seq = avg_seq_len, dtype = "bfloat16", head_dim = D (2-D q),
--     sparse_mode = 3, kv_heads = k, layout = "TND"}
function A.lookup(K, q, opts)
  opts = opts or {}
  local t = K:table()
  local seqcol = column(t, { "Runtime avg_seq_len", "avg_seq_len" })
  if not seqcol then perf.fail("%s: no Runtime avg_seq_len column: attention lookups need it", K.path) end
  local qs = query_shape(t, q)
  local target = q3d(qs, q.head_dim)
  if not target then
    -- the consumer misses (a 4-D query with S > 1, a 2-D one its head_dim does not divide)
    local res = R.new(string.format("lookup %s q %s: MISS q_shape_normalize_failed (only (T,N,D), (B,N,1,D) and (T,H) normalise)",
                                    K.name, match.format_shape(qs)), {})
    res.miss = "q_shape_normalize_failed"
    return res
  end
  local seq = math.tointeger(q.seq) or (q.seq and math.floor(q.seq))
  if not seq then perf.fail("attention lookup: give seq = the average sequence length (missing_seq_lens)") end
  local layout = q.layout or (#qs == 3 and "TND" or #qs == 4 and "BNSD_NBSD" or nil)
  local Q = { t = t, seqcol = seqcol, target = target, seq = seq, dtype = q.dtype and match.dtype(q.dtype),
              cdt = t:column("Input Data Types"),
              filters = {
                { col = "Runtime sparse_mode", want = q.sparse_mode or 3, default = q.sparse_mode == nil, num = true },
                { col = "Runtime num_key_value_heads", want = q.kv_heads, num = true },
                { col = "Runtime input_layout", want = layout, blank_ok = true,
                  default = q.layout == nil and "from the rank of q" or nil },
              } }
  local best, tried = scan(K, Q)
  local label = string.format("%s q %s seq %d", K.name, match.format_shape(target), seq)
  local explain = opts.explain or q.explain
  local res = R.new(nil, explain and { "line", "result" } or {})
  if best then
    res.latency, res.source, res.confidence, res.rule = best.lat, "MEASURED", 0.9, "attention"
    res.row, res.line, res.column = best.row, t:line(best.row), best.col
    res.title = string.format("lookup %s: MEASURED %s us from line %d (%s, rule attention, seq distance %s)", label,
                              R.fmt(best.lat), res.line, best.col, best.d)
    if not explain then
      res.columns = { "line", "Input Shapes", "Input Data Types", "latency(us)", "column" }
      res[1] = K:_row_record(best.row, best.lat, best.col)
    end
  else
    res.miss = "shape_mismatch"  -- the consumer's code; res.reason says which check excluded the rows
    res.reason = A.miss_reason(Q, q, tried)
    res.title = string.format("lookup %s: MISS %s (the consumer reports shape_mismatch)", label, res.reason)
    if not explain then res:note("{..., explain = true} lists every row's verdict") end
  end
  if explain then
    for _, x in ipairs(tried) do
      res[#res + 1] = { line = x.line, result = (best and x.line == res.line) and ("CHOSEN " .. x.why) or x.why }
    end
  end
  return res
end

-- The check that excluded the rows closest to the query: the rows that pass every check
-- before it fail it. A filter the query set by default says so ("sparse_mode 3 (default)
-- excludes all 12 rows with this shape; they have sparse_mode 0").
local ORDER = { "seq", "shape", "dtype", "N,D", "Runtime sparse_mode", "Runtime num_key_value_heads",
                "Runtime input_layout", "avg_seq_len", "T", "latency" }
function A.miss_reason(Q, q, tried)
  if #tried == 0 then return "no rows" end
  local rank = {}
  for j, c in ipairs(ORDER) do rank[c] = j end
  local deepest, n, cells = 0, 0, {}
  for _, x in ipairs(tried) do
    local r = rank[x.check] or 0
    if r > deepest then deepest, n, cells = r, 0, {} end
    if r == deepest then
      n = n + 1
      if x.cell then cells[x.cell] = (cells[x.cell] or 0) + 1 end
    end
  end
  local check = ORDER[deepest]
  local target = Q.target
  local shape = string.format("N,D %d,%d", target[2], target[3])
  local function values()
    local l = {}
    for v, c in pairs(cells) do l[#l + 1] = string.format("%s (%d)", v == "" and "blank" or v, c) end
    table.sort(l)
    return table.concat(l, ", ")
  end
  if check == "Runtime sparse_mode" or check == "Runtime num_key_value_heads" or check == "Runtime input_layout" then
    local f
    for _, x in ipairs(Q.filters) do if x.col == check then f = x end end
    local short = check:gsub("^Runtime ", "")
    local key = ({ ["Runtime sparse_mode"] = "sparse_mode", ["Runtime num_key_value_heads"] = "kv_heads",
                   ["Runtime input_layout"] = "layout" })[check]
    local dflt = f and f.default and (" (" .. (f.default == true and "default" or f.default) .. ")") or ""
    return string.format("%s %s%s excludes %s with this dtype and %s; they have %s %s (pass %s = ...)",
                         short, tostring(f and f.want), dflt, n == 1 and "the 1 row" or ("all " .. n .. " rows"),
                         shape, short, values(), key)
  elseif check == "latency" then
    return string.format("no_valid_latency: %d row%s match%s but ha%s no valid latency (theory rows: microbench measures them)",
                         n, n == 1 and "" or "s", n == 1 and "es" or "", n == 1 and "s" or "ve")
  elseif check == "avg_seq_len" then
    return string.format("no row within %d of avg_seq_len %d among the %d with this dtype, %s and runtime filters",
                         TOLERANCE, Q.seq, n, shape)
  elseif check == "T" then
    return string.format("T %d: the %d rows near avg_seq_len %d have a T neither equal nor block-padded", target[1], n, Q.seq)
  elseif check == "N,D" then
    return string.format("no row with %s (%d rows of this dtype have other heads or head dims)", shape, n)
  elseif check == "dtype" then
    return string.format("dtype %s: no row has it (%d rows have another)", tostring(Q.dtype), n)
  end
  return string.format("no row can answer (%d rows: %s)", n, check == "seq" and "no avg_seq_len" or "slot 0 is not (T, N, D)")
end

return A
