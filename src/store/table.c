#include "table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "csvread.h"
#include "grow.h"
#include "num.h"
#include "u64map.h"

struct ps_table {
  char *path;
  size_t ncols, nrows, rows_cap;
  char **colnames;
  ps_sid *cells;            /* row-major, nrows * ncols */
  uint32_t *lines;                  /* physical line of each record */
  uint32_t *nfields;

  /* string pool */
  char *pool; size_t pool_len, pool_cap;
  uint64_t *soff; uint32_t *slen; uint64_t *shash;
  size_t nstr, str_cap, ninterned;
  uint32_t *slots; size_t nslots;   /* sid + 1, open addressing */


  /* Columns of mostly distinct cells (latencies, counters) are plain: a cell is the offset of
   * its NUL-terminated text in the column's own pool (0: the empty text), not a string id, so
   * it costs its text and 4 bytes. */
  unsigned char *col_plain;
  struct { char *p; size_t len, cap; } *cpool;
};

struct ps_index {
  size_t nkey, ngroups, groups_cap, nrows;
  ps_sid *keys;                      /* ngroups * nkey */
  uint32_t *first, *last, *size;
  int32_t *next;                     /* per row: next row with the same key, -1 */
  uint32_t *slots; size_t nslots;    /* group + 1 */
  size_t *skipped; size_t nskipped, skipped_cap;
};


/* ---- strings ---------------------------------------------------------------------------- */

static int rehash(ps_table *t, size_t nslots) {
  uint32_t *s = calloc(nslots, sizeof *s);
  if (s == NULL) return 0;
  for (size_t i = 0; i < t->nstr; i++) {
    if (t->shash[i] == 0) continue;  /* a plain cell, not interned */
    size_t j = t->shash[i] & (nslots - 1);
    while (s[j]) j = (j + 1) & (nslots - 1);
    s[j] = (uint32_t)i + 1;
  }
  free(t->slots);
  t->slots = s;
  t->nslots = nslots;
  return 1;
}

/* Not u64map.h: its 4-byte slots (sid + 1, the hash kept per string) are a quarter the size. */
static ps_sid lookup(const ps_table *t, const char *s, size_t len, uint64_t h) {
  size_t j = h & (t->nslots - 1);
  for (uint32_t v; (v = t->slots[j]); j = (j + 1) & (t->nslots - 1)) {
    ps_sid id = v - 1;
    if (t->shash[id] == h && t->slen[id] == len && memcmp(t->pool + t->soff[id], s, len) == 0)
      return id;
  }
  return PS_SID_NONE;
}

ps_sid ps_table_find_str(const ps_table *t, const char *s, size_t len) {
  uint64_t h = XXH3_64bits(s, len);
  return lookup(t, s, len, h ? h : 1);
}

/* Adds a string to the pool; h == 0 leaves it out of the hash table (a plain cell). */
static ps_sid add_string(ps_table *t, const char *s, size_t len, uint64_t h) {
  if (len > UINT32_MAX || t->nstr >= PS_SID_NONE - 2) return PS_SID_NONE;
  if (h && (t->ninterned + 1) * 2 > t->nslots && !rehash(t, t->nslots * 2)) return PS_SID_NONE;
  size_t cap = t->str_cap;
  if (ps_grow((void **)&t->soff, &cap, t->nstr + 1, sizeof *t->soff) != 0) return PS_SID_NONE;
  cap = t->str_cap;
  if (ps_grow((void **)&t->slen, &cap, t->nstr + 1, sizeof *t->slen) != 0) return PS_SID_NONE;
  cap = t->str_cap;
  if (ps_grow((void **)&t->shash, &cap, t->nstr + 1, sizeof *t->shash) != 0) return PS_SID_NONE;
  t->str_cap = cap;
  if (ps_grow((void **)&t->pool, &t->pool_cap, t->pool_len + len + 1, 1) != 0) return PS_SID_NONE;
  memcpy(t->pool + t->pool_len, s, len);
  t->pool[t->pool_len + len] = '\0';
  ps_sid id = (ps_sid)t->nstr++;
  t->soff[id] = t->pool_len;
  t->slen[id] = (uint32_t)len;
  t->shash[id] = h;
  t->pool_len += len + 1;
  if (h == 0) return id;
  t->ninterned++;
  size_t j = h & (t->nslots - 1);
  while (t->slots[j]) j = (j + 1) & (t->nslots - 1);
  t->slots[j] = id + 1;
  return id;
}

ps_sid ps_table_intern(ps_table *t, const char *s, size_t len) {
  uint64_t h = XXH3_64bits(s, len);
  if (h == 0) h = 1;  /* 0 marks plain cells */
  ps_sid id = lookup(t, s, len, h);
  return id != PS_SID_NONE ? id : add_string(t, s, len, h);
}

