/* The write-back signature (docs/rules.md, Write-back signature); see writeback_sig.h. */
#include "writeback_sig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "grow.h"
#include "lookup_key.h"
#include "text.h"
#include "shape.h"
#include "xxh3_wide.h"

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
  char raw_op[256];       /* the name op was normalised from: rows of one file share it */
  int op_kind;            /* what op is, for the rules below */
  char *arena;            /* normalised slots; sized per row so spans never move */
  size_t arena_cap, arena_used;
  spans is, id, fm, os, od, tmp_sh, tmp_dt, tmp_fm, norm, norm2;
};

static size_t trim(const char **p, size_t n) {
  ps_trim(p, &n);
  return n;
}

static int push(ps_sig *g, spans *l, const char *p, size_t n) {
  if (l->n == l->cap && ps_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != 0)
    return g->failed = -1;
  l->v[l->n++] = (span){p, n};
  return 0;
}

/* split-slots: strip the cell; empty gives no slots; else split on `;`, strip each part. */
static void split_slots(ps_sig *g, const char *cell, size_t n, spans *out) {
  out->n = 0;
  if (!cell) return;
  n = ps_shape_strip(&cell, n);
  if (n == 0) return;
  const char *end = cell + n, *p = cell, *q;
  for (;;) {
    q = memchr(p, ';', (size_t)(end - p));
    const char *slot = p;
    size_t len = ps_shape_strip(&slot, (size_t)((q ? q : end) - p));
    push(g, out, slot, len);
    if (!q) break;
    p = q + 1;
  }
}

static void put_slow(ps_sig *g, const char *p, size_t n) {
  if (ps_grow((void **)&g->text, &g->cap, g->len + n + 1, 1) != 0) {
    g->failed = -1;
    return;
  }
  memcpy(g->text + g->len, p, n);
  g->len += n;
  g->text[g->len] = '\0';
}

/* The text's room is reserved per row (ps_sig_compute), so this is a plain copy. */
static inline void put(ps_sig *g, const char *p, size_t n) {
  if (g->len + n + 1 > g->cap) {
    put_slow(g, p, n);
    return;
  }
  char *o = g->text + g->len;
  if (n <= 16) for (size_t i = 0; i < n; i++) o[i] = p[i];
  else memcpy(o, p, n);
  g->len += n;
  o[n] = '\0';
}

static inline void put_char(ps_sig *g, char c) { put(g, &c, 1); }

static void begin_field(ps_sig *g) {
  if (g->nfields) put_char(g, PS_SIG_SEP);
  g->off[g->nfields++] = g->len;
}

static void put_list(ps_sig *g, const span *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) put_char(g, ';');
    put(g, v[i].p, v[i].n);
  }
}

static char *arena_alloc(ps_sig *g, size_t n) {
  /* Capacity was reserved for the row in ps_sig_compute; this cannot overflow. */
  char *p = g->arena + g->arena_used;
  g->arena_used += n;
  return p;
}

/* The normalised slots of a shape list, into norm (the arena keeps them until the row ends). */
static void norm_slots(ps_sig *g, const spans *sh, spans *norm) {
  norm->n = 0;
  for (size_t i = 0; i < sh->n; i++) {
    char *o = arena_alloc(g, sh->v[i].n + 1);
    push(g, norm, o, ps_shape_norm_slot(sh->v[i].p, sh->v[i].n, o));
  }
}

/* normalise-shape-attr on normalised shape slots: emits the shape string and/or the
 * attribute string. */
static void shape_attr(ps_sig *g, const spans *norm, const spans *at, int emit_shape, int emit_attr) {
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
      if (i) put_char(g, ';');
      if (i < norm->n && norm->v[i].n) put(g, at->v[i].p, at->v[i].n);
    }
  }
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
  put(g, b, ps_lookup_key_int(b, v));
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
  norm_slots(g, &g->os, &g->norm);
  shape_attr(g, &g->norm, &g->od, 0, 1);
  return 1;
}

