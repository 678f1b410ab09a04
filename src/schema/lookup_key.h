/* The consumer's lookup key (one of the three row identities, docs/database.md): the database
 * consumer's view of signature cells (docs/database.md, Columns), as canonical
 * text so that equal views compare equal as strings and can be hashed:
 *   - a list cell (dtypes, formats): outer quotes and blanks stripped, split on ';', each part
 *     trimmed and unquoted, EMPTY parts dropped (placeholders such as NULL and DT_UNDEFINED kept);
 *   - a shape cell: the same split, empty slots dropped, "()" kept as a scalar slot, each other
 *     slot a list of integers (spaces allowed around them), written back as "d,d;d,d".
 * Options mirror what the consumer does before it compares shapes: FRACTAL_NZ restore by the
 * format at the same (compacted) index, dropping one leading 1 of rank > 1 (batch_strip),
 * truncation to the first n slots (tc_input_count), and the relaxed FLOAT group of dtypes. */
#ifndef PS_LOOKUP_KEY_H
#define PS_LOOKUP_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "shape.h"

#define PS_LOOKUP_KEY_MAXSLOTS PS_SHAPE_MAX_SLOTS   /* more is an error, never a cut */
#define PS_LOOKUP_KEY_MAXRANK 16

enum {
  PS_LOOKUP_KEY_STRIP1 = 1,       /* shapes: drop one leading 1 when rank > 1 */
  PS_LOOKUP_KEY_FLOAT_GROUP = 2,  /* lists: DT_BF16 and FLOAT compare as one "FLOAT_GROUP" */
};

typedef struct ps_lookup_key_shape {
  int rank;                  /* -1: the scalar "()" */
  int64_t dims[PS_LOOKUP_KEY_MAXRANK];
} ps_lookup_key_shape;

/* Parses a shape cell into at most max slots (empty slots dropped). Returns the slot count, or
 * -1 with a reason in err (non-integer dimension, too many slots or dimensions). */
int ps_lookup_key_parse_shapes(const char *s, size_t len, ps_lookup_key_shape *out, int max,
                          char *err, size_t errsize);
/* The same parse without the one-pass path for plain cells (digits, ',' and ';' inside the
 * outer quotes) that ps_lookup_key_parse_shapes takes first; the tests hold them equal. */
int ps_lookup_key_parse_shapes_general(const char *s, size_t len, ps_lookup_key_shape *out, int max,
                                       char *err, size_t errsize);

/* Splits a list cell into parts (empty parts dropped); returns the part count, max + 1 when
 * there are more than max (then only max are stored). Each part is a (pointer, length) pair
 * into s. */
int ps_lookup_key_split_list(const char *s, size_t len, const char **parts, size_t *lens, int max);

/* FRACTAL_NZ restore: [..., H, W, bh, bw] becomes (..., H*bw, W*bh); rank < 4 unchanged.
 * Returns 0, or -1 (sh unchanged) when a product leaves int64. */
int ps_lookup_key_nz_restore(ps_lookup_key_shape *sh);

/* The restore of each of the n slots whose format (the part of formats at the same compacted
 * index) is FRACTAL_NZ. Returns 0, or -1 with a reason in err. */
int ps_lookup_key_restore(ps_lookup_key_shape *sh, int n, const char *formats, size_t flen,
                          char *err, size_t errsize);

/* Canonical text of a list cell into out (NUL-terminated); returns its length, or -1 if it does
 * not fit or has more than PS_LOOKUP_KEY_MAXSLOTS parts. n > 0 keeps only the first n parts. */
long ps_lookup_key_list(const char *s, size_t len, int n, unsigned flags, char *out, size_t cap);

/* Canonical text of a shape cell, with formats (may be NULL) for the FRACTAL_NZ restore.
 * Returns the length, or -1 with a reason in err (malformed cell or too long). */
long ps_lookup_key_shapes(const char *s, size_t len, const char *formats, size_t flen, int n,
                     unsigned flags, char *out, size_t cap, char *err, size_t errsize);
/* The decimal digits of v at out (at most 20 characters, no NUL); returns their count. */
size_t ps_lookup_key_int(char *out, int64_t v);
/* The canonical text of k parsed slots (flags: PS_LOOKUP_KEY_STRIP1), what
 * ps_lookup_key_shapes writes after its parse; the length, or -1 if it does not fit. */
long ps_lookup_key_render(const ps_lookup_key_shape *sh, int k, unsigned flags, char *out, size_t cap);

