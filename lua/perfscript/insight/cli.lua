-- recipes/insight_trace.lua: an instruction-level trace of one kernel launch for MindStudio
-- Insight. From an argument spec (--arg-spec) or a database row (--from-db, --row: the replay
-- builder knows the row's tensors and scalars), it writes a replay workspace (host runner and
-- build file from templates), builds it, runs `msprof op simulator` (collect, then export),
-- checks the exported simulator/ package and prints time per pipeline and the top instructions,
-- with the same as an HTML page.
local perf = require "perfscript"
local options = require "perfscript.options"
local paths = require "perfscript.path"
local spec_mod = require "perfscript.insight.spec"
local workspace = require "perfscript.insight.workspace"

local M = {}

function M.parser()
  local p = require("argparse")("insight_trace",
    "Trace one kernel launch at instruction level with msprof op simulator, for MindStudio Insight.")
    :epilog([[
Examples:
  insight_trace --kernel Add --from-db DB --row 1 --kernel-lib libadd.so
  insight_trace --kernel Add --from-db DB --row '16,7168;16,7168 -> 16,7168' --generate-only
  insight_trace --kernel paged_attention_incore --backend ptoas --arg-spec pa.json --kernel-lib libpa.so

The spec (Lua returning a table, or JSON):
  { kernel = "Add", block_dim = 1, args = {
      { kind = "tensor", index = 0, name = "x", dtype = "DT_BF16", shape = {16, 7168}, role = "input" },
      { kind = "scalar", index = 1, name = "alpha", dtype = "FLOAT32", value = 0.5, pack_mode = "bits" } } }
Indices are slots 0..49 of the kernel's int64 args array; FLOAT32 scalars are packed as their
IEEE-754 bits (pack_mode "bits", or dtype FLOAT32_BITS). Without --kernel-lib (or with
--generate-only) only the workspace is written, with the commands that finish the job.]])
  p:option("--kernel", "Kernel: the database table (kernel type) with --from-db; the kernel function "
    .. "with --backend ptoas. Required unless --package."):argname("<name>")
  p:option("--package", "Only summarise an existing simulator package (an OPPROF_* directory, its "
    .. "simulator/, or a directory holding OPPROF_* directories)."):argname("<dir>")
  p:option("--arg-spec", "Argument spec file (Lua or JSON)."):argname("<file>")
  p:option("--from-db", "Database version directory to take the row from."):argname("<dir>")
    :hidden_name("--database-path")
  p:option("--row", "With --from-db: a data row number (1 = the first row) or its signature, "
    .. "'INPUT SHAPES -> OUTPUT SHAPES' as the database shows it."):argname("<signature-or-index>")
  options.output(p, "Workspace directory (default: insight_trace_<kernel>).", { argname = "<dir>" })
  p:option("--backend", "Kernel backend: simpler (entry replay_entry) or ptoas (the kernel's own "
    .. "exported C++ function, found with nm -D and c++filt)."):choices { "simpler", "ptoas" }
    :default("simpler")
  p:option("--kernel-lib", "The kernel's shared library built for the simulator."):argname("<file>")
  p:option("--entry", "Entry symbol (default: replay_entry for simpler; resolved from --kernel for ptoas)."):argname("<symbol>")
  p:option("--block-dim", "Blocks to launch (default: the spec's block_dim, else 1)."):argname("<n>")
    :convert(function(s)
      local v = options.whole(s)
      if not v or v < 1 then return nil, ("--block-dim: '%s' is not a whole number >= 1"):format(s) end
      return v
    end)
  p:option("--msprof", "msprof program."):argname("<path>"):default("msprof")
  p:option("--soc-version", "SoC to simulate (msprof op simulator --soc-version)."):argname("<soc>")
  p:option("--timeout", "Seconds each step may take before its process group is killed."):argname("<s>")
    :default("1800"):convert(function(s)
      local v = options.whole(s)
      if not v or v < 1 then return nil, ("--timeout: '%s' is not a whole number >= 1"):format(s) end
      return v
    end)
  p:option("--runtime-include", "Directory holding acl/acl.h (default: $ASCEND_HOME_PATH/include)."):argname("<dir>")
  p:option("--runtime-libs", "Runtime libraries to link (default: ascendcl; empty for a header-only runtime)."):argname("<libs>")
  p:option("--cmake", "cmake program."):argname("<path>"):default("cmake")
  p:option("--html", "Summary page (default: <output>/insight_summary.html)."):argname("<file>")
  p:option("--top", "Instructions in the top list."):argname("<n>"):default("10"):convert(options.whole)
  p:flag("--generate-only", "Write the workspace and stop.")
  options.quiet(p, "Print only the summary tables.")
  return p
end

local function load_spec(args)
  if args.arg_spec and args.from_db then perf.fail("--arg-spec and --from-db are exclusive: give one") end
  if args.arg_spec then
    if args.row then perf.fail("--row goes with --from-db, not --arg-spec") end
    local s, err = spec_mod.load(args.arg_spec)
    if not s then perf.fail("%s", err) end
    return s, {}
  end
  if not args.from_db then perf.fail("give --arg-spec FILE, or --from-db DIR with --row") end
  if not args.row then perf.fail("--from-db needs --row (a row number or a signature)") end
  local fromdb = require "perfscript.insight.fromdb"
  local row, n, file = fromdb.row(args.from_db, args.kernel, args.row)
  if not row then perf.fail("%s", n) end
  local raw, notes = fromdb.spec(args.kernel, row, { number = n, file = file })
  if not raw then perf.fail("%s", notes) end
  local s, err = spec_mod.check(raw, ("%s row %d"):format(file, n))
  if not s then perf.fail("%s", err) end
  return s, notes
