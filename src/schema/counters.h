/* The 25 hardware counters of kernel_details / op_summary exports, in the database's column
 * order: one list for the import (profile.c) and the write-back (opsum.c). */
#ifndef PS_COUNTERS_H
#define PS_COUNTERS_H

#define PS_NCOUNTERS 25
#define PS_NBASE 8

/* The 8 base columns that open every database CSV (shapes, dtypes, formats, state, core). */
extern const char *const ps_base_columns[PS_NBASE];

extern const char *const ps_counter_columns[PS_NCOUNTERS];

#endif
