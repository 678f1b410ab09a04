/* The write-back signature (docs/rules.md, Write-back signature); see writeback_sig.h. */
#include "writeback_sig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "grow.h"
#include "text.h"
#include "shape.h"

const char *const ps_sig_columns[PS_SIG_NCOLUMNS] = {
  "OP Type", "OP State", "Input Shapes", "Input Data Types", "Input Formats",
  "Output Shapes", "Output Data Types", "EP Size"};

typedef struct span { const char *p; size_t n; } span;
typedef struct spans { span *v; size_t n, cap; } spans;

struct ps_sig {
  char *text;
  size_t len, cap;
  size_t off[8];          /* field i spans text[off[i] .. off[i+1] - 1) */
  int nfields, matmul, failed;
  uint64_t hash;
  char op[256];
  char *arena;            /* normalised slots; sized per row so spans never move */
  size_t arena_cap, arena_used;
  spans is, id, fm, os, od, tmp_sh, tmp_dt, tmp_fm, norm;
};

static size_t trim(const char **p, size_t n) {
  ps_trim(p, &n);
  return n;
}

static int push(ps_sig *g, spans *l, const char *p, size_t n) {
  if (ps_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != 0) return g->failed = -1;
  l->v[l->n++] = (span){p, n};
  return 0;
}

/* split-slots: strip the cell; empty gives no slots; else split on `;`, strip each part. */
static void split_slots(ps_sig *g, const char *cell, spans *out) {
  out->n = 0;
  if (!cell) return;
  size_t n = ps_shape_strip(&cell, strlen(cell));
  if (n == 0) return;
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && cell[i] != ';') continue;
    const char *p = cell + start;
    size_t len = ps_shape_strip(&p, i - start);
    push(g, out, p, len);
    start = i + 1;
  }
}

static void put(ps_sig *g, const char *p, size_t n) {
  if (ps_grow((void **)&g->text, &g->cap, g->len + n + 1, 1) != 0) {
    g->failed = -1;
    return;
  }
  memcpy(g->text + g->len, p, n);
  g->len += n;
  g->text[g->len] = '\0';
}

static void begin_field(ps_sig *g) {
  if (g->nfields) put(g, (char[]){PS_SIG_SEP}, 1);
  g->off[g->nfields++] = g->len;
}

static void put_list(ps_sig *g, const span *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) put(g, ";", 1);
    put(g, v[i].p, v[i].n);
  }
}

static char *arena_alloc(ps_sig *g, size_t n) {
  /* Capacity was reserved for the row in ps_sig_compute; this cannot overflow. */
  char *p = g->arena + g->arena_used;
  g->arena_used += n;
  return p;
}

/* normalise-shape-attr: emits the shape string and/or the attribute string. */
static void shape_attr(ps_sig *g, const spans *sh, const spans *at, int emit_shape, int emit_attr) {
  size_t mark = g->arena_used;
  spans *norm = &g->norm;
  norm->n = 0;
  for (size_t i = 0; i < sh->n; i++) {
    char *o = arena_alloc(g, sh->v[i].n + 1);
    push(g, norm, o, ps_shape_norm_slot(sh->v[i].p, sh->v[i].n, o));
  }
  if (g->failed) return;
  if (emit_shape) {
    size_t last = norm->n;
    while (last && norm->v[last - 1].n == 0) last--;
    begin_field(g);
    put_list(g, norm->v, last);
  }
  if (emit_attr) {
    size_t last = at->n;
    while (last && (at->v[last - 1].n == 0 || last - 1 >= norm->n || norm->v[last - 1].n == 0))
      last--;
    begin_field(g);
    for (size_t i = 0; i < last; i++) {
      if (i) put(g, ";", 1);
      if (i < norm->n && norm->v[i].n) put(g, at->v[i].p, at->v[i].n);
    }
  }
  g->arena_used = mark;
}

/* parse-shape-slot on a raw slot: dims, or -1 for none (empty or not integers). */
static int parse_raw_slot(const span *s, int64_t *dims, int maxdims) {
  char buf[128];
  if (s->n >= sizeof buf) return -1; /* no 2-D integer shape is this long */
  size_t len = ps_shape_norm_slot(s->p, s->n, buf);
  if (len == 0) return -1;
  return ps_shape_parse_slot(buf, len, dims, maxdims);
}

