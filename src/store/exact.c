#include "exact.h"

#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "text.h"

int ps_exact_list_part(const char **p, const char *end, const char **part, size_t *plen) {
  while (*p < end) {
    const char *q = memchr(*p, ';', (size_t)(end - *p));
    if (q == NULL) q = end;
    const char *a = *p, *b = q;
    *p = q + 1;
    int trim = 0;
    for (const char *c = a; c < b; c++)
      if (*c == '"' || ps_is_space(*c)) { trim = 1; break; }
    if (trim) {
      while (a < b && (*a == '"' || ps_is_space(*a))) a++;
      while (b > a && (b[-1] == '"' || ps_is_space(b[-1]))) b--;
    }
    if (b > a) { *part = a; *plen = (size_t)(b - a); return 1; }
  }
  return 0;
}

/* The query's dtypes group name as match.lua's group(): DT_BF16 and FLOAT are one. */
static int same_group(const char *a, size_t alen, const char *b, size_t blen, int fg) {
  if (alen == blen && memcmp(a, b, alen) == 0) return 1;
  if (!fg) return 0;
  int af = (alen == 7 && memcmp(a, "DT_BF16", 7) == 0) || (alen == 5 && memcmp(a, "FLOAT", 5) == 0);
  int bf = (blen == 7 && memcmp(b, "DT_BF16", 7) == 0) || (blen == 5 && memcmp(b, "FLOAT", 5) == 0);
  return af && bf;
}

/* ---- the slot search ----------------------------------------------------------------------
 * The verdicts of one search on each slot group and each dtypes cell met, so that a walk over
 * many rows judges each distinct slot and dtypes cell once: open addressing over MEMO entries
 * stamped with the search's number (no clearing between searches), probes cut short (an entry
 * not found is judged again). */
enum { MEMO = 4096, MEMO_PROBES = 8 };
typedef struct memo { uint32_t key[MEMO], gen[MEMO]; unsigned char val[MEMO]; uint32_t now; } memo;
struct ps_exact_memo { memo slots, dts; };

ps_exact_memo *ps_exact_memo_new(void) { return calloc(1, sizeof(ps_exact_memo)); }
void ps_exact_memo_free(ps_exact_memo *m) { free(m); }

static int memo_get(const memo *m, uint32_t k, int *v) {
  for (uint32_t j = (k * 2654435761u) & (MEMO - 1), n = 0; n < MEMO_PROBES; j = (j + 1) & (MEMO - 1), n++) {
    if (m->gen[j] != m->now) return 0;
    if (m->key[j] == k) { *v = m->val[j]; return 1; }
  }
  return 0;
}

static void memo_put(memo *m, uint32_t k, int v) {
  for (uint32_t j = (k * 2654435761u) & (MEMO - 1), n = 0; n < MEMO_PROBES; j = (j + 1) & (MEMO - 1), n++)
    if (m->gen[j] != m->now) { m->gen[j] = m->now; m->key[j] = k; m->val[j] = (unsigned char)v; return; }
}

/* A new search: every entry stale (the stamp wraps after 2^32 searches: then cleared). */
static void memo_reset(memo *m) {
  if (++m->now == 0) { memset(m->gen, 0, sizeof m->gen); m->now = 1; }
}

typedef struct walk {
  const ps_slotix *x; const ps_table *t; ps_exact_memo *m;
  const ps_exact_query *q; int dcol;
  uint32_t *out; size_t nout, cap; int oom;
} walk;

/* A row the walk meets: kept when every slot has a rule and the dtypes are in the query's
 * groups (each distinct slot group and dtypes cell judged once per search). */
