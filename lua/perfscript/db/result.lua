-- Query results of the database explorer: an array of records (one table per row, keyed by
-- column name) with a title, an ordered column list and notes. tostring() renders an aligned
-- table (numbers right-aligned with units in the header, wide cells truncated, long results
-- cut after max_rows), which is what the REPL prints; save(r, "out.csv") writes every row
-- with the columns in this order.
local M = {}

M.max_rows = 40     -- rows shown by tostring (all rows stay in the table and in save())
M.max_cell = 48     -- characters shown per cell
-- How to get every row, said under a cut result: the REPL sets it to save(_, ...) (it keeps the
-- last result in _), a recipe to its --csv flag; none in a script, whose result is at hand.
M.more_hint = nil

local Result = {}
M.Result = Result

-- A field may be rendered when first read (a lookup's title and query: most answers are read
-- for their latency only): M.lazy(r, field, snap) makes r[field] snap[1](snap) on first read,
-- then a plain field (the snaps of a result chained through snap.next). A snap may serve
-- several fields: its snap[1] is then a table of makers by field (read only, shared), each
-- called as maker(snap, r) on that field's first read; a result's first record may be one
-- of them (field 1: # and ipairs make it). The notes list is made when first read or added to.
function Result.__index(r, k)
  local m = Result[k]
  if m ~= nil then return m end
  if k == "notes" then
    local notes = {}
    rawset(r, "notes", notes)
    return notes
  end
  local prev, snap = nil, rawget(r, "_lazy")
  while snap do
    local make = snap[1]
    if type(make) == "table" then
      -- a snap of several fields: each made once, on its first read
      local f = make[k]
      if f and not (snap.done and snap.done[k]) then
        snap.done = snap.done or {}
        snap.done[k] = true
        local v = f(snap, r)
        rawset(r, k, v)
        return v
      end
    elseif snap.field == k then
      if prev then prev.next = snap.next else rawset(r, "_lazy", snap.next) end
      local v = make(snap)
      rawset(r, k, v)
      return v
    end
    prev, snap = snap, snap.next
  end
end

function M.lazy(r, field, snap)
  snap.field, snap.next = field, rawget(r, "_lazy")
  rawset(r, "_lazy", snap)
  return r
end

function M.new(title, columns, rows, notes)
  local r = rows or {}
  r.title, r.columns, r.notes = title, columns, notes
  return setmetatable(r, Result)
end

function M.is(v) return getmetatable(v) == Result end

function Result:note(fmt, ...)
  self.notes[#self.notes + 1] = select("#", ...) > 0 and string.format(fmt, ...) or fmt
  return self
end

-- Numbers as a performance engineer reads them: integers as they are, latencies with three
-- decimals, very small or large values in %g.
function M.fmt(v)
  if v == nil then return "" end
  if type(v) == "number" then
    if v ~= v then return "nan" end
    if math.type(v) == "integer" then return tostring(v) end
    if v == math.huge or v == -math.huge then return tostring(v) end
    local a = math.abs(v)
    if a == 0 then return "0" end
    if a >= 1e7 or a < 1e-3 then return string.format("%.4g", v) end
    return (string.format("%.3f", v):gsub("%.?0+$", ""))
  end
  if type(v) == "boolean" then return v and "yes" or "no" end
  if type(v) == "table" then
    if getmetatable(v) and getmetatable(v).__tostring then return tostring(v) end
    local parts = {}
    for i, x in ipairs(v) do parts[i] = M.fmt(x) end
    return table.concat(parts, ",")
  end
  return tostring(v)
end

local function cut(s, w)
  if #s <= w then return s end
  return s:sub(1, w - 3) .. "..."
end

function Result:__tostring()
  -- a result may print as a view of itself (db:lint groups its findings by kind)
  local view = rawget(self, "view")
  if view then return tostring(view(self)) end
  local out = {}
  if self.title then out[#out + 1] = self.title end
  local cols = self.columns or {}
  local n = #self
  if #cols > 0 and n > 0 then
    local shown = math.min(n, M.max_rows)
    local width, numeric, cells = {}, {}, {}
    for j, c in ipairs(cols) do width[j] = #c; numeric[j] = true end
    for i = 1, shown do
      local row = self[i]
      cells[i] = {}
      for j, c in ipairs(cols) do
        local v = row[c]
        local s = cut(M.fmt(v), self.widths and self.widths[c] or M.max_cell)
        cells[i][j] = s
        if #s > width[j] then width[j] = #s end
        if v ~= nil and v ~= "" and type(v) ~= "number" then numeric[j] = false end
      end
    end
    local function line(vals)
      local parts = {}
      for j, s in ipairs(vals) do
        local pad = string.rep(" ", width[j] - #s)
        parts[j] = numeric[j] and pad .. s or s .. pad
      end
      return "  " .. (table.concat(parts, "  "):gsub("%s+$", ""))
    end
    out[#out + 1] = line(cols)
    local rule = {}
    for j = 1, #cols do rule[j] = string.rep("-", width[j]) end
    out[#out + 1] = "  " .. table.concat(rule, "  ")
    for i = 1, shown do out[#out + 1] = line(cells[i]) end
    if n > shown then
      out[#out + 1] = string.format("  ... %d more rows (%d in all%s)", n - shown, n,
                                    M.more_hint and ("; " .. M.more_hint) or "")
    end
  elseif #cols > 0 then
    out[#out + 1] = "  (no rows)"
  end
  for _, note in ipairs(self.notes) do out[#out + 1] = "  " .. note end
  return table.concat(out, "\n")
end

function Result:__len()
  local n = rawlen(self)
  -- a first record made when first read (a lookup's answer): made now
  if n == 0 and rawget(self, "_lazy") and self[1] ~= nil then n = rawlen(self) end
  return n
end

-- The rows as arrays of text in column order, header first (what save() writes).
function Result:matrix()
  local cols = self.columns or {}
  local m = { cols }
  for i = 1, #self do
    local r = {}
    for j, c in ipairs(cols) do
      local v = self[i][c]
      if v == nil then r[j] = ""
      elseif math.type(v) == "float" then r[j] = string.format("%.10g", v)
      elseif type(v) == "table" then r[j] = M.fmt(v)
      else r[j] = tostring(v) end
    end
    m[#m + 1] = r
  end
  return m
end

function Result:print() print(tostring(self)); return self end

return M
