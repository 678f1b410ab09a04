-- trace_to_csv: one CSV row per complete event (ph "X") of a Chrome trace, with the Python
-- original's 11 columns (replaces parsers/trace_to_csv.py). Reads `{"traceEvents": [...]}`
-- simulator traces and bare-array Ascend trace_view.json files alike, streaming (an 870 MB
-- trace needs no 870 MB of memory); values are copied as written, timestamps with all their
-- digits.
--   perfscript recipes/trace_to_csv.lua --trace T [--output O]
-- The run is lua/perfscript/ingest/trace_to_csv.lua.
require("perfscript.ingest.trace_to_csv").main(arg)
