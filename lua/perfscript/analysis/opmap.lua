-- op_mapping.yaml lookups for the analysis tools (docs/rules.md, Analysis: op comparison). The
-- entries live under `operator_mappings`; a flat document (op -> entry, as the Python
-- original's unit tests use) is accepted too. The original looked at the document root and so
-- never found a real entry.
local lyaml = require "lyaml"
local reader = require "perfscript.db.mapping"

local M = {}
M.__index = M

local function is_map(v)
  return type(v) == "table" and v ~= lyaml.null
end

-- An empty mapping (no file).
function M.empty()
  return setmetatable({ entries = {}, path = nil }, M)
end

-- Builds a mapping from a decoded document.
function M.from_doc(doc, path)
  local entries = {}
  if is_map(doc) then
    local src = is_map(doc.operator_mappings) and doc.operator_mappings or doc
    for k, v in pairs(src) do
      if type(k) == "string" and is_map(v) then entries[k] = v end
    end
  end
  return setmetatable({ entries = entries, path = path }, M)
end

-- Loads DIR/op_mapping.yaml. A missing file gives an empty mapping and a note; a malformed one
-- is an error naming the file (and lyaml's line and column).
function M.load_dir(dir)
  local path = (dir:gsub("/+$", "")) .. "/op_mapping.yaml"
  local doc, err = reader.read_file(path)
  if doc == nil then return M.empty(), "no op_mapping.yaml in " .. dir end
  if doc == false then return nil, err end
  return M.from_doc(doc, path)
end

function M.load_text(text, path)
  local doc, err = reader.decode(text, path)
  if doc == false then return nil, err end
  return M.from_doc(doc, path)
end

-- The entry for a TC op name: the name without "torch.ops.", the name as is, then the name
-- without its overload ("aten.add.Tensor" -> "aten.add").
local NONE = {}

function M:entry(op)
  op = tostring(op)
  local memo = self.memo
  if not memo then memo = {}; self.memo = memo end
  local hit = memo[op]
  if hit then return hit ~= NONE and hit or nil end
  local short = op:gsub("torch%.ops%.", "")
  local e = self.entries[short] or self.entries[op]
  if not e then
    local base = short:match("^(.+%..+)%.[^.]+$")
    e = base and self.entries[base] or nil
  end
  memo[op] = e or NONE
  return e
end

local function str(v)
  return type(v) == "string" and v ~= "" and v or nil
end

function M:kernel_type(op)
  local e = self:entry(op)
  return e and str(e.kernel_type) or nil
end

function M:zero_cost(op)
  local e = self:entry(op)
  return e ~= nil and e.zero_cost == true
end

function M:accepted_miss(op)
  local e = self:entry(op)
  return e ~= nil and str(e.accepted_miss) ~= nil
end

function M:count()
  local n = 0
  for _ in pairs(self.entries) do n = n + 1 end
  return n
end

return M
