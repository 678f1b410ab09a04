-- The replay workspace of an Insight trace: the host runner and its build file, rendered from
-- the templates in lua/perfscript/insight/templates/ (files of the library, embedded in the
-- binary), and the checked spec, written together (perf.fs.stage: all files or none).
--
--   render(text, vars) -> text       @NAME@ placeholders; an unknown one is an error
--   files(spec, o) -> {{name, text}}  o: kernel_lib, entry, source
--   write(spec, dir, o) -> {{path=, status=}} | nil, message
local perf = require "perfscript"
local library = require "perfscript.library"
local spec_mod = require "perfscript.insight.spec"

local M = {}

M.TEMPLATES = { "host_runner.cpp", "CMakeLists.txt" }
M.SPEC_FILE = "insight_spec.json"

function M.template(name)
  local text, err = library.read("perfscript/insight/templates/" .. name .. ".in")
  if not text then error(err, 2) end
  return text
end

-- Replaces each @NAME@ with vars.NAME; a placeholder with no value is an error (misuse).
function M.render(text, vars)
  return (text:gsub("@([%u_]+)@", function(k)
    local v = vars[k]
    if v == nil then error("template placeholder @" .. k .. "@ has no value", 0) end
    return tostring(v)
  end))
end

-- A C string literal of s (nullptr when s is nil).
local function c_string(s)
  if s == nil then return "nullptr" end
  return '"' .. s:gsub('[\\"]', "\\%0"):gsub("[%c\128-\255]", function(c)
    return string.format("\\%03o", c:byte())
  end) .. '"'
end
M.c_string = c_string

-- One line of text for a comment (no newlines, no comment terminators).
local function comment(s)
  return (tostring(s or "-"):gsub("[%c]", " "):gsub("%*/", "* /"))
end

function M.files(spec, o)
  o = o or {}
  local tensors, scalars = {}, {}
  for _, a in ipairs(spec.args) do
    if a.kind == "tensor" then
      tensors[#tensors + 1] = ("    {%d, %s, UINT64_C(%d), %s},  // %s [%s] %s"):format(a.index,
        c_string(a.name), a.nbytes, a.role == "output" and "true" or "false", a.dtype,
        table.concat(a.shape, ","), a.role)
    else
      scalars[#scalars + 1] = ("    {%d, %s, UINT64_C(0x%016x)},  // %s %s (%s)"):format(a.index,
        c_string(a.name), a.packed, a.dtype, comment(a.value), a.pack_mode)
    end
  end
  local kernel = spec.kernel or o.kernel or "kernel"
  local vars = {
    KERNEL = comment(kernel), SOURCE = comment(spec.source or o.source or "an argument spec"),
    BLOCK_DIM = spec.block_dim, KERNEL_LIBRARY = c_string(o.kernel_lib or ""),
    ENTRY_SYMBOL = c_string(o.entry or "replay_entry"),
    TENSORS = table.concat(tensors, "\n"), SCALARS = table.concat(scalars, "\n"),
    KERNEL_ID = (kernel:gsub("[^%w_]", "_")),
  }
  local out = {}
  for _, name in ipairs(M.TEMPLATES) do out[#out + 1] = { name, M.render(M.template(name), vars) } end
  out[#out + 1] = { M.SPEC_FILE, spec_mod.to_json(spec) }
  return out
end

-- Writes the workspace files into dir (created), all together. Returns the writes.
function M.write(spec, dir, o)
  local ok, err = perf.fs.mkdir_p(dir)
  if not ok then return nil, err end
  local st <close> = perf.fs.stage()
  local writes = {}
  for _, f in ipairs(M.files(spec, o)) do
    local path = dir .. "/" .. f[1]
    local s, werr = perf.fs.write_atomic(path, f[2], { if_changed = true, stage = st })
    if not s then return nil, werr end
    writes[#writes + 1] = { path = path, status = s }  -- what the commit does (unchanged: nothing)
  end
  local ok2, cerr = st:commit()
  if not ok2 then return nil, cerr end
  return writes
end

return M
