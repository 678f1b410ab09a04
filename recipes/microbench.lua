-- Microbench collection: replay database rows on an NPU under msprof and write the measured
-- durations back (replaces the original's start_microbench.py, op_replay/ and
-- signature_utils.py; spec replay_and_update.md). The run is lua/perfscript/microbench/run.lua.
--
--   perfscript recipes/microbench.lua --database-path DB [--ops MatMulV2 Add] [--update-mode all]
--   perfscript recipes/microbench.lua --simulate             # no NPU: a simulated device
--   perfscript recipes/microbench.lua --database-path DB --prof-path PROF_DIR   # re-parse only
--     (PROF_DIR: a PROF_* directory, its parent, a mindstudio_profiler_output directory or one
--     op_summary_*.csv)
os.exit(require("perfscript.microbench.run").main(arg))
