-- parse_profile: profiler exports into the operator database, one <KernelType>.csv per kernel
-- type (replaces parsers/parse_kernel_details.py).
--   perfscript recipes/parse_profile.lua --profiling-path <file or dir> \
--     (--database-path DIR | --database-root ROOT --vllm-version V --torch-version T --cann-version C)
-- The run is lua/perfscript/ingest/parse_profile.lua.
require("perfscript.ingest.parse_profile").main(arg)