enum { OP_GENERIC, OP_MATMUL, OP_INDEX, OP_SLICE, OP_DFC }; /* ps_sig.op_kind */

static int op_kind(const char *op) {
  if (ps_sig_is_matmul(op)) return OP_MATMUL;
  if (strcmp(op, "Index") == 0) return OP_INDEX;
  if (!strcmp(op, "Slice") || !strcmp(op, "SliceAiCore") || !strcmp(op, "Transpose") ||
      !strcmp(op, "TransposeAiCore"))
    return OP_SLICE;
  return strcmp(op, "DispatchFFNCombine") == 0 ? OP_DFC : OP_GENERIC;
}

static void generic(ps_sig *g) {
  spans *sh = &g->is, *dt = &g->id, *fm = &g->fm;
  if (g->op_kind == OP_INDEX) {
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
  } else if (g->op_kind == OP_SLICE) {
    if (sh->n > 1) sh->n = 1;
    if (dt->n > 1) dt->n = 1;
    if (fm->n > 1) fm->n = 1;
    if (fm->n) fm->v[0] = (span){"ND", 2};
  }
  if (g->failed) return;
  /* the input shapes normalised once, for both of their attributes */
  norm_slots(g, sh, &g->norm);
  shape_attr(g, &g->norm, dt, 1, 1);
  shape_attr(g, &g->norm, fm, 0, 1);
  norm_slots(g, &g->os, &g->norm2);
  shape_attr(g, &g->norm2, &g->od, 1, 1);
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

/* read(2) into a buffer that stays in the cache, not stdio's fread: fread of 1 MiB pieces cost
 * the import's hash of a 302 MB file 0.17-0.23 s, read(2) of 256 KiB pieces 0.08 s. */
#define HASH_PIECE (256u << 10)
int ps_sig_hash_file(const char *path, uint64_t *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  XXH3_state_t *st = XXH3_createState();
  char *buf = malloc(HASH_PIECE);
  int rc = -1, saved = 0;
  if (st != NULL && buf != NULL && XXH3_64bits_reset(st) == XXH_OK) {
    for (;;) {
      ssize_t n = read(fd, buf, HASH_PIECE);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        saved = errno;
        break;
      }
      if (n == 0) {
        *out = XXH3_64bits_digest(st);
        rc = 0;
        break;
      }
      ps_xxh3_update_wide(st, buf, (size_t)n);
    }
  } else {
    saved = ENOMEM;
  }
  free(buf);
  XXH3_freeState(st);
  close(fd);
  if (rc != 0) errno = saved;   /* the caller's message names the read's error */
  return rc;
}

ps_sig *ps_sig_new(void) { return calloc(1, sizeof(ps_sig)); }

void ps_sig_free(ps_sig *g) {
  if (!g) return;
  spans *all[] = {&g->is, &g->id, &g->fm, &g->os, &g->od, &g->tmp_sh, &g->tmp_dt, &g->tmp_fm,
                  &g->norm, &g->norm2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->v);
  free(g->text);
  free(g->arena);
  free(g);
}

/* The generic tuple of most rows without the general machinery: when every shape cell is
 * slots of digits and single commas (already normal: norm_slot gives each back), every
 * dtype and format cell is slots of word characters, none of them empty, and no attribute
 * cell has more slots than its shape cell (the general rule then keeps every attribute
 * slot), the tuple is the (stripped) cells themselves. Anything else: the general way.
 * test_sig compares the two on random cells (ps_sig_set_general). */
static int sig_general;   /* ps_sig_set_general: the tests' switch */

void ps_sig_set_general(int on) { sig_general = on; }


/* Appends the cell s[0, n) as the next field when it is non-empty slots joined by ';', each
 * of digits with single commas between them (digits set) or of word characters: its slots;
 * else 0 (the text is then left half-written). The text has room for the cells and 16 bytes
 * more (see ps_sig_compute). */