static int walk_row(void *ctx, size_t row, const uint32_t *gs, size_t ns) {
  walk *w = ctx;
  const ps_exact_query *q = w->q;
  int good = 1;
  for (size_t i = 0; i < ns && good; i++) {
    int verdict;
    if (!memo_get(&w->m->slots, gs[i], &verdict)) {
      ps_lookup_key_shape sh;
      ps_slotix_shape(w->x, gs[i], &sh);
      verdict = ps_lookup_rule(q->kind, (int)i + 1, &q->q[i], &sh) != PS_RULE_NONE;
      memo_put(&w->m->slots, gs[i], verdict);
    }
    good = verdict;
  }
  if (good && q->has_dt) {
    ps_sid dsid = w->dcol >= 0 ? ps_table_cell(w->t, row, (size_t)w->dcol) : 0;
    if (!memo_get(&w->m->dts, dsid, &good)) {
      size_t dlen = 0;
      const char *d = w->dcol >= 0 ? ps_table_text(w->t, row, (size_t)w->dcol, &dlen) : "";
      const char *dp = d, *part;
      size_t plen;
      for (size_t i = 0; i < ns && good; i++)
        if (!ps_exact_list_part(&dp, d + dlen, &part, &plen) || q->qd[i] == NULL ||
            !same_group(q->qd[i], q->qdl[i], part, plen, q->fg))
          good = 0;
      memo_put(&w->m->dts, dsid, good);
    }
  }
  if (!good) return 0;
  /* each row once (a row found by two slots); the rows kept are few */
  for (size_t k = 0; k < w->nout; k++)
    if (w->out[k] == (uint32_t)row) return 0;
  if (w->nout == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 16;
    uint32_t *o = realloc(w->out, cap * sizeof *o);
    if (o == NULL) { w->oom = 1; return 1; }
    w->out = o;
    w->cap = cap;
  }
  w->out[w->nout++] = (uint32_t)row;
  return 0;
}

long ps_exact_slot_rows(const ps_table *t, const ps_slotix *x, ps_exact_memo *m,
                        const ps_exact_query *q, int dcol, const int *pj,
                        const ps_lookup_key_shape *pv, int npairs, size_t upto, uint32_t **out) {
  walk w = { x, t, m, q, dcol, NULL, 0, 0, 0 };
  *out = NULL;
  if (q->nq > PS_LOOKUP_KEY_MAXSLOTS || upto == 0) return 0;
  memo_reset(&m->slots);
  memo_reset(&m->dts);
  for (int p = 0; p < npairs && !w.oom; p++) {
    int j = pj[p];
    if (j < 1 || j > PS_LOOKUP_KEY_MAXSLOTS) continue;  /* no row's slot is that */
    /* the coarse index: the other slot's last dimension must be one the rules can give */
    int other = j == 1 ? 2 : 1;
    int64_t anchors[PS_LOOKUP_ANCHORS];
    int na = other <= q->nq ? ps_lookup_last_anchors(q->kind, other, &q->q[other - 1], anchors) : -1;
    size_t from = w.nout;
    ps_slotix_walk(x, ps_slotix_group(x, j - 1, &pv[p]), upto, (size_t)q->nq, anchors, na, walk_row, &w);
    for (size_t a = from + 1; a < w.nout; a++)  /* this pair's rows ascending (they are few) */
      for (size_t b = a; b > from && w.out[b - 1] > w.out[b]; b--) {
        uint32_t tmp = w.out[b];
        w.out[b] = w.out[b - 1];
        w.out[b - 1] = tmp;
      }
  }
  if (w.oom) { free(w.out); return -1; }
  *out = w.out;
  return (long)w.nout;
}

/* ---- the exact match ---------------------------------------------------------------------- */

/* A candidate; the input rules of a query of up to CAND_RULES inputs kept with it (the best's
 * are the answer's: no second check of its row). */
enum { CAND_RULES = 8 };
typedef struct cand {
  uint32_t row; int distance, pri, latpos, rule; double lat;
  unsigned char rules[CAND_RULES];
} cand;

/* The candidates: the first SMALL on the stack (a lookup has a few), then malloc'd. */
enum { SMALL_CANDS = 16 };
typedef struct cands { cand *v; size_t n, cap; cand small[SMALL_CANDS]; } cands;

/* Row r against the query as scan_row and match.row check it (quiet): a valid latency along
 * the column chain, the inputs parsed (FRACTAL_NZ restored, cut to n slots), as many as the
 * query's, each dtype in the query's group and each input matched by a rule. 1 with the
 * candidate (rules: each input's rule, when not NULL), else 0. */
