/* The grid's compute key of an existing row (gridscan.h); the Lua original is
 * lua/perfscript/db/reach.lua (view, key_of), which this follows step by step. */
#include "gridscan.h"

#include <stdint.h>
#include <string.h>

#define MAXSLOTS PS_GRIDSCAN_MAXSLOTS
#define MAXRANK PS_GRIDSCAN_MAXRANK

typedef ps_gridscan_slot slot;

/* No whitespace and no '"' (Lua's clean and the part trims are then no-ops). */
static int plain_list(const char *s) {
  for (; s && *s; s++)
    if (*s == '"' || *s == ' ' || (*s >= '\t' && *s <= '\r')) return 0;
  return 1;
}

/* The non-empty ';' parts of a plain list cell, as (pointer, length); -1 over max. */
static int split_list(const char *s, const char **p, size_t *len, int max) {
  int k = 0;
  while (s && *s) {
    const char *e = strchr(s, ';');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (l) {
      if (k == max) return -1;
      p[k] = s, len[k] = l, k++;
    }
    if (!e) break;
    s = e + 1;
  }
  return k;
}

/* Input Shapes in the plain form into slots (empty slots dropped); -1 when not plain. */
static int parse_shapes(const char *s, slot *out, int max) {
  int k = 0;
  if (!s) return 0;
  for (;;) {
    const char *e = strchr(s, ';');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (l == 2 && s[0] == '(' && s[1] == ')') {
      if (k == max) return -1;
      out[k++].rank = -1;
    } else if (l) {
      if (k == max) return -1;
      slot *sl = &out[k++];
      sl->rank = 0;
      size_t i = 0;
      for (;;) {
        int64_t v = 0;
        size_t d = 0;
        while (i < l && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0'), d++;
        if (d == 0 || d > 18 || sl->rank == MAXRANK) return -1;
        sl->dims[sl->rank++] = v;
        if (i == l) break;
        if (s[i] != ',') return -1;
        i++;
      }
    }
    if (!e) break;
    s = e + 1;
  }
  return k;
}

/* FRACTAL_NZ [..., H, W, bh, bw] -> [..., H*bw, W*bh]; -1 when a product leaves int64. */
static int nz_restore(slot *s) {
  if (s->rank < 4) return 0;
  int n = s->rank;
  int64_t a, b;
  if (__builtin_mul_overflow(s->dims[n - 4], s->dims[n - 1], &a) ||
      __builtin_mul_overflow(s->dims[n - 3], s->dims[n - 2], &b)) return -1;
  s->dims[n - 4] = a, s->dims[n - 3] = b, s->rank = n - 2;
  return 0;
}

static int put(char *out, size_t cap, size_t *o, const char *s, size_t len) {
  if (*o + len + 1 > cap) return -1;
  memcpy(out + *o, s, len);
  *o += len;
  out[*o] = '\0';
  return 0;
}

static int blank_or_quote(char c) { return c == '"' || c == ' ' || (c >= '\t' && c <= '\r'); }

/* Lua's clean(cell): whitespace and '"' stripped at both ends (a database writes its shape
 * cells quoted: "1024,7168;7168,2048"). Into buf; NULL stays NULL; -1 when it does not fit. */
static int clean(const char **s, char *buf, size_t cap) {
  if (!*s) return 0;
  const char *b = *s;
  size_t n = strlen(b);
  while (n && blank_or_quote(*b)) b++, n--;
  while (n && blank_or_quote(b[n - 1])) n--;
  if (n + 1 > cap) return -1;
  memcpy(buf, b, n);
  buf[n] = '\0';
  *s = buf;
  return 0;
}

/* Reach.view in compute mode from plain cells into v; -1 when the row is not in the plain form. */
static int make_view(ps_gridscan_view *v, const char *is, const char *idt, const char *ifm, const char *ep, int n) {
  if (clean(&is, v->bis, sizeof v->bis) || clean(&idt, v->bidt, sizeof v->bidt) ||
      clean(&ifm, v->bifm, sizeof v->bifm) || clean(&ep, v->bep, sizeof v->bep))
    return -1;
  for (const char *c = is; c && *c; c++)
    if (!((*c >= '0' && *c <= '9') || *c == ',' || *c == ';' || *c == '(' || *c == ')')) return -1;
  if (!plain_list(idt) || !plain_list(ifm) || !plain_list(ep)) return -1;
  int ns = parse_shapes(is, v->ins, PS_GRIDSCAN_MAXSLOTS);
  if (ns < 0) return -1;
  if (n >= 0 && ns > n) ns = n;
  const char *fp[PS_GRIDSCAN_MAXSLOTS];
  size_t fl[PS_GRIDSCAN_MAXSLOTS];
  int nd = split_list(idt, v->dp, v->dl, PS_GRIDSCAN_MAXSLOTS), nf = split_list(ifm, fp, fl, PS_GRIDSCAN_MAXSLOTS);
  if (nd < 0 || nf < 0) return -1;
  if (nd > ns) nd = ns;
  for (int i = 0; i < ns && i < nf; i++)
    if (fl[i] == 10 && memcmp(fp[i], "FRACTAL_NZ", 10) == 0 && v->ins[i].rank >= 0 && nz_restore(&v->ins[i]) != 0)
      return -1;
  v->ns = ns, v->nd = nd, v->ep = ep;
  return 0;
}

/* One slot's text (Lua's slot_text: "()" or the dimensions joined by ","), from dimension
 * `from` (0, or 1 for match.strip1's slot). */
static int put_slot(char *out, size_t cap, size_t *o, const slot *s, int from) {
  if (s->rank < 0) return put(out, cap, o, "()", 2);
  char num[24];
  for (int j = from; j < s->rank; j++) {
    /* "%lld" written by hand: snprintf was a tenth of a grid run's instructions */
    int64_t x = s->dims[j];
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    char *e = num + sizeof num, *p = e;
    do *--p = (char)('0' + u % 10); while (u /= 10);
    if (x < 0) *--p = '-';
    if (j > from) *--p = ',';
    if (put(out, cap, o, p, (size_t)(e - p)) != 0) return -1;
  }
  return 0;
}

/* "|dtypes|ep": the key's suffix. */
static int put_suffix(char *out, size_t cap, size_t *o, const ps_gridscan_view *v) {
  if (put(out, cap, o, "|", 1) != 0) return -1;
  for (int i = 0; i < v->nd; i++)
    if ((i && put(out, cap, o, ";", 1) != 0) || put(out, cap, o, v->dp[i], v->dl[i]) != 0) return -1;
  if (put(out, cap, o, "|", 1) != 0) return -1;
  if (v->ep && put(out, cap, o, v->ep, strlen(v->ep)) != 0) return -1;
  return 0;
}

long ps_gridscan_view_key(const ps_gridscan_view *v, char *out, size_t cap) {
  size_t o = 0;
  if (cap == 0) return -1;
  out[0] = '\0';
  for (int i = 0; i < v->ns; i++)
    if ((i && put(out, cap, &o, ";", 1) != 0) || put_slot(out, cap, &o, &v->ins[i], 0) != 0) return -1;
  if (put_suffix(out, cap, &o, v) != 0) return -1;
  return (long)o;
}

long ps_gridscan_compute_key(const char *is, const char *idt, const char *ifm, const char *ep, int n,
                             char *out, size_t cap) {
  ps_gridscan_view v;
  if (make_view(&v, is, idt, ifm, ep, n) != 0) return -1;
  return ps_gridscan_view_key(&v, out, cap);
}

int ps_gridscan_view_of(ps_gridscan_view *v, const char *is, const char *idt, const char *ifm, const char *ep, int n) {
  return make_view(v, is, idt, ifm, ep, n);
}

/* match.strip1: one leading 1 of a rank > 1 shape dropped (the first dimension kept from). */
static int strip_from(const slot *s) { return s->rank > 1 && s->dims[0] == 1 ? 1 : 0; }

/* The key of v's shapes with slot `at` replaced by *alt (at < 0: none), and, when a slot has a
 * leading 1, the key of the slots with it stripped (Set:answers's found). */
static int variant(const ps_gridscan_view *v, int at, const slot *alt, char *out, size_t cap,
                   int (*fn)(void *, const char *, size_t), void *ud) {
  int stripped = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && !stripped) break;
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < v->ns; i++) {
      const slot *s = i == at ? alt : &v->ins[i];
      int from = strip_from(s);
      stripped |= from;
      if ((i && put(out, cap, &o, ";", 1) != 0) || put_slot(out, cap, &o, s, pass ? from : 0) != 0) return -1;
    }
    if (put_suffix(out, cap, &o, v) != 0) return -1;
    if (fn(ud, out, o)) return 1;
  }
  return 0;
}

