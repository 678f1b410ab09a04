-- recipes/db_coverage.lua: what a database measured along one axis per kernel type (matmul M,
-- K, N; tokens, hidden; attention seq; comm bytes), bucket by bucket, with gaps judged against
-- the axis density standard. --html writes a self-contained heatmap page (no scripts, no
-- external files): one row per bucket, one column per measured value, colour = latency.
-- The run is lua/perfscript/analysis/coverage.lua.
require("perfscript.analysis.coverage").main({ ... })
