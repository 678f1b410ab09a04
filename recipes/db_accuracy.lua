-- recipes/db_accuracy.lua: how good are a database's interpolated answers? Every measured
-- signature is predicted from the others exactly as the consumer interpolates (db:interp:
-- its axes, buckets and bracket, never extrapolating) and compared with its measurement:
-- per kernel type the |error| p50 / p90 / max, the worst rows with their neighbours, the rows
-- no neighbours bracket; --html writes the error against each swept axis as inline SVG.
--   perfscript recipes/db_accuracy.lua --database-path DB [--kernels MatMulV2,Add] [--html acc.html] [--output acc.csv]
-- The run is lua/perfscript/analysis/run/db_accuracy.lua.
os.exit(require("perfscript.analysis.run.db_accuracy").main({ ... }))
