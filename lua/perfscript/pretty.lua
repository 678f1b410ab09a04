-- Readable printing of Lua values for the REPL: nested tables, keys sorted, arrays first,
-- long tables and deep nesting truncated so one result never floods the terminal.
local M = {}

M.max_items = 30      -- items shown per table
M.max_depth = 3       -- nesting shown
M.max_width = 100     -- a table that fits on one line is printed on one line

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

local function sorted_keys(t, n)
  local keys = {}
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return keys
end

local format

local function format_key(k)
  if is_identifier(k) then return k end
  return "[" .. format(k, 0, {}) .. "]"
end

function format(v, depth, seen, indent)
  local tv = type(v)
  if tv == "string" then return string.format("%q", v):gsub("\\\n", "\\n") end
  if tv == "number" then
    if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 1e15 then
      return string.format("%.1f", v)
    end
    return tostring(v)
  end
  if tv ~= "table" then return tostring(v) end
  local mt = getmetatable(v)
  if mt and mt.__tostring then return tostring(v) end
  if seen[v] then return "<cycle>" end
  if depth >= M.max_depth then return "{...}" end
  seen[v] = true
  indent = indent or ""
  local inner = indent .. "  "
  local n = #v
  local items, shown = {}, 0
  local total = n
  for i = 1, n do
    shown = shown + 1
    if shown > M.max_items then break end
    items[#items + 1] = format(v[i], depth + 1, seen, inner)
  end
  local keys = sorted_keys(v, n)
  total = total + #keys
  for _, k in ipairs(keys) do
    shown = shown + 1
    if shown > M.max_items then break end
    items[#items + 1] = format_key(k) .. " = " .. format(v[k], depth + 1, seen, inner)
  end
  if total > M.max_items then
    items[#items + 1] = string.format("... (%d more)", total - M.max_items)
  end
  seen[v] = nil
  if #items == 0 then return "{}" end
  local one = "{ " .. table.concat(items, ", ") .. " }"
  if #one + #indent <= M.max_width and not one:find("\n") then return one end
  return "{\n" .. inner .. table.concat(items, ",\n" .. inner) .. "\n" .. indent .. "}"
end

function M.format(v) return (format(v, 0, {})) end

function M.print(...)
  local n = select("#", ...)
  local out = {}
  for i = 1, n do out[i] = M.format((select(i, ...))) end
  io.stdout:write(table.concat(out, "\t"), "\n")
end

return M
