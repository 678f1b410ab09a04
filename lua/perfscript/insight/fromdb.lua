-- An Insight trace spec from a database row: the replay builder of the row's kernel type
-- (perfscript.replay.registry, the one home of "can this row be replayed") already knows its
-- tensors and scalars; the row's output slots add the tensors the kernel writes.
--
--   row(dir, kernel, which) -> row, number, file | nil, message
--     which: a data row number (1 = the first row under the header) or a signature, as
--     perf.sig.display writes it ("16,7168;16,7168 -> 16,7168", quotes and blanks ignored) or
--     only its input shapes
--   spec(kernel, row, o) -> raw spec (check it with insight.spec.check) | nil, message
--     Slot order: the replay call's arguments (positional, then keyword arguments by name), then
--     the outputs; tensor lists flattened. Integers become INT64 scalars, floats FLOAT32 (packed
--     as bits), booleans BOOL; other values (strings, None) have no slot and are listed in notes.
local perf = require "perfscript"
local registry = require "perfscript.replay.registry"
local common = require "perfscript.replay.common"
local paths = require "perfscript.path"
local NULL = require("cjson").null

local M = {}

local function squash(s) return (s:gsub("[\"%s]", "")) end

function M.row(dir, kernel, which)
  local file = paths.join(dir, kernel .. ".csv")
  if not paths.isfile(file) then
    return nil, ("%s: no such file (the database at %s has no %s table)"):format(file, dir, kernel)
  end
  local r, err = perf.csv.open(file, { header = true, trim = true })
  if not r then return nil, err end
  local header = r:header()
  local n = math.tointeger(tonumber(which))
  local want = not n and squash(tostring(which)) or nil
  local found, matches, count = nil, {}, 0
  for fields in r:lines() do
    count = count + 1
    local row = {}
    for i, c in ipairs(header) do row[c] = fields[i] or "" end
    if n then
      if count == n then found = row; break end
    else
      local d = squash(perf.sig.display(row))
      if d == want or d:match("^(.-)%->") == want then
        matches[#matches + 1] = count
        found = found or row
      end
    end
  end
  r:close()
  if n then
    if n < 1 or not found then
      return nil, ("%s: no data row %d (it has %d)"):format(file, n, count)
    end
    return found, n, file
  end
  if #matches == 0 then
    return nil, ("%s: no row with signature %s (give it as 'INPUT SHAPES -> OUTPUT SHAPES', or a row number 1..%d)")
      :format(file, tostring(which), count)
  end
  if #matches > 1 then
    return nil, ("%s: %d rows match %s (rows %s): name one by its number"):format(file, #matches,
      tostring(which), table.concat(matches, ", ", 1, math.min(#matches, 10)))
  end
  return found, matches[1], file
end

local function sorted_keys(t)
  local k = {}
  for key in pairs(t) do k[#k + 1] = key end
  table.sort(k, function(a, b) return tostring(a) < tostring(b) end)
  return k
end

function M.spec(kernel, row, o)
  o = o or {}
  local case, why = registry.check(kernel, row, o.ctx)
  if not case then return nil, ("%s row %s cannot be replayed: %s"):format(kernel, tostring(o.number or "?"), why) end
  local args, notes, index = {}, {}, 0
  local function add(a) a.index = index; index = index + 1; args[#args + 1] = a end
  local function visit(v, name)
    if v == NULL then
      notes[#notes + 1] = name .. " = None has no slot"
    elseif type(v) == "table" and v.tensor then
      local t = v.tensor
      add { kind = "tensor", name = name, dtype = t.dtype, shape = t.shape, role = "input", format = t.format }
    elseif type(v) == "table" and v.list_of then
      for i, x in ipairs(v.list_of) do visit(x, name .. "_" .. (i - 1)) end
    elseif type(v) == "table" then
      local list = #v > 0
      for _, k in ipairs(list and {} or sorted_keys(v)) do visit(v[k], name .. "_" .. tostring(k)) end
      for i, x in ipairs(v) do visit(x, name .. "_" .. (i - 1)) end
    elseif math.type(v) == "integer" then
      add { kind = "scalar", name = name, dtype = "INT64", value = v, pack_mode = "value" }
    elseif type(v) == "number" then
      add { kind = "scalar", name = name, dtype = "FLOAT32", value = v, pack_mode = "bits" }
    elseif type(v) == "boolean" then
      add { kind = "scalar", name = name, dtype = "BOOL", value = v and 1 or 0, pack_mode = "value" }
    else
      notes[#notes + 1] = ("%s = %s has no slot"):format(name, v == NULL and "None" or tostring(v))
    end
  end
  for i, v in ipairs(case.args or {}) do visit(v, "arg" .. (i - 1)) end
  for _, k in ipairs(sorted_keys(case.kwargs or {})) do
    visit(case.kwargs[k], (tostring(k):gsub("[^%w_]", "_")))
  end
  local out, err = common.slots(row, "out")
  if not out then return nil, ("%s row %s: Output Shapes: %s"):format(kernel, tostring(o.number or "?"), err) end
  for _, i in ipairs(common.present(out)) do
    local dt = common.dtype(out.dtypes[i] or "")
    add { kind = "tensor", name = "out" .. (i - 1), dtype = dt, shape = out.shapes[i], role = "output",
          format = common.trim(out.formats[i] or "") ~= "" and common.trim(out.formats[i]) or nil }
  end
  local api = case.api or "?"
  return { kernel = kernel, block_dim = o.block_dim or 1, args = args,
           source = ("%s row %s (%s), replayed as %s"):format(o.file or kernel, tostring(o.number or "?"),
             perf.sig.display(row), api) }, notes
end

return M
