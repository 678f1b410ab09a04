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
-- bytes per dim, then "\0" (perfscript.shape.sort_key; sort_key(shapes, n) appends n as 4
-- big-endian bytes, a stable tie-break).
M.sort_key = shape.sort_key

-- key(kernel, row) -> 64-bit signature hash of a row given as a table keyed by column name.
local row_hash = sig.row_hash  -- sig.row's hash, no text made
function M.key(kernel, r)
  return row_hash(r, kernel)
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