/* ---- the consumer's per-input shape rules (docs/rules.md, Lookups) ------------------------
 * The one home of _inputs_match's conditions; perfscript.db.match calls them (match.rule,
 * match.padded) and the table's slot search filters rows with them. Kinds of kernel that
 * enable a rule (the kernel sets stay in match.lua): */
enum {
  PS_RULE_KIND_MATMUL = 1,      /* transpose, batched_transpose of inputs 2.. */
  PS_RULE_KIND_FLATTEN_3D = 2,  /* flatten_3d */
  PS_RULE_KIND_MERGE_LAST = 4,  /* merge_last_dims */
  PS_RULE_KIND_INDEX = 8,       /* singleton_axis_transpose */
};

enum { PS_LOOKUP_ANCHORS = 4 };

enum {
  PS_RULE_NONE, PS_RULE_IDENTITY, PS_RULE_BATCH_STRIP, PS_RULE_SINGLETON_AXIS_TRANSPOSE,
  PS_RULE_TRANSPOSE, PS_RULE_BATCHED_TRANSPOSE, PS_RULE_PADDING, PS_RULE_BATCH_STRIP_PADDING,
  PS_RULE_FLATTEN_3D, PS_RULE_FLATTEN_3D_PADDING, PS_RULE_MERGE_LAST_DIMS,
  PS_RULE_MERGE_LAST_DIMS_PADDING
};

/* The rule's name as the consumer reports it ("identity", "batch_strip+padding", ...); NULL
 * for PS_RULE_NONE. */
const char *ps_lookup_rule_name(int rule);

/* tc is the csv dimension block-padded (by 16, 32 or 64; by 8 from 64 up); Lua integer
 * arithmetic (wrap-around, floor division). */
int ps_lookup_padded(int64_t tc, int64_t csv);

/* Every dimension of tc equal to csv's or block-padded from it, at least one padded. */
int ps_lookup_pads(const ps_lookup_key_shape *tc, const ps_lookup_key_shape *csv);

/* The first rule that makes TC input i (1-based) match the row's shape csv, or PS_RULE_NONE.
 * A rank-0 shape that is not the scalar is allowed (an empty dimension list). */
int ps_lookup_rule(unsigned kind, int i, const ps_lookup_key_shape *tc,
                   const ps_lookup_key_shape *csv);

/* A necessary condition of ps_lookup_rule on the row's last dimension, for the slot search's
 * coarse index: when any rule makes TC input i match a row shape of rank >= 1, that shape's
 * last dimension c satisfies a - 63 <= c <= a for one of the anchors a written to out (the
 * last dimension tc's rules keep, 1, the transposed one, the merged product). Returns their
 * count, or -1 when tc gives no bound (a scalar or empty shape). Changes with the rules. */
int ps_lookup_last_anchors(unsigned kind, int i, const ps_lookup_key_shape *tc,
                           int64_t out[PS_LOOKUP_ANCHORS]);

/* The rule the consumer reports after input rule r, given the rule so far (match.fold):
 * padding only upgrades identity, batch_strip+padding only identity or batch_strip, every
 * other non-identity rule overwrites. */
int ps_lookup_fold(int rule, int r);
/* The distance of a final rule: 1 for the padded rules, else 0. */
int ps_lookup_distance(int rule);
/* The query variants whose index key can find rows matched by distance-0 rules other than
 * batch_strip (match.variants): first the query itself (slot -1), then each variant as the
 * one slot it replaces and that slot's shape: a transposed matmul weight (inputs 2..), a
 * flattened or merged 3-D input, an Index (1,x) as (x,1). Returns the count (at most max). */
int ps_lookup_variants(unsigned kind, const ps_lookup_key_shape *q, int nq, int *slot,
                       ps_lookup_key_shape *shape, int max);
/* The shapes a row's slot j (1-based) has when TC input j matches it by a rule that keeps its
 * size and is not identity (match.slot_variants): the batch strips, the transposes, flatten
 * and merge. Writes at most PS_LOOKUP_SLOT_VARIANTS shapes to out; returns the count (a
 * shape of more than PS_LOOKUP_KEY_MAXRANK dimensions is left out: no row has one). */
enum { PS_LOOKUP_SLOT_VARIANTS = 8 };
int ps_lookup_slot_variants(unsigned kind, int j, const ps_lookup_key_shape *tc,
                            ps_lookup_key_shape *out);

#endif