#ifdef __SSE2__
/* 16 bytes at a time: bit masks of the unit bytes, the separators and the semicolons of each
 * block; the cell is plain when every byte is one of them and no separator starts it, ends it
 * or follows another. */
static size_t put_plain(ps_sig *g, const char *s, size_t n, int digits) {
  begin_field(g);
  char *o = g->text + g->len;
  const __m128i d_lo = _mm_set1_epi8('0' - 1), d_hi = _mm_set1_epi8('9' + 1);
  const __m128i a_lo = _mm_set1_epi8('a' - 1), a_hi = _mm_set1_epi8('z' + 1);
  const __m128i lower = _mm_set1_epi8(0x20), under = _mm_set1_epi8('_');
  const __m128i comma = _mm_set1_epi8(','), semi = _mm_set1_epi8(';');
  unsigned prev = 1;   /* the start counts as a separator: a slot may not be empty */
  size_t semis = 0;
  for (size_t i = 0; i < n; i += 16) {
    __m128i x;
    unsigned all = 0xFFFF;
    if (n - i >= 16) {
      x = _mm_loadu_si128((const __m128i *)(s + i));
    } else {  /* the tail, zero-padded (a NUL byte is no unit) */
      char tail[16] = {0};
      memcpy(tail, s + i, n - i);
      x = _mm_loadu_si128((const __m128i *)tail);
      all = (1u << (n - i)) - 1;
    }
    _mm_storeu_si128((__m128i *)(o + i), x);
    __m128i unit = _mm_and_si128(_mm_cmpgt_epi8(x, d_lo), _mm_cmplt_epi8(x, d_hi));
    if (!digits) {  /* letters (either case), digits, '_'; bytes >= 0x80 compare negative */
      __m128i l = _mm_or_si128(x, lower);
      unit = _mm_or_si128(unit, _mm_and_si128(_mm_cmpgt_epi8(l, a_lo), _mm_cmplt_epi8(l, a_hi)));
      unit = _mm_or_si128(unit, _mm_cmpeq_epi8(x, under));
    }
    unsigned u = (unsigned)_mm_movemask_epi8(unit) & all;
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, semi)) & all;
    unsigned sep = digits ? m | ((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, comma)) & all) : m;
    if ((u | sep) != all || (sep & ((sep << 1) | prev))) return 0;
    prev = sep >> 15 & 1;
    if (all != 0xFFFF) prev = sep >> (n - i - 1) & 1;
    for (; m; m &= m - 1) semis++;   /* a few at most (no popcnt instruction in the base ISA) */
  }
  if (prev) return 0;   /* empty, or a separator at the end */
  g->len += n;
  o[n] = '\0';
  return semis + 1;
}
#else
/* Byte classes of the plain cells: digits (a shape's), word characters (a dtype's, a
 * format's; digits too), the separators. */
enum { C_DIGIT = 1, C_WORD = 2, C_COMMA = 4, C_SEMI = 8 };
#define C2(b, v) [b] = v, [b + 1] = v
#define C5(b, v) C2(b, v), C2(b + 2, v), [b + 4] = v
#define C26(b) C5(b, C_WORD), C5(b + 5, C_WORD), C5(b + 10, C_WORD), C5(b + 15, C_WORD), \
               C5(b + 20, C_WORD), [b + 25] = C_WORD
static const unsigned char cclass[256] = {C5('0', C_DIGIT | C_WORD), C5('5', C_DIGIT | C_WORD),
                                          C26('a'), C26('A'), ['_'] = C_WORD, [','] = C_COMMA,
                                          [';'] = C_SEMI};
