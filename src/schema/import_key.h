/* The import's group key (one of the three row identities, docs/database.md) of a profiler
 * row: what the export wrote. It is the kernel type
 * and the Input Shapes, Input Data Types, Input Formats, Output Shapes and Output Data Types
 * cells, each trimmed of whitespace and surrounding quotes (ps_shape_strip) and otherwise
 * taken as they are. Rows with equal keys are one kernel and become one database row.
 *
 * This is not the write-back signature (perfscript.sig, docs/rules.md, Write-back signature):
 * that one canonicalises slots and, for the MatMul family, ignores inputs after the second,
 * so that a replayed kernel finds its database row. Grouping by it merged distinct kernels
 * (a MatMulV2 with a bias and one without). Dtypes stay in the key: a BOOL to FLOAT Cast and
 * an INT64 to INT32 Cast of one shape are two kernels.
 *
 * Text: the type, then 0x1F and each trimmed cell; hash: XXH3-128 of the text (hash[0] low,
 * hash[1] high 64 bits; keys are told apart by all 128 bits). */
#ifndef PS_PROFKEY_H
#define PS_PROFKEY_H

#include <stddef.h>
#include <stdint.h>

#define PS_IMPORT_KEY_CELLS 5

typedef struct ps_import_key ps_import_key;

ps_import_key *ps_import_key_new(void);
void ps_import_key_free(ps_import_key *k);

/* type (already canonical: see ps_profile_kernel_type) and the five cells above, in that
 * order (need not be NUL-terminated). Returns the key text (valid until the next call) and
 * its length and hash, or NULL when out of memory. */
const char *ps_import_key_build(ps_import_key *k, const char *type, size_t tlen,
                                const char *const *cells, const size_t *lens, size_t *keylen,
                                uint64_t hash[2]);

#endif
