-- The shape-grid pipeline over one database directory (docs/rules.md, Shape grids; the
-- Python original's defects fixed). Per CSV:
--   route -> template row (the first, or one per kernel variant) -> candidates (constraints)
--   -> slot alignment and absent-slot clearing -> memory filter (each slot's own dtype)
--   -> dedup within the generated set -> deterministic sample (seeded by seed and kernel
--   type, independent of the rows already in the file) -> rows that already exist dropped
--   -> rows the consumer would never answer with dropped (perfscript.grid.reach: shadowed by
--   an earlier row, or unreadable) -> appended, sorted by shape (largest first for kernels
--   whose first matching row wins), under the database lock. Every file is staged (written
--   beside its target) and all are committed together once every file is computed, so an
--   error leaves the database wholly old (docs/rules.md, All-or-nothing writes). Existing rows are
--   never touched or reordered; a file with nothing to append is not rewritten. Templates
--   whose dtype cells spell a dtype otherwise than the consumer (DT_INT8 for INT8) are refused.
local perf = require "perfscript"
local lfs = require "lfs"
local paths = require "perfscript.path"
local mem = require "perfscript.mem"
local shape = require "perfscript.shape"
local cells = require "perfscript.grid.cells"
local expand = require "perfscript.grid.expand"
local route = require "perfscript.grid.route"
local reach = require "perfscript.grid.reach"
local models = require "perfscript.grid.models"

local M = {}

-- Columns a generated row takes from the template (the kernel variant's identity).
local INHERIT = { ["OP State"] = true, ["Accelerator Core"] = true,
                  ["Input Data Types"] = true, ["Input Formats"] = true,
                  ["Output Data Types"] = true, ["Output Formats"] = true }
local ABSENT = { [""] = true, NULL = true, NONE = true, UNDEFINED = true, DT_UNDEFINED = true }

---------------------------------------------------------------------------------------------
-- Deterministic sampling: SplitMix64 seeded with FNV-1a 64 of (seed, kernel type).

local function fnv1a(s)
  local h = -3750763034362895579  -- 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 1099511628211 end
  return h
end

function M.rng(seed, kernel)
  local state = fnv1a(tostring(seed) .. "\0" .. kernel)
  return function(n)  -- uniform integer in [1, n]
    state = state + -7046029254386353131  -- 0x9E3779B97F4A7C15
    local z = state
    z = (z ~ (z >> 30)) * -4658895280553007687  -- 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * -7723592293110705685  -- 0x94D049BB133111EB
    z = z ~ (z >> 31)
    return (z >> 1) % n + 1  -- 63 random bits; the modulo bias is below n / 2^63
  end
end

-- Picks k of n indices (partial Fisher-Yates), returned ascending.
function M.sample(n, k, seed, kernel)
  local rand, idx = M.rng(seed, kernel), {}
  for i = 1, n do idx[i] = i end
  for i = 1, k do
    local j = i - 1 + rand(n - i + 1)
    idx[i], idx[j] = idx[j], idx[i]
  end
  local out = table.move(idx, 1, k, 1, {})
  table.sort(out)
  return out
end

-- Like M.sample, drawing until k indices pass ok (every index when ok is nil): the first k
-- draws are M.sample's, so where every index passes the result is the same.
function M.sample_where(n, k, seed, kernel, ok)
  if not ok then return M.sample(n, k, seed, kernel) end
  local rand, idx, out = M.rng(seed, kernel), {}, {}
  for i = 1, n do idx[i] = i end
  local i = 0
  while #out < k and i < n do
    i = i + 1
    local j = i - 1 + rand(n - i + 1)
    idx[i], idx[j] = idx[j], idx[i]
    if ok(idx[i]) then out[#out + 1] = idx[i] end
  end
  table.sort(out)
  return out
end

-- k of n positions spread evenly over 1..n, both ends included (k <= n).
function M.spread(n, k)
  if k <= 0 then return {} end
  if k == 1 then return { 1 } end
  local out = {}
  for i = 0, k - 1 do out[i + 1] = 1 + (i * (n - 1)) // (k - 1) end
  return out
end

---------------------------------------------------------------------------------------------
-- Helpers

-- Slot indices whose dtype or format entry says "absent", per (dtypes, formats) pair.
local absent_cache = {}  -- a handful of distinct cells per run
local function absent_slots(dtypes, formats)
  local by_dt = absent_cache[dtypes]
  if not by_dt then by_dt = {}; absent_cache[dtypes] = by_dt end
  local list = by_dt[formats]
  if list then return list end
  list = {}
  local dt, fm = shape.split(dtypes), shape.split(formats)
  for j = 1, math.max(#dt, #fm) do
    if (dt[j] and ABSENT[dt[j]:upper()]) or (fm[j] and ABSENT[fm[j]:upper()]) then list[#list + 1] = j end
  end
  by_dt[formats] = list
  return list
end

-- Empties shape j when its dtype or format entry says the slot is absent (template layout wins).
local function clear_absent(shapes, dtypes, formats)
  local list = absent_slots(dtypes, formats)
  for i = 1, #list do
    local j = list[i]
    if j <= #shapes then shapes[j] = {} end
  end
end

local function align(shapes, k)
  for i = #shapes + 1, k do shapes[i] = {} end
  return shapes
end

local csv_field = perf.csv.quote

-- Recursive *.csv list (without our temp files), sorted component-wise.
function M.discover(dir)
  local out = {}
  paths.walk(dir, function(p, name, mode, rel)
    if mode == "file" and name:sub(-4) == ".csv" and not name:find(".tmp.", 1, true) then
      out[#out + 1] = { path = p, dir = paths.dirname(p), name = rel, kernel = name:sub(1, -5) }
    end
  end, { follow = true })
  return out
end

---------------------------------------------------------------------------------------------
-- One file


-- Reads header, template and the signature set of the existing rows.
-- The identity of a row's kernel variant: the template cells a generated row inherits.
local VARIANT = { "OP State", "Accelerator Core", "Input Data Types", "Input Formats",
                  "Output Data Types", "Output Formats" }

-- Reads header, templates and the signature set of the existing rows. The template is the
-- first row; with variants, the first row of every distinct VARIANT combination, in file order.
local gridscan = require "perfscript.gridscan"

-- The header's column indexes and the templates as tables keyed by column name.
local function columns_and_templates(header, templates)
  local col = {}
  for i, h in ipairs(header) do if col[h] == nil then col[h] = i end end
  for t, row in ipairs(templates) do
    local trow = {}
    for name, i in pairs(col) do trow[name] = row[i] or "" end
    templates[t] = trow
  end
  return col
end

-- The same in one C pass (perfscript.gridscan): no Lua table per existing row; with key_n
-- (reach.key_n) the compute keys of the rows come back as a C set (csv.ckeys) and only rows
-- not in the plain form as tables. A file the C pass cannot read goes the Lua way (load_lua
-- says why, in the reader's words).
local load_lua
-- reach_cols: the cells of the existing rows reach.begin reads (kept column by column:
-- kept[name][i], kept.n rows).
local function load_csv(path, kernel, variants, key_n, reach_cols)
  local sc = gridscan.scan(path, { op = kernel, variants = variants, variant_cols = VARIANT,
                                   reach_cols = reach_cols, key_n = key_n })
  if not sc then return load_lua(path, kernel, variants, reach_cols) end
  local header = sc.header
  if #header == 0 then return nil, "empty file" end
  local col = columns_and_templates(header, {})
  if not col["Input Shapes"] then return nil, "no 'Input Shapes' column" end
  if #sc.templates == 0 then return nil, "no template row" end
  columns_and_templates(header, sc.templates)
  return { header = header, col = col, templates = sc.templates, existing = sc.existing, rows = sc.nrows,
           eol = sc.eol, kept = sc.rows, ckeys = sc.keys }
end

function load_lua(path, kernel, variants, reach_cols)
  local r, err = perf.csv.open(path, { header = true, reuse = true })
  if not r then return nil, err end
  local header = r:header()
  if #header == 0 then r:close(); return nil, "empty file" end
  local col = {}
  for i, h in ipairs(header) do if col[h] == nil then col[h] = i end end
  if not col["Input Shapes"] then r:close(); return nil, "no 'Input Shapes' column" end
  local eol = r:style()  -- the header's line ending (asked now: the last line may have none)
  local vcols = {}
  for _, name in ipairs(VARIANT) do vcols[#vcols + 1] = col[name] end
  local existing, templates, seen_variant, nrows = {}, {}, {}, 0
  local key = cells.record_keyer(header, kernel)
  local parts, kept = {}, { n = 0 }
  local rcols = {}
  for _, name in ipairs(reach_cols) do kept[name] = {}; rcols[name] = col[name] end
  for f in r:lines() do
    nrows = nrows + 1
    for name, c in pairs(rcols) do kept[name][nrows] = f[c] end
    if nrows == 1 or variants then
      for i, c in ipairs(vcols) do parts[i] = f[c] or "" end
      local v = table.concat(parts, "\0", 1, #vcols)
      if not seen_variant[v] then
        seen_variant[v] = true
        templates[#templates + 1] = table.move(f, 1, #f, 1, {})
      end
    end
    existing[key(f)] = true
  end
  r:close()
  if #templates == 0 then return nil, "no template row" end
  for t, row in ipairs(templates) do
    local trow = {}
    for name, i in pairs(col) do trow[name] = row[i] or "" end
    templates[t] = trow
  end
  kept.n = nrows
  return { header = header, col = col, templates = templates, existing = existing, rows = nrows, eol = eol,
           kept = kept }
end

-- Stage 1, independent of the file's existing rows and of its kernel's signature rules:
-- candidates aligned to the template's slots, absent slots cleared, the memory budget
-- applied, shape text made, and the shape order worked out. Files whose templates agree on
-- these cells share one result (M.run caches it), so e.g. MatMulV2 and MatMulV3 generate once.
-- Every generated dimension is an integer > 0 (docs/rules.md, Shape grids): a zero or negative
-- one (a negative grid value, a config field) would even pass the memory budget as 0 bytes.
local function check_dims(shapes, side, who)
  for s = 1, #shapes do
    local d = shapes[s]
    for j = 1, #d do
      local x = d[j]
      if math.type(x) ~= "integer" or x <= 0 then
        local txt = {}
        for k = 1, #d do txt[k] = tostring(d[k]) end
        perf.fail("%s: generated dimension %s of %s %d (%s) is not a positive integer; every "
          .. "dimension must be > 0", who, tostring(x), side, s, table.concat(txt, ","))
      end
    end
  end
end

-- The same for a compiled pattern's candidates (expand.flat's X) in one C call (shape.rows):
-- the template's slot layout (alignment, absent slots cleared, each slot's dtype bytes) is
-- worked out once, the candidates' dims go straight from the flat array to the shape text,
-- the memory budget and the shape order. S.uniform: every row has the same dtype, format and
-- extra cells, and the same slot layout (which slots are empty). The rows' dims as integers
-- (no shape text to parse): row i is candidate c = S.dims_row and S.dims_row[i] or i, its input
-- slot s holds S.dims[(c - 1) * S.dims_stride + S.dims_in[3 * s - 2] + 1 ..] (S.dims_in[3 * s - 1]
-- dims; S.dims_in[3 * s] is the slot's dtype bytes), its output slots likewise in S.dims_out.
local function shaped_flat(X, T, budget, who)
  local t_in = cells.parse(T["Input Shapes"] or "")
  local t_out = (T["Output Shapes"] or "") ~= "" and cells.parse(T["Output Shapes"]) or {}
  local extra = X.extra or {}
  local idt = extra["Input Data Types"] or T["Input Data Types"] or ""
  local ifm = extra["Input Formats"] or T["Input Formats"] or ""
  local odt = extra["Output Data Types"] or T["Output Data Types"] or ""
  local ofm = extra["Output Formats"] or T["Output Formats"] or ""
  -- slot j of a row: the pattern's slot, {} past its end (align), {} where absent (clear_absent)
  local function layout(slots, k, dtypes, formats, dt_cell)
    local list = {}
    for j = 1, math.max(#slots, k) do list[j] = slots[j] or false end
    for _, j in ipairs(absent_slots(dtypes, formats)) do if j <= #list then list[j] = false end end
    local dts, lay = mem.parse_dtypes(dt_cell), {}
    for j, sl in ipairs(list) do
      local dt = dts[j]
      lay[#lay + 1] = sl and sl[1] or 0
      lay[#lay + 1] = sl and sl[2] or 0
      lay[#lay + 1] = type(dt) == "string" and mem.dtype_bytes(dt) or 2
    end
    return lay, list
  end
  local lin, sin = layout(X.inputs, #t_in, idt, ifm, idt)
  local lout, sout = layout(X.outputs, #t_out, odt, ofm, odt)
  local it, ot, order, n, memory, bad, src = shape.rows(X.dims, X.count, X.stride, lin, lout, budget)
  if bad then  -- the candidate's dims as tables: check_dims names the first bad dim
    local base = (bad - 1) * X.stride
    local function rows(list)
      local out = {}
      for j, sl in ipairs(list) do
        out[j] = {}
        if sl then for d = 1, sl[2] do out[j][d] = X.dims[base + sl[1] + d] end end
      end
      return out
    end
    check_dims(rows(sin), "input", who)
    check_dims(rows(sout), "output", who)
    perf.fail("%s: candidate %d has a dimension that is not a positive integer", who, bad)
  end
  local S = { n = n, it = it, ot = ot, idt = {}, ifm = {}, odt = {}, extra = {},
              candidates = X.candidates, rejected = X.rejected, generated = X.count, memory = memory,
              renders = {}, extra_names = {}, order = order, uniform = true,
              dims = X.dims, dims_stride = X.stride, dims_in = lin, dims_out = lout, dims_row = src }
  local IDT, IFM, ODT, EX = S.idt, S.ifm, S.odt, S.extra
  local ex = X.extra or {}
  for i = 1, n do IDT[i], IFM[i], ODT[i], EX[i] = idt, ifm, odt, ex end
  if n > 0 and X.extra then for k in pairs(X.extra) do S.extra_names[k] = true end end
  if S.candidates == 0 then S.candidates = S.generated end
  return S
end

local function shaped(gen, T, budget, who)
  local t_in = cells.parse(T["Input Shapes"] or "")
  local t_out = (T["Output Shapes"] or "") ~= "" and cells.parse(T["Output Shapes"]) or {}
  local kin, kout = #t_in, #t_out
  -- one array per field rather than one table per row: far fewer objects for the collector
  local S = { n = 0, it = {}, ot = {}, idt = {}, ifm = {}, odt = {}, extra = {},
              candidates = 0, rejected = 0, generated = 0, memory = 0, renders = {}, extra_names = {} }
  local IT, OT, IDT, IFM, ODT, EX, names, text = S.it, S.ot, S.idt, S.ifm, S.odt, S.extra, S.extra_names,
                                                 cells.text
  local EMPTY = {}
  local skeys, sort_key, positive = {}, cells.sort_key, shape.positive
  -- each dtype cell parsed once (row_bytes takes the parsed list too): a pattern's candidates
  -- share a handful of them
  local dt_lists = {}
  local function dtypes(cell)
    local t = dt_lists[cell]
    if not t then t = mem.parse_dtypes(cell); dt_lists[cell] = t end
    return t
  end
  local n = 0
  local function emit(c)
    S.generated = S.generated + 1
    local ins, outs, extra = c.inputs, c.outputs, c.extra or EMPTY
    if kin > 0 then align(ins, kin) end
    if kout > 0 then align(outs, kout) end
    local idt = extra["Input Data Types"] or T["Input Data Types"] or ""
    local ifm = extra["Input Formats"] or T["Input Formats"] or ""
    local odt = extra["Output Data Types"] or T["Output Data Types"] or ""
    local ofm = extra["Output Formats"] or T["Output Formats"] or ""
    clear_absent(ins, idt, ifm)
    clear_absent(outs, odt, ofm)
    if not positive(ins, outs) then  -- what lands in the row (absent slots are cleared)
      check_dims(ins, "input", who)
      check_dims(outs, "output", who)
    end
    if budget and mem.row_bytes(ins, dtypes(idt), outs, dtypes(odt)) > budget then
      S.memory = S.memory + 1
      return
    end
    if extra ~= EMPTY then for k in pairs(extra) do names[k] = true end end
    n = n + 1
    IT[n], OT[n], IDT[n], IFM[n], ODT[n], EX[n] = text(ins), text(outs), idt, ifm, odt, extra
    skeys[n] = sort_key(ins, n)  -- shape order, stable (compared in C)
  end
  gen(emit, S)
  S.n = n
  if S.candidates == 0 then S.candidates = S.generated end  -- generators count as they emit
  S.order = gridscan.order(skeys, n)  -- sorted in C by the keys' bytes, read off their tails
  return S
end

-- Whether candidate i can be replayed (job.replayable: perfscript.replay.registry), asked
-- with the row as the file would hold it; a refusal is counted under its reason in st.
-- The builders' verdicts are remembered per builder and template in S (shared by the files
-- of a pattern): MatMul and MatMulV2 ask MatMulV2's builder about the same rows. A builder
-- reads only the row and ctx (always {ep_size = job.ep_size}), and never the template's own
-- CANDIDATE cells, which every candidate overwrites: MatMul, MatMulV2 and MatMulV3 (one
-- builder) whose templates differ in their shapes share the verdicts.
local CANDIDATE = { ["Input Shapes"] = true, ["Input Data Types"] = true, ["Input Formats"] = true,
                    ["Output Shapes"] = true, ["Output Data Types"] = true }
local function template_sig(T)
  local names = {}
  for k in pairs(T) do if not CANDIDATE[k] then names[#names + 1] = k end end
  table.sort(names)
  for n, k in ipairs(names) do names[n] = k .. "\1" .. T[k] end
  return table.concat(names, "\2")
end

local function replayable(job, T, S, i, st)
  local reg = job.replayable
  local ok, why = reg.builder(job.kernel)
  if ok then
    if job.memo_T ~= T then
      job.memo_T = T
      local key = tostring(ok) .. "\0" .. tostring(job.ep_size) .. "\0" .. template_sig(T)
      S.replay_memo = S.replay_memo or {}
      job.memo = S.replay_memo[key] or {}
      S.replay_memo[key] = job.memo
    end
    local verdict = job.memo[i]
    if verdict == true then return true end
    if verdict then
      st.unreplayable = st.unreplayable + 1
      st.unreplayable_why[verdict] = (st.unreplayable_why[verdict] or 0) + 1
      return false
    end
    -- one row table per template, refilled (the builders keep nothing of it)
    local row = job.check_row
    if not row or job.check_T ~= T then
      row = {}
      for k, v in pairs(T) do row[k] = v end
      job.check_row, job.check_T = row, T
    end
    local extra = S.extra[i]
    for k, v in pairs(extra) do row[k] = v end
    row["Input Shapes"], row["Input Data Types"], row["Input Formats"] = S.it[i], S.idt[i], S.ifm[i]
    row["Output Shapes"], row["Output Data Types"] = S.ot[i], S.odt[i]
    job.check_ctx = job.check_ctx or { ep_size = job.ep_size }
    local case, reason = reg.verdict(job.kernel, row, job.check_ctx)
    for k in pairs(extra) do row[k] = T[k] end
    if case then job.memo[i] = true; return true end
    why = reason
    job.memo[i] = why
  else
    why = "no builder: " .. tostring(why)
  end
  st.unreplayable = st.unreplayable + 1
  st.unreplayable_why[why] = (st.unreplayable_why[why] or 0) + 1
  return false
end

-- Stage 2: this file's population (dedup by its kernel's signature; with job.replayable, only
-- rows a replay builder accepts), the sample, and the entries not already in the file, in
-- shape order. Returns row indices of S.
local function select_rows(job, csv, T, S, st, seen, stream)
  local kernel, existing = job.kernel, csv.existing
  local key, rec, pop, keys = cells.key, {}, {}, {}
  local t_ep = T["EP Size"]
  local IT, OT, IDT, IFM, ODT, EX = S.it, S.ot, S.idt, S.ifm, S.odt, S.extra
  local uniform = S.uniform and S.n > 0
  if uniform then  -- the cells every row shares, set once
    rec["Input Data Types"], rec["Input Formats"], rec["Output Data Types"] = IDT[1], IFM[1], ODT[1]
    rec["EP Size"] = EX[1]["EP Size"] or t_ep
  end
  for i = 1, S.n do
    rec["Input Shapes"], rec["Output Shapes"] = IT[i], OT[i]
    if not uniform then
      rec["Input Data Types"], rec["Input Formats"], rec["Output Data Types"] = IDT[i], IFM[i], ODT[i]
      rec["EP Size"] = EX[i]["EP Size"] or t_ep
    end
    local k = key(kernel, rec)
    if job.pick and not job.pick[k] then
      st.sampled_out = st.sampled_out + 1  -- not among the rows asked for (job.pick)
    elseif seen[k] then
      st.duplicates = st.duplicates + 1
    else
      seen[k] = true
      pop[#pop + 1] = i
      keys[i] = k
    end
  end
  local ok = job.replayable and function(i) return replayable(job, T, S, i, st) end
  local refused0 = st.unreplayable or 0
  local chosen = pop
  if job.rows and job.rows > 0 and #pop > job.rows then
    chosen = {}
    if job.sampling == "spread" then
      -- evenly along the shape order, both ends included: covers the whole range
      local in_pop, ordered = {}, {}
      for _, i in ipairs(pop) do in_pop[i] = true end
      for _, i in ipairs(S.order) do if in_pop[i] and (not ok or ok(i)) then ordered[#ordered + 1] = i end end
      for n, j in ipairs(M.spread(#ordered, math.min(job.rows, #ordered))) do chosen[n] = ordered[j] end
    else
      -- the sample's draw order, skipping rows no builder replays: the same rows as without
      -- the check where every row replays (only the drawn rows are checked)
      local pick = M.sample_where(#pop, job.rows, job.seed, stream, ok and function(j) return ok(pop[j]) end)
      for n, idx in ipairs(pick) do chosen[n] = pop[idx] end
    end
  elseif ok then
    chosen = {}
    for _, i in ipairs(pop) do if ok(i) then chosen[#chosen + 1] = i end end
  end
  -- drawn and refused rows are counted as unreplayable, the rest of the population sampled out
  st.sampled_out = st.sampled_out + #pop - #chosen - ((st.unreplayable or 0) - refused0)
  -- the rows this file's grid targets, present ones included (the collection planner's needs)
  if job.collect then job.collect(T, S, chosen, keys) end
  local mark = {}
  for _, i in ipairs(chosen) do
    if existing[keys[i]] then st.present = st.present + 1 else mark[i] = true end
  end
  local out = {}
  for _, i in ipairs(S.order) do if mark[i] then out[#out + 1] = i end end
  return out
end

-- Cell values of appended row i, in `header` order.
local function render(header, T, S, i)
  local row, it, ot, extra = {}, S.it[i], S.ot[i], S.extra[i]
  for c, name in ipairs(header) do
    local v
    if name == "Input Shapes" then v = it == "" and "" or '"' .. it .. '"'
    elseif name == "Output Shapes" then v = ot == "" and "" or '"' .. ot .. '"'
    elseif extra[name] ~= nil then v = extra[name]
    elseif INHERIT[name] then v = T[name] or ""
    else v = "" end  -- latencies, counters, unset runtime and user columns: to be measured
    row[c] = v
  end
  return row
end

-- Encoded CSV lines (without line end) of entries, cached per header/template layout.
local function lines_for(S, header, T, idx)
  local plan, fixed, sigparts = {}, {}, {}
  for i, name in ipairs(header) do
    if name == "Input Shapes" then plan[i] = 1
    elseif name == "Output Shapes" then plan[i] = 2
    elseif S.extra_names[name] then plan[i] = name
    else
      plan[i] = 0
      fixed[i] = csv_field(INHERIT[name] and T[name] or "")
    end
    sigparts[i] = name .. "\1" .. (fixed[i] or "")
  end
  local sig = table.concat(sigparts, "\2")
  local cache = S.renders[sig]
  if not cache then cache = {}; S.renders[sig] = cache end
  -- runs of fixed cells joined once: a line is the runs and the varying cells joined by ","
  local segs, kinds, run = {}, {}, {}
  for c = 1, #header do
    if plan[c] == 0 then
      run[#run + 1] = fixed[c]
    else
      if #run > 0 then segs[#segs + 1] = table.concat(run, ","); kinds[#kinds + 1] = 0; run = {} end
      segs[#segs + 1] = false
      kinds[#kinds + 1] = plan[c]
    end
  end
  if #run > 0 then segs[#segs + 1] = table.concat(run, ","); kinds[#kinds + 1] = 0 end
  local out, row, n = {}, {}, #segs
  local IT, OT, EX = S.it, S.ot, S.extra
  for o, i in ipairs(idx) do
    local line = cache[i]
    if not line then
      local it, ot, extra = IT[i], OT[i], EX[i]
      for c = 1, n do
        local k = kinds[c]
        if k == 0 then row[c] = segs[c]
        elseif k == 1 then row[c] = it == "" and "" or '"""' .. it .. '"""'
        elseif k == 2 then row[c] = ot == "" and "" or '"""' .. ot .. '"""'
        else
          local v = extra[k]
          if v == nil then v = INHERIT[k] and T[k] or "" end
          row[c] = csv_field(v)
        end
      end
      line = table.concat(row, ",", 1, n)
      cache[i] = line
    end
    out[o] = line
  end
  return out
end

-- The file's last byte ("" when empty), to end an unterminated last line before appending.
local function last_byte(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local size = f:seek("end")
  local b = size and size > 0 and f:seek("set", size - 1) and f:read(1) or ""
  f:close()
  return b
end

-- parts: { {T = template, S = stage-1 rows, idx = row indices}, ... } in append order.
local function write_rows(job, csv, parts)
  -- columns the new rows need that the header lacks (e.g. FIA runtime columns, EP Size)
  local extra_cols, have = {}, {}
  for _, h in ipairs(csv.header) do have[h] = true end
  local used = {}
  for _, p in ipairs(parts) do
    for _, i in ipairs(p.idx) do for name in pairs(p.S.extra[i]) do used[name] = true end end
  end
  for _, name in ipairs(job.columns or {}) do
    if used[name] and not have[name] then have[name] = true; extra_cols[#extra_cols + 1] = name end
  end
  local others = {}
  for name in pairs(used) do if not have[name] then others[#others + 1] = name end end
  table.sort(others)
  for _, name in ipairs(others) do extra_cols[#extra_cols + 1] = name end

  local header = table.move(csv.header, 1, #csv.header, 1, {})
  for _, name in ipairs(extra_cols) do header[#header + 1] = name end
  if #extra_cols == 0 then
    -- existing bytes kept as they are (BOM, line endings, quoting), copied by the kernel into
    -- the staged file (append mode); rows appended after them
    local last, err = last_byte(job.path)
    if not last then return nil, err end
    local eol = csv.eol or "\n"
    local buf = { (last ~= "" and last ~= "\n") and eol or "" }
    for _, p in ipairs(parts) do
      buf[#buf + 1] = table.concat(lines_for(p.S, header, p.T, p.idx), eol)
      buf[#buf + 1] = eol
    end
    return perf.fs.write_atomic(job.path, table.concat(buf), { if_changed = false, stage = job.stage, append = true })
  end
  -- header extension: existing rows rewritten with empty cells in the new columns
  local r, err = perf.csv.open(job.path, { header = true })
  if not r then return nil, err end
  local w, werr = perf.csv.writer(job.path)
  if not w then r:close(); return nil, werr end
  w:write(header)
  local n = #header
  for f in r:lines() do
    for i = #f + 1, n do f[i] = "" end
    w:write(f)
  end
  r:close()
  for _, p in ipairs(parts) do
    for _, i in ipairs(p.idx) do w:write(render(header, p.T, p.S, i)) end
  end
  return w:commit { stage = job.stage }
end

-- A row db:lint would call unreachable on its own cells (perfscript.db.reach.row_problems) is
-- not appended: counted by kind in st.lint_skipped (the status says so). true when skipped;
-- false, true when every row with the same shape skeleton, dtypes and formats passes too.
local function lint_skips(check, kernel, get, st, skeleton)
  local kind, why
  if not check then return false, true end
  kind, why = check(kernel, get, skeleton)
  if not kind then return false, why end
  st.lint_skipped = (st.lint_skipped or 0) + 1
  st.lint_kinds = st.lint_kinds or {}
  st.lint_kinds[kind] = st.lint_kinds[kind] or { n = 0, example = why }
  st.lint_kinds[kind].n = st.lint_kinds[kind].n + 1
  return true
end

-- The status note of the rows lint_skips dropped: "; 12 rows the linter would flag skipped
-- (misaligned slots: 12, e.g. ...)".
local function lint_note(st)
  if not st.lint_skipped then return "" end
  local parts = {}
  for kind, k in pairs(st.lint_kinds) do parts[#parts + 1] = string.format("%s: %d, e.g. %s", kind, k.n, k.example) end
  table.sort(parts)
  return string.format("; %d rows the linter would flag skipped (%s)", st.lint_skipped, table.concat(parts, "; "))
end

-- The rows of idx the consumer would answer with (reach.lua), in append order: largest shape
-- first where the first matching row wins. Misspelled generated dtypes are dropped too.
local function reachable(ctx, T, S, idx, st)
  if reach.first_match(ctx.state, ctx.kernel) then
    local rev = {}
    for j = #idx, 1, -1 do rev[#rev + 1] = idx[j] end
    idx = rev
  end
  local out, IT, IDT, IFM, OT, ODT, EX = {}, S.it, S.idt, S.ifm, S.ot, S.odt, S.extra
  -- views of candidates without extra cells, kept in S for the files that share it
  local vparts = { ctx.mode, tostring(ctx.n) }
  for _, c in ipairs(reach.VIEW_EXTRA) do vparts[#vparts + 1] = T[c] or "\1" end
  local vkey = table.concat(vparts, "\0")
  S.views = S.views or {}
  local views = S.views[vkey] or {}
  S.views[vkey] = views
  -- one cell reader for every candidate, pointed at the current one (the checks keep no reader)
  local i, extra
  local function get(c)
    if c == "Input Shapes" then return IT[i]
    elseif c == "Output Shapes" then return OT[i]
    elseif c == "Input Data Types" then return IDT[i]
    elseif c == "Input Formats" then return IFM[i]
    end
    local v = extra[c]
    if v == nil then v = T[c] end
    return v
  end
  local compute, t_ep = ctx.mode == "compute", T["EP Size"]
  -- a compiled pattern's rows (S.uniform) share their slot layout, so the skeleton of their
  -- Input Shapes (the linter's memo) is worked out once
  local skeleton = S.uniform and #idx > 0 and shape.skeleton(IT[idx[1]]) or nil
  local dt_in, dt_out, dt_ok = false, false, nil  -- the dtype check of the last pair of cells
  -- once a row of a uniform S passed the dtype check and the linter said every row like it is
  -- clean, the rest go to C in one call (reach.keep_rows) in compute mode
  local batch = false
  local n, total = 1, #idx
  while n <= total do
    if batch then
      local shadowed, stop = reach.keep_rows(ctx, IT, idx, n, IDT[i], IFM[i], extra["EP Size"] or t_ep, out)
      if shadowed then
        st.shadowed = st.shadowed + shadowed
        if not stop then break end
        n = stop  -- undecided in C: this row takes the path below
      end
      batch = false
    end
    i = idx[n]
    extra = EX[i]
    local idt, odt = IDT[i], ODT[i]
    if idt ~= dt_in or odt ~= dt_out or dt_ok == nil then
      dt_in, dt_out = idt, odt
      dt_ok = not reach.check_dtypes(idt) and not reach.check_dtypes(odt)
    end
    local ok, flagged, clean = dt_ok, false, false
    if ok then flagged, clean = lint_skips(ctx.lint, ctx.kernel, get, st, skeleton) end
    if ok and not flagged then
      -- compute mode: the cells straight to C (keep_cells), else keep with the cell reader
      local r
      if compute then r = reach.keep_cells(ctx, IT[i], IDT[i], IFM[i], extra["EP Size"] or t_ep) end
      if r == nil then r = reach.keep(ctx, get, next(extra) == nil and views or nil, i)
      elseif compute and clean and S.uniform then batch = true end
      ok = r
    end
    if ok and not flagged then out[#out + 1] = i elseif not flagged then st.shadowed = st.shadowed + 1 end
    n = n + 1
  end
  return out
end

-- process(job) -> stats. job: path, name, kernel, generate(emit, stats), flat (a compiled
-- pattern: () -> expand.flat's candidates, used instead of generate), columns,
-- rows, seed, max_hbm_bytes, dry_run, variants, cache (shared by the files of a pattern),
-- stage (perf.fs.stage(): the file is staged there; without one it is replaced at once).
-- replayable (perfscript.replay.registry: append only rows a builder can replay; stats
-- unreplayable and unreplayable_why[reason] = n count the others), ep_size.
function M.process(job)
  local st = { file = job.name, kernel = job.kernel, generated = 0, candidates = 0, rejected = 0,
               memory = 0, duplicates = 0, sampled_out = 0, present = 0, shadowed = 0, appended = 0,
               unreplayable = job.replayable and 0 or nil, unreplayable_why = {} }
  local csv, why = load_csv(job.path, job.kernel, job.variants, job.reach and reach.key_n(job.reach, job.kernel),
                            job.reach and reach.view_cols(job.reach, job.kernel) or {})
  if not csv then st.status = "skipped: " .. why; return st end
  -- a template the consumer could not match (DT_INT8 where it says INT8) would pass its
  -- spelling on to every generated row: refused, with the fix
  local good, refused = {}, nil
  for _, T in ipairs(csv.templates) do
    local bad_why
    for _, c in ipairs { "Input Data Types", "Output Data Types" } do
      local bad, fix = reach.check_dtypes(T[c])
      if bad and not bad_why then
        bad_why = string.format("%s says %s, which the consumer spells %s", c, bad, fix)
      end
    end
    if bad_why then refused = refused or bad_why else good[#good + 1] = T end
  end
  if #good == 0 then st.status = "skipped: template " .. refused; return st end
  csv.templates = good
  local ctx
  if job.reach then
    local kept, i = csv.kept, 0
    local function get(c) local cells = kept[c]; return cells and cells[i] end
    ctx = reach.begin(job.reach, job.kernel, function()
      i = i + 1
      return i <= kept.n and get or nil
    end, csv.ckeys)
    ctx.lint = job.lint
  end
  local cache, seen, parts, nrows = job.cache or {}, {}, {}, 0
  for t, T in ipairs(csv.templates) do
    local ck = table.concat({ #cells.parse(T["Input Shapes"]),
                              (T["Output Shapes"] or "") ~= "" and #cells.parse(T["Output Shapes"]) or 0,
                              T["Input Data Types"] or "", T["Input Formats"] or "", T["Output Data Types"] or "",
                              T["Output Formats"] or "", tostring(job.max_hbm_bytes) }, "\0")
    local S = cache[ck]
    if not S then
      local who = ("pattern '%s' (kernel %s)"):format(tostring(job.pattern), job.kernel)
      if job.flat then  -- a compiled pattern (its expansion is cheap: not kept, less memory)
        S = shaped_flat(job.flat(), T, job.max_hbm_bytes, who)
      else
        S = shaped(job.generate, T, job.max_hbm_bytes, who)
      end
      cache[ck] = S
    end
    st.candidates, st.rejected = st.candidates + S.candidates, st.rejected + S.rejected
    st.generated, st.memory = st.generated + S.generated, st.memory + S.memory
    nrows = nrows + S.n
    -- the first variant samples as a single-template run does; later ones on their own streams
    local idx = select_rows(job, csv, T, S, st, seen, t == 1 and job.kernel or (job.kernel .. "#" .. t))
    if ctx then idx = reachable(ctx, T, S, idx, st) end
    if #idx > 0 then parts[#parts + 1] = { T = T, S = S, idx = idx } end
    st.appended = st.appended + #idx
  end
  if #csv.templates > 1 then st.variants = #csv.templates end
  local note = refused and ("; a variant skipped: " .. refused) or ""
  note = note .. lint_note(st)
  if st.appended == 0 then
    st.status = (nrows == 0 and "unchanged: no candidates"
      or ((st.unreplayable or 0) > 0 and st.present == 0 and st.shadowed == 0)
        and "unchanged: none replayable" or "unchanged: nothing new") .. note
    return st
  end
  if job.dry_run then st.status = "would append"; return st end
  local res, err = write_rows(job, csv, parts)
  if not res then perf.fail("%s", err) end
  st.status = (#csv.templates > 1 and ("appended (" .. #csv.templates .. " variants)") or "appended") .. note
  return st
end

---------------------------------------------------------------------------------------------
-- A whole directory

-- The collector's generational multipliers during a run (Lua's defaults are 20 and 100; the
-- host runs generational, src/host/main.c). With the check-only replay verdicts and hash-only
-- keys making less garbage, 40 and 200 cost the same CPU as 100 and 500 on the grid bench
-- (2000 rows a CSV, dry run) at about 30 MB less peak memory; 20 and 100 cost ~15% more CPU.
local GC_MINOR, GC_MAJOR = 40, 200

-- The files one worker grows, as groups of positions in the run's order: files of one
-- pattern share its candidate cache, and a kernel reads the reach state of the kernels its
-- directory's consumer tries before it (MatMulV2's rows shadow MatMulV3's), so each such
-- connected set stays in one process, in the run's order. Biggest (weight(n): a file's
-- estimated work) first.
local function groups_of(order, files, routes, meta_for, weight)
  local up, at = {}, {}
  local function find(n)
    while up[n] ~= n do up[n] = up[up[n]]; n = up[n] end
    return n
  end
  local function join(a, b) a, b = find(a), find(b); if a ~= b then up[math.max(a, b)] = math.min(a, b) end end
  for n, o in ipairs(order) do
    local f = files[o.i]
    if routes[o.i][1] then up[n] = n; at[f.dir .. "\0" .. f.kernel] = n end
  end
  local by_pattern = {}
  for n, o in ipairs(order) do
    local pname = routes[o.i][1]
    if pname then
      if by_pattern[pname] then join(by_pattern[pname], n) else by_pattern[pname] = n end
      local f = files[o.i]
      local km = meta_for(f.dir)[f.kernel]
      for _, k in ipairs(km and km.before or {}) do
        local m = at[f.dir .. "\0" .. k]
        if m then join(m, n) end
      end
    end
  end
  local groups, of = {}, {}
  for n, o in ipairs(order) do
    if up[n] then
      local r = find(n)
      if not of[r] then of[r] = { cost = 0, first = n }; groups[#groups + 1] = of[r] end
      local g = of[r]
      g[#g + 1] = n
      g.cost = g.cost + weight(n)
    end
  end
  table.sort(groups, function(a, b)
    if a.cost ~= b.cost then return a.cost > b.cost end
    return a.first < b.first
  end)
  return groups
end

-- The candidates a pattern makes, roughly (the product of its iterators, as expand.each
-- walks them; a generator's: unknown, a small grid), for ordering the workers' groups.
local function candidates_guess(p, grids, nk_pairs)
  if p.generator then return 1000 end
  local n = 1
  local function walk(list, skip_nk)
    for _, it in ipairs(list or {}) do
      local v = type(it[2]) == "string" and grids[it[2]] or it[2]
      if not (skip_nk and (it[1] == "N" or it[1] == "K")) and type(v) == "table" then n = n * math.max(#v, 1) end
    end
  end
  if p.model_nk_pairs and nk_pairs then
    walk(p.iterators, true)
    n = n * #nk_pairs
  else
    walk(p.iterators)
    if p.model_nk_pairs then walk(p.fallback_iterators) end
  end
  return n
end

-- Grows the groups in `threads` forked workers (perfscript.proc.fork_map), each group's files
-- staged in the worker and adopted into the run's stage here; results, opts.print and
-- opts.progress see the files in the run's order, as a serial run gives them. On a failure
-- every adopted file is dropped with the stage (M.run's <close>) and the error raised.
local function grow_in_workers(groups, threads, grow, order, files, routes, stage, results, opts)
  local wire = require "perfscript.wire"
  local got, next_n, failure = {}, 1, nil
  local function adopt(r)
    if stage and r.staged and not r.adopted then
      r.adopted = true
      local ok, err = stage:adopt(r.staged)
      if not ok then perf.fail("%s", err) end
    end
  end
  -- hands on the files whose turn has come
  local function flush()
    while next_n <= #order do
      local o = order[next_n]
      local f = files[o.i]
      local st
      if routes[o.i][1] then
        local r = got[next_n]
        if not r then return end
        adopt(r)
        st = r.st
      else
        st = grow(next_n)
      end
      results[#results + 1] = st
      if opts.print and st.pattern then opts.print(st) end
      if opts.progress then opts.progress(next_n, #files, f.name) end
      next_n = next_n + 1
    end
  end
  local keys = {}
  for g = 1, #groups do keys[g] = g end
  local ran, ok, err = pcall(require("perfscript.proc").fork_map, keys, function(g)
    -- in a worker: its own stage, whose files go to the parent (an error removes them)
    local st_w <close> = stage and perf.fs.stage() or nil
    local out = {}
    local done, e = xpcall(function()
      for _, n in ipairs(groups[g]) do
        local st = grow(n, st_w)
        out[#out + 1] = { n = n, st = st, staged = st_w and st_w:detach() or nil }
      end
    end, function(x)
      if perf.is_user_error(x) then return x.message end
      return debug.traceback(tostring(x), 2)
    end)
    if not done then
      -- the group's files staged before the error go back to st_w: its <close> removes them
      for _, r in ipairs(out) do if r.staged then st_w:adopt(r.staged) end end
      error(e, 0)
    end
    return wire.encode(out)
  end, function(g, done, text)
    -- every result is kept before anything can fail here (an interrupt in progress): on a
    -- failure all of their staged files are adopted and removed
    if not done then failure = failure or text; return end
    for _, r in ipairs(wire.decode(text)) do got[r.n] = r end
    flush()
  end, threads)
  if not (ran and ok) then
    for _, r in pairs(got) do pcall(adopt, r) end  -- removed with the stage
    if not ran then error(ok, 0) end
    if failure then perf.fail("%s", failure) end
    perf.fail("growing the shape grid: %s", err)
  end
  flush()
end

-- run(opts) -> list of per-file stats. opts: dir, models (list of names or nil),
-- presets (extra presets from --model-config), rows, seed, max_hbm_bytes, dry_run, variants
-- (one template per kernel variant instead of the first row only), sampling ("random" or
-- "spread"), replayable_only (append only rows a replay builder accepts), rules
-- ({patterns, assignments, grids, scenes}), print (called with each file's stats),
-- progress (called with files done, file count, file name), also_stage(results, stage) (stages
-- more files, e.g. a summary report, to be committed with the database files).
-- collect(file, T, S, idx, keys): called per template with the rows the file's grid targets
-- (S's indices idx after sampling, present rows included; keys[i] = cells.key of row i).
-- pick: kernel -> set of cells.key: append only those rows (the collection planner's proposal).
-- threads: worker processes growing independent files at once (default 1: this process
-- alone; collect and pick always run here).
function M.run(opts)
  -- most objects made per candidate die young while the pattern caches (tens of thousands of
  -- rows' cells) live on: fewer collections (a longer generational pause, a later major one)
  -- cut the collector's share of the run. Restored on exit.
  collectgarbage("generational", GC_MINOR, GC_MAJOR)
  local _ <close> = setmetatable({}, { __close = function() collectgarbage("generational", 20, 100) end })
  local dir = opts.dir
  if lfs.attributes(dir, "mode") ~= "directory" then perf.fail("Data directory does not exist: %s", dir) end
  local files = M.discover(dir)
  if #files == 0 then perf.fail("No CSV files found under: %s", dir) end
  -- each CSV is routed with the op_mapping.yaml of its own directory
  local metas, reaches, checkers = {}, {}, {}
  local function meta_for(d)
    if not metas[d] then
      local m, merr = route.load_meta(d .. "/op_mapping.yaml")
      if not m then perf.fail("%s", merr) end
      metas[d] = m
      reaches[d] = reach.new(m)
      checkers[d] = require("perfscript.db.reach").grid_checker(d)
    end
    return metas[d]
  end
  local rules = opts.rules
  local configs = models.resolve(opts.models, opts.presets)
  local nk_pairs = opts.models and models.matmul_nk_pairs(configs) or nil
  local env = { grids = rules.grids, scenes = rules.scenes, is_mla = models.is_mla,
                moe_configs = models.moe_configs }
  local lock
  if not opts.dry_run then
    local err
    lock, err = perf.fs.lock(dir)
    if not lock then perf.fail("%s", err) end
  end
  -- on any error: the staged files are removed, then the lock is released
  local held <close> = lock
  local stage <close> = not opts.dry_run and perf.fs.stage() or nil
  local routes, left = {}, {}
  for i, f in ipairs(files) do
    routes[i] = { route.pattern_for(f.kernel, rules.assignments, rules.patterns, meta_for(f.dir)) }
    local pname = routes[i][1]
    if pname then left[pname] = (left[pname] or 0) + 1 end
  end
  local function source(pname)
    local p = rules.patterns[pname]
    local gen
    if p.generator then
      local ok, g = pcall(require, "perfscript.grid.generators." .. p.generator)
      if not ok then perf.fail("pattern '%s': unknown generator '%s'", pname, p.generator) end
      gen = { columns = g.columns, each = function(emit) g.generate(configs, emit, env) end }
    else
      local c = expand.compile(pname, p, rules.grids)
      gen = { each = function(emit, st) expand.each(c, nk_pairs, emit, st) end,
              flat = function() return expand.flat(c, nk_pairs) end }
    end
    return gen
  end
  local sources, cache = {}, {}
  local results = {}
  -- a kernel after those the consumer tries before it for the same op (MatMulV2 before
  -- MatMulV3), so that reach.lua knows the rows that would answer first
  local order = {}
  for i, f in ipairs(files) do
    local km = meta_for(f.dir)[f.kernel]
    order[i] = { i = i, depth = km and km.before and #km.before or 0 }
  end
  table.sort(order, function(a, b)
    if a.depth ~= b.depth then return a.depth < b.depth end
    return a.i < b.i
  end)
  -- grows the file at position n of the order (staged in stage); its stats
  local function grow(n, stage_to)
    local i, f = order[n].i, files[order[n].i]
    local pname, why = routes[i][1], routes[i][2]
    if not pname then return { file = f.name, kernel = f.kernel, status = "no generator: " .. why } end
    sources[pname] = sources[pname] or source(pname)
    local gen = sources[pname]
    local job = { path = f.path, name = f.name, kernel = f.kernel, rows = opts.rows, seed = opts.seed,
                  replayable = opts.replayable_only and require("perfscript.replay.registry") or nil,
                  max_hbm_bytes = opts.max_hbm_bytes, dry_run = opts.dry_run, pattern = pname,
                  variants = opts.variants, sampling = opts.sampling, reach = reaches[f.dir], lint = checkers[f.dir],
                  columns = gen.columns, generate = gen.each, flat = gen.flat, stage = stage_to,
                  collect = opts.collect and function(T, S, idx, keys) opts.collect(f, T, S, idx, keys) end,
                  pick = opts.pick and (opts.pick[f.kernel] or {}) }
    cache[pname] = cache[pname] or {}
    job.cache = cache[pname]
    local st = M.process(job)
    st.pattern = pname
    left[pname] = left[pname] - 1
    if left[pname] == 0 then cache[pname] = nil end  -- no later file uses this pattern
    return st
  end
  -- the collection planner's callbacks gather into this process: they run serially
  local threads = (opts.collect or opts.pick) and 1 or opts.threads or 1
  local groups
  if threads > 1 then
    -- a file's work: its pattern's candidates, and its bytes scanned (1 kB ~ one candidate)
    local guess = {}
    groups = groups_of(order, files, routes, meta_for, function(n)
      local i = order[n].i
      local pname = routes[i][1]
      guess[pname] = guess[pname] or candidates_guess(rules.patterns[pname], rules.grids, nk_pairs)
      return guess[pname] + (lfs.attributes(files[i].path, "size") or 0) // 1024
    end)
  end
  if groups and #groups > 1 then
    grow_in_workers(groups, threads, grow, order, files, routes, stage, results, opts)
  else
    for n = 1, #order do
      local st = grow(n, stage)
      results[#results + 1] = st
      if opts.print and st.pattern then opts.print(st) end
      if opts.progress then opts.progress(n, #files, files[order[n].i].name) end
    end
  end
  if stage then
    if opts.also_stage then opts.also_stage(results, stage) end
    local ok, err = stage:commit()
    if not ok then perf.fail("%s", err) end
  end
  if lock then lock:release() end
  return results
end

return M