static void put_int(ps_sig *g, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%lld", (long long)v);
  put(g, b, (size_t)n);
}

static int matmul_canonical(ps_sig *g) {
  int64_t a[3], b[3], o[3];
  if (g->is.n < 2 || g->os.n < 1) return 0;
  if (parse_raw_slot(&g->is.v[0], a, 3) != 2 || parse_raw_slot(&g->is.v[1], b, 3) != 2 ||
      parse_raw_slot(&g->os.v[0], o, 3) != 2)
    return 0;
  int64_t m = o[0], n = o[1], k = 0;
  int found = 0;
  if (a[0] == m && b[0] == n && a[1] == b[1]) k = a[1], found = 1;
  else if (a[0] == m && b[1] == n && a[1] == b[0]) k = a[1], found = 1;
  if (!found) {
    int64_t common[2];
    int nc = 0, nout = 0;
    int64_t outside = 0;
    for (int i = 0; i < 2; i++) {
      if (i == 1 && a[1] == a[0]) break; /* a set: a duplicate dim counts once */
      if (a[i] == b[0] || a[i] == b[1]) common[nc++] = a[i];
    }
    for (int i = 0; i < nc; i++)
      if (common[i] != m && common[i] != n) outside = common[i], nout++;
    if (nout == 1) k = outside, found = 1;
    else if (nc == 1) k = common[0], found = 1;
  }
  if (!found) return 0;
  begin_field(g);
  put_int(g, m), put(g, ",", 1), put_int(g, k), put(g, ";", 1);
  put_int(g, n), put(g, ",", 1), put_int(g, k);
  begin_field(g);
  put_list(g, g->id.v, g->id.n < 2 ? g->id.n : 2);
  begin_field(g);
  put_list(g, g->fm.v, g->fm.n < 2 ? g->fm.n : 2);
  begin_field(g);
  put_int(g, m), put(g, ",", 1), put_int(g, n);
  shape_attr(g, &g->os, &g->od, 0, 1);
  return 1;
}

static void generic(ps_sig *g) {
  spans *sh = &g->is, *dt = &g->id, *fm = &g->fm;
  const char *op = g->op;
  if (strcmp(op, "Index") == 0) {
    int64_t d[64];
    if (g->os.n >= 1 && g->is.n >= 1 && parse_raw_slot(&g->os.v[0], d, 64) > 0) {
      char *num = arena_alloc(g, 24);
      int len = snprintf(num, 24, "%lld", (long long)d[0]);
      g->tmp_sh.n = g->tmp_dt.n = g->tmp_fm.n = 0;
      push(g, &g->tmp_sh, g->is.v[0].p, g->is.v[0].n);
      push(g, &g->tmp_sh, num, (size_t)len);
      if (g->id.n) {
        push(g, &g->tmp_dt, g->id.v[0].p, g->id.v[0].n);
        push(g, &g->tmp_dt, g->id.v[g->id.n - 1].p, g->id.v[g->id.n - 1].n);
      }
      if (g->fm.n) {
        push(g, &g->tmp_fm, g->fm.v[0].p, g->fm.v[0].n);
        push(g, &g->tmp_fm, g->fm.v[g->fm.n - 1].p, g->fm.v[g->fm.n - 1].n);
      }
      sh = &g->tmp_sh, dt = &g->tmp_dt, fm = &g->tmp_fm;
    }
  } else if (!strcmp(op, "Slice") || !strcmp(op, "SliceAiCore") || !strcmp(op, "Transpose") ||
             !strcmp(op, "TransposeAiCore")) {
    if (sh->n > 1) sh->n = 1;
    if (dt->n > 1) dt->n = 1;
    if (fm->n > 1) fm->n = 1;
    if (fm->n) fm->v[0] = (span){"ND", 2};
  }
  if (g->failed) return;
  shape_attr(g, sh, dt, 1, 1);
  shape_attr(g, sh, fm, 0, 1);
  shape_attr(g, &g->os, &g->od, 1, 1);
}