static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

int ps_gridscan_variant_keys(const ps_gridscan_view *v, unsigned flags, char *out, size_t cap,
                             int (*fn)(void *, const char *, size_t), void *ud) {
  if (cap == 0) return -1;
  int r = variant(v, -1, NULL, out, cap, fn, ud);
  if (r) return r;
  slot alt;
  if (flags & PS_GRIDSCAN_MATMUL)  /* a transposed weight: last two dimensions swapped */
    for (int i = 1; i < v->ns; i++) {
      const slot *s = &v->ins[i];
      int from = s->rank >= 0 ? strip_from(s) : 0, rank = s->rank - from;
      if (s->rank < 0 || (rank != 2 && rank != 3)) continue;
      alt.rank = rank;
      memcpy(alt.dims, s->dims + from, (size_t)rank * sizeof *alt.dims);
      int64_t t = alt.dims[rank - 2];
      alt.dims[rank - 2] = alt.dims[rank - 1], alt.dims[rank - 1] = t;
      if ((r = variant(v, i, &alt, out, cap, fn, ud))) return r;
    }
  for (int i = 0; i < v->ns; i++) {
    const slot *s = &v->ins[i];
    if (s->rank < 0) continue;
    int from = strip_from(s);
    const int64_t *d = s->dims + from;
    if (s->rank - from != 3) d = s->dims, from = 0;
    if (s->rank - from == 3 && (flags & PS_GRIDSCAN_FLATTEN_3D)) {  /* a 3-D slot flattened to 2-D */
      alt.rank = 2, alt.dims[0] = wrap_mul(d[0], d[1]), alt.dims[1] = d[2];
      if ((r = variant(v, i, &alt, out, cap, fn, ud))) return r;
      if (flags & PS_GRIDSCAN_MERGE_LAST) {
        alt.dims[0] = d[0], alt.dims[1] = wrap_mul(d[1], d[2]);
        if ((r = variant(v, i, &alt, out, cap, fn, ud))) return r;
      }
    }
    if ((flags & PS_GRIDSCAN_INDEX) && s->rank == 2 && s->dims[0] == 1) {
      alt.rank = 2, alt.dims[0] = s->dims[1], alt.dims[1] = 1;
      if ((r = variant(v, i, &alt, out, cap, fn, ud))) return r;
    }
  }
  return 0;
}
