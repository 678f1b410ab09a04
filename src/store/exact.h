/* The consumer's compute exact match over an in-memory table (docs/rules.md, Lookups), in C:
 * the rows an index key finds, then the slot search for the distance-0 rows the keys miss,
 * each row checked as perfscript.db.match's row() checks it (valid latency, input count,
 * dtypes, one input rule per slot) and the best by (distance, latency column priority, file
 * order). perfscript.db's compute lookup takes this path for kernels without a query rewrite
 * and formats the answer; the Lua scan remains for explain, MoE and the rest. */
#ifndef PS_EXACT_H
#define PS_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include "lookup_key.h"
#include "table.h"

/* The next part of a list cell as perfscript.db.match.list makes it: the non-empty runs
 * between ';', those holding a space or '"' trimmed of leading and trailing spaces and quotes.
 * *p walks the cell up to end; 0 when no part is left. */
int ps_exact_list_part(const char **p, const char *end, const char **part, size_t *plen);

/* The verdicts of one search on each slot group and each dtypes cell met (reused between
 * searches: allocate once per slot index). */
typedef struct ps_exact_memo ps_exact_memo;
ps_exact_memo *ps_exact_memo_new(void);
void ps_exact_memo_free(ps_exact_memo *m);

/* A query as match.row compares it: nq shapes, and nq dtypes when has_dt (qd[i] NULL: none). */
typedef struct ps_exact_query {
  const ps_lookup_key_shape *q; int nq;
  const char *const *qd; const size_t *qdl; int has_dt;
  unsigned kind; int fg;           /* ps_lookup_rule kind bits; the FLOAT group of dtypes */
} ps_exact_query;

/* The slot search: the rows before upto (0-based) whose slot pj[p] (1-based) has shape pv[p],
 * for each pair in turn, that can be candidates (as many slots as the query, every slot
 * matched by a rule, dtypes in the query's groups; dcol the dtypes column or -1). Each row
 * once; a pair's rows ascending. *out is malloc'd (free it); -1 when memory runs out. */
long ps_exact_slot_rows(const ps_table *t, const ps_slotix *x, ps_exact_memo *m,
                        const ps_exact_query *q, int dcol, const int *pj,
                        const ps_lookup_key_shape *pv, int npairs, size_t upto, uint32_t **out);

enum { PS_EXACT_MAXLAT = 8, PS_EXACT_TIES = 10 };

/* Where a row's inputs and latency are: the shapes, formats and dtypes columns (-1: none),
 * the slots compared (n, 0: all), the latency columns in the consumer's order with the
 * priority of each (lower wins a tie) and the lowest priority any column can have. */
typedef struct ps_exact_cols {
  int scol, fcol, dcol, n;
  int nlat, lat[PS_EXACT_MAXLAT], pri[PS_EXACT_MAXLAT], minpri;
} ps_exact_cols;

typedef struct ps_exact_answer {
  size_t row;                      /* 0-based */
  int rule, distance, latpos;      /* final rule (PS_RULE_*), latency column (index in lat) */
  double latency;
  unsigned char rules[PS_LOOKUP_KEY_MAXSLOTS];  /* per input */
  size_t nties, ties[PS_EXACT_TIES];            /* equally good rows after it, first ones */
} ps_exact_answer;

/* The exact match: the rows of each key in keys (nkeys keys of nslots ids, ps_index_find),
 * then, when the best of them has distance 0 and the query two inputs or more, the slot
 * search over x for the rows before it that could still win. Returns 1 with the answer, 0
 * when this path cannot answer as the Lua scan would (no distance-0 row among the key rows:
 * the scan looks at every row), -1 when memory runs out. */
int ps_exact_lookup(const ps_table *t, const ps_index *ix, const ps_sid *keys, int nkeys,
                    size_t nslots, const ps_slotix *x, ps_exact_memo *m,
                    const ps_exact_query *q, const ps_exact_cols *c, ps_exact_answer *a);

#endif
