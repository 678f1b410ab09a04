/* XXH3-64 over long inputs with the widest vectors the CPU has: the provenance log's input
 * hashes cover whole profiles (the import hashes each block as it reads it), and XXH3's loop
 * with AVX2 takes 15 ms for 302 MB where the build's baseline SSE2 takes 36 ms. XXH3 is defined
 * independently of the vector width: the hash is the same bits either way (test_profile and
 * test_sig compare). */
#ifndef PS_XXH3_WIDE_H
#define PS_XXH3_WIDE_H

#include <stddef.h>

/* XXH3_64bits_update(state, p, n) for a state of xxhash.h included with XXH_INLINE_ALL (void
 * here, so that this header needs no xxhash.h). */
void ps_xxh3_update_wide(void *state, const void *p, size_t n);
/* Tests: 1 makes ps_xxh3_update_wide use the build's baseline loop, 0 the best the CPU has. */
void ps_xxh3_set_baseline(int on);

#endif
