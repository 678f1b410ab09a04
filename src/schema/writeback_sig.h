/* The write-back signature (one of the three row identities, docs/database.md): when two rows
 * (database row, op_summary row, generated row) describe the same operator case, so that a
 * replay result finds its database row. Lua: perfscript.sig. The normalisation:
 *   - the op name: explicit name, else `OP Type`, else `OP State`; stripped of whitespace and
 *     `"`; one suffix `_run.py`, `_run` or `.csv` removed;
 *   - generic tuple (input shapes, input dtypes, input formats, output shapes, output dtypes):
 *     slots normalised, dtype/format blanked where the shape slot is empty, trailing empty
 *     slots dropped; the Index / Slice / Transpose input rewrites;
 *   - MatMulV2/V3/Common: the canonical (`m,k;n,k`, dtypes[0:2], formats[0:2], `m,n`, output
 *     dtypes) when m, k, n can be worked out, else the generic tuple;
 *   - DispatchFFNCombine: a sixth element, the trimmed `EP Size`.
 * The canonical text joins the tuple elements with PS_SIG_SEP (0x1F, unit separator); its
 * 64-bit XXH3 hash is the key other modules index by. Output Formats is not part of it. */
#ifndef PS_SIG_H
#define PS_SIG_H

#include <stddef.h>
#include <stdint.h>

#define PS_SIG_SEP '\x1f'

/* Column values of one row; NUL-terminated, NULL when the column is missing. */
typedef struct ps_sig_row {
  const char *op_name;    /* explicit name (a file stem), or NULL */
  const char *op_type;    /* `OP Type` */
  const char *op_state;   /* `OP State` */
  const char *in_shapes, *in_dtypes, *in_formats;
  const char *out_shapes, *out_dtypes;
  const char *ep_size;    /* `EP Size` (DispatchFFNCombine only) */
  const size_t *lens;     /* the lengths of in_shapes .. out_dtypes (five), or NULL: strlen */
} ps_sig_row;

/* The CSV columns a signature reads, in ps_sig_row's order (op_type .. ep_size). */
#define PS_SIG_NCOLUMNS 8
extern const char *const ps_sig_columns[PS_SIG_NCOLUMNS];

/* Reusable state: scratch space and the last result. Not thread-safe. */
typedef struct ps_sig ps_sig;

ps_sig *ps_sig_new(void);
void ps_sig_free(ps_sig *g);

/* Computes the signature of row. Returns 0, or -1 when out of memory. */
int ps_sig_compute(ps_sig *g, const ps_sig_row *row);

/* Results of the last ps_sig_compute. */
const char *ps_sig_text(const ps_sig *g, size_t *len); /* NUL-terminated canonical text */
uint64_t ps_sig_hash(const ps_sig *g);
int ps_sig_nfields(const ps_sig *g);                   /* 5, or 6 for DispatchFFNCombine */
const char *ps_sig_field(const ps_sig *g, int i, size_t *len); /* 0-based, not terminated */
int ps_sig_is_canonical_matmul(const ps_sig *g);       /* 1 when the m,k;n,k form was used */

/* Normalises an op name into out (cap bytes): trim, strip `"`, drop one suffix. Returns
 * the length (truncated to cap - 1). */
size_t ps_sig_op_name(const char *name, char *out, size_t cap);

/* 1 for MatMulV2, MatMulV3 and MatMulCommon. */
int ps_sig_is_matmul(const char *op);

/* XXH3 64-bit hash, the one signatures use. */
uint64_t ps_sig_hash_bytes(const void *p, size_t len);
/* The XXH3 of a file's bytes, read in 256 KiB pieces (equal to ps_sig_hash_bytes of its whole
 * text; memory does not follow the file's size): 0, or -1 with errno when it cannot be read. */
int ps_sig_hash_file(const char *path, uint64_t *out);

/* Tests only: 1 makes every signature take the general way (no shortcut for plain cells;
 * the two must give the same text). */
void ps_sig_set_general(int on);

#endif
