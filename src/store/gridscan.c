/* The grid's compute key of an existing row (gridscan.h); the Lua original is
 * lua/perfscript/db/reach.lua (view, key_of), which this follows step by step. */
#include "gridscan.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXSLOTS 64
#define MAXRANK 16

typedef struct slot { int rank; int64_t dims[MAXRANK]; } slot;  /* rank -1: "()" */

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

long ps_gridscan_compute_key(const char *is, const char *idt, const char *ifm, const char *ep, int n,
                             char *out, size_t cap) {
  char bis[4096], bidt[1024], bifm[1024], bep[64];
  if (clean(&is, bis, sizeof bis) || clean(&idt, bidt, sizeof bidt) || clean(&ifm, bifm, sizeof bifm) ||
      clean(&ep, bep, sizeof bep))
    return -1;
  for (const char *c = is; c && *c; c++)
    if (!((*c >= '0' && *c <= '9') || *c == ',' || *c == ';' || *c == '(' || *c == ')')) return -1;
  if (!plain_list(idt) || !plain_list(ifm) || !plain_list(ep)) return -1;
  slot ins[MAXSLOTS];
  int ns = parse_shapes(is, ins, MAXSLOTS);
  if (ns < 0) return -1;
  if (n >= 0 && ns > n) ns = n;
  const char *dp[MAXSLOTS], *fp[MAXSLOTS];
  size_t dl[MAXSLOTS], fl[MAXSLOTS];
  int nd = split_list(idt, dp, dl, MAXSLOTS), nf = split_list(ifm, fp, fl, MAXSLOTS);
  if (nd < 0 || nf < 0) return -1;
  if (nd > ns) nd = ns;
  for (int i = 0; i < ns && i < nf; i++)
    if (fl[i] == 10 && memcmp(fp[i], "FRACTAL_NZ", 10) == 0 && ins[i].rank >= 0 && nz_restore(&ins[i]) != 0)
      return -1;
  size_t o = 0;
  char num[24];
  if (cap == 0) return -1;
  out[0] = '\0';
  for (int i = 0; i < ns; i++) {
    if (i && put(out, cap, &o, ";", 1) != 0) return -1;
    if (ins[i].rank < 0) {
      if (put(out, cap, &o, "()", 2) != 0) return -1;
      continue;
    }
    for (int j = 0; j < ins[i].rank; j++) {
      int l = snprintf(num, sizeof num, "%s%lld", j ? "," : "", (long long)ins[i].dims[j]);
      if (put(out, cap, &o, num, (size_t)l) != 0) return -1;
    }
  }
  if (put(out, cap, &o, "|", 1) != 0) return -1;
  for (int i = 0; i < nd; i++)
    if ((i && put(out, cap, &o, ";", 1) != 0) || put(out, cap, &o, dp[i], dl[i]) != 0) return -1;
  if (put(out, cap, &o, "|", 1) != 0) return -1;
  if (ep && put(out, cap, &o, ep, strlen(ep)) != 0) return -1;
  return (long)o;
}
