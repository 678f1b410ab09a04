/* The shape grid's view of an existing database row, in C (perfscript.gridscan): the compute
 * lookup key perfscript.db.reach's answer set files a row under (Reach.view in compute mode,
 * then key_of: "shapes|dtypes|ep"), for rows whose cells are in the plain form a database
 * holds. Rows in any other form are left to the Lua path, so the key is the Lua one exactly. */
#ifndef PS_GRIDSCAN_H
#define PS_GRIDSCAN_H

#include <stddef.h>
#include <stdint.h>

#define PS_GRIDSCAN_MAXSLOTS 64
#define PS_GRIDSCAN_MAXRANK 16

typedef struct ps_gridscan_slot { int rank; int64_t dims[PS_GRIDSCAN_MAXRANK]; } ps_gridscan_slot; /* rank -1: "()" */

/* A row as Reach.view sees it in compute mode: its first n shape slots (FRACTAL_NZ restored),
 * the dtypes of those slots, the EP Size; pointers into the buffers. */
typedef struct ps_gridscan_view {
  int ns, nd;
  ps_gridscan_slot ins[PS_GRIDSCAN_MAXSLOTS];
  const char *dp[PS_GRIDSCAN_MAXSLOTS];
  size_t dl[PS_GRIDSCAN_MAXSLOTS];
  const char *ep;
  char bis[4096], bidt[1024], bifm[1024], bep[64];
} ps_gridscan_view;

/* The compute key of a row from its Input Shapes, Input Data Types, Input Formats and EP Size
 * cells (NULL: the row has no such cell), keeping the first n shape slots (n < 0: all).
 * Each cell is first stripped of whitespace and '"' at both ends, as the Lua path does (a
 * database writes its shape cells quoted). Plain form: the shape cell then only digits, ',',
 * ';' and "()" slots (each slot empty, "()" or integers of at most 18 digits joined by single
 * commas); the other cells without whitespace or '"' inside. Returns the key's length (written to out, NUL-terminated), or -1 when the row is
 * not in the plain form or the key does not fit in cap (the caller then uses the Lua path). */
long ps_gridscan_compute_key(const char *is, const char *idt, const char *ifm, const char *ep, int n,
                             char *out, size_t cap);

/* The view of a row from the same cells, in the same plain form; -1 when not plain. */
int ps_gridscan_view_of(ps_gridscan_view *v, const char *is, const char *idt, const char *ifm, const char *ep, int n);

/* The compute key of view v (as ps_gridscan_compute_key's); -1 when it does not fit in cap. */
long ps_gridscan_view_key(const ps_gridscan_view *v, char *out, size_t cap);

/* Kernel classes of match.variants (perfscript.db.match's MATMUL, FLATTEN_3D, MERGE_LAST sets
 * and the Index kernel). */
#define PS_GRIDSCAN_MATMUL 1u
#define PS_GRIDSCAN_FLATTEN_3D 2u
#define PS_GRIDSCAN_MERGE_LAST 4u
#define PS_GRIDSCAN_INDEX 8u

/* Every key Set:answers (perfscript.db.reach, compute mode) looks up for the query made from
 * view v of a kernel of class flags: for each of match.variants(kernel, shapes) the key of its
 * slots and, where a slot has a leading 1, the key with that 1 stripped. Calls fn(ud, key, len)
 * with each (in out, of cap bytes) until it returns nonzero; returns 1 then, 0 when fn never
 * did, -1 when a key does not fit in cap. */
int ps_gridscan_variant_keys(const ps_gridscan_view *v, unsigned flags, char *out, size_t cap,
                             int (*fn)(void *, const char *, size_t), void *ud);

#endif
