-- The exported symbol of a kernel in a kernel library (the ptoas backend: its kernels are C++
-- functions, exported under mangled names). One `nm -D --defined-only` lists the library's
-- functions, one `c++filt` (every symbol as an argument) demangles them all; the original ran
-- c++filt once per symbol and zipped the lists without checking their lengths (its review).
--
--   resolve(lib, name, o) -> symbol, demangled | nil, message
--     name: the kernel function's name, bare or qualified (ns::kernel); a demangled symbol
--     matches when its function name (before the parameter list) is name or ends in ::name.
--     o: nm, cxxfilt (programs), scratch (a directory for their output), timeout (s)
--   parse_nm(text) -> {symbol, ...}  defined functions (types T, W, i)
--   match(symbols, demangled, name) -> symbols, demangled of the matches | nil, message
local perf = require "perfscript"
local paths = require "perfscript.path"

local M = {}

-- Defined function symbols of `nm -D --defined-only` output ("addr type name").
function M.parse_nm(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local t, sym = line:match("^%x*%s+([TWi])%s+(%S+)%s*$")
    if sym then out[#out + 1] = sym end
  end
  return out
end

-- The function name of a demangled symbol: text before its parameter list (templates kept).
local function function_name(d)
  local depth, i = 0, 1
  while i <= #d do
    local c = d:sub(i, i)
    if c == "<" then depth = depth + 1 elseif c == ">" then depth = depth - 1
    elseif c == "(" and depth == 0 then return d:sub(1, i - 1) end
    i = i + 1
  end
  return d
end

function M.match(symbols, demangled, name)
  if #symbols ~= #demangled then
    return nil, ("c++filt returned %d names for %d symbols: cannot pair them"):format(#demangled, #symbols)
  end
  local syms, dems = {}, {}
  for i, sym in ipairs(symbols) do
    local fn = function_name(demangled[i])
    if fn == name or fn:sub(-(#name + 2)) == "::" .. name then
      syms[#syms + 1], dems[#dems + 1] = sym, demangled[i]
    end
  end
  return syms, dems
end

local function run_capture(argv, out, o)
  local code, how = perf.proc.run { argv = argv, stdout = out, stderr = out .. ".err",
    stdin_null = true, timeout = o.timeout or 60 }
  if code == nil then return nil, ("%s: %s"):format(argv[1], tostring(how)) end
  if how == "timeout" then return nil, ("%s timed out after %ds"):format(argv[1], o.timeout or 60) end
  if code ~= 0 or how ~= "exit" then
    local err = (paths.read(out .. ".err") or ""):gsub("%s+$", "")
    local cmd = #argv <= 5 and table.concat(argv, " ") or (table.concat(argv, " ", 1, 3) .. " ...")
    return nil, ("%s failed (%s %s): %s"):format(cmd, how, tostring(code),
      err ~= "" and err or "no message (is it a shared library?)")
  end
  return paths.read(out)
end

function M.resolve(lib, name, o)
  o = o or {}
  if type(name) ~= "string" or name == "" then error("symbols.resolve: no kernel name", 2) end
  local okf, ferr = perf.fs.check_input(lib)
  if not okf then return nil, ferr end
  local scratch = o.scratch or os.getenv("TMPDIR") or "/tmp"
  local okd, derr = perf.fs.mkdir_p(scratch)
  if not okd then return nil, derr end
  local nm_out = scratch .. "/nm.txt"
  local text, err = run_capture({ o.nm or "nm", "-D", "--defined-only", lib }, nm_out, o)
  if not text then return nil, err end
  local symbols = M.parse_nm(text)
  if #symbols == 0 then return nil, ("%s: nm -D lists no defined functions (not a shared library?)"):format(lib) end
  local argv = { o.cxxfilt or "c++filt" }
  for _, s in ipairs(symbols) do argv[#argv + 1] = s end
  local dtext, derr2 = run_capture(argv, scratch .. "/cxxfilt.txt", o)
  if not dtext then return nil, derr2 end
  local demangled = {}
  for line in (dtext .. (dtext:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    demangled[#demangled + 1] = line
  end
  if dtext == "" then demangled = {} end
  local syms, dems = M.match(symbols, demangled, name)
  if not syms then return nil, ("%s: %s"):format(lib, dems) end
  if #syms == 0 then
    local some = {}
    for i = 1, math.min(#demangled, 5) do some[i] = function_name(demangled[i]) end
    return nil, ("%s: no exported function named %s among its %d functions (%s%s)"):format(lib, name,
      #symbols, table.concat(some, ", "), #symbols > 5 and ", ..." or "")
  end
  if #syms > 1 then
    return nil, ("%s: %d functions named %s: %s (name one by its symbol with --entry)"):format(lib,
      #syms, name, table.concat(dems, "; "))
  end
  return syms[1], dems[1]
end

return M