size_t ps_sig_op_name(const char *name, char *out, size_t cap) {
  if (!name) name = "";
  size_t n = strlen(name);
  n = ps_shape_strip(&name, n);
  n = trim(&name, n);
  static const char *const suffixes[] = {"_run.py", "_run", ".csv"};
  for (int i = 0; i < 3; i++) {
    size_t sl = strlen(suffixes[i]);
    if (n >= sl && memcmp(name + n - sl, suffixes[i], sl) == 0) {
      n -= sl;
      break;
    }
  }
  if (cap == 0) return 0;
  if (n >= cap) n = cap - 1;
  memcpy(out, name, n);
  out[n] = '\0';
  return n;
}

int ps_sig_is_matmul(const char *op) {
  return !strcmp(op, "MatMulV2") || !strcmp(op, "MatMulV3") || !strcmp(op, "MatMulCommon");
}

uint64_t ps_sig_hash_bytes(const void *p, size_t len) { return XXH3_64bits(p, len); }

ps_sig *ps_sig_new(void) { return calloc(1, sizeof(ps_sig)); }

void ps_sig_free(ps_sig *g) {
  if (!g) return;
  spans *all[] = {&g->is, &g->id, &g->fm, &g->os, &g->od, &g->tmp_sh, &g->tmp_dt, &g->tmp_fm,
                  &g->norm};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->v);
  free(g->text);
  free(g->arena);
  free(g);
}

static int nonempty(const char *s) { return s && *s; }

int ps_sig_compute(ps_sig *g, const ps_sig_row *row) {
  const char *name = nonempty(row->op_name) ? row->op_name
                     : nonempty(row->op_type) ? row->op_type
                                              : row->op_state;
  ps_sig_op_name(name, g->op, sizeof g->op);
  g->failed = 0;
  g->len = 0;
  g->nfields = 0;
  g->matmul = 0;
  put(g, "", 0);
  /* Normalised slots are never longer than their cell, plus one NUL each. */
  size_t need = 64;
  const char *cells[] = {row->in_shapes, row->out_shapes};
  for (int i = 0; i < 2; i++) need += cells[i] ? 2 * strlen(cells[i]) + 2 : 0;
  if (need > g->arena_cap) {
    char *a = realloc(g->arena, need);
    if (!a) return -1;
    g->arena = a;
    g->arena_cap = need;
  }
  g->arena_used = 0;
  split_slots(g, row->in_shapes, &g->is);
  split_slots(g, row->in_dtypes, &g->id);
  split_slots(g, row->in_formats, &g->fm);
  split_slots(g, row->out_shapes, &g->os);
  split_slots(g, row->out_dtypes, &g->od);
  if (g->failed) return -1;
  if (ps_sig_is_matmul(g->op) && matmul_canonical(g)) {
    g->matmul = 1;
  } else {
    g->len = 0;
    g->nfields = 0;
    generic(g);
    if (strcmp(g->op, "DispatchFFNCombine") == 0) {
      const char *ep = row->ep_size ? row->ep_size : "";
      size_t n = trim(&ep, strlen(ep));
      begin_field(g);
      put(g, ep, n);
    }
  }
  if (g->failed) return -1;
  g->off[g->nfields] = g->len + 1;
  g->hash = XXH3_64bits(g->text, g->len);
  return 0;
}

const char *ps_sig_text(const ps_sig *g, size_t *len) {
  if (len) *len = g->len;
  return g->text ? g->text : "";
}

uint64_t ps_sig_hash(const ps_sig *g) { return g->hash; }
int ps_sig_nfields(const ps_sig *g) { return g->nfields; }
int ps_sig_is_canonical_matmul(const ps_sig *g) { return g->matmul; }

const char *ps_sig_field(const ps_sig *g, int i, size_t *len) {
  if (i < 0 || i >= g->nfields) {
    if (len) *len = 0;
    return "";
  }
  if (len) *len = g->off[i + 1] - 1 - g->off[i];
  return g->text + g->off[i];
}
