-- The comm microbench run (recipes/comm_bench.lua is its entry point): which (op, devices, tier)
-- sessions to run, with which byte sizes, and the torchrun commands that produce hcom_*.csv;
-- with --do-run the sessions run one after another (perfscript.analysis.commrun).
-- main returns the exit status.
local perf = require "perfscript"
local argparse = require "argparse"
local cli = require "perfscript.analysis.cli"
local options = require "perfscript.options"
local cb = require "perfscript.analysis.commbench"
local pyfmt = require "perfscript.analysis.pyfmt"

local M = {}

-- An argparse converter for a tuple (--grid-shape): "a,b c" -> {a, b, c}, whole numbers 0 or more.
local function int_list(name)
  return function(s)
    local t = {}
    for part in s:gmatch("[^,%s]+") do
      local v, err = options.whole(part)
      if not v then return nil, name .. ": " .. err end
      t[#t + 1] = v
    end
    if #t == 0 then return nil, name .. ": empty list" end
    return t
  end
end

function M.parser()
  local parser = argparse("comm_bench.lua",
    "Plans (and with --do-run runs) the HCCL collective microbench under torchrun.")
  options.list(parser, "--ops", "Collectives (comma list; repeatable).",
    { default = "all_reduce,all_gather,reduce_scatter,all_to_all" })
  options.list(parser, "--num-devices", "Group sizes (comma list; repeatable).",
    { default = "16,8,4,2", convert = options.whole })
  options.list(parser, "--topology-tier", "Tiers to measure (comma list of 0 inter-pod, 1 intra-pod, " ..
                "2 die-level; repeatable; default: the tier of ranks 0..n-1).", { convert = options.whole })
  parser:option("--grid-shape", "Topology grid, outer to inner (pods, nodes per pod, dies per node).",
                "48,8,2"):argname("<list>"):convert(int_list("--grid-shape"))
  options.list(parser, "--bytes-grid", "Message sizes in bytes (comma list; repeatable; default: " ..
                "powers of two 128 .. 512 MiB).", { convert = options.whole })
  parser:option("--dtype", "Element type.", "bf16"):choices { "bf16", "fp16", "fp32", "int8" }
  parser:option("--bench-mode", "kernel: profiler kernel durations on the NPU; wallclock: host timing.",
                "kernel"):choices { "kernel", "wallclock" }
  options.database(parser, { required_path = true, help = "Where the bench writes hcom_*.csv "
    .. "(a communication database directory).", default_value = "hccl_bench_data" })
  parser:option("--script", "The bench script each torchrun session runs.",
                "tools/perf_data_collection/comm_bench/generate_comm_microbench.py"):argname("<path>")
  parser:option("--torchrun", "torchrun executable.", "torchrun"):argname("<path>")
  parser:option("--port", "First master port (one per session).", "29700"):convert(tonumber)
  parser:option("--plan-json", "Write the plan as JSON."):argname("<json>")
  parser:option("--commands", "Write the commands as a shell script."):argname("<sh>")
  parser:flag("--do-run", "Run the sessions now, one after another.")
  parser:option("--timeout", "Seconds a session may run (with --do-run).", "7200"):convert(tonumber)
  parser:option("--log-dir", "Session logs (with --do-run; default: DATABASE_PATH/logs)."):argname("<dir>")
  return parser
end

-- The --ops list, checked against the known collectives; the tiers checked against the grid.
function M.ops(parser, args)
  local ops = {}
  for _, op in ipairs(args.ops) do
    if not cb.OPS[op] then
      parser:error(string.format("unknown op '%s' (known: %s)", op, table.concat(cb.OP_ORDER, ", ")))
    end
    ops[#ops + 1] = op
  end
  for _, t in ipairs(args.topology_tier or {}) do
    if t >= #args.grid_shape then
      parser:error(string.format("--topology-tier %d: the grid has %d levels", t, #args.grid_shape))
    end
  end
  return ops
end

-- Prints the plan: a header, one line per session, then each session's command.
function M.print_plan(sessions, args, bytes)
  print(string.format("Comm microbench plan: %d sessions, %d message sizes (%d .. %d bytes), dtype %s, %s mode",
                      #sessions, #bytes, bytes[1], bytes[#bytes], args.dtype, args.bench_mode))
  print(string.format("  grid %s, results in %s", table.concat(args.grid_shape, "x"), args.database_path))
  print("")
  print(string.format("  %-3s  %-15s  %5s  %-14s  %5s  %s", "#", "op", "n_dev", "tier", "port", "csv"))
  for i, s in ipairs(sessions) do
    print(string.format("  %-3d  %-15s  %5d  %-14s  %5d  %s", i, s.op, s.num_devices,
                        s.tier .. " " .. s.tier_name, s.port, s.csv))
  end
  print("")
  for _, s in ipairs(sessions) do print(cb.command_line(s.argv)) end
end

-- The plan as JSON text.
function M.plan_json(sessions, args, bytes)
  local list = {}
  for i, s in ipairs(sessions) do
    list[i] = pyfmt.object {
      { "op", s.op }, { "kernel_type", cb.OPS[s.op].kernel }, { "csv", s.csv },
      { "num_devices", s.num_devices }, { "topology_tier", s.tier }, { "tier_name", s.tier_name },
      { "ranks", s.ranks }, { "master_port", s.port }, { "argv", s.argv },
    }
  end
  local doc = pyfmt.object {
    { "grid_shape", args.grid_shape }, { "dtype", cb.DTYPES[args.dtype] },
    { "bench_mode", args.bench_mode }, { "bytes_grid", bytes },
    { "database_path", args.database_path }, { "sessions", list },
  }
  return pyfmt.json(doc) .. "\n"
end

-- The sessions' commands as a shell script.
function M.commands(sessions)
  local lines = { "#!/bin/sh", "# generated by perfscript recipes/comm_bench.lua", "set -u" }
  for _, s in ipairs(sessions) do lines[#lines + 1] = cb.command_line(s.argv) end
  return table.concat(lines, "\n") .. "\n"
end

function M.main(argv)
  local parser = M.parser()
  local args = parser:parse(argv)
  local ops = M.ops(parser, args)
  local bytes = args.bytes_grid or cb.SCRIPT_BYTES
  local sessions, warnings = cb.plan {
    ops = ops, devices = args.num_devices, tiers = args.topology_tier, grid = args.grid_shape,
    bytes = bytes, dtype = args.dtype, mode = args.bench_mode,
    script = args.script, out_dir = args.database_path, torchrun = args.torchrun, port = args.port,
  }
  if not sessions then perf.fail("%s", warnings[1]) end
  for _, w in ipairs(warnings) do io.stderr:write("WARNING: " .. w .. "\n") end
  if #sessions == 0 then perf.fail("nothing to run: every (tier, num_devices) was skipped") end

  M.print_plan(sessions, args, bytes)
  if args.plan_json then cli.write_file(args.plan_json, M.plan_json(sessions, args, bytes), "plan") end
  if args.commands then cli.write_file(args.commands, M.commands(sessions), "commands") end
  if not args.do_run then return 0 end
  local log_dir = args.log_dir or (args.database_path .. "/logs")
  local failed = require("perfscript.analysis.commrun").run_all(sessions,
    { timeout = args.timeout, log_dir = log_dir, out_dir = args.database_path })
  return failed == 0 and 0 or 1
end

return M
