-- recipes/runs.lua: the microbench runs of a database and their progress (cases done / failed /
-- timed out / left, per shard = node, from the run journals under <database>/.perfscript/runs/);
-- --resume resubmits a Slurm run's unfinished shards and its final write-back job.
--
--   perfscript recipes/runs.lua [--database-path DIR]                 # every run, newest first
--   perfscript recipes/runs.lua [--database-path DIR] --run ID|last   # one run, shard by shard
--   perfscript recipes/runs.lua [--database-path DIR] --run ID --resume [--retry-failed] [--dry-run]
-- The run is lua/perfscript/microbench/runs.lua.
os.exit(require("perfscript.microbench.runs").main(arg, arg and arg[0]))
