/* Growth of C arrays by doubling, shared by the core modules. */
#ifndef PS_GROW_H
#define PS_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Makes room in *p (capacity *cap items of elem bytes) for need items. Returns 0, or -1 when
 * memory runs out or the size would overflow; *p and *cap are unchanged then. */
static inline int ps_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 64;
  while (c < need) {
    if (c > SIZE_MAX / 2) return -1;
    c *= 2;
  }
  if (elem && c > SIZE_MAX / elem) return -1;
  void *q = realloc(*p, c * elem);
  if (q == NULL) return -1;
  *p = q;
  *cap = c;
  return 0;
}

#endif
