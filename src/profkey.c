#include "profkey.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

struct ps_profkey {
  char *buf;
  size_t cap;
};

ps_profkey *ps_profkey_new(void) { return calloc(1, sizeof(ps_profkey)); }

void ps_profkey_free(ps_profkey *k) {
  if (k) free(k->buf);
  free(k);
}

static const char *strip(const char *s, size_t *len) {
  size_t n = *len;
  while (n && (*s == '"' || *s == ' ' || *s == '\t')) s++, n--;
  while (n && (s[n - 1] == '"' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  *len = n;
  return s;
}

const char *ps_profkey_build(ps_profkey *k, const char *type, size_t tlen,
                             const char *const *cells, const size_t *lens, size_t *keylen,
                             uint64_t hash[2]) {
  size_t need = tlen + 6;
  for (int i = 0; i < 5; i++) need += lens[i];
  if (need > k->cap) {
    size_t c = k->cap ? k->cap : 256;
    while (c < need) c *= 2;
    char *b = realloc(k->buf, c);
    if (b == NULL) return NULL;
    k->buf = b;
    k->cap = c;
  }
  size_t n = 0;
  memcpy(k->buf, type, tlen);
  n = tlen;
  for (int i = 0; i < 5; i++) {
    size_t l = lens[i];
    const char *s = strip(cells[i], &l);
    k->buf[n++] = '\x1f';
    memcpy(k->buf + n, s, l);
    n += l;
  }
  k->buf[n] = 0;
  *keylen = n;
  XXH128_hash_t h = XXH3_128bits(k->buf, n);
  hash[0] = h.low64;
  hash[1] = h.high64;
  return k->buf;
}
