/* An operator table held in memory: one database CSV (one kernel type), read once, every cell
 * an interned string id, stored column by column. A million rows of a dozen columns take about
 * 50 MB plus the distinct strings. Indexes group rows by a key of string ids (built by a caller
 * function, usually canonical signature text) and answer "which rows have this key" in O(1),
 * rows kept in file order. Nothing here knows Lua. */
#ifndef PS_TABLE_H
#define PS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "lookup_key.h"

typedef uint32_t ps_sid;            /* interned string id; 0 is the empty string */
#define PS_SID_NONE UINT32_MAX      /* "no such string" */
#define PS_INDEX_MAXKEY 16

typedef struct ps_table ps_table;
typedef struct ps_index ps_index;

/* Reads a CSV with a header row (cells trimmed of the Excel TAB guards). NULL with a message
 * ("file:line: reason") in err on failure, Git LFS pointers included. */
ps_table *ps_table_load(const char *path, char *err, size_t errsize);
void ps_table_free(ps_table *t);

size_t ps_table_nrows(const ps_table *t);
size_t ps_table_ncols(const ps_table *t);
const char *ps_table_path(const ps_table *t);
const char *ps_table_colname(const ps_table *t, size_t col);
int ps_table_column(const ps_table *t, const char *name);        /* exact name; -1 if absent */
/* A cell's value: its string id, or in a plain column (ps_table_plain) the offset of its text
 * in the column's pool; 0 is the empty text either way, and equal values in one column are
 * equal texts. ps_table_text gives the text of any cell. */
ps_sid ps_table_cell(const ps_table *t, size_t row, size_t col); /* 0 for a short row */
int ps_table_plain(const ps_table *t, size_t col);
const char *ps_table_text(const ps_table *t, size_t row, size_t col, size_t *len);
/* The string id of the cell's text, interned now for a plain cell; PS_SID_NONE: no memory. */
ps_sid ps_table_cell_interned(ps_table *t, size_t row, size_t col);
/* The number in the cell (ps_num_parse: Python float()), NaN when empty or not a number. */
double ps_table_cell_num(const ps_table *t, size_t row, size_t col);
long ps_table_line(const ps_table *t, size_t row);               /* physical line of the record */
size_t ps_table_nfields(const ps_table *t, size_t row);          /* fields the record had */

const char *ps_table_str(const ps_table *t, ps_sid id, size_t *len);
size_t ps_table_nstrings(const ps_table *t);
/* Interns s (for derived keys); PS_SID_NONE when out of memory. Cells of plain columns are not
 * interned: ps_table_find_str does not see them. */
ps_sid ps_table_intern(ps_table *t, const char *s, size_t len);
/* The id of s if it is interned, else PS_SID_NONE (a query key nobody has cannot match). */
ps_sid ps_table_find_str(const ps_table *t, const char *s, size_t len);

/* The number in a string's text (ps_num_parse: Python float()), NaN when empty or not one. */
double ps_table_num(ps_table *t, ps_sid id);

size_t ps_table_memory(const ps_table *t);  /* bytes held, roughly */

/* Builds an index of nkey string ids per row. keyfn fills key[0..nkey) and returns 1, or 0 to
 * leave the row out of the index (it is then listed by ps_index_skipped). */
typedef int (*ps_keyfn)(ps_table *t, size_t row, ps_sid *key, void *ud);
ps_index *ps_index_build(ps_table *t, size_t nkey, ps_keyfn fn, void *ud);
void ps_index_free(ps_index *ix);

/* First row with this key or -1; then ps_index_next(row) walks the others in file order. */
long ps_index_find(const ps_index *ix, const ps_sid *key);
long ps_index_next(const ps_index *ix, size_t row);
size_t ps_index_ngroups(const ps_index *ix);      /* distinct keys, in order of first row */
long ps_index_group_first(const ps_index *ix, size_t g);
size_t ps_index_group_size(const ps_index *ix, size_t g);
const ps_sid *ps_index_group_key(const ps_index *ix, size_t g);
size_t ps_index_nskipped(const ps_index *ix);
size_t ps_index_skipped(const ps_index *ix, size_t i);  /* row left out */

/* A row's input shapes as the lookup compares them: the cell of scol parsed, FRACTAL_NZ slots
 * restored by the cell of fcol (-1: no formats column), then cut to the first n slots (0: all).
 * Returns the slot count (at most PS_LOOKUP_KEY_MAXSLOTS), or -1 with a reason in err. */
int ps_table_inputs(const ps_table *t, size_t row, int scol, int fcol, int n,
                    ps_lookup_key_shape *out, char *err, size_t errsize);

/* The rows by the shape of each of their input slots (ps_table_inputs), for the slot search of
 * an exact lookup: each distinct (slot j, shape) is a group; "which rows have shape s at slot
 * j" is a group's rows, and a row's slots are a list of groups. */
typedef struct ps_slotix ps_slotix;
ps_slotix *ps_slotix_build(const ps_table *t, int scol, int fcol, int n);
/* The same built row by row from shapes parsed elsewhere (one parse for two indexes): new for
 * nrows rows, then add for each row in order (its k slots; k < 0: none), then finish. add and
 * finish return -1 when memory runs out (then free x). */
ps_slotix *ps_slotix_new(size_t nrows);
int ps_slotix_add(ps_slotix *x, size_t row, const ps_lookup_key_shape *sh, int k);
int ps_slotix_finish(ps_slotix *x);
/* The groups of the slots of the row last given to ps_slotix_add (slot j's at [j]; none when
 * it had none or failed), valid until the next add. */
const uint32_t *ps_slotix_added(const ps_slotix *x, size_t *n);
void ps_slotix_free(ps_slotix *x);
long ps_slotix_group(const ps_slotix *x, int j, const ps_lookup_key_shape *sh);  /* -1: none */
size_t ps_slotix_ngroups(const ps_slotix *x);
/* rows of group g: ascending, or by bucket (ps_slotix_walk) and ascending in each */
const uint32_t *ps_slotix_rows(const ps_slotix *x, long g, size_t *n);
const uint32_t *ps_slotix_slots(const ps_slotix *x, size_t row, size_t *n); /* groups of a row */
void ps_slotix_shape(const ps_slotix *x, size_t g, ps_lookup_key_shape *sh);
size_t ps_slotix_memory(const ps_slotix *x);
/* The walk of a slot search: fn(ctx, row, groups, ns) on the rows of group g before upto
 * (0-based) with ns_want slots, by bucket of their other slot's last dimension: only the
 * buckets in a window of the anchors (ps_lookup_last_anchors of the query's shape at that
 * slot) and the bucket of rows without a key; every row when nanchors < 0. The rows of a
 * bucket come ascending. fn returns nonzero to stop. */
typedef int (*ps_slotix_fn)(void *ctx, size_t row, const uint32_t *groups, size_t ns);
void ps_slotix_walk(const ps_slotix *x, long g, size_t upto, size_t ns_want, const int64_t *anchors,
                    int nanchors, ps_slotix_fn fn, void *ctx);

#endif
