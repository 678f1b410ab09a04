-- The communication microbench plan (replaces the planning part of generate_comm_microbench.py
-- and run_comm_bench.sh): which (op, devices, tier) sessions to run, with which byte sizes,
-- and the torchrun commands that produce hcom_*.csv. With --do-run the sessions are launched
-- one after another through perfscript.proc (argv, never a shell; timeout; process-group kill).
--   perfscript recipes/comm_bench.lua --database-path hccl_bench_data            # print the plan
--   perfscript recipes/comm_bench.lua --plan-json plan.json --commands run.sh    # write it
--   perfscript recipes/comm_bench.lua --do-run --timeout 3600                    # run it
-- The run is lua/perfscript/analysis/run/comm_bench.lua.
os.exit(require("perfscript.analysis.run.comm_bench").main(arg))
