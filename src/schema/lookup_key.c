#include "lookup_key.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

/* Whitespace, then every surrounding '"' (pandas leaves the literal quotes of """a;b"""). */
static void unquote(const char **s, size_t *len) {
  ps_trim(s, len);
  while (*len > 0 && **s == '"') { (*s)++; (*len)--; }
  while (*len > 0 && (*s)[*len - 1] == '"') (*len)--;
  ps_trim(s, len);
}

int ps_lookup_key_split_list(const char *s, size_t len, const char **parts, size_t *lens, int max) {
  unquote(&s, &len);
  int n = 0;
  const char *p = s, *end = s + len;
  while (p <= end) {
    const char *q = memchr(p, ';', (size_t)(end - p));
    if (q == NULL) q = end;
    const char *part = p;
    size_t plen = (size_t)(q - p);
    unquote(&part, &plen);
    if (plen > 0) {
      if (n >= max) return max + 1;   /* more than max: the caller says so, never a silent cut */
      parts[n] = part;
      lens[n] = plen;
      n++;
    }
    p = q + 1;
  }
  return n;
}

static int parse_int(const char *p, size_t len, int64_t *v) {
  ps_trim(&p, &len);
  if (len == 0) return 0;
  size_t i = 0;
  int neg = 0;
  if (p[0] == '+' || p[0] == '-') { neg = p[0] == '-'; i = 1; }
  if (i == len) return 0;
  int64_t x = 0;
  for (; i < len; i++) {
    if (!isdigit((unsigned char)p[i])) return 0;
    if (x > (INT64_MAX - 9) / 10) return 0;
    x = x * 10 + (p[i] - '0');
  }
  *v = neg ? -x : x;
  return 1;
}

int ps_lookup_key_parse_shapes(const char *s, size_t len, ps_lookup_key_shape *out, int max,
                          char *err, size_t errsize) {
  const char *parts[PS_LOOKUP_KEY_MAXSLOTS];
  size_t lens[PS_LOOKUP_KEY_MAXSLOTS];
  int n = ps_lookup_key_split_list(s, len, parts, lens, PS_LOOKUP_KEY_MAXSLOTS);
  if (n > PS_LOOKUP_KEY_MAXSLOTS) {
    snprintf(err, errsize, "more than %d slots", PS_LOOKUP_KEY_MAXSLOTS);
    return -1;
  }
  if (n > max) n = max;
  for (int i = 0; i < n; i++) {
    const char *p = parts[i];
    size_t plen = lens[i];
    ps_lookup_key_shape *sh = &out[i];
    if (plen == 2 && p[0] == '(' && p[1] == ')') { sh->rank = -1; continue; }
    sh->rank = 0;
    const char *q = p, *end = p + plen;
    while (q <= end) {
      const char *c = memchr(q, ',', (size_t)(end - q));
      if (c == NULL) c = end;
      if (sh->rank >= PS_LOOKUP_KEY_MAXRANK) {
        snprintf(err, errsize, "slot %d has more than %d dimensions", i + 1, PS_LOOKUP_KEY_MAXRANK);
        return -1;
      }
      if (!parse_int(q, (size_t)(c - q), &sh->dims[sh->rank])) {
        snprintf(err, errsize, "slot %d: '%.*s' is not a list of integers", i + 1,
                 (int)(plen > 60 ? 60 : plen), p);
        return -1;
      }
      sh->rank++;
      q = c + 1;
    }
  }
  return n;
}

int ps_lookup_key_nz_restore(ps_lookup_key_shape *sh) {
  if (sh->rank < 4) return 0;
  int r = sh->rank;
  int64_t h = sh->dims[r - 4], w = sh->dims[r - 3], bh = sh->dims[r - 2], bw = sh->dims[r - 1];
  int64_t hb, wb;
  if (__builtin_mul_overflow(h, bw, &hb) || __builtin_mul_overflow(w, bh, &wb)) return -1;
  sh->dims[r - 4] = hb;
  sh->dims[r - 3] = wb;
  sh->rank = r - 2;
  return 0;
}

