-- Rows the consumer cannot reach (issue 19): for every row with a valid latency, the query a
-- simulator would make for it (its own shapes, dtypes and runtime values, on the route
-- op_mapping.yaml gives its kernel) and what the consumer would answer, through this
-- explorer's lookups (which follow the consumer, docs/rules.md, Lookups). A row is
-- unreachable when no query can carry its dtype spelling, when the consumer pairs its shape,
-- dtype and format slots differently from how they were written, when its attention query
-- cannot be normalised, or when its own query is answered by another row (it is shadowed).
local shape = require "perfscript.shape"
local match = require "perfscript.db.match"
local num = require "perfscript.num"

local Reach = {}
local D

-- How the consumer reaches a kernel: the first route of op_mapping.yaml that names it (as
-- primary kernel_type before as an alternate), as {mode, n, op}; compute with every slot when
-- no route names it (decomposer sub-queries compare every slot they are given).
function Reach.route(db, kernel)
  local ok, doc = pcall(require("perfscript.db.mapping").load, db)
  return Reach.route_in(ok and doc or nil, kernel)
end

-- The same from an op_mapping.yaml document (perfscript.db.mapping.read), or nil for none.
function Reach.route_in(doc, kernel)
  local mp = require "perfscript.db.mapping"
  local ops = doc and type(doc.operator_mappings) == "table" and doc.operator_mappings or {}
  local names = {}
  for op in pairs(ops) do names[#names + 1] = op end
  table.sort(names)
  local best
  for _, op in ipairs(names) do
    local e = ops[op]
    if type(e) == "table" and not e.composite and not e.zero_cost and not e.accepted_miss then
      for _, k in ipairs(mp.kernels(e)) do
        if k == kernel then
          local rank = (e.kernel_type == kernel and 0 or 1) * 2 + (op:match("^profiling%.") and 1 or 0)
          if not best or rank < best.rank then
            best = { rank = rank, op = op, mode = mp.mode(e), n = math.tointeger(e.tc_input_count),
                     full = e.project_full_shape and true or false, primary = e.kernel_type }
          end
        end
      end
    end
  end
  local mla, zero = false, false
  for _, op in ipairs(names) do
    local e = ops[op]
    if type(e) == "table" and e.composite and e.decomposer and op:match("latent_attention") then mla = true end
    if type(e) == "table" and (e.zero_cost or e.accepted_miss) and e.kernel_type == kernel then zero = true end
  end
  if not best then
    -- attention is read by its runtime fields whatever the mapping (as the grid and lookup do)
    return { mode = kernel == "FusedInferAttentionScore" and "attention_special" or "compute", op = nil, mla = mla,
             zero = zero, mapped = doc ~= nil }
  end
  if best.full then best.n = nil end
  best.mla, best.mapped = mla, true
  return best
end

-- Raw slots of a cell as written (empty slots kept), and the non-empty ones with their slot
-- numbers (what the consumer's parsers keep).
local function slots(cell)
  local raw = shape.split(cell or "")
  local kept, pos = {}, {}
  for i, s in ipairs(raw) do
    if s ~= "" then kept[#kept + 1] = s; pos[#pos + 1] = i end
  end
  return raw, kept, pos
end

-- Spelling check of one dtype as the consumer compares it: nil when fine, else why not.
local function spelling(d, where)
  local c = shape.dtype_consumer(d)
  if c == d then return nil end
  if c then return string.format("unknown dtype spelling %s in %s: the consumer asks for %s", d, where, c) end
  return string.format("unknown dtype spelling %s in %s: the consumer never asks for it", d, where)
end

-- The compute (and MoE) checks of a row (get(column) -> its cell, nil without the column):
-- dtype spelling and slot alignment over the slots the consumer compares (the first n with
-- tc_input_count); a list of reasons.
local function slot_problems(get, n)
  local out = {}
  local rawS, S, posS = slots(get(D.IS))
  local _, Dt, posD = slots(get(D.IDT) or "")
  local rawF, F, posF = slots(get(D.IF) or "")
  local c = n and math.min(n, #S) or #S
  if #Dt < c then
    out[#out + 1] = { kind = "misaligned slots",
                      why = string.format("%d shape slots compared but %d dtypes: the consumer never matches it", c, #Dt) }
  end
  local misaligned
  for j = 1, c do
    local p = posS[j]
    if posD[j] and posD[j] ~= p then
      local rawD = shape.split(get(D.IDT))
      if Dt[j] ~= rawD[p] or (F[j] or "ND") ~= (rawF[p] or "ND") then
        misaligned = string.format("empty shape slot before slot %d (%s): the consumer pairs it with dtype %s%s " ..
                                   "instead of %s%s%s", p, rawS[p], Dt[j],
                                   F[j] and (" " .. F[j]) or "", tostring(rawD[p]),
                                   rawF[p] and (" " .. rawF[p]) or "",
                                   n and "" or " (no tc_input_count in op_mapping.yaml cuts it)")
        break
      end
    elseif posF[j] and posF[j] ~= p and F[j] ~= rawF[p] and (F[j] == "FRACTAL_NZ" or rawF[p] == "FRACTAL_NZ") then
      misaligned = string.format("empty format slot shifts format %s onto shape slot %d (%s)", F[j], p, rawS[p])
      break
    end
  end
  if misaligned then out[#out + 1] = { kind = "misaligned slots", why = misaligned } end
  -- the dtypes the row means (by slot position), spelled as the consumer spells them
  local rawD = shape.split(get(D.IDT) or "")
  for j = 1, c do
    local d = rawD[posS[j]]
    local why = d and d ~= "" and spelling(d, "input slot " .. posS[j])
    if why then out[#out + 1] = { kind = "unknown dtype", why = why }; break end
  end
  return out
end

local function reason_text(kind, why) return kind .. ": " .. why end

-- q: the attention query slot of a row ((T,N,D), (B,N,1,D) or (T,H) normalise; docs/rules.md,
-- Lookups).
local shapes_of
local function attention_problems(get, route)
  local out = {}
  local raw = shape.split(get(D.IS) or "")
  local q = raw[1] and raw[1] ~= "" and shapes_of(raw[1])
  q = q and q[1]
  if not q or q.scalar or not (#q == 3 or #q == 2 or (#q == 4 and q[3] == 1)) then
    out[#out + 1] = { kind = "unconvertible layout",
                      why = string.format("query slot %s: the consumer normalises only (T,N,D), (B,N,1,D) and (T,H) " ..
                                          "(a %s query is never matched)", raw[1] or "(none)",
                                          q and not q.scalar and #q == 4 and "BNSD with S > 1" or "this") }
  end
  local d1 = match.list(get(D.IDT) or "")[1]
  local why = d1 and spelling(d1, "the query slot")
  if why then out[#out + 1] = { kind = "unknown dtype", why = why } end
  local sp = num.finite(get("Runtime sparse_mode") or "")
  local kvh = num.finite(get("Runtime num_key_value_heads") or "")
  if sp and sp ~= 3 and not (route.mla and sp == 0 and kvh == 1) then
    out[#out + 1] = { kind = "unreachable runtime",
                      why = string.format("Runtime sparse_mode %s: the attention path always asks 3%s", get("Runtime sparse_mode"),
                                          route.mla and " (MLA decode asks 0 with one KV head)" or
                                          " and no MLA decomposer in op_mapping.yaml asks 0") }
  end
  return out
end

-- The row the explorer's lookup answers for row i's own query, or nil, why.
local function own_answer(K, t, i, route)
  if route.mode == "elementwise" then
    local outs = t:column(D.OS) and t:shapes(t:cell(i, D.OS))
    if not outs or not outs[1] then return nil, "no output shape" end
    local od = t:column(D.ODT) and match.list(t:cell(i, D.ODT))[1]
    local dt = od and shape.dtype_consumer(od)
    local out = { outs[1].scalar and {} or outs[1] }
    if route.op then
      return require("perfscript.db.mapping").lookup(K.db, route.op, nil, nil, { out = out, out_dtype = dt })
    end
    return require("perfscript.db.mapping").elementwise_kernel(K, out, dt)
  elseif route.mode == "attention_special" then
    local q = K:own_query(i)
    if not q or not q.seq then return nil, "no avg_seq_len or query shape" end
    return require("perfscript.db.attention").lookup(K, q)
  end
  local shapes, dtypes = K:_inputs(i)
  if not shapes then return nil end  -- malformed Input Shapes: the lint has said so
  local opts = { n = route.n }
  if t:column("EP Size") and (route.mode == "moe_fused" or K.name == "DispatchFFNCombine") then
    opts.moe, opts.ep = true, math.tointeger(num.finite(t:cell(i, "EP Size")))
    if not opts.ep then return nil end  -- the lint flags the EP Size cell itself
  end
  -- the TC layout of the row's inputs, then the route (its kernels in order, tc_input_count)
  shapes, dtypes = match.tc_layout(K.name, shapes, dtypes)
  local res
  if route.op and (route.mode == "compute" or route.mode == "moe_fused" or route.mode == "mtp_projection") then
    local o = { ep = opts.ep }
    res = require("perfscript.db.mapping").lookup(K.db, route.op, shapes, dtypes, o)
  else
    res = K:lookup({ shapes = shapes }, dtypes, opts)
  end
  if res.miss == "shape_mismatch" then
    -- why this row does not match its own query: the first input and rule that failed
    opts.explain = true
    local ex = K:lookup({ shapes = shapes }, dtypes, opts)
    for _, x in ipairs(ex) do
      if x.row == i and x.result == "no" then res.row_reason = x["rule or first failure"] end
    end
  end
  return res
end

-- Would the linter call a row unreachable on its own cells (get(column) -> cell, nil without
-- the column), whatever the other rows? route: Reach.route's (mode, n, mla). Returns the
-- problems {kind, why} (empty when none): what db:lint reports as "unreachable: kind: why".
-- The grid asks it of each candidate (perfscript.grid.run) and skips the rows it flags.
function Reach.row_problems(get, route)
  if route.mode == "attention_special" then return attention_problems(get, route) end
  if route.mode == "elementwise" then return {} end
  return slot_problems(get, route.n)
end

-- For the grid: a checker of the rows it generates for the directory dir (its op_mapping.yaml
-- routes each kernel as db:lint does): check(kernel, get [, skeleton]) -> nil, or kind, why.
-- skeleton: shape.skeleton of the row's Input Shapes cell where the caller knows it (a grid's
-- rows of one pattern share it), so that it is not worked out per row. nil, true: every row
-- of the kernel with the same skeleton, Input Data Types and Input Formats is clean too.
function Reach.grid_checker(dir)
  require "perfscript.db"  -- installs the column names (D) when the grid has not opened a database
  local ok, doc = pcall(require("perfscript.db.mapping").read, dir)
  doc = ok and type(doc) == "table" and doc or nil
  -- without a mapping the routes (and the MLA decomposer) are unknown: the linter says only
  -- that the mapping is missing, so nothing is skipped
  if not doc then return function() return nil end end
  local routes, clean_rows = {}, {}
  return function(kernel, get, skeleton)
    local route = routes[kernel]
    if not route then route = Reach.route_in(doc, kernel); routes[kernel] = route; clean_rows[kernel] = {} end
    -- the compute checks read only which shape slots are empty, the dtype and the format
    -- cells: a row found clean is remembered by those (a grid's rows differ in dimensions only)
    -- (nested tables by skeleton, dtypes and formats: no key string made per row)
    local memo, fm
    if route.mode == "elementwise" then return nil, true end  -- row_problems finds none
    if route.mode ~= "attention_special" then
      local sk = skeleton
      if not sk then
        local is = get(D.IS)
        sk = is and shape.skeleton(is)  -- nil unless a plain cell (digits , ; ( ) only)
      end
      if sk then
        local by_sk = clean_rows[kernel][sk]
        if not by_sk then by_sk = {}; clean_rows[kernel][sk] = by_sk end
        local dt = get(D.IDT) or ""
        memo = by_sk[dt]
        if not memo then memo = {}; by_sk[dt] = memo end
        fm = get(D.IF) or ""
        if memo[fm] then return nil, true end
      end
    end
    local p = Reach.row_problems(get, route)[1]
    if p then return p.kind, p.why end
    if memo then memo[fm] = true; return nil, true end
    return nil
  end
end

-- Findings of one kernel into add(severity, line, column, problem).
function Reach.kernel(K, add)
  local t = K:table()
  if K.name:sub(1, 5) == "hcom_" or not t:column(D.IS) then return end
  local route = Reach.route(K.db, K.name)
  if route.mapped and not route.op then
    add("warning", nil, "op_mapping.yaml", string.format("no op in op_mapping.yaml routes %s%s: its rows are read only " ..
        "when a decomposer asks for it", K.name, route.zero and " (only as zero_cost or accepted_miss)" or ""))
  end
  for i = 1, #t do
    if K:latency(i) then
      local probs
      local function get(c) local j = t:column(c); return j and t:cell(i, j) or nil end
      if route.mode == "attention_special" then
        probs = attention_problems(get, route)
      elseif route.mode == "elementwise" then
        -- another spelling of the output dtype is still answered, through dtype scaling
        probs = {}
        local od = t:column(D.ODT) and match.list(t:cell(i, D.ODT))[1]
        local why = od and spelling(od, "output slot 1")
        if why then add("warning", t:line(i), D.ODT, why .. " (answered through dtype scaling, confidence 0.9)") end
      else
        probs = slot_problems(get, route.n)
      end
      for _, p in ipairs(probs) do add("error", t:line(i), D.IDT, "unreachable: " .. reason_text(p.kind, p.why)) end
      if #probs == 0 then
        local ok, res, why = pcall(own_answer, K, t, i, route)
        if not ok then
          add("error", t:line(i), nil, "unreachable: its own query fails: " ..
              tostring(type(res) == "table" and res.message or res))
        elseif not res then
          if why then add("error", t:line(i), nil, "unreachable: " .. why) end
        elseif res.miss then
          add("error", t:line(i), nil, "unreachable: its own query misses (" .. res.miss .. ")" ..
              (res.row_reason and (": " .. res.row_reason) or ""))
        elseif res.row ~= i or (res.kernel and res.kernel ~= K.name) then
          local other = res.kernel and res.kernel ~= K.name and K.db:kernel(res.kernel) or K
          add("error", t:line(i), nil, string.format("unreachable: shadowed by %sline %d: the consumer answers this row's own query with it (%s%s)",
                                                    other ~= K and (other.name .. " ") or "", other:table():line(res.row),
                                                    res.rule or route.mode,
                                                    other ~= K and (", " .. route.op .. " tries " .. other.name .. " first") or ""))
        end
      end
    end
  end
end

---------------------------------------------------------------------------------------------
-- Which row answers a query, over a set of rows kept in memory (the grid's check before it
-- appends a candidate, perfscript.grid.reach). Per query mode (docs/rules.md, Lookups):
--   elementwise  the first row whose first output shape matches (identity, leading-1 strip,
--                block padding, 3-D flatten) answers, whatever its dtype;
--   moe_fused    the first row whose inputs match (any rule) with the same EP Size;
--   attention    the nearest avg_seq_len among rows with the same dtype, heads, head dim,
--                sparse mode and KV heads and a T equal or block-padded either way; equally
--                near rows with other latencies make the lookup miss (require_semantic_unique;
--                docs/database.md, Order, duplicates and shadowing);
--   compute      the nearest rule distance, the first row of the earliest kernel of the
--                candidate list among equals, on the first tc_input_count inputs.
-- The matching rules are perfscript.db.match's, as the lookups above use them.

-- The consumer's spelling of each dtype it maps from torch (DT_BF16, INT8, FLOAT, ...).
local CONSUMER = {}
for _, v in pairs(match.DTYPE_MAP) do CONSUMER[v] = true end

-- misspelled(name) -> the consumer's spelling when `name` is another spelling of a dtype the
-- consumer knows (DT_INT8 for INT8, BF16 for DT_BF16), else nil.
function Reach.misspelled(name)
  if CONSUMER[name] then return nil end
  local bare = name:match("^DT_(.+)$")
  if bare and CONSUMER[bare] then return bare end
  if CONSUMER["DT_" .. name] then return "DT_" .. name end
  return nil
end

-- First misspelled dtype in a ';' list cell: name, fix; or nil.
function Reach.check_dtypes(cell)
  for _, d in ipairs(shape.split(cell or "")) do
    d = d:gsub("^[%s\"]+", ""):gsub("[%s\"]+$", "")
    local fix = d ~= "" and Reach.misspelled(d)
    if fix then return d, fix end
  end
  return nil
end

---------------------------------------------------------------------------------------------
-- Rows as the consumer parses them: empty shape slots and empty names dropped, "()" a scalar.

local function clean(cell)
  cell = cell or ""
  if cell:find('[%s"]') then cell = cell:gsub('^[%s"]+', ""):gsub('[%s"]+$', "") end
  return cell
end

-- The plain form ("4096,7168;;1", quoted or not) is read in C (perfscript.shape.parse_plain:
-- the same integers as below, empty slots dropped); other text takes the general path.
local parse_plain = shape.parse_plain
function shapes_of(cell)
  local fast = cell and parse_plain(cell)
  if fast then return fast end
  local out = {}
  for _, part in ipairs(shape.split(clean(cell))) do
    part = part:gsub("^%s+", ""):gsub("%s+$", "")
    if part == "()" then
      out[#out + 1] = { scalar = true }
    elseif part ~= "" then
      local dims = {}
      for d in part:gmatch("[^,]+") do
        local v = num.int(d)  -- the consumer's int() of each dimension
        if not v then return nil end
        dims[#dims + 1] = v
      end
      out[#out + 1] = dims
    end
  end
  return out
end

local split = shape.split
local function split_names(cell)
  if not cell:find('[%s"]') then  -- nothing to strip: the split's items as they are
    local out, n, parts = {}, 0, split(cell)
    for i = 1, #parts do
      local p = parts[i]
      if p ~= "" then n = n + 1; out[n] = p end
    end
    return out
  end
  local out = {}
  for _, p in ipairs(shape.split(clean(cell))) do
    p = p:gsub("^%s+", ""):gsub("%s+$", "")
    if p ~= "" then out[#out + 1] = p end
  end
  return out
end

-- names_of(cell) -> the cell's names, shared between calls (read only): a file's rows and a
-- grid's candidates repeat a handful of dtype and format cells (31 slots of attention rows).
local names_cached = require("perfscript.memo").bounded(split_names)
local function names_of(cell) return names_cached(cell or "") end

-- FRACTAL_NZ [..., H, W, bh, bw] -> [..., H*bw, W*bh] (4-D and more; the consumer's restore).
local function nz_restore(s)
  if s.scalar or #s < 4 then return s end
  local n, out = #s, {}
  for i = 1, n - 4 do out[i] = s[i] end
  out[#out + 1] = s[n - 3] * s[n]
  out[#out + 1] = s[n - 2] * s[n - 1]
  return out
end

-- The cells view reads of a row, per mode.
local INPUTS = { "Input Shapes", "Input Data Types", "Input Formats" }
Reach.VIEW_COLS = {
  elementwise = { "Output Shapes" },
  attention = { INPUTS[1], INPUTS[2], INPUTS[3], "Runtime avg_seq_len", "avg_seq_len", "Runtime sparse_mode",
                "Runtime num_key_value_heads" },
  moe_fused = { INPUTS[1], INPUTS[2], INPUTS[3], "EP Size" },
  compute = { INPUTS[1], INPUTS[2], INPUTS[3], "EP Size" },
}

-- view(get, mode, n) -> the parts of a row a lookup compares (mode: elementwise, attention,
-- moe_fused or compute; n: tc_input_count); get(column) -> cell text; nil when no query can
-- read the row.
function Reach.view(get, mode, n)
  local v = {}
  if mode == "elementwise" then
    local outs = shapes_of(get("Output Shapes"))
    v.out = outs and outs[1]
    return v.out and v or nil
  end
  local ins = shapes_of(get("Input Shapes"))
  if not ins then return nil end
  local dts, fms = names_of(get("Input Data Types")), names_of(get("Input Formats"))
  if mode == "attention" then
    local q = ins[1]
    if not q or q.scalar then return nil end
    if #q == 4 and q[3] == 1 then q = { q[1], q[2], q[4] } end
    if #q ~= 3 then return nil end  -- the consumer cannot read it: no query finds the row
    local avg = num.finite(clean(get("Runtime avg_seq_len"))) or num.finite(clean(get("avg_seq_len")))
    if not avg then return nil end
    v.T = q[1]
    v.key = table.concat({ dts[1] or "", q[2], q[3], clean(get("Runtime sparse_mode")),
                           clean(get("Runtime num_key_value_heads")), math.floor(avg) }, "|")
    return v
  end
  if n then for i = #ins, n + 1, -1 do ins[i] = nil end end
  for i = 1, #ins do
    if fms[i] == "FRACTAL_NZ" then ins[i] = nz_restore(ins[i]) end
  end
  -- the consumer compares the dtype of each input it has a shape for, never the ones after
  -- (AddRmsNormBias's DT_UNDEFINED beta of an empty slot): the view's own list of those
  dts = table.move(dts, 1, math.min(#dts, #ins), 1, {})
  v.shapes, v.dtypes, v.ep = ins, dts, clean(get("EP Size"))
  return v
end

local concat = table.concat

-- A slot's text in a key (match.shapes_text's, one slot).
local function slot_text(s) return s.scalar and "()" or concat(s, ",") end

local function key_of(shapes, dtypes)
  return match.shapes_text(shapes) .. "|" .. concat(dtypes, ";")
end

-- Elementwise: does a row with first output `csv` answer a query with output `q`? (Scalars are
-- never compared here: a grid candidate with a scalar output is always kept.)
local strip1, out_rule_answers = match.strip1, match.out_answers
local function out_answers(q, csv)
  if q.scalar or csv.scalar then return false end
  return out_rule_answers(strip1(q), csv)
end

-- A set of the rows a lookup can return, for one kernel. Elementwise and MoE rows are also
-- filed in buckets (index_keys) so that answers() tests only the rows that could answer, not
-- every row of the set: a candidate against the 20k rows of a real file was quadratic.
local Set = {}
Set.__index = Set

-- Buckets of 64 along a dimension: a row whose dimension x answers a query's q (equal or
-- block-padded: q - 64 < x <= q, match.padded) lies in bucket (q - 1) // 64 or (q - 64) // 64.
local BUCKET = 64
local function bucket(x) return (x - 1) // BUCKET end

-- The bucket key of a shape (rank and each dimension's bucket), or "s" for a scalar.
local function shape_key(s)
  if s.scalar then return "s" end
  local parts = { #s }
  for i = 1, #s do parts[i + 1] = bucket(s[i]) end
  return table.concat(parts, ",")
end

-- Every bucket key a row answering query shape q can have (2^rank at most: each dimension's
-- own bucket and the one below where the padding window crosses a bucket edge).
local function query_keys(q)
  if q.scalar then return { "s" } end
  local keys = { tostring(#q) }
  for i = 1, #q do
    local hi, lo = bucket(q[i]), bucket(q[i] - BUCKET + 1)
    local n = #keys
    for k = 1, n do
      local base = keys[k]
      keys[k] = base .. "," .. hi
      if lo ~= hi then keys[#keys + 1] = base .. "," .. lo end
    end
  end
  return keys
end

-- MoE rows are filed by EP Size, input count and their first input (as it is and with a
-- leading 1 stripped) where every rule of the kernel compares the stripped query input with one
-- of those up to block padding, or flattened to 2-D (match.rule without the transposes and the
-- singleton transpose, and for a query the kernel does not rewrite: match.normalize).
local function moe_indexed(kernel)
  return not (match.MATMUL[kernel] or match.ROPE[kernel] or match.SWIGLU[kernel]
              or match.RESHAPE_AND_CACHE[kernel] or kernel == "Index")
end

-- The bucket keys a query's first input tc can meet in a row that answers it (kernel: the
-- flatten and merge rules of match.rule).
local function moe_query_keys(kernel, tc)
  if tc.scalar then return { "s" } end
  local st = strip1(tc)
  local keys = query_keys(st)
  local s3 = #st == 3 and st or #tc == 3 and tc or nil
  if s3 and match.FLATTEN_3D[kernel] then
    for _, k in ipairs(query_keys({ s3[1] * s3[2], s3[3] })) do keys[#keys + 1] = k end
    if match.MERGE_LAST[kernel] then
      for _, k in ipairs(query_keys({ s3[1], s3[2] * s3[3] })) do keys[#keys + 1] = k end
    end
  end
  return keys
end

local function file(index, key, v)
  local b = index[key]
  if not b then b = {}; index[key] = b end
  if b[#b] ~= v then b[#b + 1] = v end
end

-- answer_set(kernel, mode) -> an empty set; set:add(view), set:answers(view, kernel). A
-- compute set may also hold set.ckeys (perfscript.gridscan's keys of rows added in C:
-- ckeys:has(key_of(...) .. "|" .. ep)).
function Reach.answer_set(kernel, mode)
  return setmetatable({ kernel = kernel, mode = mode, list = {}, keys = {}, index = {}, outs = {},
                        moe_index = mode == "moe_fused" and moe_indexed(kernel) }, Set)
end

function Set:add(v)
  local list = self.list
  list[#list + 1] = v
  if v.key then
    -- attention: the T values of a key, each once, in buckets (t_compatible: within 64)
    local b = self.keys[v.key]
    if not b then b = { seen = {} }; self.keys[v.key] = b end
    local t = v.T
    if not b.seen[t] then
      b.seen[t] = true
      local k = bucket(t)
      local tb = b[k]
      if not tb then tb = {}; b[k] = tb end
      tb[#tb + 1] = t
    end
  elseif v.shapes then
    self.keys[key_of(v.shapes, v.dtypes) .. "|" .. v.ep] = true
    if self.moe_index then
      local pre, s = v.ep .. "|" .. #v.shapes .. "|", v.shapes[1]
      if not s then file(self.index, pre .. "-", v)
      else
        file(self.index, pre .. shape_key(s), v)
        local st = strip1(s)
        if st ~= s then file(self.index, pre .. shape_key(st), v) end
      end
    end
  elseif v.out and not v.out.scalar then
    -- filed under its first output and under that output with a leading 1 stripped (the
    -- rule compares both); a row whose output is already filed answers nothing new
    local o = v.out
    local text = concat(o, ",")
    if self.outs[text] then return end
    self.outs[text] = true
    file(self.index, shape_key(o), v)
    local s = strip1(o)
    if s ~= o then file(self.index, shape_key(s), v) end
  end
end

-- The rows of the elementwise index that could answer query output q (a superset; the rule
-- decides). Calls f(row) for each until it returns true.
local function elementwise_any(index, q, f)
  for _, k in ipairs(query_keys(q)) do
    local b = index[k]
    if b then for _, r in ipairs(b) do if f(r) then return true end end end
  end
  if #q == 3 then  -- a 3-D query flattened to (B*M, D) against 2-D rows
    for _, k in ipairs(query_keys({ q[1] * q[2], q[3] })) do
      local b = index[k]
      if b then for _, r in ipairs(b) do if f(r) then return true end end end
    end
  end
  return false
end

-- answers(v) -> true when a row of this set is returned for v's own query (v loses).
local PARTS, SPARTS = {}, {}  -- scratch of Set:answers (read up to their count only)

-- Whether a compute key of slot texts parts (or, with a leading 1 stripped, sparts) is held.
local function found(keys, ck, parts, sparts, n, stripped_any, suffix)
  local k = concat(parts, ";", 1, n) .. suffix
  if keys[k] or (ck and ck:has(k)) then return true end
  if stripped_any then
    k = concat(sparts, ";", 1, n) .. suffix
    if keys[k] or (ck and ck:has(k)) then return true end
  end
  return false
end
function Set:answers(v, kernel)
  local mode = self.mode
  if mode == "elementwise" then
    local q = v.out
    -- scalars are never compared (out_answers is false for them)
    if q.scalar then return false end
    local sq = strip1(q)
    return elementwise_any(self.index, sq, function(r) return out_answers(q, r.out) end)
  elseif mode == "attention" then
    local b = self.keys[v.key]
    if b then
      local T = v.T
      for k = bucket(T - BUCKET + 1), bucket(T + BUCKET - 1) do
        local tb = b[k]
        if tb then for _, t in ipairs(tb) do if match.t_compatible(T, t) then return true end end end
      end
    end
    return false
  elseif mode == "moe_fused" then
    local q = { shapes = v.shapes, dtypes = v.dtypes }
    if self.moe_index and kernel == self.kernel then
      local pre, s = v.ep .. "|" .. #v.shapes .. "|", v.shapes[1]
      local keys = s and moe_query_keys(kernel, s) or { "-" }
      local seen = {}
      for _, k in ipairs(keys) do
        local b = self.index[pre .. k]
        if b and not seen[b] then
          seen[b] = true
          for _, r in ipairs(b) do
            if match.row(kernel, q, r.shapes, r.dtypes, true) then return true end
          end
        end
      end
      return false
    end
    for _, r in ipairs(self.list) do
      if r.ep == v.ep and match.row(kernel, q, r.shapes, r.dtypes) then return true end
    end
    return false
  end
  -- compute: an equally good (distance 0) row found first; index lookups over the rule variants
  -- (the keys key_of makes: each slot's text, remembered per slot table, as the variants share
  -- the slots they do not change)
  local keys, ck, suffix = self.keys, self.ckeys, "|" .. concat(v.dtypes, ";") .. "|" .. v.ep
  local variants = match.variants(kernel, v.shapes)
  if #variants == 1 then  -- the query's own shapes only (most kernels): no per-slot memo
    local shapes, parts, sparts = variants[1], PARTS, SPARTS
    local n, stripped_any = #shapes, false
    for i = 1, n do
      local s = shapes[i]
      local t = slot_text(s)
      parts[i] = t
      if not s.scalar and #s > 1 and s[1] == 1 then stripped_any = true; t = concat(s, ",", 2, #s) end
      sparts[i] = t
    end
    return found(keys, ck, parts, sparts, n, stripped_any, suffix)
  end
  local texts, stexts, parts, sparts = {}, {}, {}, {}
  for _, shapes in ipairs(variants) do
    local n, stripped_any = #shapes, false
    for i = 1, n do
      local s = shapes[i]
      local t = texts[s]
      if not t then
        t = slot_text(s)
        texts[s] = t
        -- match.strip1's slot, as text: one leading 1 of a rank > 1 shape dropped
        stexts[s] = (not s.scalar and #s > 1 and s[1] == 1) and concat(s, ",", 2, #s) or false
      end
      parts[i] = t
      local st = stexts[s]
      if st then stripped_any = true; t = st end
      sparts[i] = t
    end
    if found(keys, ck, parts, sparts, n, stripped_any, suffix) then return true end
  end
  return false
end

function Reach.install(db) D = db end

return Reach