const char *ps_table_str(const ps_table *t, ps_sid id, size_t *len) {
  if (id >= t->nstr) { if (len) *len = 0; return ""; }
  if (len) *len = t->slen[id];
  return t->pool + t->soff[id];
}

size_t ps_table_nstrings(const ps_table *t) { return t->nstr; }

double ps_table_num(ps_table *t, ps_sid id) {
  if (id >= t->nstr) return NAN;
  /* parsed per call: cheaper than a cache sized to every string of a million-row table */
  double v;
  return ps_num_parse(t->pool + t->soff[id], t->slen[id], &v) == 0 ? v : NAN;
}

/* ---- short texts ----------------------------------------------------------------------- */

/* Cells are short (dtypes, formats, numbers): compared and copied in 8-byte words, the last
 * word overlapping the one before, without a call and without reading past either text. */
static inline uint64_t word8(const char *p) { uint64_t w; memcpy(&w, p, 8); return w; }
static inline uint32_t word4(const char *p) { uint32_t w; memcpy(&w, p, 4); return w; }

static inline int same_text(const char *a, const char *b, size_t len) {
  if (len >= 8) {
    if (len > 32) return memcmp(a, b, len) == 0;
    for (size_t i = 0; i + 8 < len; i += 8)
      if (word8(a + i) != word8(b + i)) return 0;
    return word8(a + len - 8) == word8(b + len - 8);
  }
  if (len >= 4) return word4(a) == word4(b) && word4(a + len - 4) == word4(b + len - 4);
  for (size_t i = 0; i < len; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static inline void copy_text(char *d, const char *s, size_t len) {
  if (len < 8 || len > 32) { memcpy(d, s, len); return; }
  for (size_t i = 0; i + 8 < len; i += 8) { uint64_t w = word8(s + i); memcpy(d + i, &w, 8); }
  uint64_t w = word8(s + len - 8);
  memcpy(d + len - 8, &w, 8);
}

/* ---- plain columns ---------------------------------------------------------------------- */

/* Appends a cell's text to column c's pool; its offset, or PS_SID_NONE (out of memory, or a
 * pool past 4 GB). */
static inline ps_sid plain_add(ps_table *t, size_t c, const char *s, size_t len) {
  __typeof__(t->cpool[0]) *cp = &t->cpool[c];
  if (cp->len + len + 1 > cp->cap) {  /* else room, and offset 0 (the empty text) is there */
    if (cp->len == 0) {
      if (ps_grow((void **)&cp->p, &cp->cap, 1, 1) != 0) return PS_SID_NONE;
      cp->p[0] = '\0';
      cp->len = 1;
    }
    if (cp->len + len + 1 >= PS_SID_NONE) return PS_SID_NONE;
    if (ps_grow((void **)&cp->p, &cp->cap, cp->len + len + 1, 1) != 0) return PS_SID_NONE;
  } else if (cp->len + len + 1 >= PS_SID_NONE) {
    return PS_SID_NONE;
  }
  ps_sid off = (ps_sid)cp->len;
  copy_text(cp->p + off, s, len);
  cp->p[off + len] = '\0';
  cp->len += len + 1;
  return off;
}

/* After the sample: the columns that go plain, their cells so far moved into their pools. */
static int go_plain(ps_table *t, const size_t *fresh) {
  for (size_t c = 0; c < t->ncols; c++) {
    if (fresh[c] <= t->nrows / 2) continue;
    t->col_plain[c] = 1;
    for (size_t r = 0; r < t->nrows; r++) {
      ps_sid *cell = &t->cells[r * t->ncols + c];
      if (*cell == 0) continue;
      ps_sid off = plain_add(t, c, t->pool + t->soff[*cell], t->slen[*cell]);
      if (off == PS_SID_NONE) return -1;
      *cell = off;
    }
  }
  return 0;
}

const char *ps_table_text(const ps_table *t, size_t row, size_t col, size_t *len) {
  ps_sid v = ps_table_cell(t, row, col);
  if (col < t->ncols && t->col_plain[col]) {
    const char *s = v ? t->cpool[col].p + v : "";
    if (len) *len = strlen(s);
    return s;
  }
  return ps_table_str(t, v, len);
}

int ps_table_plain(const ps_table *t, size_t col) { return col < t->ncols && t->col_plain[col]; }

ps_sid ps_table_cell_interned(ps_table *t, size_t row, size_t col) {
  if (!ps_table_plain(t, col)) return ps_table_cell(t, row, col);
  size_t len;
  const char *s = ps_table_text(t, row, col, &len);
  return ps_table_intern(t, s, len);
}

double ps_table_cell_num(const ps_table *t, size_t row, size_t col) {
  size_t len;
  const char *s = ps_table_text(t, row, col, &len);
  double v;
  return len && ps_num_parse(s, len, &v) == 0 ? v : NAN;
}

/* ---- load ------------------------------------------------------------------------------- */

void ps_table_free(ps_table *t) {
  if (t == NULL) return;
  for (size_t i = 0; i < t->ncols; i++) free(t->colnames[i]);
  free(t->colnames);
  free(t->cells);
  free(t->lines);
  free(t->nfields);
  free(t->pool);
  free(t->soff);
  free(t->slen);
  free(t->shash);
  free(t->slots);
  free(t->col_plain);
  for (size_t c = 0; t->cpool && c < t->ncols; c++) free(t->cpool[c].p);
  free(t->cpool);
  free(t->path);
  free(t);
}

ps_table *ps_table_load(const char *path, char *err, size_t errsize) {
  size_t *fresh = NULL;
  ps_csv_reader *r = ps_csv_open(path, PS_CSV_TRIM, err, errsize);
  if (r == NULL) return NULL;
  ps_table *t = calloc(1, sizeof *t);
  if (t == NULL || (t->path = strdup(path)) == NULL || !rehash(t, 1024)) goto oom;
  if (ps_table_intern(t, "", 0) != 0) goto oom;
  ps_csv_record rec;
  int st = ps_csv_next(r, &rec);
  if (st < 0) goto bad;
  if (st == 0) {
    snprintf(err, errsize, "%s: empty file (no header)", path);
    goto fail;
  }
  t->ncols = rec.nfields;
  if ((t->colnames = calloc(t->ncols ? t->ncols : 1, sizeof *t->colnames)) == NULL) goto oom;
  for (size_t i = 0; i < t->ncols; i++)
    if ((t->colnames[i] = strdup(rec.fields[i])) == NULL) goto oom;
  /* Columns that are mostly distinct (latencies, counters) are stored plain: after SAMPLE
   * rows, a column whose cells made more than half new strings goes plain (its cells so far
   * are copied into its pool). */
  enum { SAMPLE = 1024 };
  if ((fresh = calloc(t->ncols, sizeof *fresh)) == NULL ||
      (t->col_plain = calloc(t->ncols, 1)) == NULL ||
      (t->cpool = calloc(t->ncols, sizeof *t->cpool)) == NULL)
    goto oom;
  while ((st = ps_csv_next(r, &rec)) > 0) {
    if (t->nrows == SAMPLE && go_plain(t, fresh) != 0) goto oom;
    if (t->nrows == t->rows_cap) {
      size_t cap = t->rows_cap;
      if (ps_grow((void **)&t->lines, &cap, t->nrows + 1, sizeof *t->lines) != 0) goto oom;
      cap = t->rows_cap;
      if (ps_grow((void **)&t->nfields, &cap, t->nrows + 1, sizeof *t->nfields) != 0) goto oom;
      cap = t->rows_cap;
      if (ps_grow((void **)&t->cells, &cap, t->nrows + 1, t->ncols * sizeof *t->cells) != 0) goto oom;
      t->rows_cap = cap;
    }
    ps_sid *row = t->cells + t->nrows * t->ncols;
    const ps_sid *prev = t->nrows ? row - t->ncols : NULL;
    size_t nc = rec.nfields < t->ncols ? rec.nfields : t->ncols;
    for (size_t c = nc; c < t->ncols; c++) row[c] = 0;  /* a short row's missing cells: empty */
    for (size_t c = 0; c < nc; c++) {
      size_t len = rec.lens[c];
      if (len == 0) { row[c] = 0; continue; }
      ps_sid id;
      if (t->col_plain[c]) {
        id = plain_add(t, c, rec.fields[c], len);
      } else if (prev && prev[c] < t->nstr && t->slen[prev[c]] == len &&
                 same_text(t->pool + t->soff[prev[c]], rec.fields[c], len)) {
        id = prev[c];  /* the cell above again: no hash */
      } else {
        size_t before = t->nstr;
        id = ps_table_intern(t, rec.fields[c], len);
        fresh[c] += t->nstr > before;
      }
      if (id == PS_SID_NONE) goto oom;
      row[c] = id;
    }
    if (rec.line < 0 || (unsigned long)rec.line > UINT32_MAX || rec.nfields > UINT32_MAX) {
      snprintf(err, errsize, "%s:%ld: too many lines or fields for the table", path, rec.line);
      goto fail;
    }
    t->lines[t->nrows] = (uint32_t)rec.line;
    t->nfields[t->nrows] = (uint32_t)rec.nfields;
    t->nrows++;
  }
  if (st < 0) goto bad;
  free(fresh);
  ps_csv_close(r);
  return t;
bad:
  snprintf(err, errsize, "%s", ps_csv_error(r));
  goto fail;
oom:
  snprintf(err, errsize, "%s: out of memory", path);
fail:
  free(fresh);
  ps_csv_close(r);
  ps_table_free(t);
  return NULL;
}

size_t ps_table_nrows(const ps_table *t) { return t->nrows; }
size_t ps_table_ncols(const ps_table *t) { return t->ncols; }
const char *ps_table_path(const ps_table *t) { return t->path; }
const char *ps_table_colname(const ps_table *t, size_t col) {
  return col < t->ncols ? t->colnames[col] : NULL;
}

int ps_table_column(const ps_table *t, const char *name) {
  for (size_t i = 0; i < t->ncols; i++)
    if (strcmp(t->colnames[i], name) == 0) return (int)i;
  return -1;
}

ps_sid ps_table_cell(const ps_table *t, size_t row, size_t col) {
  if (row >= t->nrows || col >= t->ncols) return 0;
  return t->cells[row * t->ncols + col];
}

long ps_table_line(const ps_table *t, size_t row) { return row < t->nrows ? (long)t->lines[row] : 0; }
size_t ps_table_nfields(const ps_table *t, size_t row) {
  return row < t->nrows ? t->nfields[row] : 0;
}

size_t ps_table_memory(const ps_table *t) {
  size_t plain = 0;
  for (size_t c = 0; c < t->ncols; c++) plain += t->cpool[c].cap;
  return t->rows_cap * (t->ncols * sizeof(ps_sid) + sizeof *t->lines + sizeof *t->nfields) +
         t->pool_cap + t->str_cap * (8 + 4 + 8) + t->nslots * 4 + plain;
}

/* ---- index ------------------------------------------------------------------------------ */

void ps_index_free(ps_index *ix) {
  if (ix == NULL) return;
  free(ix->keys);
  free(ix->first);
  free(ix->last);
  free(ix->size);
  free(ix->next);
  free(ix->slots);
  free(ix->skipped);
  free(ix);
}

static uint64_t key_hash(const ps_sid *key, size_t n) { return XXH3_64bits(key, n * sizeof *key); }

static long find_group(const ps_index *ix, const ps_sid *key, uint64_t h) {
  size_t j = h & (ix->nslots - 1);
  for (uint32_t v; (v = ix->slots[j]); j = (j + 1) & (ix->nslots - 1))
    if (memcmp(ix->keys + (size_t)(v - 1) * ix->nkey, key, ix->nkey * sizeof *key) == 0)
      return (long)v - 1;
  return -1;
}

static int index_rehash(ps_index *ix, size_t nslots) {
  uint32_t *s = calloc(nslots, sizeof *s);
  if (s == NULL) return 0;
  for (size_t g = 0; g < ix->ngroups; g++) {
    size_t j = key_hash(ix->keys + g * ix->nkey, ix->nkey) & (nslots - 1);
    while (s[j]) j = (j + 1) & (nslots - 1);
    s[j] = (uint32_t)g + 1;
  }
  free(ix->slots);
  ix->slots = s;
  ix->nslots = nslots;
  return 1;
}

ps_index *ps_index_build(ps_table *t, size_t nkey, ps_keyfn fn, void *ud) {
  if (nkey == 0 || nkey > PS_INDEX_MAXKEY) return NULL;
  ps_index *ix = calloc(1, sizeof *ix);
  if (ix == NULL) return NULL;
  ix->nkey = nkey;
  ix->nrows = t->nrows;
  size_t nslots = 1024;
  while (nslots < 2 * t->nrows) nslots *= 2;
  if ((ix->next = malloc((t->nrows ? t->nrows : 1) * sizeof *ix->next)) == NULL ||
      !index_rehash(ix, nslots))
    goto oom;
  ps_sid key[PS_INDEX_MAXKEY];
  for (size_t row = 0; row < t->nrows; row++) {
    ix->next[row] = -1;
    if (!fn(t, row, key, ud)) {
      if (ps_grow((void **)&ix->skipped, &ix->skipped_cap, ix->nskipped + 1, sizeof(size_t)) != 0)
        goto oom;
      ix->skipped[ix->nskipped++] = row;
      continue;
    }
    uint64_t h = key_hash(key, nkey);
    long g = find_group(ix, key, h);
    if (g >= 0) {
      ix->next[ix->last[g]] = (int32_t)row;
      ix->last[g] = (uint32_t)row;
      ix->size[g]++;
      continue;
    }
    if ((ix->ngroups + 1) * 2 > ix->nslots && !index_rehash(ix, ix->nslots * 2)) goto oom;
    size_t cap = ix->groups_cap;
    if (ps_grow((void **)&ix->keys, &cap, ix->ngroups + 1, nkey * sizeof *key) != 0) goto oom;
    cap = ix->groups_cap;
    if (ps_grow((void **)&ix->first, &cap, ix->ngroups + 1, sizeof *ix->first) != 0) goto oom;
    cap = ix->groups_cap;
    if (ps_grow((void **)&ix->last, &cap, ix->ngroups + 1, sizeof *ix->last) != 0) goto oom;
    cap = ix->groups_cap;
    if (ps_grow((void **)&ix->size, &cap, ix->ngroups + 1, sizeof *ix->size) != 0) goto oom;
    ix->groups_cap = cap;
    g = (long)ix->ngroups++;
    memcpy(ix->keys + (size_t)g * nkey, key, nkey * sizeof *key);
    ix->first[g] = ix->last[g] = (uint32_t)row;
    ix->size[g] = 1;
    size_t j = h & (ix->nslots - 1);
    while (ix->slots[j]) j = (j + 1) & (ix->nslots - 1);
    ix->slots[j] = (uint32_t)g + 1;
  }
  return ix;
oom:
  ps_index_free(ix);
  return NULL;
}

long ps_index_find(const ps_index *ix, const ps_sid *key) {
  long g = find_group(ix, key, key_hash(key, ix->nkey));
  return g < 0 ? -1 : (long)ix->first[g];
}

long ps_index_next(const ps_index *ix, size_t row) {
  return row < ix->nrows ? ix->next[row] : -1;
}

size_t ps_index_ngroups(const ps_index *ix) { return ix->ngroups; }
long ps_index_group_first(const ps_index *ix, size_t g) {
  return g < ix->ngroups ? (long)ix->first[g] : -1;
}
size_t ps_index_group_size(const ps_index *ix, size_t g) {
  return g < ix->ngroups ? ix->size[g] : 0;
}
const ps_sid *ps_index_group_key(const ps_index *ix, size_t g) {
  return g < ix->ngroups ? ix->keys + g * ix->nkey : NULL;
}
size_t ps_index_nskipped(const ps_index *ix) { return ix->nskipped; }
size_t ps_index_skipped(const ps_index *ix, size_t i) {
  return i < ix->nskipped ? ix->skipped[i] : 0;
}

/* ---- input slots ------------------------------------------------------------------------ */

int ps_table_inputs(const ps_table *t, size_t row, int scol, int fcol, int n,
                    ps_lookup_key_shape *out, char *err, size_t errsize) {
  size_t len, flen = 0;
  const char *s = ps_table_text(t, row, (size_t)scol, &len);
  int k = ps_lookup_key_parse_shapes(s, len, out, PS_LOOKUP_KEY_MAXSLOTS, err, errsize);
  if (k < 0) return -1;
  if (fcol >= 0) {
    const char *f = ps_table_text(t, row, (size_t)fcol, &flen);
    if (ps_lookup_key_restore(out, k, f, flen, err, errsize) != 0) return -1;
  }
  return n > 0 && k > n ? n : k;
}

/* Each distinct (slot, shape) is a group with its shape; each row lists its slots' groups
 * (slotgroup[rowoff[r] .. rowoff[r + 1])) and each group its rows, ascending (CSR: grows
 * [gstart[g] .. gstart[g + 1])). A lookup walks a group's rows and judges their other slots by
 * group, once per group. */
struct ps_slotix {
  ps_u64map map;                /* hash of (slot, shape) -> group (shapes compared) */
  size_t ngroups, gcap;
  uint32_t *gshape;             /* per group: offset of its shape in dims (rank, slot, dims...) */
  uint32_t *gstart;             /* ngroups + 1 */
  int64_t *dims; size_t ndims, dcap;
  uint32_t *rowoff;             /* nrows + 1 */
  uint32_t *slotgroup, *grows; size_t nentries, ecap;
  size_t nrows;
  /* the coarse index: a group's rows by the last dimension of their other slot (slot 2 for
   * a group of slot 1, else slot 1), each bucket's rows ascending; groups [gdir[g],
   * gdir[g + 1]) of dkey/dstart (the bucket's first row in grows; it ends at the next one's
   * or the group's end). A group without buckets keeps its rows ascending. */
  uint32_t *gdir, *dkey, *dstart; size_t ndir, dircap;
  uint32_t lastg[PS_LOOKUP_KEY_MAXSLOTS];  /* ps_slotix_add: the group of the row before's slot j */
  size_t added_off, added_n;               /* the groups of the row last added (ps_slotix_added) */
};

/* The coarse key of a row's other slot: its last dimension when that is 0..UINT32_MAX - 1,
 * else (no other slot, a scalar, an empty or a negative or huge dimension) KEY_ANY, a bucket
 * every walk visits. */
#define KEY_ANY UINT32_MAX

#define SLOT_MAX UINT32_MAX

static uint64_t slot_hash(int j, const ps_lookup_key_shape *sh) {
  int64_t buf[PS_LOOKUP_KEY_MAXRANK + 2];
  buf[0] = j;
  buf[1] = sh->rank;
  int r = sh->rank > 0 ? sh->rank : 0;
  memcpy(buf + 2, sh->dims, (size_t)r * sizeof *buf);
  return XXH3_64bits(buf, (size_t)(r + 2) * sizeof *buf);
}

void ps_slotix_free(ps_slotix *x) {
  if (x == NULL) return;
  ps_u64map_free(&x->map);
  free(x->gshape);
  free(x->gstart);
  free(x->dims);
  free(x->rowoff);
  free(x->slotgroup);
  free(x->grows);
  free(x->gdir);
  free(x->dkey);
  free(x->dstart);
  free(x);
}

static int group_is(const ps_slotix *x, size_t g, int j, const ps_lookup_key_shape *sh) {
  const int64_t *d = x->dims + x->gshape[g];
  if (d[0] != sh->rank || d[1] != j) return 0;
  for (int i = 0; i < sh->rank; i++)  /* a few dimensions: no memcmp call */
    if (d[2 + i] != sh->dims[i]) return 0;
  return 1;
}

long ps_slotix_group(const ps_slotix *x, int j, const ps_lookup_key_shape *sh) {
  uint64_t h = slot_hash(j, sh);
  size_t cursor = 0, g;
  while ((g = ps_u64map_next(&x->map, h, &cursor)) != PS_U64MAP_NONE)
    if (group_is(x, g, j, sh)) return (long)g;
  return -1;
}

/* The group of (j, sh), made when new; PS_U64MAP_NONE when memory runs out. */
static size_t group_of(ps_slotix *x, int j, const ps_lookup_key_shape *sh) {
  long found = ps_slotix_group(x, j, sh);
  if (found >= 0) return (size_t)found;
  size_t g = x->ngroups, r = sh->rank > 0 ? (size_t)sh->rank : 0;
  if (g >= SLOT_MAX - 1 || x->ndims + r + 2 >= SLOT_MAX) return PS_U64MAP_NONE;
  size_t cap = x->gcap;
  if (ps_grow((void **)&x->gshape, &cap, g + 2, sizeof *x->gshape) != 0) return PS_U64MAP_NONE;
  cap = x->gcap;
  if (ps_grow((void **)&x->gstart, &cap, g + 2, sizeof *x->gstart) != 0) return PS_U64MAP_NONE;
  x->gcap = cap;
  if (ps_grow((void **)&x->dims, &x->dcap, x->ndims + r + 2, sizeof *x->dims) != 0) return PS_U64MAP_NONE;
  if (ps_u64map_add(&x->map, slot_hash(j, sh), g) != 0) return PS_U64MAP_NONE;
  x->gshape[g] = (uint32_t)x->ndims;
  x->dims[x->ndims] = sh->rank;
  x->dims[x->ndims + 1] = j;
  memcpy(x->dims + x->ndims + 2, sh->dims, r * sizeof *x->dims);
  x->ndims += r + 2;
  x->gstart[g] = 0;  /* counts first, prefix sums after the pass */
  x->ngroups++;
  return g;
}

static uint32_t group_key(const ps_slotix *x, uint32_t g) {
  const int64_t *d = x->dims + x->gshape[g];
  if (d[0] <= 0) return KEY_ANY;
  int64_t last = d[2 + d[0] - 1];
  return last >= 0 && last < (int64_t)KEY_ANY ? (uint32_t)last : KEY_ANY;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The buckets of each group whose rows have few distinct keys (at most one per 8 rows, or
 * one): its rows sorted by (key, row). 0 when memory runs out. */
static int build_buckets(ps_slotix *x, const uint32_t *gkey) {
  if ((x->gdir = malloc((x->ngroups + 1) * sizeof *x->gdir)) == NULL) return 0;
  uint64_t *pairs = NULL;
  size_t pcap = 0;
  for (size_t g = 0; g < x->ngroups; g++) {
    x->gdir[g] = (uint32_t)x->ndir;
    size_t s = x->gstart[g], e = x->gstart[g + 1], size = e - s, distinct = 1;
    int sorted = 1;
    for (size_t k = s + 1; k < e; k++) {
      if (gkey[k] < gkey[k - 1]) sorted = 0;
      if (gkey[k] != gkey[k - 1]) distinct++;
    }
    if (size == 0 || (distinct > 1 && distinct * 8 > size)) continue;  /* an upper bound */
    if (!sorted) {
      if (ps_grow((void **)&pairs, &pcap, size, sizeof *pairs) != 0) { free(pairs); return 0; }
      for (size_t k = 0; k < size; k++) pairs[k] = (uint64_t)gkey[s + k] << 32 | x->grows[s + k];
      qsort(pairs, size, sizeof *pairs, cmp_u64);
      for (size_t k = 0; k < size; k++) x->grows[s + k] = (uint32_t)pairs[k];
    }
    for (size_t k = 0; k < size; k++) {
      uint32_t key = sorted ? gkey[s + k] : (uint32_t)(pairs[k] >> 32);
      if (k > 0 && x->dkey[x->ndir - 1] == key) continue;
      size_t cap = x->dircap;
      if (ps_grow((void **)&x->dkey, &cap, x->ndir + 1, sizeof *x->dkey) != 0) { free(pairs); return 0; }
      cap = x->dircap;
      if (ps_grow((void **)&x->dstart, &cap, x->ndir + 1, sizeof *x->dstart) != 0) { free(pairs); return 0; }
      x->dircap = cap;
      x->dkey[x->ndir] = key;
      x->dstart[x->ndir++] = (uint32_t)(s + k);
    }
  }
  x->gdir[x->ngroups] = (uint32_t)x->ndir;
  free(pairs);
  return 1;
}

ps_slotix *ps_slotix_new(size_t nrows) {
  ps_slotix *x = calloc(1, sizeof *x);
  if (x == NULL) return NULL;
  ps_u64map_init(&x->map, 1024);
  x->nrows = nrows;
  memset(x->lastg, 0xff, sizeof x->lastg);
  if (nrows >= SLOT_MAX || (x->rowoff = malloc((nrows + 1) * sizeof *x->rowoff)) == NULL) {
    ps_slotix_free(x);
    return NULL;
  }
  return x;
}

int ps_slotix_add(ps_slotix *x, size_t row, const ps_lookup_key_shape *sh, int k) {
  x->added_off = x->nentries;
  x->added_n = 0;
  if (row >= x->nrows) return -1;
  x->rowoff[row] = (uint32_t)x->nentries;
  if (k <= 0) return 0;
  if (x->nentries + (size_t)k >= SLOT_MAX ||
      ps_grow((void **)&x->slotgroup, &x->ecap, x->nentries + (size_t)k, sizeof *x->slotgroup) != 0)
    return -1;
  for (int j = 0; j < k; j++) {
    /* the slot of the row before again (rows of one shape often come together): no hash */
    size_t g = j < PS_LOOKUP_KEY_MAXSLOTS && x->lastg[j] < x->ngroups && group_is(x, x->lastg[j], j, &sh[j])
                   ? x->lastg[j] : group_of(x, j, &sh[j]);
    if (g == PS_U64MAP_NONE) return -1;
    if (j < PS_LOOKUP_KEY_MAXSLOTS) x->lastg[j] = (uint32_t)g;
    x->slotgroup[x->nentries++] = (uint32_t)g;
    x->gstart[g]++;
  }
  x->added_n = (size_t)k;
  return 0;
}

const uint32_t *ps_slotix_added(const ps_slotix *x, size_t *n) {
  *n = x->added_n;
  return x->slotgroup + x->added_off;
}

int ps_slotix_finish(ps_slotix *x) {
  x->rowoff[x->nrows] = (uint32_t)x->nentries;
  /* counts -> starts; then each row into its groups, rows ascending */
  uint32_t sum = 0;
  for (size_t g = 0; g < x->ngroups; g++) { uint32_t c = x->gstart[g]; x->gstart[g] = sum; sum += c; }
  if (x->gstart) x->gstart[x->ngroups] = sum;
  if ((x->grows = malloc((x->nentries ? x->nentries : 1) * sizeof *x->grows)) == NULL) return -1;
  uint32_t *fill = malloc((x->ngroups ? x->ngroups : 1) * sizeof *fill);
  uint32_t *gkey = malloc((x->nentries ? x->nentries : 1) * sizeof *gkey);
  if (fill == NULL || gkey == NULL) { free(fill); free(gkey); return -1; }
  if (x->ngroups) memcpy(fill, x->gstart, x->ngroups * sizeof *fill);
  for (size_t row = 0; row < x->nrows; row++) {
    uint32_t off = x->rowoff[row], ns = x->rowoff[row + 1] - off;
    for (uint32_t e = off; e < off + ns; e++) {
      uint32_t other = e == off ? 1 : 0, pos = fill[x->slotgroup[e]]++;
      x->grows[pos] = (uint32_t)row;
      gkey[pos] = other < ns ? group_key(x, x->slotgroup[off + other]) : KEY_ANY;
    }
  }
  free(fill);
  int ok = build_buckets(x, gkey);
  free(gkey);
  return ok ? 0 : -1;
}

ps_slotix *ps_slotix_build(const ps_table *t, int scol, int fcol, int n) {
  ps_slotix *x = ps_slotix_new(t->nrows);
  if (x == NULL) return NULL;
  ps_lookup_key_shape sh[PS_LOOKUP_KEY_MAXSLOTS];
  char err[256];
  for (size_t row = 0; row < t->nrows; row++)
    if (ps_slotix_add(x, row, sh, ps_table_inputs(t, row, scol, fcol, n, sh, err, sizeof err)) != 0) goto oom;
  if (ps_slotix_finish(x) != 0) goto oom;
  return x;
oom:
  ps_slotix_free(x);
  return NULL;
}

size_t ps_slotix_ngroups(const ps_slotix *x) { return x->ngroups; }

const uint32_t *ps_slotix_rows(const ps_slotix *x, long g, size_t *n) {
  if (g < 0 || (size_t)g >= x->ngroups) { *n = 0; return NULL; }
  *n = x->gstart[g + 1] - x->gstart[g];
  return x->grows + x->gstart[g];
}

const uint32_t *ps_slotix_slots(const ps_slotix *x, size_t row, size_t *n) {
  if (row >= x->nrows) { *n = 0; return NULL; }
  *n = x->rowoff[row + 1] - x->rowoff[row];
  return x->slotgroup + x->rowoff[row];
}

void ps_slotix_shape(const ps_slotix *x, size_t g, ps_lookup_key_shape *sh) {
  const int64_t *d = x->dims + x->gshape[g];
  sh->rank = (int)d[0];
  if (sh->rank > 0) memcpy(sh->dims, d + 2, (size_t)sh->rank * sizeof *d);
}

/* Rows [from, to) of grows before upto, ascending: fn on each with ns_want slots. */
static int walk_range(const ps_slotix *x, size_t from, size_t to, size_t upto, size_t ns_want,
                      ps_slotix_fn fn, void *ctx) {
  for (size_t k = from; k < to && x->grows[k] < upto; k++) {
    size_t row = x->grows[k], off = x->rowoff[row], ns = x->rowoff[row + 1] - off;
    if (ns == ns_want && fn(ctx, row, x->slotgroup + off, ns)) return 1;
  }
  return 0;
}

static int in_window(uint32_t key, const int64_t *anchors, int nanchors) {
  if (key == KEY_ANY) return 1;
  for (int i = 0; i < nanchors; i++)
    if (anchors[i] >= (int64_t)key && (uint64_t)anchors[i] - key < 64) return 1;
  return 0;
}

void ps_slotix_walk(const ps_slotix *x, long g, size_t upto, size_t ns_want, const int64_t *anchors,
                    int nanchors, ps_slotix_fn fn, void *ctx) {
  if (g < 0 || (size_t)g >= x->ngroups) return;
  size_t b0 = x->gdir[g], b1 = x->gdir[g + 1], end = x->gstart[g + 1];
  if (b0 == b1 || nanchors < 0) {  /* no buckets, or no bound: every row */
    if (b0 == b1) { walk_range(x, x->gstart[g], end, upto, ns_want, fn, ctx); return; }
    for (size_t b = b0; b < b1; b++)
      if (walk_range(x, x->dstart[b], b + 1 < b1 ? x->dstart[b + 1] : end, upto, ns_want, fn, ctx)) return;
    return;
  }
  for (size_t b = b0; b < b1; b++)
    if (in_window(x->dkey[b], anchors, nanchors) &&
        walk_range(x, x->dstart[b], b + 1 < b1 ? x->dstart[b + 1] : end, upto, ns_want, fn, ctx))
      return;
}

size_t ps_slotix_memory(const ps_slotix *x) {
  return x->map.size * sizeof(ps_u64map_slot) + x->gcap * 8 + x->dcap * 8 + (x->nrows + 1) * 4 +
         x->ecap * 4 + x->nentries * 4 + (x->ngroups + 1) * 4 + x->dircap * 8;
}
