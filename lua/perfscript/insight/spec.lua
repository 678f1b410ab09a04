-- Argument specs of an Insight trace: what the generated host runner allocates and packs into
-- the kernel's 50-slot int64 args array.
--
--   spec = { kernel = "Add", block_dim = 1,
--            args = { {kind = "tensor", index = 0, name = "x1", dtype = "DT_BF16", shape = {16, 7168},
--                      role = "input" | "output", nbytes = n (optional, checked)},
--                     {kind = "scalar", index = 2, name = "alpha", dtype = "FLOAT32", value = 1.0,
--                      pack_mode = "bits" | "value"} } }
--   (or `tensors = {...}` and `scalars = {...}` lists in place of `args` with kinds)
--
--   check(raw [, where]) -> spec | nil, message  every failure names the argument
--   load(path) -> spec | nil, message             a Lua file (returns the table) or JSON
--   to_json(spec) -> text                         stable key order (the workspace's copy)
--
-- Packing (the generated runner copies `packed` into its slot, little-endian int64): tensors hold
-- their device address; integer scalars their value sign-extended to 64 bits; FLOAT32 scalars
-- their IEEE-754 bits in the low 32 bits (pack_mode "bits", the default for FLOAT32, or dtype
-- FLOAT32_BITS). The original truncated a float to an integer here and let indices run past the
-- array (both found in its review): a float with pack_mode "value" and an index outside 0..49
-- are refused.
local shape = require "perfscript.shape"

local M = {}

M.SLOTS = 50

-- Scalar dtypes: bits of the integer range (signed or not), or "f32" for the float packing.
local SCALAR = {
  INT8 = { 8, true }, INT16 = { 16, true }, INT32 = { 32, true }, INT64 = { 64, true },
  UINT8 = { 8, false }, UINT16 = { 16, false }, UINT32 = { 32, false }, UINT64 = { 64, false },
  BOOL = { 1, false }, FLOAT32 = "f32", FLOAT32_BITS = "f32",
}
-- Spellings of the same scalar dtypes (the database's and torch's).
local SCALAR_ALIAS = { FLOAT = "FLOAT32", DT_FLOAT = "FLOAT32", DT_FLOAT32 = "FLOAT32", FP32 = "FLOAT32" }
local FLT_MAX = 3.4028234663852886e38

local function scalar_dtype(d)
  local u = tostring(d):upper()
  u = SCALAR_ALIAS[u] or u:gsub("^DT_", "")
  u = SCALAR_ALIAS[u] or u
  if SCALAR[u] then return u end
end

-- The bits of a float32 as an unsigned 32-bit integer (IEEE-754 single, round to nearest).
function M.f32_bits(v)
  return (string.unpack("<I4", string.pack("<f", v)))
end

-- A value as the user wrote it (JSON numbers arrive as floats: 3.0 is shown as 3).
local function show(v)
  if type(v) == "number" then return tostring(math.tointeger(v) or v) end
  return tostring(v)
end

local function label(a, i)
  local name = type(a) == "table" and type(a.name) == "string" and a.name ~= "" and a.name
  local idx = type(a) == "table" and a.index
  local s = name and ('argument "%s"'):format(name) or ("argument #%d"):format(i)
  if idx ~= nil then s = s .. (" (index %s)"):format(show(idx)) end
  return s
end

local function whole(v)
  if type(v) ~= "number" then return nil end
  return math.tointeger(v)
end

local function check_tensor(a, out)
  if a.value ~= nil or a.pack_mode ~= nil then
    return nil, "a tensor takes no value or pack_mode (is it a scalar?)"
  end
  if type(a.dtype) ~= "string" or a.dtype == "" then return nil, "tensor dtype missing" end
  local dt = shape.dtype_normalize(a.dtype)
  if not shape.dtype_known(dt) or dt == "DT_UNDEFINED" then
    if scalar_dtype(a.dtype) == "FLOAT32_BITS" then
      return nil, ("shape/dtype mismatch: %s is a scalar packing, not a tensor dtype"):format(a.dtype)
    end
    return nil, ("unknown tensor dtype '%s'"):format(a.dtype)
  end
  if type(a.shape) ~= "table" then return nil, "tensor shape missing (a list of dimensions)" end
  local dims = {}
  for k in pairs(a.shape) do
    if math.type(k) ~= "integer" or k < 1 or k > #a.shape then
      return nil, "tensor shape is not a list of dimensions"
    end
  end
  for j, d in ipairs(a.shape) do
    local n = whole(d)
    if not n or n < 0 then
      return nil, ("shape/dtype mismatch: dimension %d is %s, not a whole number >= 0"):format(j, show(d))
    end
    dims[j] = n
  end
  local nbytes = shape.nbytes(dims, dt)
  if #dims == 0 then nbytes = shape.dtype_bytes(dt) end -- a 0-d tensor holds one element
  if a.nbytes ~= nil and whole(a.nbytes) ~= nbytes then
    return nil, ("shape/dtype mismatch: shape [%s] of %s is %d bytes, the spec says nbytes = %s")
      :format(table.concat(dims, ","), dt, nbytes, show(a.nbytes))
  end
  local role = a.role or "input"
  if role ~= "input" and role ~= "output" then
    return nil, ("role '%s' is not input or output"):format(tostring(role))
  end
  out.dtype, out.shape, out.nbytes, out.role = dt, dims, nbytes, role
  out.format = type(a.format) == "string" and a.format or nil
  return out
end

local function check_scalar(a, out)
  if a.shape ~= nil then return nil, "a scalar takes no shape (is it a tensor?)" end
  if a.dtype == nil then return nil, "scalar dtype missing" end
  local dt = scalar_dtype(a.dtype)
  if not dt then
    if shape.dtype_known(shape.dtype_normalize(tostring(a.dtype))) then
      return nil, ("shape/dtype mismatch: %s has no scalar packing here (integers, BOOL, FLOAT32, FLOAT32_BITS)")
        :format(tostring(a.dtype))
    end
    return nil, ("unknown scalar dtype '%s'"):format(tostring(a.dtype))
  end
  local kind = SCALAR[dt]
  local mode = a.pack_mode
  if mode ~= nil and mode ~= "value" and mode ~= "bits" then
    return nil, ("pack_mode '%s' is not \"value\" or \"bits\""):format(tostring(mode))
  end
  local v = a.value
  if v == nil then return nil, "scalar value missing" end
  if kind == "f32" then
    mode = mode or "bits"
    if mode ~= "bits" then
      return nil, ('a %s scalar with pack_mode "value" would be truncated to an integer in its int64 '
        .. 'slot; use pack_mode = "bits" (its IEEE-754 bits)'):format(dt)
    end
    if type(v) ~= "number" then return nil, ("value %s is not a number"):format(tostring(v)) end
    if v ~= v or (v ~= math.huge and v ~= -math.huge and math.abs(v) > FLT_MAX) then
      return nil, ("value %s is outside the FLOAT32 range"):format(show(v))
    end
    out.packed = M.f32_bits(v)
  else
    if mode == "bits" then
      return nil, ('pack_mode "bits" applies to FLOAT32 scalars; %s is packed as its value'):format(dt)
    end
    mode = "value"
    if dt == "BOOL" then
      if v == true or v == false then v = v and 1 or 0 end
    end
    local n = whole(v)
    if not n then
      return nil, ("value %s is not a whole number (shape/dtype mismatch for %s)"):format(show(v), dt)
    end
    local bits, signed = kind[1], kind[2]
    local ok
    if bits == 64 then
      ok = signed or n >= 0  -- a UINT64 above 2^63 cannot come from Lua or JSON exactly
    elseif signed then
      ok = n >= -(1 << (bits - 1)) and n < (1 << (bits - 1))
    else
      ok = n >= 0 and n < (1 << bits)
    end
    if not ok then return nil, ("value %d does not fit %s"):format(n, dt) end
    out.packed = n
  end
  out.dtype, out.value, out.pack_mode = dt, v, mode
  return out
end

-- The arguments of raw as one list (args with kinds, or tensors and scalars lists).
local function gather(raw)
  local list = {}
  if raw.args ~= nil then
    if type(raw.args) ~= "table" then return nil, "args is not a list" end
    for _, a in ipairs(raw.args) do list[#list + 1] = a end
  end
  for _, k in ipairs { "tensors", "scalars" } do
    if raw[k] ~= nil then
      if type(raw[k]) ~= "table" then return nil, k .. " is not a list" end
      for _, a in ipairs(raw[k]) do
        if type(a) == "table" and a.kind == nil then a.kind = k == "tensors" and "tensor" or "scalar" end
        list[#list + 1] = a
      end
    end
  end
  if #list == 0 then return nil, "no arguments (args, or tensors and scalars)" end
  return list
end

-- Validates raw; returns the normalized spec (args sorted by index) or nil, message. where
-- (a file name) starts each message.
function M.check(raw, where)
  local pre = where and (where .. ": ") or ""
  if type(raw) ~= "table" then return nil, pre .. "the spec is not a table" end
  local list, err = gather(raw)
  if not list then return nil, pre .. err end
  local out, seen, names = {}, {}, {}
  for i, a in ipairs(list) do
    local function bad(msg) return nil, ("%s%s: %s"):format(pre, label(a, i), msg) end
    if type(a) ~= "table" then return bad("not a table") end
    if type(a.name) ~= "string" or not a.name:match("^[%a_][%w_]*$") then
      return bad("name must be an identifier (letters, digits, _), got " .. tostring(a.name))
    end
    local idx = whole(a.index)
    if idx == nil then return bad("index " .. show(a.index) .. " is not a whole number") end
    if idx < 0 then return bad(("index %d is negative (slots are 0..%d)"):format(idx, M.SLOTS - 1)) end
    if idx >= M.SLOTS then
      return bad(("index %d is outside the %d-slot args array (0..%d)"):format(idx, M.SLOTS, M.SLOTS - 1))
    end
    if seen[idx] then
      return bad(('duplicate index %d (also argument "%s")'):format(idx, seen[idx]))
    end
    if names[a.name] then return bad(("duplicate name (also index %d)"):format(names[a.name])) end
    seen[idx], names[a.name] = a.name, idx
    local o = { kind = a.kind, index = idx, name = a.name }
    local ok, why
    if a.kind == "tensor" then
      ok, why = check_tensor(a, o)
    elseif a.kind == "scalar" then
      ok, why = check_scalar(a, o)
    else
      return bad(("kind '%s' is not tensor or scalar"):format(tostring(a.kind)))
    end
    if not ok then return bad(why) end
    out[#out + 1] = o
  end
  table.sort(out, function(x, y) return x.index < y.index end)
  local block_dim = raw.block_dim == nil and 1 or whole(raw.block_dim)
  if not block_dim or block_dim < 1 then
    return nil, ("%sblock_dim %s is not a whole number >= 1"):format(pre, show(raw.block_dim))
  end
  if raw.kernel ~= nil and (type(raw.kernel) ~= "string" or raw.kernel == "") then
    return nil, pre .. "kernel is not a name"
  end
  return { kernel = raw.kernel, block_dim = block_dim, args = out, source = raw.source }
end

-- Reads a spec file: JSON when it starts with '{', else Lua returning the table (run with an
-- empty environment: data, no library functions).
function M.load(path)
  local text, err = require("perfscript.path").read(path)
  if not text then return nil, err end
  local raw
  if text:match("^%s*{") then
    local ok, v = pcall(require("cjson").decode, text)
    if not ok then return nil, ("%s: not valid JSON: %s"):format(path, tostring(v)) end
    raw = v
  else
    local chunk, lerr = load(text, "@" .. path, "t", {})
    if not chunk then return nil, lerr end
    local ok, v = pcall(chunk)
    if not ok then return nil, tostring(v) end
    raw = v
  end
  return M.check(raw, path)
end

-- JSON text of a checked spec, keys in a fixed order (re-readable with load).
function M.to_json(spec)
  local enc = require("cjson").encode
  local function q(s) return (enc(s):gsub("\\/", "/")) end
  local function num(v)
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.17g", v)
  end
  local out = { "{" }
  if spec.kernel then out[#out + 1] = ('  "kernel": %s,'):format(q(spec.kernel)) end
  if spec.source then out[#out + 1] = ('  "source": %s,'):format(q(spec.source)) end
  out[#out + 1] = ('  "block_dim": %d,'):format(spec.block_dim)
  out[#out + 1] = '  "args": ['
  for i, a in ipairs(spec.args) do
    local f = { '"kind": ' .. q(a.kind), '"index": ' .. a.index, '"name": ' .. q(a.name),
                '"dtype": ' .. q(a.dtype) }
    if a.kind == "tensor" then
      f[#f + 1] = '"shape": [' .. table.concat(a.shape, ", ") .. "]"
      f[#f + 1] = '"nbytes": ' .. a.nbytes
      f[#f + 1] = '"role": ' .. q(a.role)
      if a.format then f[#f + 1] = '"format": ' .. q(a.format) end
    else
      f[#f + 1] = '"value": ' .. num(a.value)
      f[#f + 1] = '"pack_mode": ' .. q(a.pack_mode)
    end
    out[#out + 1] = "    {" .. table.concat(f, ", ") .. "}" .. (i < #spec.args and "," or "")
  end
  out[#out + 1] = "  ]"
  out[#out + 1] = "}"
  return table.concat(out, "\n") .. "\n"
end

return M
