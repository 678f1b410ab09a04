/* Shape cells and dtypes: see shape.h for the grammar. */
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"

static size_t trim(const char **p, size_t n) {
  ps_trim(p, &n);
  return n;
}


static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

size_t ps_shape_strip_edges(const char **p, size_t n) {
  const char *c = *p;
  if (n >= 3 && c[0] == '"' && c[n - 1] == '"' && ps_shape_plain_edge(c[1]) && ps_shape_plain_edge(c[n - 2])) {
    *p = c + 1;   /* "text" (the profilers' shape cells, once unquoted) */
    return n - 2;
  }
  n = trim(p, n);
  const char *s = *p;
  while (n && *s == '"') s++, n--;
  while (n && s[n - 1] == '"') n--;
  *p = s;
  return n;
}

const char *ps_shape_over_limit(const char *cell, size_t len, char *why, size_t whysize) {
  if (len > PS_SHAPE_MAX_CELL) {
    snprintf(why, whysize, "%zu bytes (the limit is %d)", len, PS_SHAPE_MAX_CELL);
    return why;
  }
  if (len < PS_SHAPE_MAX_SLOTS) return NULL;   /* len + 1 slots at most */
  size_t slots = 1;
  for (const char *p = cell, *e = cell + len; (p = memchr(p, ';', (size_t)(e - p))) != NULL; p++) slots++;
  if (slots <= PS_SHAPE_MAX_SLOTS) return NULL;
  snprintf(why, whysize, "%zu slots (the limit is %d)", slots, PS_SHAPE_MAX_SLOTS);
  return why;
}

static int is_empty_token(const char *s, size_t n) {
  static const char *const tokens[] = {"()", "N/A", "NA", "NULL", "None", "none"};
  for (size_t i = 0; i < sizeof tokens / sizeof *tokens; i++)
    if (strlen(tokens[i]) == n && memcmp(tokens[i], s, n) == 0) return 1;
  return 0;
}

size_t ps_shape_norm_slot(const char *s, size_t n, char *out) {
  /* Already normal (digits, single commas between them): the slot itself. Anything else
   * (blanks, quotes, parentheses, tokens, signs, comma runs) takes the general way below. */
  if (n && is_digit(s[0]) && is_digit(s[n - 1])) {
    size_t i = 0;
    for (; i < n; i++) {
      char c = s[i];
      if (!is_digit(c) && (c != ',' || s[i + 1] == ',')) break; /* s[n - 1] is a digit */
      out[i] = c;
    }
    if (i == n) {
      out[n] = '\0';
      return n;
    }
  }
  n = ps_shape_strip(&s, n);
  n = trim(&s, n);
  if (is_empty_token(s, n)) {
    out[0] = '\0';
    return 0;
  }
  if (n >= 2 && s[0] == '(' && s[n - 1] == ')') s++, n -= 2;
  size_t o = 0;
  int pending = 0; /* a separator run was seen after some piece */
  for (size_t i = 0; i < n; i++) {
    if (s[i] == ',' || ps_is_space(s[i])) {
      if (o) pending = 1;
      continue;
    }
    if (pending) out[o++] = ',', pending = 0;
    out[o++] = s[i];
  }
  out[o] = '\0';
  return o;
}

size_t ps_shape_norm_cell(const char *cell, size_t n, char *out) {
  n = ps_shape_strip(&cell, n);
  size_t o = 0, start = 0;
  if (n == 0) {
    out[0] = '\0';
    return 0;
  }
  for (size_t i = 0; i <= n; i++) {
    if (i < n && cell[i] != ';') continue;
    if (start) out[o++] = ';';
    o += ps_shape_norm_slot(cell + start, i - start, out + o);
    start = i + 1;
  }
  out[o] = '\0';
  return o;
}

/* Python's int(): optional sign, decimal digits. */
static int parse_int(const char *s, size_t n, int64_t *v) {
  size_t i = 0;
  int neg = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == n) return -1;
  uint64_t x = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    if (x > (UINT64_MAX - 9) / 10) return -1;
    x = x * 10 + (uint64_t)(s[i] - '0');
  }
  if (x > (uint64_t)INT64_MAX) return -1;
  *v = neg ? -(int64_t)x : (int64_t)x;
  return 0;
}

