-- microbench --slurm (perfscript.microbench.slurm): the sbatch scripts it writes, the arguments
-- the jobs get, the per-shard progress that runs.lua resubmits from, and the shell quoting.
local lu = require "luaunit"
local slurm = require "perfscript.microbench.slurm"
local msprof = require "perfscript.microbench.msprof"
local run = require "perfscript.microbench.run"

local function opts(over)
  local o = { id = "20261126_101500_42", run_dir = "/shared/db/.perfscript/runs/20261126_101500_42",
    cwd = "/home/u/work", perfscript = "/opt/perfscript/bin/perfscript", recipe = "/opt/perfscript/recipes/microbench.lua",
    args = { "--database-path", "db", "--ops", "MatMulV2,Add" }, nodes = 3, npus = 8 }
  for k, v in pairs(over or {}) do o[k] = v end
  return o
end

local function failure(f, ...)
  local ok, err = pcall(f, ...)
  lu.assertFalse(ok)
  return type(err) == "table" and err.message or tostring(err)
end

function testArrayScript()
  local t = slurm.scripts(opts { partition = "a3", time = "4:00:00", extra = { "--account=proj", "--exclusive" } })
  lu.assertEquals(t.array, table.concat({
    "#!/bin/bash",
    "# perfscript microbench run 20261126_101500_42: one array task per node measures shard K/3 of the plan on its 8 NPU(s) and stages the results",
    "# (written by microbench.lua --slurm; recipes/runs.lua --run 20261126_101500_42 follows it and resubmits it)",
    "#SBATCH --job-name=perfscript-20261126_101500_42",
    "#SBATCH --array=1-3",
    "#SBATCH --nodes=1",
    "#SBATCH --ntasks=1",
    "#SBATCH --gres=npu:8",
    "#SBATCH --output=/shared/db/.perfscript/runs/20261126_101500_42/slurm-%A_%a.out",
    "#SBATCH --partition=a3",
    "#SBATCH --time=4:00:00",
    "#SBATCH --account=proj",
    "#SBATCH --exclusive",
    "set -eu",
    "cd /home/u/work",
    "exec /opt/perfscript/bin/perfscript /opt/perfscript/recipes/microbench.lua --database-path db --ops MatMulV2,Add "
      .. "--devices 0,1,2,3,4,5,6,7 --run-id 20261126_101500_42 --shard \"${SLURM_ARRAY_TASK_ID:?}/3\" --stage-only "
      .. "${PERFSCRIPT_RETRY_FAILED:+--retry-failed}",
    "" }, "\n"))
end

function testFinalScript()
  local t = slurm.scripts(opts { partition = "a3" })
  lu.assertEquals(t.final, table.concat({
    "#!/bin/bash",
    "# perfscript microbench run 20261126_101500_42: after the array job (afterany), write every staged result back under the database lock",
    "# (written by microbench.lua --slurm; recipes/runs.lua --run 20261126_101500_42 follows it and resubmits it)",
    "#SBATCH --job-name=perfscript-20261126_101500_42-writeback",
    "#SBATCH --nodes=1",
    "#SBATCH --ntasks=1",
    "#SBATCH --output=/shared/db/.perfscript/runs/20261126_101500_42/slurm-%j-writeback.out",
    "#SBATCH --partition=a3",
    "set -eu",
    "cd /home/u/work",
    "exec /opt/perfscript/bin/perfscript /opt/perfscript/recipes/microbench.lua --database-path db --ops MatMulV2,Add "
      .. "--resume 20261126_101500_42 --writeback-only",
    "" }, "\n"))
  -- no generic resources for the write-back, nothing of a shard
  lu.assertNil(t.final:find("gres", 1, true))
  lu.assertNil(t.final:find("--shard", 1, true))
end

function testScriptsQuoteEveryWordForTheShell()
  local t = slurm.scripts(opts { cwd = "/home/u/my work", args = { "--msprof", "/x y/msprof", "--python", "py;rm -rf x",
    "--database-path", "it's", "--work-dir", "" } })
  lu.assertStrContains(t.array, "cd '/home/u/my work'\n")
  lu.assertStrContains(t.array, "--msprof '/x y/msprof' --python 'py;rm -rf x' --database-path 'it'\\''s' --work-dir '' --devices")
  lu.assertStrContains(t.final, "--msprof '/x y/msprof' --python 'py;rm -rf x' --database-path 'it'\\''s' --work-dir '' --resume")
end

function testOneNpuOneNode()
  local t = slurm.scripts(opts { nodes = 1, npus = 1 })
  lu.assertStrContains(t.array, "#SBATCH --array=1-1\n")
  lu.assertStrContains(t.array, "#SBATCH --gres=npu:1\n")
  lu.assertStrContains(t.array, "--devices 0 --run-id")
  lu.assertStrContains(t.array, '--shard "${SLURM_ARRAY_TASK_ID:?}/1"')
