#include "import_key.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL   /* the key hash of every row: inlined, not the library's generic build */
#include <xxhash.h>

#include "grow.h"
#include "shape.h"

struct ps_import_key {
  char *buf;
  size_t cap;
};

ps_import_key *ps_import_key_new(void) { return calloc(1, sizeof(ps_import_key)); }

void ps_import_key_free(ps_import_key *k) {
  if (k == NULL) return;
  free(k->buf);
  free(k);
}

const char *ps_import_key_build(ps_import_key *k, const char *type, size_t tlen,
                                const char *const *cells, const size_t *lens, size_t *keylen,
                                uint64_t hash[2]) {
  size_t need = tlen + PS_IMPORT_KEY_CELLS + 1;
  for (int i = 0; i < PS_IMPORT_KEY_CELLS; i++) need += lens[i];
  if (ps_grow((void **)&k->buf, &k->cap, need, 1) != 0) return NULL;
  char *w = k->buf;
  memcpy(w, type, tlen);
  w += tlen;
  for (int i = 0; i < PS_IMPORT_KEY_CELLS; i++) {
    const char *s = cells[i];
    size_t n = ps_shape_strip(&s, lens[i]);
    *w++ = '\x1f';
    memcpy(w, s, n);
    w += n;
  }
  *w = 0;
  *keylen = (size_t)(w - k->buf);
  XXH128_hash_t h = XXH3_128bits(k->buf, *keylen);
  hash[0] = h.low64;
  hash[1] = h.high64;
  return k->buf;
}
