#include "counters.h"

const char *const ps_base_columns[PS_NBASE] = {
  "OP State", "Accelerator Core", "Input Shapes", "Input Data Types", "Input Formats",
  "Output Shapes", "Output Data Types", "Output Formats"};

const char *const ps_counter_columns[PS_NCOUNTERS] = {
  "aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio",
  "aic_scalar_time(us)", "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio",
  "aic_mte2_time(us)", "aic_mte2_ratio", "aic_fixpipe_time(us)", "aic_fixpipe_ratio",
  "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles", "aiv_vec_time(us)",
  "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
  "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate",
  "cube_utilization(%)"};
