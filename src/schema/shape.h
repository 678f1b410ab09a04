/* The shape-cell grammar of the operator databases and the dtype vocabulary.
 *
 * A shape cell lists one slot per kernel input (or output): `;` between slots, `,` between
 * dimensions, empty slots kept (an absent optional input), e.g. `128,4,128;;2048,2048`.
 * On disk the value often carries literal quotes (`"""a,b;;c"""` in the CSV text, i.e. the
 * decoded value `"a,b;;c"`). Reading strips whitespace and surrounding `"` from the cell and
 * from every slot; inside a slot the tokens `()`, `N/A`, `NA`, `NULL`, `None`, `none` mean
 * empty, `(1, 2)` means `1,2`, and commas and/or whitespace separate dims. The canonical
 * text is dims joined by `,` and slots by `;`, every slot kept (formatting the parse of a
 * canonical text gives it back byte for byte).
 *
 * Dtypes keep the profiler's spelling (`DT_BF16`, `INT64`, `FLOAT`...). ps_dtype_bytes knows
 * their element sizes (case-insensitive; unknown names count 2 bytes, the FP16 fallback). */
#ifndef PS_SHAPE_H
#define PS_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "text.h"

/* The limits of one signature cell (Input/Output Shapes, Data Types, Formats), the one place
 * they are set: far above any real export (at most 33 slots and 365 bytes in the real data),
 * so a cell beyond them is damaged data. The import refuses it and db_lint reports it, naming
 * the limit; the consumer's lookup key holds this many slots (lookup_key.h). Slots are the
 * `;`-separated parts, empty ones included. */
#define PS_SHAPE_MAX_SLOTS 256
#define PS_SHAPE_MAX_CELL (64 * 1024)

/* NULL when the cell is within the limits, else the reason, written to why (e.g. "300 slots
 * (the limit is 256)" or "70000 bytes (the limit is 65536)"). */
const char *ps_shape_over_limit(const char *cell, size_t len, char *why, size_t whysize);

/* Slot states after parsing. */
enum { PS_SLOT_DIMS = 0, PS_SLOT_EMPTY = 1, PS_SLOT_BAD = 2 };

/* A parsed cell. Slot i has dims[start[i] .. start[i+1]) and state[i]. Reusable: parse
 * again into the same object to avoid allocations in loops. */
typedef struct ps_shape {
  size_t nslots;        /* 0 for an empty cell */
  size_t *start;        /* nslots + 1 entries */
  int64_t *dims;
  unsigned char *state; /* PS_SLOT_* per slot */
  size_t nbad;          /* slots that are neither empty nor integer lists */
  size_t cap_slots, cap_dims;
} ps_shape;

void ps_shape_init(ps_shape *s);
void ps_shape_free(ps_shape *s);

/* Parses a cell (len bytes, need not be NUL-terminated). Returns 0, or -1 when out of
 * memory. Slots that are not integer lists (`[1,2]`, `null`, `abc`) are PS_SLOT_BAD and
 * counted in s->nbad; the caller decides whether that is an error. */
int ps_shape_parse(ps_shape *s, const char *cell, size_t len);

/* Writes the canonical text of s (bad slots are written empty) like snprintf: returns the
 * full length; writes at most cap bytes including the NUL. */
size_t ps_shape_format(const ps_shape *s, char *out, size_t cap);

/* Number of dims in slot i, and a pointer to them. */
static inline size_t ps_shape_rank(const ps_shape *s, size_t i) {
  return s->start[i + 1] - s->start[i];
}
static inline const int64_t *ps_shape_slot(const ps_shape *s, size_t i) {
  return s->dims + s->start[i];
}

/* Trims whitespace, then strips every leading and trailing `"` (Python's
 * `s.strip().strip('"')`). Moves *p and returns the new length. Inline for its common case,
 * a cell that begins and ends with neither (the import strips five cells a row). */
size_t ps_shape_strip_edges(const char **p, size_t len);
/* Neither a space nor a quote: a cell or slot that begins and ends so needs no strip. */
static inline int ps_shape_plain_edge(char c) { return c != '"' && !ps_is_space(c); }
static inline size_t ps_shape_strip(const char **p, size_t len) {
  if (len && ps_shape_plain_edge((*p)[0]) && ps_shape_plain_edge((*p)[len - 1])) return len;
  return ps_shape_strip_edges(p, len);
}

/* Normalises one slot's text (docs/rules.md, Write-back signature): trim, strip quotes, trim; the
 * empty tokens give ""; drop one pair of surrounding parentheses; dims separated by runs of
 * commas and whitespace are joined by `,`. Brackets and other text are kept as they are.
 * out must hold len + 1 bytes (the result is never longer); returns the result length. */
size_t ps_shape_norm_slot(const char *slot, size_t len, char *out);

/* Normalises a whole cell: strip the cell, split on `;`, normalise each slot, join with `;`
 * (empty slots kept, trailing ones too). out must hold len + 1 bytes. */
size_t ps_shape_norm_cell(const char *cell, size_t len, char *out);

/* Parses an already-normalised slot text as integers: returns the number of dims written
 * to dims (at most maxdims), 0 for an empty slot, -1 when a piece is not an integer or
 * there are more than maxdims. */
int ps_shape_parse_slot(const char *norm, size_t len, int64_t *dims, int maxdims);

/* Bytes per element of a dtype name (trimmed, case-insensitive); 2 when unknown. */
int ps_dtype_bytes(const char *name, size_t len);

/* Whether a dtype name (trimmed, case-insensitive) is one of the known spellings. */
int ps_dtype_known(const char *name, size_t len);

/* The spelling the database consumer (TensorCast's reader, docs/database.md, Columns)
 * asks for the element type of a name (trimmed, case-insensitive): DT_BF16, FLOAT, INT8, INT32,
 * INT64 or BOOL (fp16 is asked as DT_BF16); NULL when it never asks for that type or the name is
 * unknown. A row matches a query only when its spelling IS this one, byte for byte. */
const char *ps_dtype_consumer(const char *name, size_t len);

/* Whether the consumer's elementwise dtype scaling knows the byte size of this exact spelling
 * (its _DTYPE_BYTE_SIZES); a row whose output dtype it does not know is never scaled. */
int ps_dtype_consumer_scales(const char *name, size_t len);

/* Product of dims times elem_bytes, saturating at UINT64_MAX. An empty shape (rank 0)
 * and any dim <= 0 give 0, as the memory estimator counts them (docs/rules.md, Shape grids). */
uint64_t ps_shape_nbytes(const int64_t *dims, size_t rank, int elem_bytes);

/* The sort key of shape lists (perfscript.shape.sort_key: slot by slot, dims as integers, a
 * prefix first): per dim "\1" + 8 big-endian bytes with the sign bit flipped, written at out
 * (PS_SHAPE_KEY_DIM bytes); "\0" ends a slot; the row index may follow as 4 big-endian bytes. */
#define PS_SHAPE_KEY_DIM 9
void ps_shape_key_dim(unsigned char *out, int64_t d);
/* A key in memory, and the qsort comparator that orders keys as the C locale's string order. */
typedef struct ps_shape_key { const unsigned char *s; size_t len; } ps_shape_key;
int ps_shape_key_cmp(const void *a, const void *b);

#endif
