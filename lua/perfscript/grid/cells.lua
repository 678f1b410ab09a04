-- Shape cells and row signatures for the grid. Thin adapters: they use perfscript.shape
-- and perfscript.sig when those modules exist, and a local rendition of the same rules
-- (grid_generator spec 1.7, replay_and_update spec 2) until then.
local M = {}

local MISSING = { [""] = true, ["N/A"] = true, NA = true, NULL = true, NONE = true, UNDEFINED = true }

local function strip(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- "a,b;;c" (with or without literal quotes) -> { {a,b}, {}, {c} }; a trailing empty slot
-- is dropped (spec 1.7, step 3).
function M.parse(cell)
  local s = strip(cell or "")
  if MISSING[s:upper()] then return {} end
  if #s >= 2 and s:sub(1, 1) == '"' and s:sub(-1) == '"' then
    s = strip(s:sub(2, -2))
    if MISSING[s:upper()] then return {} end
  end
  local pieces, depth, start = {}, 0, 1
  for i = 1, #s do
    local c = s:byte(i)
    if c == 40 then depth = depth + 1
    elseif c == 41 then if depth > 0 then depth = depth - 1 end
    elseif c == 59 and depth == 0 then pieces[#pieces + 1] = s:sub(start, i - 1); start = i + 1 end
  end
  local last = s:sub(start)
  if last ~= "" or #pieces == 0 then pieces[#pieces + 1] = last end
  local out = {}
  for i, p in ipairs(pieces) do
    p = strip(p):gsub('"', "")
    local dims = {}
    if p ~= "" and p ~= "()" and not MISSING[p:upper()] then
      p = p:match("^%((.*)%)$") or p
      for tok in p:gmatch("[^,%s]+") do
        local v = math.tointeger(tonumber(tok))
        if not v then return nil, "bad dimension '" .. tok .. "' in shape cell '" .. cell .. "'" end
        dims[#dims + 1] = v
      end
    end
    out[i] = dims
  end
  return out
end

-- { {a,b}, {}, {c} } -> "a,b;;c"
function M.text(shapes)
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = table.concat(s, ",") end
  return table.concat(parts, ";")
end

-- The cell value: the text in literal quotes, or "" for no text.
function M.cell(shapes)
  local t = M.text(shapes)
  return t == "" and "" or '"' .. t .. '"'
end

-- Orders shape lists: slot by slot, dims lexicographically, a prefix first.
function M.less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a[i], b[i]
    for j = 1, math.min(#x, #y) do
      if x[j] ~= y[j] then return x[j] < y[j] end
    end
    if #x ~= #y then return #x < #y end
  end
  return #a < #b
end

-- A byte string that orders like M.less (string comparison runs in C, so sorting big
-- populations stays fast): per slot, "\1" + 8 big-endian bytes per dim, then "\0".
local pack, MIN = string.pack, math.mininteger
function M.sort_key(shapes)
  local parts, n = {}, 0
  for i = 1, #shapes do
    local s = shapes[i]
    for j = 1, #s do n = n + 1; parts[n] = pack(">BI8", 1, s[j] ~ MIN) end
    n = n + 1
    parts[n] = "\0"
  end
  return table.concat(parts)
end

---------------------------------------------------------------------------------------------
-- Signature (replay_and_update spec section 2), as one string key.

local SIG_EMPTY = { ["()"] = true, ["N/A"] = true, NA = true, NULL = true, None = true, none = true }

local function split_slots(cell)
  local s = cell or ""
  local out, n = {}, 0
  if s:find('[%s"]') then
    s = strip(s):gsub('^"+', ""):gsub('"+$', "")
    if s:find('[%s"]') then
      for part in (s .. ";"):gmatch("([^;]*);") do n = n + 1; out[n] = strip(part):gsub('"', "") end
      return out
    end
  end
  if s == "" then return out end
  for part in (s .. ";"):gmatch("([^;]*);") do n = n + 1; out[n] = part end
  return out
end

-- Attribute cells (dtypes, formats) repeat across rows: split each distinct one once.
-- The lists are shared, so callers never modify them.
local attr_cache, attr_n = {}, 0
local function split_attrs(cell)
  cell = cell or ""
  local t = attr_cache[cell]
  if t then return t end
  if attr_n > 50000 then attr_cache, attr_n = {}, 0 end
  t = split_slots(cell)
  attr_cache[cell], attr_n = t, attr_n + 1
  return t
end

local function norm_slot(s)
  -- already canonical ("128,5120"): the common case, no pattern work
  if s:find("^%d+$") or (s:find("^%d[%d,]*%d$") and not s:find(",,", 1, true)) then return s end
  s = strip(strip(s):gsub('^"+', ""):gsub('"+$', ""))
  if SIG_EMPTY[s] then return "" end
  if s:sub(1, 1) == "(" and s:sub(-1) == ")" then s = s:sub(2, -2) end
  local dims = {}
  for tok in s:gmatch("[^,%s]+") do dims[#dims + 1] = tok end
  return table.concat(dims, ",")
end

local function norm_attr(shapes, attrs)
  local n = math.max(#shapes, #attrs)
  local sh, at = {}, {}
  for i = 1, n do
    local s = norm_slot(shapes[i] or "")
    sh[i] = s
    at[i] = s == "" and "" or (attrs[i] or "")
  end
  while #sh > 0 and sh[#sh] == "" do sh[#sh] = nil end
  while #at > 0 and at[#at] == "" do at[#at] = nil end
  return table.concat(sh, ";"), table.concat(at, ";")
end

local function parse_slot(s)
  s = norm_slot(s)
  if s == "" then return nil end
  local dims = {}
  for tok in s:gmatch("[^,]+") do
    local v = math.tointeger(tonumber(tok))
    if not v then return nil end
    dims[#dims + 1] = v
  end
  return dims
end

local MATMUL = { MatMulV2 = true, MatMulV3 = true, MatMulCommon = true }
local SLOT0 = { Slice = true, SliceAiCore = true, Transpose = true, TransposeAiCore = true }
local SEP = "\31"

local function matmul_key(r)
  local ins, outs = split_slots(r["Input Shapes"]), split_slots(r["Output Shapes"])
  local A, B, O = ins[1] and parse_slot(ins[1]), ins[2] and parse_slot(ins[2]), outs[1] and parse_slot(outs[1])
  if not (A and B and O and #A == 2 and #B == 2 and #O == 2) then return nil end
  local m, n, k = O[1], O[2], nil
  if A[1] == m and B[1] == n and A[2] == B[2] then k = A[2]
  elseif A[1] == m and B[2] == n and A[2] == B[1] then k = A[2] end
  if not k then
    local common, seen = {}, {}
    for _, x in ipairs(A) do for _, y in ipairs(B) do
      if x == y and not seen[x] then seen[x] = true; common[#common + 1] = x end
    end end
    local outside = {}
    for _, x in ipairs(common) do if x ~= m and x ~= n then outside[#outside + 1] = x end end
    if #outside == 1 then k = outside[1] elseif #common == 1 then k = common[1] end
  end
  if not k then return nil end
  local dt, fm = split_attrs(r["Input Data Types"]), split_attrs(r["Input Formats"])
  local _, odt = norm_attr(outs, split_attrs(r["Output Data Types"]))
  return table.concat({ "_matmul_family", m .. "," .. k .. ";" .. n .. "," .. k,
                        table.concat({ dt[1], dt[2] }, ";"), table.concat({ fm[1], fm[2] }, ";"),
                        m .. "," .. n, odt }, SEP)
end

-- The signature text of row r (a table keyed by column name) in CSV kernel's file.
local function lua_key(kernel, r)
  if MATMUL[kernel] then
    local k = matmul_key(r)
    if k then return k end
  end
  local sh, dt, fm = split_slots(r["Input Shapes"]), split_attrs(r["Input Data Types"]),
                     split_attrs(r["Input Formats"])
  if kernel == "Index" then
    local o = split_slots(r["Output Shapes"])
    local first = o[1] and parse_slot(o[1])
    if first and #first > 0 and #sh > 0 then
      sh = { sh[1], tostring(first[1]) }
      dt = #dt > 0 and { dt[1], dt[#dt] } or {}
      fm = #fm > 0 and { fm[1], fm[#fm] } or {}
    end
  elseif SLOT0[kernel] then
    sh, dt, fm = { sh[1] }, { dt[1] }, #fm > 0 and { "ND" } or {}
  end
  local s1, d1 = norm_attr(sh, dt)
  local _, f1 = norm_attr(sh, fm)
  local s2, d2 = norm_attr(split_slots(r["Output Shapes"]), split_attrs(r["Output Data Types"]))
  local parts = { "_profile", s1, d1, f1, s2, d2 }
  if kernel == "DispatchFFNCombine" then parts[7] = strip(r["EP Size"] or "") end
  return table.concat(parts, SEP)
end
M.lua_key = lua_key

-- perfscript.sig (C, shared with the replay write-back) when present: keys are its 64-bit
-- hashes; else the local rendition above, keyed by text. Both sides of a comparison always
-- come from the same function.
local ok_sig, sig = pcall(require, "perfscript.sig")
if not ok_sig or type(sig) ~= "table" or not sig.row then sig = nil end
M.native = sig ~= nil

-- key(kernel, row) -> key of a row given as a table keyed by column name.
function M.key(kernel, r)
  if sig then return select(2, sig.row(r, kernel)) end
  return lua_key(kernel, r)
end

local COLS = { "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
               "EP Size" }

-- record_keyer(header, kernel) -> f(fields) -> key, for records read with that header.
function M.record_keyer(header, kernel)
  if sig then
    local cols = sig.columns(header)
    local record = sig.record
    return function(fields) return select(2, record(fields, cols, kernel)) end
  end
  local idx = {}
  for i = #header, 1, -1 do idx[header[i]] = i end
  local r = {}
  return function(fields)
    for _, c in ipairs(COLS) do local i = idx[c]; r[c] = i and fields[i] or nil end
    return lua_key(kernel, r)
  end
end

return M
