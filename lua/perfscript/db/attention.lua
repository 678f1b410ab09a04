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

-- Why row i does not answer the query Q (its first failing check), or nil when it does.
local function row_why(Q, i, lat, rowseq)
  local t, target = Q.t, Q.target
  local shapes = t:shapes(t:cell(i, "Input Shapes"))
  local s0 = shapes and shapes[1] and not shapes[1].scalar and q3d(shapes[1], target[3])
  if not lat then return "no valid latency" end
  if not rowseq or rowseq ~= rowseq or rowseq < 0 then return "no avg_seq_len" end
  if not s0 then return "slot 0 is not a (T, N, D) shape" end
  if Q.dtype and Q.cdt and match.list(t:cell(i, Q.cdt))[1] ~= Q.dtype then
    return "dtype " .. tostring(match.list(t:cell(i, Q.cdt))[1])
  end
  if s0[2] ~= target[2] or s0[3] ~= target[3] then return string.format("N,D %d,%d", s0[2], s0[3]) end
  for _, f in ipairs(Q.filters) do
    if f.want ~= nil and t:column(f.col) then
      local cell = t:cell(i, f.col)
      if not (f.blank_ok and cell == "") then
        local ok = f.num and num.finite(cell) == num.finite(f.want) or (not f.num and cell == tostring(f.want))
        if not ok then return f.col .. " " .. cell end
      end
    end
  end
  if math.abs(math.floor(rowseq) - Q.seq) > TOLERANCE then
    return string.format("avg_seq_len %s is more than %d from %d", t:cell(i, Q.seqcol), TOLERANCE, Q.seq)
  end
  if not match.t_compatible(s0[1], target[1]) then
    return string.format("T %d vs %d, not block-padded", s0[1], target[1])
  end
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
    local why = row_why(Q, i, lat, rowseq)
    if why then
      tried[#tried + 1] = { line = t:line(i), why = why }
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
                { col = "Runtime sparse_mode", want = q.sparse_mode or 3, num = true },
                { col = "Runtime num_key_value_heads", want = q.kv_heads, num = true },
                { col = "Runtime input_layout", want = layout, blank_ok = true },
              } }
  local best, tried = scan(K, Q)
  local label = string.format("%s q %s seq %d", K.name, match.format_shape(target), seq)
  local res = R.new(nil, { "line", "result" })
  if best then
    res.latency, res.source, res.confidence, res.rule = best.lat, "MEASURED", 0.9, "attention"
    res.row, res.line, res.column = best.row, t:line(best.row), best.col
    res.title = string.format("lookup %s: MEASURED %s us from line %d (%s, rule attention, seq distance %s)", label,
                              R.fmt(best.lat), res.line, best.col, best.d)
  else
    res.miss = "shape_mismatch"
    res.title = string.format("lookup %s: MISS shape_mismatch (%d rows tried)", label, #tried)
  end
  if opts.explain then
    for _, x in ipairs(tried) do
      res[#res + 1] = { line = x.line, result = (best and x.line == res.line) and ("CHOSEN " .. x.why) or x.why }
    end
  end
  return res
end

return A
