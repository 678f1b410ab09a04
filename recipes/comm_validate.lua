-- Communication database versus the analytic alpha-beta model (replaces
-- validate_comm_alignment.py). Exit status 0 when no row FAILs, 1 otherwise.
--   perfscript recipes/comm_validate.lua --database-path DB/ATLAS_800_A3_752T_128G_DIE/hccl/v8.5
-- The run is lua/perfscript/analysis/run/comm_validate.lua.
os.exit(require("perfscript.analysis.run.comm_validate").main(arg))
