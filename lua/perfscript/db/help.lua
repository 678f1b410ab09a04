-- The REPL's help on a database: the banner `perfscript --db DIR` prints, help("lookup") with
-- one working example per kernel family (made from the open database's own rows, so each
-- example hits), and help on the database and on one kernel type.
local match = require "perfscript.db.match"
local R = require "perfscript.db.result"

local H = {}

local function q(s) return string.format("%q", s) end

-- The first row of kernel K with a valid latency, or nil.
local function first_measured(K)
  local ok, t = pcall(K.table, K)
  if not ok then return nil end
  for i = 1, #t do if K:latency(i) then return i end end
  return nil
end

-- A lookup call for row i of K that the lookup answers with (the row's own query, written
-- out), or nil.
local function example_for(K, i)
  local ok, query = pcall(K.own_query, K, i)
  if not ok or not query then return nil end
  local name = K.name
  if query.bytes then
    return string.format("db:lookup(%s, {bytes = %s, devices = %s})", q(name), R.fmt(query.bytes), R.fmt(query.devices))
  elseif query.seq then
    local parts = { "q = " .. q(table.concat(query.q, ",")), "seq = " .. query.seq }
    if query.dtype then parts[#parts + 1] = "dtype = " .. q(query.dtype) end
    if query.sparse_mode then parts[#parts + 1] = "sparse_mode = " .. R.fmt(query.sparse_mode) end
    if query.kv_heads then parts[#parts + 1] = "kv_heads = " .. R.fmt(query.kv_heads) end
    if query.layout then parts[#parts + 1] = "layout = " .. q(query.layout) end
    if query.head_dim then parts[#parts + 1] = "head_dim = " .. query.head_dim end
    return string.format("db:lookup(%s, {%s})", q(name), table.concat(parts, ", "))
  end
  local extra = {}
  if query.n then extra[#extra + 1] = "n = " .. query.n end
  if query.ep then extra[#extra + 1] = "ep = " .. query.ep end
  local dt = query.dtypes and table.concat(query.dtypes, ";")
  if #extra == 0 then
    return string.format("db:lookup(%s, %s%s)", q(name), q(match.shapes_text(query.shapes)), dt and (", " .. q(dt)) or "")
  end
  return string.format("db:lookup(%s, {shapes = %s%s, %s})", q(name), q(match.shapes_text(query.shapes)),
                       dt and (", dtypes = " .. q(dt)) or "", table.concat(extra, ", "))
end

-- The kernel families of a lookup, in the order help("lookup") shows them: a predicate on
-- (kernel, row) and how its example is written.
local FAMILIES = {
  { name = "matmul (compute exact match)", tc_op = true, pick = function(K) return match.MATMUL[K.name] and not K:table():column("EP Size") and
      not (K:table():column("Input Formats") and K:table():cell(1, "Input Formats"):find("FRACTAL_NZ")) end },
  { name = "FRACTAL_NZ weights: the row's own cells with its formats", nz = true,
    pick = function(K) local t = K:table(); return t:column("Input Formats") and t:cell(1, "Input Formats"):find("FRACTAL_NZ") end },
  { name = "MoE (EP Size: ep is required)", pick = function(K) return K:table():column("EP Size") end },
  { name = "attention (runtime filters; sparse_mode defaults to 3)",
    pick = function(K) local t = K:table(); return t:column("Runtime avg_seq_len") or t:column("avg_seq_len") end },
  { name = "norm, quant, rope (compute; n = tc_input_count)", pick = function(K) return match.FLATTEN_3D[K.name] or match.ROPE[K.name] end },
  { name = "elementwise (the output shape is the key)", out = true,
    pick = function(K) return require("perfscript.db.reach").route(K.db, K.name).mode == "elementwise" end },
  { name = "communication (message bytes, devices)", pick = function(K) return K:table():column("message_bytes") end },
}

-- Does the lookup written in code answer (a measured latency)?
local function hits(db, code)
  local chunk = load("local db = ...; return " .. code)
  local ok, res = pcall(chunk, db)
  return ok and type(res) == "table" and res.latency ~= nil
end

-- One example per family present in db: {family, code}.
function H.examples(db)
  local out, used = {}, {}
  for _, f in ipairs(FAMILIES) do
    for _, name in ipairs(db:names()) do
      local K = db:kernel(name)
      local ok, yes = pcall(f.pick, K)
      if ok and yes and not used[name] then
        local i = first_measured(K)
        local code
        if i and f.nz then
          local rec = K:_row_record(i)
          code = string.format("db:lookup(%s, {shapes = %s, dtypes = %s, formats = %s})", q(name), q(rec["Input Shapes"]),
                               q(rec["Input Data Types"] or ""), q(rec["Input Formats"]))
        elseif i and f.out then
          local t = K:table()
          local outs = t:column("Output Shapes") and t:shapes(t:cell(i, "Output Shapes"))
          local od = t:column("Output Data Types") and match.list(t:cell(i, "Output Data Types"))[1]
          if outs and outs[1] and not outs[1].scalar then
            code = string.format("db:lookup(%s, {out = %s%s})", q(name), q(table.concat(outs[1], ",")),
                                 od and (", out_dtype = " .. q(od)) or "")
          end
        elseif i then
          code = example_for(K, i)
        end
        if code and hits(db, code) then
          out[#out + 1] = { family = f.name, code = code }
          used[name] = true
          -- the first compute example again through its TC op: the op's kernels in order
          local op = f.tc_op and require("perfscript.db.reach").route(db, name).op
          local tc = op and code:gsub("^db:lookup%(%b\"\"", "db:lookup(" .. q(op), 1)
          if tc and hits(db, tc) then
            out[#out + 1] = { family = "a TC op of op_mapping.yaml (its kernels in the consumer's order)", code = tc }
          end
          break
        end
      end
    end
  end
  return out
end

local STATIC = {
  'db:lookup("MatMulV2", "128,7168;2048,7168", "DT_BF16")',
  'db:lookup("GroupedMatmul", {shapes = "16,7168;32,128,448,16,32", dtypes = "INT8;INT8", formats = "ND;FRACTAL_NZ"})',
  'db:lookup("FusedInferAttentionScore", {q = "2,128,512", seq = 2048, sparse_mode = 0})',
  'db:lookup("Add", {out = "128,7168"})',
}

-- help("lookup")
function H.lookup(db)
  local lines = {
    "db:lookup(kernel, shapes, dtypes, opts) answers as the consumer does. shapes: \"a,b;c\" or {{a, b}, {c}};",
    "dtypes: \"DT_BF16;INT8\", {\"bfloat16\", ...} or one name for every input. Options (also inside a query",
    "table): explain = true (every row's verdict), formats = \"ND;FRACTAL_NZ\" (shapes written as a row's,",
    "FRACTAL_NZ restored), n = tc_input_count, ep = EP Size, out = output shape (elementwise).",
    "db:lookup(kernel, db:rows(kernel)[i]) asks a row's own query: a row always finds itself.",
    "A miss names what excluded the rows (no valid latency, dtype, EP Size, an attention filter, ...).",
    "",
  }
  if db then
    lines[#lines + 1] = "Examples from " .. db:dir() .. " (each hits):"
    for _, e in ipairs(H.examples(db)) do
      lines[#lines + 1] = "  -- " .. e.family
      lines[#lines + 1] = "  " .. e.code
    end
  else
    lines[#lines + 1] = "Examples (on the bundled seed database; open one with perfscript --db DIR):"
    for _, c in ipairs(STATIC) do lines[#lines + 1] = "  " .. c end
  end
  return table.concat(lines, "\n")
end

function H.coverage()
  return table.concat({
    "db:coverage(kernel, axis, fixed): the values measured along an axis, bucket by bucket (a bucket = the",
    "other axes and the dtypes fixed, as the consumer interpolates), with gaps judged against the axis",
    "density standard (perfscript.db.density). Axes: M, K, N (matmul), tokens, hidden, axis_0, seq, batch,",
    "bytes, in<slot>.<dim>. A one-point bucket has no gap to measure: it says so.",
    "  db:coverage(\"MatMulV2\", \"M\")                          every bucket along M",
    "  db:coverage(\"MatMulV2\", \"M\", {K = 7168, N = 2048})    one bucket's values in detail",
    "The page: build/perfscript recipes/db_coverage.lua --database-path DIR --html coverage.html",
  }, "\n")
end

function H.lint()
  return table.concat({
    "db:lint([kernel]): cells that crash or mislead the consumer, and rows it can never answer with.",
    "The findings print grouped by kind (count, one example line); r = db:lint() keeps every finding:",
    "  r = db:lint()            then   save(r, \"lint.csv\")",
    "  db:lint(\"GroupedMatmul\")",
    "The recipe: build/perfscript recipes/db_lint.lua --database-path DIR [--verbose] [--csv findings.csv]",
  }, "\n")
end

function H.save()
  return table.concat({
    "save(rows, path): writes a query result (or an array of rows) to a CSV file, atomically.",
    "A result is what a query returns: keep it in a variable, then save it:",
    "  r = db:rows(\"MatMulV2\")   then   save(r, \"rows.csv\")",
  }, "\n")
end

-- The database's summary: kernel files, rows (with a valid latency), the stack of its path.
function H.summary(db)
  local rows, valid, bad = 0, 0, 0
  for _, name in ipairs(db:names()) do
    local K = db:kernel(name)
    local ok, lat = pcall(K.latencies, K)
    if ok then
      rows = rows + #lat
      for i = 1, #lat do if lat[i] then valid = valid + 1 end end
    else
      bad = bad + 1
    end
  end
  local parts = require("perfscript.dbpath").split(db:dir())
  local stack = parts and string.format("device %s, vLLM %s, torch %s, CANN %s%s", parts.device, parts.vllm, parts.torch,
                                        parts.cann, parts.suffix and (" (" .. parts.suffix .. ")") or "") or
                "not a <root>/<DEVICE>/vllm_ascend/vllm<V>_torch<T>_cann<C> path"
  local lines = {
    string.format("database %s", db:dir()),
    string.format("  %d kernel files, %d rows (%d with a valid latency, %d without)%s", #db:names(), rows, valid,
                  rows - valid, bad > 0 and string.format("; %d files unreadable (db:kernels() says why)", bad) or ""),
    "  stack: " .. stack,
  }
  local comm = db._comm_dir and require("lfs").attributes(db._comm_dir, "mode") == "directory"
  lines[#lines + 1] = string.format("  op_mapping.yaml: %s%s", db._mapping and "yes" or "none",
                                    db._comm_ref and (comm and (", communication data " .. db._comm_dir) or
                                      (", communication_data_ref " .. db._comm_ref .. " (not there)")) or "")
  return table.concat(lines, "\n")
end

function H.banner(db)
  return H.summary(db) .. "\n  `db` is the database: help() lists the queries, help(\"lookup\") shows examples, db.<Tab> the kernel types"
end

-- help(db.MatMulV2) / help("MatMulV2")
function H.kernel(K)
  local t = K:table()
  local lat = K:latencies()
  local valid = 0
  for i = 1, #lat do if lat[i] then valid = valid + 1 end end
  local lines = {
    string.format("kernel %s: %d rows (%d with a valid latency), %s", K.name, #t, valid, K.path),
    "  axes: " .. table.concat(require("perfscript.db.analysis").axes(K), ", "),
    string.format("  queries: db.%s:rows(filter), :lookup(shapes, dtypes), :nearest(q, n), :coverage(axis), :interp(q), :dups(), :outliers()", K.name),
  }
  local i = first_measured(K)
  local code = i and example_for(K, i)
  if code then lines[#lines + 1] = "  example: " .. code end
  return table.concat(lines, "\n")
end

return H