static int check_row(const ps_table *t, size_t r, const ps_exact_query *q, const ps_exact_cols *c,
                     cand *out, unsigned char *rules) {
  int latpos = -1;
  double lat = 0;
  for (int j = 0; j < c->nlat; j++) {
    double v = ps_table_cell_num(t, r, (size_t)c->lat[j]);
    if (ps_num_is_duration(v)) { latpos = j; lat = v; break; }
  }
  if (latpos < 0) return 0;
  ps_lookup_key_shape sh[PS_LOOKUP_KEY_MAXSLOTS];
  char err[256];
  int ns = ps_table_inputs(t, r, c->scol, c->fcol, c->n, sh, err, sizeof err);
  if (ns < 0 || ns != q->nq) return 0;
  const char *d = "", *dp, *part;
  size_t dlen = 0, plen;
  if (q->has_dt && c->dcol >= 0) d = ps_table_text(t, r, (size_t)c->dcol, &dlen);
  dp = d;
  int rule = PS_RULE_IDENTITY;
  for (int i = 0; i < ns; i++) {
    if (q->has_dt && (!ps_exact_list_part(&dp, d + dlen, &part, &plen) || q->qd[i] == NULL ||
                      !same_group(q->qd[i], q->qdl[i], part, plen, q->fg)))
      return 0;
    int ri = ps_lookup_rule(q->kind, i + 1, &q->q[i], &sh[i]);
    if (ri == PS_RULE_NONE) return 0;
    if (rules) rules[i] = (unsigned char)ri;
    if (i < CAND_RULES) out->rules[i] = (unsigned char)ri;
    rule = ps_lookup_fold(rule, ri);
  }
  out->row = (uint32_t)r;
  out->rule = rule;
  out->distance = ps_lookup_distance(rule);
  out->latpos = latpos;
  out->pri = c->pri[latpos];
  out->lat = lat;
  return 1;
}

static int cand_less(const cand *a, const cand *b) {
  if (a->distance != b->distance) return a->distance < b->distance;
  if (a->pri != b->pri) return a->pri < b->pri;
  return a->row < b->row;
}

static int cand_cmp(const void *a, const void *b) {
  return cand_less(a, b) ? -1 : cand_less(b, a) ? 1 : 0;
}