int ps_lookup_key_restore(ps_lookup_key_shape *sh, int n, const char *formats, size_t flen,
                          char *err, size_t errsize) {
  const char *parts[PS_LOOKUP_KEY_MAXSLOTS];
  size_t lens[PS_LOOKUP_KEY_MAXSLOTS];
  int nf = ps_lookup_key_split_list(formats, flen, parts, lens, PS_LOOKUP_KEY_MAXSLOTS);
  for (int i = 0; i < n && i < nf && i < PS_LOOKUP_KEY_MAXSLOTS; i++)
    if (lens[i] == 10 && memcmp(parts[i], "FRACTAL_NZ", 10) == 0 && ps_lookup_key_nz_restore(&sh[i]) != 0) {
      snprintf(err, errsize, "slot %d: the FRACTAL_NZ restore leaves int64 (H*bw or W*bh)", i + 1);
      return -1;
    }
  return 0;
}

typedef struct outbuf { char *p; size_t len, cap; int over; } outbuf;

static void put(outbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) { b->over = 1; return; }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void put_int(outbuf *b, int64_t v) {
  char num[24], *p = num + sizeof num;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
  if (v < 0) *--p = '-';
  put(b, p, (size_t)(num + sizeof num - p));
}

long ps_lookup_key_list(const char *s, size_t len, int n, unsigned flags, char *out, size_t cap) {
  const char *parts[PS_LOOKUP_KEY_MAXSLOTS];
  size_t lens[PS_LOOKUP_KEY_MAXSLOTS];
  int k = ps_lookup_key_split_list(s, len, parts, lens, PS_LOOKUP_KEY_MAXSLOTS);
  if (k > PS_LOOKUP_KEY_MAXSLOTS) return -1;
  if (n > 0 && k > n) k = n;
  outbuf b = { out, 0, cap, 0 };
  if (cap == 0) return -1;
  out[0] = '\0';
  for (int i = 0; i < k; i++) {
    if (i) put(&b, ";", 1);
    if ((flags & PS_LOOKUP_KEY_FLOAT_GROUP) &&
        ((lens[i] == 7 && memcmp(parts[i], "DT_BF16", 7) == 0) ||
         (lens[i] == 5 && memcmp(parts[i], "FLOAT", 5) == 0)))
      put(&b, "FLOAT_GROUP", 11);
    else
      put(&b, parts[i], lens[i]);
  }
  return b.over ? -1 : (long)b.len;
}

long ps_lookup_key_shapes(const char *s, size_t len, const char *formats, size_t flen, int n,
                     unsigned flags, char *out, size_t cap, char *err, size_t errsize) {
  ps_lookup_key_shape sh[PS_LOOKUP_KEY_MAXSLOTS];
  int k = ps_lookup_key_parse_shapes(s, len, sh, PS_LOOKUP_KEY_MAXSLOTS, err, errsize);
  if (k < 0) return -1;
  if (n > 0 && k > n) k = n;
  if (formats && ps_lookup_key_restore(sh, k, formats, flen, err, errsize) != 0) return -1;
  outbuf b = { out, 0, cap, 0 };
  if (cap == 0) return -1;
  out[0] = '\0';
  for (int i = 0; i < k; i++) {
    if (i) put(&b, ";", 1);
    if (sh[i].rank < 0) { put(&b, "()", 2); continue; }
    int first = 0;
    if ((flags & PS_LOOKUP_KEY_STRIP1) && sh[i].rank > 1 && sh[i].dims[0] == 1) first = 1;
    for (int d = first; d < sh[i].rank; d++) {
      if (d > first) put(&b, ",", 1);
      put_int(&b, sh[i].dims[d]);
    }
  }
  if (b.over) {
    snprintf(err, errsize, "shape cell too long");
    return -1;
  }
  return (long)b.len;
}
