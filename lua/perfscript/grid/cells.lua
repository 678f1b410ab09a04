-- Shape text, sort order and row keys for the grid, on perfscript.shape and perfscript.sig
-- (the signature module the replay write-back uses too, so both agree on "the same row").
local shape = require "perfscript.shape"
local sig = require "perfscript.sig"

local M = {}

-- { {a,b}, {}, {c} } -> "a,b;;c"
M.text = shape.format

-- Template slot structure of a shape cell ({} when the cell is not a shape list).
function M.parse(cell)
  return shape.parse(cell or "") or {}
end

-- A byte string that orders shape lists slot by slot, dims as integers, a prefix first
-- (compared in C, so sorting big populations stays fast): per slot, "\1" + 8 big-endian
-- bytes per dim, then "\0".
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

-- key(kernel, row) -> 64-bit signature hash of a row given as a table keyed by column name.
local row = sig.row
function M.key(kernel, r)
  local _, h = row(r, kernel)
  return h
end

-- record_keyer(header, kernel) -> f(fields) -> key, for records read with that header.
function M.record_keyer(header, kernel)
  local cols, record = sig.columns(header), sig.record
  return function(fields)
    local _, h = record(fields, cols, kernel)
    return h
  end
end

return M
