-- recipes/db_lint.lua: check a database directory for cells that crash or mislead the consumer
-- (empty or malformed shape cells, slot-count mismatches, unknown dtypes, zero latencies,
-- missing EP Size, fractional avg_seq_len). Exit status 1 when there are errors.
-- The run is lua/perfscript/analysis/run/db_lint.lua.
os.exit(require("perfscript.analysis.run.db_lint").main({ ... }))
