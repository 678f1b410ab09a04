-- Model versus profiling per (kernel type, input shapes) (the Python original's
-- generate_per_shape_comparison.py; docs/rules.md, Analysis).
-- Fixed here: ties are ordered by (kernel_type, shape_key) instead of hash order; a flat shape
-- list "[4,8]" is one tensor instead of a crash; the events of one model (pid) only.
local cjson = require "cjson"
local pyfmt = require "perfscript.analysis.pyfmt"
local pylit = require "perfscript.analysis.pylit"
local tctrace = require "perfscript.analysis.tctrace"
local prof = require "perfscript.analysis.prof"

local M = {}

local function dims(seq)
  local t = {}
  for i = 1, #seq do t[i] = pylit.str(seq[i]) end
  return table.concat(t, ",")
end

-- One key for TC's "[[16, 5120], [5120, 768]]" and the profiler's "16,5120;5120,768".
local function shape_key(s)
  s = s:gsub("^%s+", ""):gsub("%s+$", ""):gsub('^"+', ""):gsub('"+$', ""):gsub(" ", "")
  if s == "" then return "" end
  if s:find(";", 1, true) or not s:find("[", 1, true) then return s end
  local v = pylit.parse(s)
  if not (pylit.is_seq(v) and v.kind == "list") then return s end
  local flat = #v > 0
  for i = 1, #v do flat = flat and not pylit.is_seq(v[i]) end
  if flat then return dims(v) end
  local parts = {}
  for i = 1, #v do
    parts[i] = pylit.is_seq(v[i]) and dims(v[i]) or pylit.str(v[i])
  end
  return table.concat(parts, ";")
end

-- Shapes repeat across rows: remember the keys of the first distinct texts.
local key_cache, key_count = {}, 0

function M.shape_key(s)
  if s == nil then return "" end
  s = tostring(s)
  local k = key_cache[s]
  if k then return k end
  k = shape_key(s)
  if key_count < 200000 then key_cache[s] = k; key_count = key_count + 1 end
  return k
end

local function entry(map, order, kt, key)
  local k = kt .. "\0" .. key
  local e = map[k]
  if not e then
    e = { kernel_type = kt, shape_key = key, dur = 0.0, count = 0, source = "" }
    map[k] = e
    order[#order + 1] = e
  end
  return e
end

-- args.sub_kernel_shapes (JSON text: [{kernel_type, simulation_shapes, kernel_shapes, ...}])
-- as kernel type -> shape text; nil when absent or unreadable.
local function sub_kernel_shapes(args)
  local raw = tctrace.val(args.sub_kernel_shapes)
  if type(raw) ~= "string" or raw == "" then return nil end
  local ok, list = pcall(cjson.decode, raw)
  if not ok or type(list) ~= "table" then return nil end
  local map = {}
  for _, e in ipairs(list) do
    if type(e) == "table" then
      local kt = tctrace.val(e.kernel_type)
      local ks = tctrace.pystr(e.kernel_shapes)
      if ks == nil or ks == "" then ks = tctrace.pystr(e.simulation_shapes) end
      if type(kt) == "string" and ks and ks ~= "" and map[kt] == nil then map[kt] = ks end
    end
  end
  return map
end

-- TC side. opts.kernel_shapes: key each kernel by the shapes the database lookup used
-- (args.kernel_shapes, or the sub-kernel's entry in args.sub_kernel_shapes) when the trace has
-- them, instead of the op's top-level simulation_shapes.
function M.tc_side(trace, pid, opts)
  local by_kernel = opts and opts.kernel_shapes
  local map, order = {}, {}
  for ev in tctrace.x_events(trace, pid) do
    local args = tctrace.args(ev)
    local kt = tctrace.kernel_type(args)
    if kt then
      local dur = tctrace.dur(ev)
      local src = tctrace.source(args)
      local key = M.shape_key(tctrace.pystr(args.simulation_shapes))
      local own, subs
      if by_kernel then
        own = tctrace.pystr(args.kernel_shapes)
        own = own and own ~= "" and M.shape_key(own) or nil
        subs = sub_kernel_shapes(args)
      end
      local function add(name, d)
        local k = key
        if subs and subs[name] then k = M.shape_key(subs[name]) elseif own then k = own end
        local e = entry(map, order, name, k)
        e.dur = e.dur + d
        e.count = e.count + 1
        e.source = src
      end
      local skd = tctrace.sub_kernel_durations(args)
      if skd then
        for _, p in ipairs(skd) do add(p[1], p[2]) end
      else
        local subs_kt = tctrace.split_kernel_types(kt)
        if #subs_kt > 1 then
          for _, sk in ipairs(subs_kt) do add(sk, dur / #subs_kt) end
        else
          add(kt, dur)
        end
      end
    end
  end
  return map, order
end

-- Profiling side per (type, shape key). An hcom collective is the same (Type, start) group as
-- in the other tools; it is filed under its first copy's shapes (the copies carry `N/A`).
function M.prof_side(path, opts)
  local map, order = {}, {}
  local summary, err = prof.scan(path, { shapes = true, window_ns = opts and opts.window_ns },
    function(kind, kt, dur, shapes)
      if kind == "compute" then
        local e = entry(map, order, kt, M.shape_key(shapes))
        e.dur = e.dur + dur
        e.count = e.count + 1
      end
    end)
  if not summary then return nil, err end
  for _, g in summary.hcom:groups() do
    local e = entry(map, order, g.key, M.shape_key(g.info or ""))
    e.dur = e.dur + g.dur
    e.count = e.count + 1
  end
  return map, summary
end

M.FIELDS = { "kernel_type", "shape_key", "tc_dur_us", "prof_dur_us", "delta_pct", "tc_count",
             "prof_count", "source" }

function M.rows(tc, pr)
  local keys, seen = {}, {}
  for k in pairs(tc) do if not seen[k] then seen[k] = true; keys[#keys + 1] = k end end
  for k in pairs(pr) do if not seen[k] then seen[k] = true; keys[#keys + 1] = k end end
  local rows = {}
  for _, k in ipairs(keys) do
    local t, p = tc[k], pr[k]
    local any = t or p
    local tcd = t and pyfmt.round(t.dur, 2) or 0
    local prd = p and pyfmt.round(p.dur, 2) or 0
    local tdur, pdur = t and t.dur or 0, p and p.dur or 0
    local delta = 0
    if pdur > 0 then
      delta = pyfmt.round((tdur - pdur) / pdur * 100, 1)
    elseif tdur > 0 then
      delta = math.huge
    end
    rows[#rows + 1] = {
      kernel_type = any.kernel_type, shape_key = any.shape_key,
      tc_dur_us = tcd, prof_dur_us = prd, delta_pct = delta,
      tc_count = t and t.count or 0, prof_count = p and p.count or 0,
      source = t and t.source or "",
    }
  end
  table.sort(rows, function(a, b)
    local ka, kb = math.max(a.tc_dur_us, a.prof_dur_us), math.max(b.tc_dur_us, b.prof_dur_us)
    if ka ~= kb then return ka > kb end
    if a.kernel_type ~= b.kernel_type then return a.kernel_type < b.kernel_type end
    return a.shape_key < b.shape_key
  end)
  return rows
end

function M.csv(rows)
  local out = { pyfmt.csv_line(M.FIELDS) }
  for _, r in ipairs(rows) do
    local f = {}
    for i, name in ipairs(M.FIELDS) do
      local v = r[name]
      f[i] = type(v) == "number" and pyfmt.repr(v) or v
    end
    out[#out + 1] = pyfmt.csv_line(f)
  end
  return table.concat(out)
end

return M