end

-- Prints the summary tables of a checked package and writes its page.
local function summarise(pkg, info, args, page)
  local summary = require "perfscript.insight.summary"
  local s, err = summary.read(pkg)
  if not s then return nil, err end
  local pipes, top = summary.tables(s, args.top)
  print(pipes)
  print()
  print(top)
  require("perfscript.analysis.cli").write_file(page, summary.page(s, info, math.max(args.top, 20)),
    "summary page")
  return s
end

function M.main(argv)
  local args = M.parser():parse(argv)
  local say = args.quiet and function() end or function(s) io.stderr:write(s, "\n") end
  local run = require "perfscript.insight.run"
  if args.package then
    local sim, err = run.find_package(args.package)
    if not sim then perf.fail("%s", err) end
    local pkg
    pkg, err = run.check_package(sim)
    if not pkg then perf.fail("%s", err) end
    -- beside simulator/, not in it: the directory Insight opens stays as msprof wrote it
    local page = args.html or (paths.dirname(sim) .. "/insight_summary.html")
    local ok
    ok, err = summarise(pkg, { kernel = args.kernel, package = sim }, args, page)
    if not ok then perf.fail("%s", err) end
    print(("Summary page: %s"):format(page))
    return 0
  end
  if not args.kernel then perf.fail("--kernel is required (unless --package)") end
  local spec, notes = load_spec(args)
  spec.kernel = spec.kernel or args.kernel
  if args.block_dim then spec.block_dim = args.block_dim end
  local ws = (args.output or ("insight_trace_" .. args.kernel:gsub("[^%w_.-]", "_"))):gsub("(.)/+$", "%1")
  for _, n in ipairs(notes) do say("note: " .. n) end

  -- the entry symbol: the simpler backend's replay_entry, or the ptoas kernel's exported name
  local entry, demangled = args.entry, nil
  if not entry and args.backend == "ptoas" then
    if not args.kernel_lib then
      perf.fail("--backend ptoas needs --kernel-lib (to find the exported symbol of %s) or --entry", args.kernel)
    end
    entry, demangled = require("perfscript.insight.symbols").resolve(args.kernel_lib, args.kernel,
      { scratch = ws .. "/logs", timeout = args.timeout })
    if not entry then perf.fail("%s", demangled) end
    say(("entry: %s (%s)"):format(entry, demangled))
  end
  entry = entry or "replay_entry"

  say(("[1/5] workspace %s: %d argument(s) of %s"):format(ws, #spec.args, spec.kernel))
  local kernel_lib = args.kernel_lib and paths.abspath(args.kernel_lib) or nil
  local writes, werr = workspace.write(spec, ws, { kernel_lib = kernel_lib, entry = entry })
  if not writes then perf.fail("%s", werr) end
  for _, w in ipairs(writes) do io.stderr:write(("%s %s\n"):format(w.status, w.path)) end

  local msprof = args.msprof
  if args.generate_only or not kernel_lib then
    print(("Workspace written to %s. To finish:"):format(ws))
    print(("  cmake -S %s -B %s/build && cmake --build %s/build"):format(ws, ws, ws))
    print(("  %s op simulator --output=%s/collect %s/build/insight_runner %s %s"):format(msprof, ws, ws,
      kernel_lib or "<kernel library>", entry))
    print(("  %s op simulator --export=%s/collect/OPPROF_*/dump --output=%s/insight_export"):format(msprof, ws, ws))
    return 0
  end

  local function failed(err) perf.fail("%s (the workspace is kept: %s)", err, ws) end
  local o = { msprof = msprof, soc_version = args.soc_version, kernel_lib = kernel_lib, entry = entry,
    timeout = args.timeout, cmake = args.cmake, runtime_include = args.runtime_include,
    runtime_libs = args.runtime_libs, say = not args.quiet and say or nil }
  say("[2/5] build")
  local runner, err = run.build(ws, o)
  if not runner then failed(err) end
  say("[3/5] msprof op simulator: collect")
  local opprof
  opprof, err = run.collect(ws, runner, o)
  if not opprof then failed(err) end
  say("[4/5] msprof op simulator: export")
  local sim
  sim, err = run.export(ws, opprof, o)
  if not sim then failed(err) end
  local pkg
  pkg, err = run.check_package(sim)
  if not pkg then failed(err) end
  say("[5/5] summary")
  local page = args.html or (ws .. "/insight_summary.html")
  local ok
  ok, err = summarise(pkg, { kernel = spec.kernel, source = spec.source, package = sim }, args, page)
  if not ok then failed(err) end
  print()
  print(("MindStudio Insight: open %s (the whole simulator/ directory: trace.json, visualize_data.bin, %d core directories)")
    :format(sim .. "/trace.json", #pkg.cores))
  print(("Summary page: %s"):format(page))
  return 0
end

return M
