-- Pieces the analysis recipes share: model selection flags, output files, scenario files.
local perf = require "perfscript"
local tctrace = require "perfscript.analysis.tctrace"
local prof = require "perfscript.analysis.prof"

local M = {}

-- --tc-trace and --prof-trace, the two inputs of every comparison (required: both must be given).
function M.add_inputs(parser, required)
  local tc = parser:option("--tc-trace", "TensorCast Chrome trace (JSON)."):argname("<json>")
  if required then tc:count(1) end
  local pr = parser:option("--prof-trace", "Forward-pass trace CSV (kernel_details columns).")
    :argname("<csv>")
  if required then pr:count(1) end
end

-- Fails with "<what> not found: <path>" unless path can be opened.
function M.require_file(path, what)
  local f = io.open(path, "rb")
  if not f then perf.fail("%s not found: %s", what, path) end
  f:close()
end

-- --model / --pid / --hcom-window-us on an argparse parser.
function M.add_trace_options(parser)
  parser:option("--model", "Analyse the process whose name contains NAME (default: the one " ..
                "named like 'empirical' or 'profiling', else the only one)."):argname("<name>")
  parser:option("--pid", "Analyse the events of this process id."):argname("<pid>")
    :convert(tonumber)
  parser:option("--hcom-window-us", "Also merge hcom copies of one type whose starts lie " ..
                "within this many us (a collective's two copies share its exact start; " ..
                "distinct collectives can start 0.24 us apart).", "0")
    :argname("<us>"):convert(function(s)
      local v = tonumber(s)
      if not v or v ~= v or v < 0 or v == math.huge then
        return nil, "--hcom-window-us must be a number of microseconds, 0 or more (got '" ..
                    s .. "')"
      end
      return v
    end)
end

-- The hcom window in integer nanoseconds (prof.dedup's unit).
function M.window_ns(args)
  return math.floor((args.hcom_window_us or 0) * 1000 + 0.5)
end

-- Loads a TC trace and chooses its pid; fails with a user error on problems.
function M.trace_and_pid(path, args)
  local tr, err = tctrace.load(path)
  if not tr then perf.fail("%s", err) end
  if tr.repaired then
    io.stderr:write("warning: " .. path .. ": the event array was not closed (interrupted export?); " ..
                    "read what is there\n")
  end
  local pid, note = tctrace.select_pid(tr, { pid = args.pid, model = args.model })
  if pid == false then perf.fail("%s", note) end
  if note then io.stderr:write("warning: " .. note .. "\n") end
  return tr, pid
end

-- Both sides of a comparison: the TC trace and its pid, and the profiled trace read by
-- prof_side(path, {window_ns=}) (whose warnings go to stderr); fails with a user error on problems.
function M.load_sides(tc_path, prof_path, args, prof_side)
  local tr, pid = M.trace_and_pid(tc_path, args)
  local p, summary = prof_side(prof_path, { window_ns = M.window_ns(args) })
  if not p then perf.fail("%s", summary) end
  prof.report_warnings(prof_path, summary)
  return tr, pid, p
end

-- Opens the database that the database flags (perfscript.options.database) name, else the
-- default database (one line says which); fails with a user error when it cannot be opened.
-- Returns db, dir.
function M.open_database(args)
  local dir = require("perfscript.options").database_dir(args)
  local db, err = perf.open(dir)
  if not db then perf.fail("%s", err) end
  return db, dir
end

local dirname = require("perfscript.path").dirname

-- Writes a result file atomically (parents created) and says what happened on stderr.
function M.write_file(path, text, what)
  local dir = dirname(path)
  if dir ~= "." and dir ~= "" then
    local ok, err = perf.fs.mkdir_p(dir)
    if not ok then perf.fail("%s", err) end
  end
  local st, err = perf.fs.write_atomic(path, text, { if_changed = true })
  if not st then perf.fail("%s", err) end
  io.stderr:write(string.format("%s %s (%s)\n", st, path, what or "output"))
  return st
end

-- A scenario file is Lua data: `return { {name=..., tc_trace=..., prof_trace=...}, ... }` or
-- `return { data_dir = ..., scenarios = {...} }`. It runs with an empty environment (no library
-- functions), and relative paths are taken from the file's own directory.
function M.load_scenarios(path)
  local chunk, err = loadfile(path, "t", {})
  if not chunk then perf.fail("%s", err) end
  local ok, doc = pcall(chunk)
  if not ok then perf.fail("%s: %s", path, tostring(doc)) end
  if type(doc) ~= "table" then perf.fail("%s: must return a table of scenarios", path) end
  local list = doc.scenarios or doc
  local base = dirname(path)
  local function resolve(p)
    if type(p) ~= "string" then return p end
    if p:sub(1, 1) == "/" then return p end
    return base .. "/" .. p
  end
  local out = {}
  for i, sc in ipairs(list) do
    if type(sc) ~= "table" then perf.fail("%s: scenario %d is not a table", path, i) end
    for _, k in ipairs { "name", "tc_trace", "prof_trace" } do
      if type(sc[k]) ~= "string" or sc[k] == "" then
        perf.fail("%s: scenario %d has no '%s'", path, i, k)
      end
    end
    local n_fwd = sc.n_forward
    if n_fwd ~= nil and type(n_fwd) ~= "number" then
      perf.fail("%s: scenario '%s': n_forward must be a number", path, sc.name)
    end
    out[#out + 1] = { name = sc.name, tc_trace = resolve(sc.tc_trace),
                      prof_trace = resolve(sc.prof_trace), m6 = resolve(sc.m6), n_forward = n_fwd }
  end
  if #out == 0 then perf.fail("%s: no scenarios", path) end
  return out, doc.data_dir and resolve(doc.data_dir) or nil
end

return M
