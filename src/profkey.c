#include "profkey.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sig.h"

struct ps_profkey {
  ps_sig *sig;
  char *buf;
  size_t cap;
};

ps_profkey *ps_profkey_new(void) {
  ps_profkey *k = calloc(1, sizeof *k);
  if (k == NULL) return NULL;
  k->sig = ps_sig_new();
  if (k->sig == NULL) {
    free(k);
    return NULL;
  }
  return k;
}

void ps_profkey_free(ps_profkey *k) {
  if (k == NULL) return;
  ps_sig_free(k->sig);
  free(k->buf);
  free(k);
}

static int reserve(ps_profkey *k, size_t need) {
  if (need <= k->cap) return 0;
  size_t c = k->cap ? k->cap : 256;
  while (c < need) c *= 2;
  char *b = realloc(k->buf, c);
  if (b == NULL) return -1;
  k->buf = b;
  k->cap = c;
  return 0;
}

const char *ps_profkey_build(ps_profkey *k, const char *type, size_t tlen,
                             const char *const *cells, const size_t *lens, size_t *keylen,
                             uint64_t hash[2]) {
  /* NUL-terminated copies of the type and the cells for the signature code */
  size_t need = tlen + 1;
  for (int i = 0; i < 5; i++) need += lens[i] + 1;
  if (reserve(k, need) != 0) return NULL;
  const char *c[6];
  size_t off = 0;
  for (int i = -1; i < 5; i++) {
    const char *src = i < 0 ? type : cells[i];
    size_t n = i < 0 ? tlen : lens[i];
    memcpy(k->buf + off, src, n);
    k->buf[off + n] = 0;
    c[i + 1] = k->buf + off;
    off += n + 1;
  }
  ps_sig_row row = {
    .op_name = c[0], .in_shapes = c[1], .in_dtypes = c[2], .in_formats = c[3],
    .out_shapes = c[4], .out_dtypes = c[5],
  };
  if (ps_sig_compute(k->sig, &row) != 0) return NULL;
  size_t slen;
  const char *sig = ps_sig_text(k->sig, &slen);
  if (reserve(k, tlen + slen + 2) != 0) return NULL;
  memcpy(k->buf, type, tlen);   /* type may point into buf: it is the first copy */
  k->buf[tlen] = PS_SIG_SEP;
  memcpy(k->buf + tlen + 1, sig, slen);
  k->buf[tlen + 1 + slen] = 0;
  *keylen = tlen + 1 + slen;
  XXH128_hash_t h = XXH3_128bits(k->buf, *keylen);
  hash[0] = h.low64;
  hash[1] = h.high64;
  return k->buf;
}
