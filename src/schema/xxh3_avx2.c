/* XXH3-64's update loop compiled for AVX2 (xxh3_wide.h): only ps_xxh3_update_wide calls it, and
 * only where the CPU has AVX2. Nothing else belongs in this file: the pragma makes all of it
 * AVX2 code. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX2__)
#pragma GCC target("avx2")
#define XXH_VECTOR 2   /* XXH_AVX2: xxhash.h reads __AVX2__, which the pragma does not set */
#define XXH_INLINE_ALL
#include <xxhash.h>

void ps_xxh3_update_avx2(void *state, const void *p, size_t n);
void ps_xxh3_update_avx2(void *state, const void *p, size_t n) {
  XXH3_64bits_update((XXH3_state_t *)state, p, n);
}
#else
typedef int ps_xxh3_avx2_unused;   /* ISO C: a translation unit declares something */
#endif