static int add_cand(cands *cs, const cand *c) {
  if (cs->n == cs->cap) {
    size_t cap = cs->cap * 2;
    cand *v = cs->v == cs->small ? malloc(cap * sizeof *v) : realloc(cs->v, cap * sizeof *v);
    if (v == NULL) return 0;
    if (cs->v == cs->small) memcpy(v, cs->small, sizeof cs->small);
    cs->v = v;
    cs->cap = cap;
  }
  cs->v[cs->n++] = *c;
  return 1;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

enum { SMALL_TRIED = 64 };  /* the rows the keys find, on the stack up to this many */

/* The rows of the keys (each key's group once), checked; their rows into *tried (sorted). */
static int key_rows(const ps_table *t, const ps_index *ix, const ps_sid *keys, int nkeys, size_t nslots,
                    const ps_exact_query *q, const ps_exact_cols *c, cands *cs, uint32_t **tried,
                    size_t *ntried, size_t cap) {
  for (int k = 0; k < nkeys; k++) {
    const ps_sid *key = keys + (size_t)k * nslots;
    int dup = 0;  /* two variants with one key (a square weight transposed): its rows once */
    for (int e = 0; e < k && !dup; e++) dup = memcmp(keys + (size_t)e * nslots, key, nslots * sizeof *key) == 0;
    if (dup) continue;
    for (long r = ps_index_find(ix, key); r >= 0; r = ps_index_next(ix, (size_t)r)) {
      if (*ntried == cap) {  /* *tried starts as the caller's buffer of cap rows */
        uint32_t *v = malloc(cap * 2 * sizeof *v);
        if (v == NULL) return 0;
        memcpy(v, *tried, cap * sizeof *v);
        if (cap > SMALL_TRIED) free(*tried);
        *tried = v;
        cap *= 2;
      }
      (*tried)[(*ntried)++] = (uint32_t)r;
      cand cd;
      if (check_row(t, (size_t)r, q, c, &cd, NULL) && !add_cand(cs, &cd)) return 0;
    }
  }
  if (*ntried > 1) qsort(*tried, *ntried, sizeof **tried, cmp_u32);
  return 1;
}

/* The slot search's rows before upto that the keys did not find, checked. */
static int slot_rows(const ps_table *t, const ps_slotix *x, ps_exact_memo *m, const ps_exact_query *q,
                     const ps_exact_cols *c, size_t upto, const uint32_t *tried, size_t ntried, cands *cs) {
  enum { SMALL = 4 * PS_LOOKUP_SLOT_VARIANTS };  /* queries of up to 4 inputs: on the stack */
  int pj_small[SMALL];
  ps_lookup_key_shape pv_small[SMALL];
  size_t maxp = (size_t)q->nq * PS_LOOKUP_SLOT_VARIANTS;
  int *pj = maxp <= SMALL ? pj_small : malloc(maxp * sizeof *pj);
  ps_lookup_key_shape *pv = maxp <= SMALL ? pv_small : malloc(maxp * sizeof *pv);
  if (pj == NULL || pv == NULL) {
    if (pj != pj_small) free(pj);
    if (pv != pv_small) free(pv);
    return 0;
  }
  int np = 0;
  for (int j = 0; j < q->nq; j++) {
    int k = ps_lookup_slot_variants(q->kind, j + 1, &q->q[j], pv + np);
    for (int e = 0; e < k; e++) pj[np + e] = j + 1;
    np += k;
  }
  uint32_t *rows = NULL;
  long nr = np == 0 ? 0 : ps_exact_slot_rows(t, x, m, q, c->dcol, pj, pv, np, upto, &rows);
  if (pj != pj_small) free(pj);
  if (pv != pv_small) free(pv);
  if (nr < 0) return 0;
  int ok = 1;
  for (long k = 0; k < nr && ok; k++) {
    if (bsearch(&rows[k], tried, ntried, sizeof *tried, cmp_u32)) continue;
    cand cd;
    if (check_row(t, rows[k], q, c, &cd, NULL)) ok = add_cand(cs, &cd);
  }
  free(rows);
  return ok;
}

int ps_exact_lookup(const ps_table *t, const ps_index *ix, const ps_sid *keys, int nkeys,
                    size_t nslots, const ps_slotix *x, ps_exact_memo *m,
                    const ps_exact_query *q, const ps_exact_cols *c, ps_exact_answer *a) {
  cands cs;
  cs.v = cs.small;
  cs.n = 0;
  cs.cap = SMALL_CANDS;
  uint32_t tried_small[SMALL_TRIED], *tried = tried_small;
  size_t ntried = 0;
  int ret = -1;
  if (!key_rows(t, ix, keys, nkeys, nslots, q, c, &cs, &tried, &ntried, SMALL_TRIED)) goto done;
  const cand *d0 = NULL;
  for (size_t k = 0; k < cs.n; k++)
    if (cs.v[k].distance == 0 && (d0 == NULL || cand_less(&cs.v[k], d0))) d0 = &cs.v[k];
  ret = 0;
  if (d0 == NULL) goto done;  /* the Lua scan looks at every row */
  if (q->nq >= 2) {
    /* only rows before the best distance-0 row can win when its column has the best priority */
    size_t upto = d0->pri <= c->minpri ? d0->row : ps_table_nrows(t);
    ret = -1;
    if (x == NULL || !slot_rows(t, x, m, q, c, upto, tried, ntried, &cs)) goto done;
  }
  if (cs.n > 1) qsort(cs.v, cs.n, sizeof *cs.v, cand_cmp);
  const cand *best = &cs.v[0];
  a->row = best->row;
  a->rule = best->rule;
  a->distance = best->distance;
  a->latpos = best->latpos;
  a->latency = best->lat;
  if (q->nq <= CAND_RULES) {
    memcpy(a->rules, best->rules, (size_t)q->nq);
  } else {
    cand again;
    check_row(t, best->row, q, c, &again, a->rules);
  }
  a->nties = 0;
  for (size_t k = 1; k < cs.n && cs.v[k].distance == best->distance && cs.v[k].pri == best->pri; k++) {
    if (a->nties < PS_EXACT_TIES) a->ties[a->nties] = cs.v[k].row;
    a->nties++;
  }
  ret = 1;
done:
  if (cs.v != cs.small) free(cs.v);
  if (tried != tried_small) free(tried);
  return ret;
}
