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

/* The common cell in one pass: after its outer '"' runs, only digits, ',' and ';', every
 * slot non-empty, every dimension 1 to 17 digits, at most 16 dimensions and MAXSLOTS slots.
 * Returns the slot count, or -1 for any other cell (the general parser then decides). */
static int parse_simple(const char *s, size_t len, ps_lookup_key_shape *out, int max) {
  const char *p = s, *end = s + len;
  while (p < end && *p == '"') p++;
  while (end > p && end[-1] == '"') end--;
  if (p == end) return -1;
  int n = 0;
  for (;;) {
    ps_lookup_key_shape tmp, *sh = n < max ? &out[n] : &tmp;
    int rank = 0;
    for (;;) {
      const char *d = p, *lim = end - p > 17 ? p + 17 : end;
      int64_t x = 0;
      unsigned dig;
      while (p < lim && (dig = (unsigned)(*p - '0')) < 10) {
        x = x * 10 + dig;
        p++;
      }
      /* an 18th digit: the general parser decides (no overflow) */
      if (p == lim && p < end && (unsigned)(*p - '0') < 10) return -1;
      if (p == d || rank == PS_LOOKUP_KEY_MAXRANK) return -1;
      sh->dims[rank++] = x;
      if (p == end || *p == ';') break;
      if (*p++ != ',') return -1;
    }
    sh->rank = rank;
    if (++n > PS_LOOKUP_KEY_MAXSLOTS) return -1;
    if (p == end) break;
    p++;  /* ';' */
    if (p == end) return -1;
  }
  return n < max ? n : max;
}

int ps_lookup_key_parse_shapes(const char *s, size_t len, ps_lookup_key_shape *out, int max,
                               char *err, size_t errsize) {
  int n = max > 0 ? parse_simple(s, len, out, max) : -1;
  return n >= 0 ? n : ps_lookup_key_parse_shapes_general(s, len, out, max, err, errsize);
}

