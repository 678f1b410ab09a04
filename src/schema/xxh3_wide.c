/* See xxh3_wide.h. The AVX2 loop is xxh3_avx2.c: xxhash.h compiled for AVX2 in a translation
 * unit of its own, called only where the CPU has AVX2. */
#include "xxh3_wide.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

static int baseline_only;

void ps_xxh3_set_baseline(int on) { baseline_only = on; }

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX2__)
void ps_xxh3_update_avx2(void *state, const void *p, size_t n);

void ps_xxh3_update_wide(void *state, const void *p, size_t n) {
  if (!baseline_only && __builtin_cpu_supports("avx2")) ps_xxh3_update_avx2(state, p, n);
  else XXH3_64bits_update((XXH3_state_t *)state, p, n);
}
#else
void ps_xxh3_update_wide(void *state, const void *p, size_t n) {
  XXH3_64bits_update((XXH3_state_t *)state, p, n);
}
#endif
