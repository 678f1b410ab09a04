/* The grouping key of a profiler row: the kernel type and the row's signature (input shapes,
 * dtypes and formats, output shapes and dtypes), so that rows the database would match to
 * one row are aggregated together. Text: type, 0x1F, signature text; hash: XXH3 128 of the
 * text (hash[0] low, hash[1] high 64 bits; equal keys are told apart by both). */
#ifndef PS_PROFKEY_H
#define PS_PROFKEY_H

#include <stddef.h>
#include <stdint.h>

typedef struct ps_profkey ps_profkey;

ps_profkey *ps_profkey_new(void);
void ps_profkey_free(ps_profkey *k);

/* cells/lens: Input Shapes, Input Data Types, Input Formats, Output Shapes, Output Data
 * Types (need not be NUL-terminated). The signature is perfscript.sig's (spec replay_and_update
 * section 2) with the kernel type as op name, so a MatMulV2 row with a bias slot meets the
 * row without it, as the database's write-back matches them. Returns the key (valid until
 * the next call) or NULL when out of memory. */
const char *ps_profkey_build(ps_profkey *k, const char *type, size_t tlen,
                             const char *const *cells, const size_t *lens, size_t *keylen,
                             uint64_t hash[2]);

#endif
