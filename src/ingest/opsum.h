/* Streaming aggregation of msprof op_summary_*.csv rows for the microbench write-back
 * (docs/rules.md, Write-back; the Python original's defects fixed): rows are grouped by (OP
 * Type, signature with the op type as op name, writeback_sig.h); per group the first row's
 * descriptive cells, the count, the minimum of the VALID durations (finite and > 0; a blank
 * never wins) and the mean of each of the 25 counters over its valid samples only. Memory grows
 * with the number of groups. */
#ifndef PS_OPSUM_H
#define PS_OPSUM_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"


/* cells[]: the 8 database base columns (OP State .. Output Formats), then Task Type. */
enum { PS_OPSUM_TASK_TYPE = PS_NBASE, PS_OPSUM_NCELLS };

typedef struct ps_opsum_group {
  char *op;                          /* OP Type, trimmed */
  char *cells[PS_OPSUM_NCELLS];      /* from the group's first row, trimmed */
  uint64_t count;                    /* rows */
  uint64_t nvalid;                   /* rows with a valid duration */
  double min;                        /* minimum valid duration (meaningful when nvalid > 0) */
  double sums[PS_NCOUNTERS];
  uint64_t counts[PS_NCOUNTERS];
  uint64_t hash;                     /* the signature hash (writeback_sig.h) with op as the op name */
} ps_opsum_group;

typedef struct ps_opsum ps_opsum;

ps_opsum *ps_opsum_new(void);
void ps_opsum_free(ps_opsum *a);

/* Adds every row of one op_summary file. 0, or -1 with "file:line: reason" in err. */
int ps_opsum_add_file(ps_opsum *a, const char *path, char *err, size_t errsize);

uint64_t ps_opsum_rows(const ps_opsum *a);
size_t ps_opsum_ngroups(const ps_opsum *a);
/* Groups in order of first appearance. */
const ps_opsum_group *ps_opsum_group_at(const ps_opsum *a, size_t i);

#endif