int ps_shape_parse_slot(const char *s, size_t n, int64_t *dims, int maxdims) {
  int nd = 0;
  size_t start = 0;
  if (n == 0) return 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != ',') continue;
    if (nd == maxdims) return -1;
    if (parse_int(s + start, i - start, &dims[nd]) != 0) return -1;
    nd++;
    start = i + 1;
  }
  return nd;
}

void ps_shape_init(ps_shape *s) { memset(s, 0, sizeof *s); }

void ps_shape_free(ps_shape *s) {
  free(s->start);
  free(s->dims);
  free(s->state);
  ps_shape_init(s);
}

static int reserve(ps_shape *s, size_t slots, size_t dims) {
  if (slots + 1 > s->cap_slots) {
    size_t cap = s->cap_slots ? s->cap_slots : 8;
    while (cap < slots + 1) cap *= 2;
    size_t *st = realloc(s->start, cap * sizeof *st);
    if (!st) return -1;
    s->start = st;
    unsigned char *sa = realloc(s->state, cap);
    if (!sa) return -1;
    s->state = sa;
    s->cap_slots = cap;
  }
  if (dims > s->cap_dims) {
    size_t cap = s->cap_dims ? s->cap_dims : 16;
    while (cap < dims) cap *= 2;
    int64_t *d = realloc(s->dims, cap * sizeof *d);
    if (!d) return -1;
    s->dims = d;
    s->cap_dims = cap;
  }
  return 0;
}

int ps_shape_parse(ps_shape *s, const char *cell, size_t n) {
  s->nslots = 0;
  s->nbad = 0;
  n = ps_shape_strip(&cell, n);
  /* Upper bounds: slots <= separators + 1, dims per slot <= its length / 2 + 1. */
  size_t slots = 1, dims = 1;
  for (size_t i = 0; i < n; i++) slots += cell[i] == ';';
  dims += n / 2 + slots;
  if (reserve(s, slots, dims) != 0) return -1;
  s->start[0] = 0;
  if (n == 0) return 0;
  char small[256];
  char *buf = n < sizeof small ? small : malloc(n + 1);
  if (!buf) return -1;
  size_t start = 0, nd = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && cell[i] != ';') continue;
    size_t len = ps_shape_norm_slot(cell + start, i - start, buf);
    size_t k = s->nslots++;
    int got = len ? ps_shape_parse_slot(buf, len, s->dims + nd, (int)(s->cap_dims - nd)) : 0;
    if (got < 0) {
      s->state[k] = PS_SLOT_BAD;
      s->nbad++;
      got = 0;
    } else {
      s->state[k] = len ? PS_SLOT_DIMS : PS_SLOT_EMPTY;
    }
    nd += (size_t)got;
    s->start[k + 1] = nd;
    start = i + 1;
  }
  if (buf != small) free(buf);
  return 0;
}

size_t ps_shape_format(const ps_shape *s, char *out, size_t cap) {
  size_t o = 0;
  char num[24];
#define PUT(c) do { char c_ = (c); if (o + 1 < cap) out[o] = c_; o++; } while (0)
  for (size_t i = 0; i < s->nslots; i++) {
    if (i) PUT(';');
    for (size_t j = s->start[i]; j < s->start[i + 1]; j++) {
      if (j > s->start[i]) PUT(',');
      int64_t v = s->dims[j];
      uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
      int k = 0;
      do num[k++] = (char)('0' + u % 10), u /= 10; while (u);
      if (v < 0) num[k++] = '-';
      while (k) PUT(num[--k]);
    }
  }
#undef PUT
  if (cap) out[o < cap ? o : cap - 1] = '\0';
  return o;
}

/* consumer: the spelling TensorCast's reader asks for this element type (its DTYPE_MAP makes
 * only DT_BF16, FLOAT, INT8, INT32, INT64 and BOOL, and asks fp16 as DT_BF16), NULL when it never
 * asks for it. scale: the name is in the reader's byte-size table for elementwise dtype scaling
 * (_DTYPE_BYTE_SIZES; a row whose output dtype is not there cannot be scaled). */