#undef C2
#undef C5
#undef C26
static size_t put_plain(ps_sig *g, const char *s, size_t n, int digits) {
  unsigned unit = digits ? C_DIGIT : C_WORD, sep = digits ? C_COMMA | C_SEMI : C_SEMI;
  begin_field(g);
  char *o = g->text + g->len;
  size_t semis = 0;
  int after_sep = 1;   /* the start counts as a separator: a slot may not be empty */
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    unsigned c = cclass[ch];
    o[i] = (char)ch;
    if (c & unit) {
      after_sep = 0;
      continue;
    }
    if (after_sep || !(c & sep)) return 0;
    after_sep = 1;
    semis += c == C_SEMI;
  }
  if (after_sep) return 0;
  g->len += n;
  o[n] = '\0';
  return semis + 1;
}
#endif

static int plain_tuple(ps_sig *g, const char *const cells[5], const size_t lens[5]) {
  if (sig_general) return 0;
  size_t slots[5];
  for (int i = 0; i < 5; i++) {
    const char *c = cells[i] ? cells[i] : "";
    size_t n = ps_shape_strip(&c, lens[i]);
    slots[i] = put_plain(g, c, n, i == 0 || i == 3);
    if (!slots[i]) return 0;
  }
  return slots[1] <= slots[0] && slots[2] <= slots[0] && slots[4] <= slots[3];
}

static int nonempty(const char *s) { return s && *s; }

int ps_sig_compute(ps_sig *g, const ps_sig_row *row) {
  const char *name = nonempty(row->op_name) ? row->op_name
                     : nonempty(row->op_type) ? row->op_type
                                              : row->op_state;
  if (!name) name = "";
  if (strcmp(name, g->raw_op) != 0 || !g->raw_op[0]) { /* a new op: its name and kind */
    ps_sig_op_name(name, g->op, sizeof g->op);
    g->op_kind = op_kind(g->op);
    size_t rn = strlen(name);
    if (rn < sizeof g->raw_op) memcpy(g->raw_op, name, rn + 1);
    else g->raw_op[0] = '\0'; /* too long to remember: computed again next time */
  }
  g->failed = 0;
  g->len = 0;
  g->nfields = 0;
  g->matmul = 0;
  const char *cells[5] = {row->in_shapes, row->in_dtypes, row->in_formats, row->out_shapes,
                          row->out_dtypes};
  size_t lens[5], total = 0;
  for (int i = 0; i < 5; i++)
    total += lens[i] = !cells[i] ? 0 : row->lens ? row->lens[i] : strlen(cells[i]);
  /* Normalised slots are never longer than their cell, plus one NUL each; the text is never
   * longer than the cells twice (Index repeats a dtype and a format) plus the numbers. */
  size_t need = 64 + 2 * lens[0] + 2 + 2 * lens[3] + 2;
  if (need > g->arena_cap) {
    char *a = realloc(g->arena, need);
    if (!a) return -1;
    g->arena = a;
    g->arena_cap = need;
  }
  size_t ep_len = row->ep_size ? strlen(row->ep_size) : 0;
  if (ps_grow((void **)&g->text, &g->cap, 2 * (total + ep_len) + 256, 1) != 0) return -1;
  g->text[0] = '\0';
  g->arena_used = 0;
  int plain = (g->op_kind == OP_GENERIC || g->op_kind == OP_DFC) && plain_tuple(g, cells, lens);
  if (!plain) {
    g->len = 0;
    g->nfields = 0;
    g->text[0] = '\0';
    split_slots(g, cells[0], lens[0], &g->is);
    split_slots(g, cells[1], lens[1], &g->id);
    split_slots(g, cells[2], lens[2], &g->fm);
    split_slots(g, cells[3], lens[3], &g->os);
    split_slots(g, cells[4], lens[4], &g->od);
    if (g->failed) return -1;
    if (g->op_kind == OP_MATMUL && matmul_canonical(g)) {
      g->matmul = 1;
    } else {
      g->len = 0;
      g->nfields = 0;
      g->text[0] = '\0';
      g->arena_used = 0;
      generic(g);
    }
  }
  if (g->op_kind == OP_DFC) {
    const char *ep = row->ep_size ? row->ep_size : "";
    size_t n = trim(&ep, ep_len);
    begin_field(g);
    put(g, ep, n);
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