end

function testDirectiveRefusesBlanks()
  lu.assertStrContains(failure(slurm.scripts, opts { extra = { "--comment=two words" } }),
    '--sbatch-arg "--comment=two words": an #SBATCH line cannot hold blanks')
  lu.assertStrContains(failure(slurm.scripts, opts { run_dir = "/shared/my db/.perfscript/runs/x" }),
    "the run directory")
  lu.assertStrContains(failure(slurm.scripts, opts { partition = "a'3" }), "--partition")
end

function testForwardDropsTheSubmittersFlags()
  lu.assertEquals(slurm.forward { "--database-path", "db", "--slurm", "--nodes", "4", "--npus-per-node=16",
    "--partition", "p", "--time=1:00", "--sbatch-arg=--account=x", "--sbatch-arg", "--qos=y", "--run-id", "R",
    "--ops", "Add", "--slurm-dry-run", "--simulate" },
    { "--database-path", "db", "--ops", "Add", "--simulate" })
  -- a value that looks like a flag is an option's value, kept
  lu.assertEquals(slurm.forward { "--msprof", "/bin/msprof", "--python=python3" },
    { "--msprof", "/bin/msprof", "--python=python3" })
end

function testSlurmFlagsNeedSlurm()
  local p = run.parser()
  for _, argv in ipairs { { "--nodes", "2" }, { "--npus-per-node", "4" }, { "--partition", "x" }, { "--time", "1:00" },
      { "--sbatch-arg=--qos=x" } } do
    local a = p:parse(argv)
    lu.assertStrContains(failure(slurm.wanted, a), "needs --slurm")
  end
  lu.assertTrue(slurm.wanted(p:parse { "--slurm", "--nodes", "2" }))
  lu.assertFalse(slurm.wanted(p:parse {}))
  lu.assertFalse((p:pparse { "--slurm", "--nodes", "0" }))
  lu.assertFalse((p:pparse { "--slurm", "--npus-per-node", "x" }))
end

function testSlurmRefusesTheJobsOwnFlags()
  local p = run.parser()
  for _, argv in ipairs { { "--devices", "0,1" }, { "--shard", "1/2" }, { "--stage-only" }, { "--resume", "last" },
      { "--writeback-only" }, { "--plan-only" } } do
    table.insert(argv, 1, "--slurm")
    local msg = failure(slurm.main, p:parse(argv), argv, "recipes/microbench.lua")
    lu.assertStrContains(msg, "cannot be combined with --slurm")
  end
end

-- 7 cases over 3 shards: indices 0,3,6 | 1,4 | 2,5
function testShardsCountTheCasesOfShardsNotStarted()
  local function case(i, status, shard) return { id = "c" .. i, index = i, status = status, shard = shard } end
  local info = { cases = { case(0, "done"), case(3, "done"), case(6, "failed"), case(2, "done"), case(5) } }
  local s = slurm.shards(info, { cases = 7 }, 3)
  lu.assertEquals(#s, 3)
  lu.assertEquals({ s[1].total, s[1].done, s[1].failed, s[1].left, s[1].finished }, { 3, 2, 1, 0, true })
  lu.assertEquals({ s[2].total, s[2].done, s[2].left, s[2].started, s[2].finished }, { 2, 0, 2, false, false })
  lu.assertEquals({ s[3].total, s[3].done, s[3].left, s[3].finished }, { 2, 1, 1, false })
  -- a case journaled by another process (the final job plans what no shard has) counts for the
  -- shard its index gives
  info = { cases = { case(0, "done", 1), case(1, nil, 1) } }
  s = slurm.shards(info, { cases = 2 }, 2)
  lu.assertEquals({ s[1].total, s[1].done, s[1].finished, s[2].total, s[2].left, s[2].finished }, { 1, 1, true, 1, 1, false })
  -- more nodes than cases: the empty shards are finished
  s = slurm.shards({ cases = { case(0, "done") } }, { cases = 1 }, 3)
  lu.assertEquals({ s[2].total, s[2].finished, s[3].finished }, { 0, true, true })
  -- no shard has started (no run.json): every shard is unfinished
  s = slurm.shards(nil, nil, 2)
  lu.assertEquals({ s[1].finished, s[2].finished, s[1].started }, { false, false, false })
end

function testQuoteCmd()
  lu.assertEquals(msprof.quote_cmd { "a", "b c", "", "x'y", "$HOME", "a;b", "--k=v,w", "/p/q.r_s-t", "50%", "@x+" },
    "a 'b c' '' 'x'\\''y' '$HOME' 'a;b' --k=v,w /p/q.r_s-t 50% @x+")
end

os.exit(lu.LuaUnit.run())