int ps_lookup_key_parse_shapes_general(const char *s, size_t len, ps_lookup_key_shape *out, int max,
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
  if (memchr(formats, 'F', flen) == NULL) return 0;  /* no FRACTAL_NZ part (ND;ND): nothing to do */
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

size_t ps_lookup_key_int(char *out, int64_t v) {
  char num[24], *p = num + sizeof num;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
  if (v < 0) *--p = '-';
  size_t n = (size_t)(num + sizeof num - p);
  memcpy(out, p, n);
  return n;
}

static void put_int(outbuf *b, int64_t v) {
  char num[24];
  put(b, num, ps_lookup_key_int(num, v));
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
  long kl = ps_lookup_key_render(sh, k, flags, out, cap);
  if (kl < 0) snprintf(err, errsize, "shape cell too long");
  return kl;
}

/* Slot i's text at p (room for PS_LOOKUP_KEY_MAXRANK dimensions of 20 characters and a
 * separator each); returns the end. */
static char *render_slot(const ps_lookup_key_shape *sh, unsigned flags, char *p) {
  if (sh->rank < 0) { *p++ = '('; *p++ = ')'; return p; }
  int first = (flags & PS_LOOKUP_KEY_STRIP1) && sh->rank > 1 && sh->dims[0] == 1;
  for (int d = first; d < sh->rank; d++) {
    if (d > first) *p++ = ',';
    p += ps_lookup_key_int(p, sh->dims[d]);
  }
  return p;
}

long ps_lookup_key_render(const ps_lookup_key_shape *sh, int k, unsigned flags, char *out, size_t cap) {
  enum { SLOTMAX = PS_LOOKUP_KEY_MAXRANK * 21 + 2 };
  if (k >= 0 && cap > (size_t)k * SLOTMAX) {  /* room for any k slots: no check per character */
    char *p = out;
    for (int i = 0; i < k; i++) {
      if (i) *p++ = ';';
      p = render_slot(&sh[i], flags, p);
    }
    *p = '\0';
    return (long)(p - out);
  }
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
  return b.over ? -1 : (long)b.len;
}

/* ---- input rules ------------------------------------------------------------------------ */

const char *ps_lookup_rule_name(int rule) {
  static const char *const names[] = {
    NULL, "identity", "batch_strip", "singleton_axis_transpose", "transpose",
    "batched_transpose", "padding", "batch_strip+padding", "flatten_3d", "flatten_3d+padding",
    "merge_last_dims", "merge_last_dims+padding"
  };
  return rule > 0 && rule < (int)(sizeof names / sizeof *names) ? names[rule] : NULL;
}

/* Lua's integer operators: + and * wrap around, // floors. */
static int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static int64_t fdiv(int64_t a, int64_t b) {  /* b > 0 */
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static int64_t up(int64_t csv, int64_t block) { return wmul(fdiv(wadd(csv, block - 1), block), block); }

int ps_lookup_padded(int64_t tc, int64_t csv) {
  if (tc <= csv || (int64_t)((uint64_t)tc - (uint64_t)csv) >= 64) return 0;
  return tc == up(csv, 16) || tc == up(csv, 32) || tc == up(csv, 64) || (csv >= 64 && tc == up(csv, 8));
}

static int eq(const ps_lookup_key_shape *a, const ps_lookup_key_shape *b) {
  if (a->rank < 0 || b->rank < 0) return a->rank < 0 && b->rank < 0;
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++) if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static void strip1(const ps_lookup_key_shape *s, ps_lookup_key_shape *out) {
  if (s->rank <= 1 || s->dims[0] != 1) { *out = *s; return; }
  out->rank = s->rank - 1;
  memcpy(out->dims, s->dims + 1, (size_t)out->rank * sizeof *out->dims);
}

int ps_lookup_pads(const ps_lookup_key_shape *tc, const ps_lookup_key_shape *csv) {
  if (tc->rank < 0 || csv->rank < 0 || tc->rank != csv->rank) return 0;
  int any = 0;
  for (int i = 0; i < tc->rank; i++) {
    if (tc->dims[i] == csv->dims[i]) continue;
    if (!ps_lookup_padded(tc->dims[i], csv->dims[i])) return 0;
    any = 1;
  }
  return any;
}

int ps_lookup_rule(unsigned kind, int i, const ps_lookup_key_shape *tc,
                   const ps_lookup_key_shape *csv) {
  if (eq(tc, csv)) return PS_RULE_IDENTITY;
  ps_lookup_key_shape st, sc;
  strip1(tc, &st);
  strip1(csv, &sc);
  if (eq(&st, &sc) || eq(&st, csv)) return PS_RULE_BATCH_STRIP;
  if (tc->rank < 0 || csv->rank < 0) return PS_RULE_NONE;
  const int64_t *t = tc->dims, *c = csv->dims, *s = st.dims;
  if ((kind & PS_RULE_KIND_INDEX) && tc->rank == 2 && csv->rank == 2 && t[0] == 1 && c[1] == 1 &&
      c[0] == t[1])
    return PS_RULE_SINGLETON_AXIS_TRANSPOSE;
  if ((kind & PS_RULE_KIND_MATMUL) && i >= 2) {
    if (st.rank == 2 && csv->rank == 2 && s[0] == c[1] && s[1] == c[0]) return PS_RULE_TRANSPOSE;
    if (st.rank == 3 && csv->rank == 3 && s[0] == c[0] && s[1] == c[2] && s[2] == c[1])
      return PS_RULE_BATCHED_TRANSPOSE;
  }
  if (ps_lookup_pads(&st, csv)) return PS_RULE_PADDING;
  if (ps_lookup_pads(&st, &sc)) return PS_RULE_BATCH_STRIP_PADDING;
  if ((kind & PS_RULE_KIND_FLATTEN_3D) && csv->rank == 2) {
    const ps_lookup_key_shape *s3 = st.rank == 3 ? &st : tc->rank == 3 ? tc : NULL;
    if (s3) {
      ps_lookup_key_shape f = { 2, { wmul(s3->dims[0], s3->dims[1]), s3->dims[2] } };
      if (eq(&f, csv)) return PS_RULE_FLATTEN_3D;
      if (ps_lookup_pads(&f, csv)) return PS_RULE_FLATTEN_3D_PADDING;
      if (kind & PS_RULE_KIND_MERGE_LAST) {
        f.dims[0] = s3->dims[0];
        f.dims[1] = wmul(s3->dims[1], s3->dims[2]);
        if (eq(&f, csv)) return PS_RULE_MERGE_LAST_DIMS;
        if (ps_lookup_pads(&f, csv)) return PS_RULE_MERGE_LAST_DIMS_PADDING;
      }
    }
  }
  return PS_RULE_NONE;
}

/* Rule by rule (ps_lookup_rule): identity, batch strip, padding and flatten keep the last
 * dimension of tc (strip1 never removes it), padding lowers it by less than 64; the singleton
 * transpose makes it 1; the transposes take the stripped shape's second last; merge_last its
 * product with the last (wrapping, as the rule computes it). */
int ps_lookup_last_anchors(unsigned kind, int i, const ps_lookup_key_shape *tc,
                           int64_t out[PS_LOOKUP_ANCHORS]) {
  if (tc->rank <= 0) return -1;
  ps_lookup_key_shape st;
  strip1(tc, &st);
  int n = 0;
  out[n++] = tc->dims[tc->rank - 1];
  if (kind & PS_RULE_KIND_INDEX) out[n++] = 1;
  if ((kind & PS_RULE_KIND_MATMUL) && i >= 2 && st.rank >= 2) out[n++] = st.dims[st.rank - 2];
  if (kind & PS_RULE_KIND_MERGE_LAST) {
    const ps_lookup_key_shape *s3 = st.rank == 3 ? &st : tc->rank == 3 ? tc : NULL;
    if (s3) out[n++] = wmul(s3->dims[1], s3->dims[2]);
  }
  return n;
}

int ps_lookup_fold(int rule, int r) {
  if (r == PS_RULE_IDENTITY) return rule;
  if (r == PS_RULE_PADDING) return rule == PS_RULE_IDENTITY ? r : rule;
  if (r == PS_RULE_BATCH_STRIP_PADDING)
    return rule == PS_RULE_IDENTITY || rule == PS_RULE_BATCH_STRIP ? r : rule;
  return r;
}

int ps_lookup_distance(int rule) {
  return rule == PS_RULE_PADDING || rule == PS_RULE_BATCH_STRIP_PADDING ||
         rule == PS_RULE_FLATTEN_3D_PADDING || rule == PS_RULE_MERGE_LAST_DIMS_PADDING;
}

static void swap_last2(ps_lookup_key_shape *s) {
  int64_t t = s->dims[s->rank - 1];
  s->dims[s->rank - 1] = s->dims[s->rank - 2];
  s->dims[s->rank - 2] = t;
}

static int add_variant(int *slot, ps_lookup_key_shape *shape, int n, int max, int i,
                       const ps_lookup_key_shape *v) {
  if (n >= max) return n;
  slot[n] = i;
  shape[n] = *v;
  return n + 1;
}

int ps_lookup_variants(unsigned kind, const ps_lookup_key_shape *q, int nq, int *slot,
                       ps_lookup_key_shape *shape, int max) {
  ps_lookup_key_shape v = { 0, { 0 } };
  int n = add_variant(slot, shape, 0, max, -1, &v);
  if (kind & PS_RULE_KIND_MATMUL)
    for (int i = 1; i < nq; i++) {
      strip1(&q[i], &v);
      if (v.rank == 2 || v.rank == 3) { swap_last2(&v); n = add_variant(slot, shape, n, max, i, &v); }
    }
  for (int i = 0; i < nq; i++) {
    ps_lookup_key_shape s;
    strip1(&q[i], &s);
    if (s.rank != 3) s = q[i];
    if (s.rank == 3 && (kind & PS_RULE_KIND_FLATTEN_3D)) {
      v.rank = 2;
      v.dims[0] = wmul(s.dims[0], s.dims[1]);
      v.dims[1] = s.dims[2];
      n = add_variant(slot, shape, n, max, i, &v);
      if (kind & PS_RULE_KIND_MERGE_LAST) {
        v.dims[0] = s.dims[0];
        v.dims[1] = wmul(s.dims[1], s.dims[2]);
        n = add_variant(slot, shape, n, max, i, &v);
      }
    }
    if ((kind & PS_RULE_KIND_INDEX) && q[i].rank == 2 && q[i].dims[0] == 1) {
      v.rank = 2;
      v.dims[0] = q[i].dims[1];
      v.dims[1] = 1;
      n = add_variant(slot, shape, n, max, i, &v);
    }
  }
  return n;
}

static int add_slot_variant(ps_lookup_key_shape *out, int n, const ps_lookup_key_shape *tc,
                            const ps_lookup_key_shape *v) {
  if (n >= PS_LOOKUP_SLOT_VARIANTS || eq(v, tc)) return n;
  out[n] = *v;
  return n + 1;
}

int ps_lookup_slot_variants(unsigned kind, int j, const ps_lookup_key_shape *tc,
                            ps_lookup_key_shape *out) {
  if (tc->rank < 0) return 0;
  ps_lookup_key_shape st, v;
  strip1(tc, &st);
  int n = add_slot_variant(out, 0, tc, &st);                 /* batch_strip: st == csv */
  if (st.rank < PS_LOOKUP_KEY_MAXRANK) {                     /* batch_strip: st == strip1(csv) */
    v.rank = st.rank + 1;
    v.dims[0] = 1;
    memcpy(v.dims + 1, st.dims, (size_t)st.rank * sizeof *v.dims);
    n = add_slot_variant(out, n, tc, &v);
  }
  if ((kind & PS_RULE_KIND_MATMUL) && j >= 2 && (st.rank == 2 || st.rank == 3)) {
    v = st;
    swap_last2(&v);
    n = add_slot_variant(out, n, tc, &v);
  }
  if ((kind & PS_RULE_KIND_INDEX) && tc->rank == 2 && tc->dims[0] == 1) {
    v.rank = 2;
    v.dims[0] = tc->dims[1];
    v.dims[1] = 1;
    n = add_slot_variant(out, n, tc, &v);
  }
  const ps_lookup_key_shape *s3 = st.rank == 3 ? &st : tc->rank == 3 ? tc : NULL;
  if (s3 && (kind & PS_RULE_KIND_FLATTEN_3D)) {
    ps_lookup_key_shape f = { 2, { wmul(s3->dims[0], s3->dims[1]), s3->dims[2] } };
    n = add_slot_variant(out, n, tc, &f);
    if (kind & PS_RULE_KIND_MERGE_LAST) {
      f.dims[0] = s3->dims[0];
      f.dims[1] = wmul(s3->dims[1], s3->dims[2]);
      n = add_slot_variant(out, n, tc, &f);
    }
  }
  return n;
}
