-- Kernel-level traces for MindStudio Insight: one kernel launch, replayed from an argument spec
-- or a database row, run under `msprof op simulator`; prints time per pipeline and the top
-- instructions and writes the same as an HTML page.
--   perfscript recipes/insight_trace.lua --kernel Add --from-db DB --row 1 --kernel-lib libadd.so
-- The run is lua/perfscript/insight/cli.lua.
os.exit(require("perfscript.insight.cli").main(arg))