static const struct { const char *name; int bytes; const char *consumer; int scale; } dtype_table[] = {
  {"DT_FLOAT", 4, "FLOAT", 1}, {"DT_FLOAT16", 2, "DT_BF16", 1}, {"DT_BF16", 2, "DT_BF16", 1},
  {"DT_BFLOAT16", 2, "DT_BF16", 0}, {"DT_FLOAT32", 4, "FLOAT", 0}, {"DT_FLOAT64", 8, NULL, 0},
  {"DT_DOUBLE", 8, NULL, 0}, {"DT_INT8", 1, "INT8", 1}, {"DT_INT16", 2, NULL, 0},
  {"DT_INT32", 4, "INT32", 1}, {"DT_INT64", 8, "INT64", 1}, {"DT_UINT8", 1, NULL, 0},
  {"DT_UINT16", 2, NULL, 0}, {"DT_UINT32", 4, NULL, 0}, {"DT_UINT64", 8, NULL, 0},
  {"DT_BOOL", 1, "BOOL", 0}, {"DT_COMPLEX64", 8, NULL, 0}, {"DT_COMPLEX128", 16, NULL, 0},
  {"DT_FLOAT8_E4M3", 1, NULL, 0}, {"DT_FLOAT8_E5M2", 1, NULL, 0}, {"DT_FLOAT8", 1, NULL, 0},
  {"FLOAT", 4, "FLOAT", 1}, {"INT8", 1, "INT8", 1}, {"INT16", 2, NULL, 1}, {"INT32", 4, "INT32", 1},
  {"INT64", 8, "INT64", 1}, {"UINT8", 1, NULL, 0}, {"BOOL", 1, "BOOL", 0},
  /* absent-slot placeholders and other spellings the profilers write (2 bytes, the fallback) */
  {"DT_UNDEFINED", 2, NULL, 0}, {"DT_FP16", 2, "DT_BF16", 0}, {"FLOAT16", 2, "DT_BF16", 0},
  {"BF16", 2, "DT_BF16", 0},
};

static int dtype_find(const char *name, size_t n) {
  n = trim(&name, n);
  for (size_t i = 0; i < sizeof dtype_table / sizeof *dtype_table; i++)
    if (strlen(dtype_table[i].name) == n && strncasecmp(dtype_table[i].name, name, n) == 0)
      return (int)i;
  return -1;
}

int ps_dtype_bytes(const char *name, size_t n) {
  int i = dtype_find(name, n);
  return i < 0 ? 2 : dtype_table[i].bytes;
}

/* Exact spelling (the reader compares strings): case and surrounding blanks count. */
static int dtype_exact(const char *name, size_t n) {
  for (size_t i = 0; i < sizeof dtype_table / sizeof *dtype_table; i++)
    if (strlen(dtype_table[i].name) == n && memcmp(dtype_table[i].name, name, n) == 0) return (int)i;
  return -1;
}

int ps_dtype_known(const char *name, size_t n) { return dtype_find(name, n) >= 0; }

const char *ps_dtype_consumer(const char *name, size_t n) {
  int i = dtype_find(name, n);
  return i < 0 ? NULL : dtype_table[i].consumer;
}

int ps_dtype_consumer_scales(const char *name, size_t n) {
  int i = dtype_exact(name, n);
  return i >= 0 && dtype_table[i].scale;
}

uint64_t ps_shape_nbytes(const int64_t *dims, size_t rank, int elem_bytes) {
  if (rank == 0 || elem_bytes <= 0) return 0;
  uint64_t total = (uint64_t)elem_bytes;
  for (size_t i = 0; i < rank; i++) {
    if (dims[i] <= 0) return 0;
    uint64_t d = (uint64_t)dims[i];
    total = total > UINT64_MAX / d ? UINT64_MAX : total * d;
  }
  return total;
}

void ps_shape_key_dim(unsigned char *out, int64_t d) {
  uint64_t u = (uint64_t)d ^ 0x8000000000000000u;
  out[0] = 1;
  for (int q = 0; q < 8; q++) out[1 + q] = (unsigned char)(u >> (56 - 8 * q));
}

int ps_shape_key_cmp(const void *a, const void *b) {
  const ps_shape_key *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, n);
  if (c) return c;
  return (x->len > y->len) - (x->len < y->len);
}
