#include "profile.h"

#include <math.h>
#include <sys/mman.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "csvread.h"
#include "csvscan.h"
#include "num.h"
#include "import_key.h"
#include "shape.h"
#include "text.h"

/* Indexes into the column map; the first PS_PC_NCELLS follow the cell order. */
enum {
  C_DURATION = PS_PC_NCELLS, C_START, C_TASK, C_STREAM, C_DEVICE, C_METRIC0,
  C_N = C_METRIC0 + PS_NCOUNTERS
};
static const char *const column_names[C_METRIC0] = {
  "Type", "OP State", "Accelerator Core", "Input Shapes", "Input Data Types", "Input Formats",
  "Output Shapes", "Output Data Types", "Output Formats", "Duration(us)", "Start Time(us)",
  "Task ID", "Stream ID", "Device_id",
};

const char *const ps_profile_required[] = {
  "Type", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
  "Output Data Types", "Output Formats", "Duration(us)", NULL,
};
const char *const ps_profile_optional[] = {
  "OP State", "Accelerator Core", "Start Time(us)", "Task ID", "Stream ID", "Device_id", NULL,
};

/* Hot fields first: a row touches the start of its group and little else. */
typedef struct group {
  uint64_t count;
  double sum, min, max;
  double *durs;
  size_t ndur, capdur;
  unsigned filled;                       /* bit c: cells[c] holds a non-empty value */
  uint32_t mcount[PS_NCOUNTERS];
  double msum[PS_NCOUNTERS];
  int64_t first_ns, last_ns;
  long fia_file, fia_ordinal;
  uint64_t hash, hash2;
  char *key;
  size_t keylen;
  char *cells[PS_PC_NCELLS];
} group;

/* Not u64map.h: the parse_profile hot path keeps its own table. A slot holds the key's whole
 * 128-bit hash, so a lookup touches a group only once it has found it. */
typedef struct slot {
  uint64_t h0, h1;
  uint32_t idx;                          /* group index + 1, 0 = empty */
} slot;

/* Exact-duplicate detection keeps the row keys of the last DUP_WINDOW to 2 * DUP_WINDOW rows
 * of the file in two small tables (old and current generation), so it costs constant memory
 * and stays in cache. Duplicates an export writes sit close together. */
#define DUP_WINDOW 16384
#define DUP_SLOTS (2 * DUP_WINDOW)

static void free_groups(struct group *g, size_t cap);

struct ps_profile {
  int threads;                /* 1: read every file in one thread */
  uint64_t split_min;         /* files below this size are read by one thread */
  group *groups;
  size_t ngroups, capgroups;
  slot *slots;                /* open addressing on the key hash */
  size_t nslots;              /* power of two */
  uint64_t *seen[2];          /* duplicate window: current and previous generation */
  size_t nseen;
  ps_profile_counts totals;
  long nfiles;
  ps_import_key *keys;
};

ps_profile *ps_profile_new(void) {
  ps_profile *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->nslots = 1024;
  p->slots = calloc(p->nslots, sizeof *p->slots);
  p->keys = ps_import_key_new();
  if (p->slots == NULL || p->keys == NULL) {
    ps_profile_free(p);
    return NULL;
  }
  return p;
}

void ps_profile_set_threads(ps_profile *p, int threads, uint64_t split_min) {
  p->threads = threads;
  p->split_min = split_min;
}

void ps_profile_free(ps_profile *p) {
  if (p == NULL) return;
  for (size_t i = 0; i < p->ngroups; i++) {
    group *g = &p->groups[i];
    free(g->key);
    for (int c = 0; c < PS_PC_NCELLS; c++) free(g->cells[c]);
    free(g->durs);
  }
  free_groups(p->groups, p->capgroups);
  free(p->slots);
  free(p->seen[0]);
  free(p->seen[1]);
  ps_import_key_free(p->keys);
  free(p);
}

const ps_profile_counts *ps_profile_totals(const ps_profile *p) { return &p->totals; }
size_t ps_profile_ngroups(const ps_profile *p) { return p->ngroups; }

/* ---- small parsers ---------------------------------------------------------------- */

static const char *trim(const char *s, size_t *len) {
  ps_trim(&s, len);
  return s;
}

const char *ps_profile_kernel_type(const char *s, size_t *len) {
  static const char *const renames[][2] = {
    {"split_qkv_rmsnorm_rope_kernel_0", "split_qkv_rmsnorm_rope_kernel"},
    {"muls_add_kernel_1", "muls_add_kernel"},
  };
  const char *t = trim(s, len);
  for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++)
    if (*len == strlen(renames[i][0]) && memcmp(t, renames[i][0], *len) == 0) {
      *len = strlen(renames[i][1]);
      return renames[i][1];
    }
  return t;
}

int ps_profile_is_na(const char *s, size_t len) {
  s = trim(s, &len);
  while (len && *s == '"') s++, len--;
  while (len && s[len - 1] == '"') len--;
  return len == 3 && (s[0] == 'N' || s[0] == 'n') && s[1] == '/' && (s[2] == 'A' || s[2] == 'a');
}

int ps_profile_no_dims(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (!strchr(" \t\r\n\v\f\";()", s[i]) || s[i] == 0) return 0;
  return 1;
}

/* ---- groups --------------------------------------------------------------------------- */

/* The groups array: every row lands on a random group, so on big runs it lives in huge pages
 * (one TLB entry per 2 MB instead of per 4 KB) when the kernel grants them. */
#define HUGE_MIN (2u << 20)
static group *grow_groups(group *old, size_t oldcap, size_t cap) {
  size_t bytes = cap * sizeof(group), oldbytes = oldcap * sizeof(group);
  if (bytes < HUGE_MIN) return realloc(old, bytes);
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(m, bytes, MADV_HUGEPAGE);
#endif
  if (old) memcpy(m, old, oldbytes);
  if (oldbytes < HUGE_MIN) free(old);
  else munmap(old, oldbytes);
  return m;
}

static void free_groups(group *g, size_t cap) {
  if (g == NULL) return;
  if (cap * sizeof(group) < HUGE_MIN) free(g);
  else munmap(g, cap * sizeof(group));
}

static int grow_table(ps_profile *p) {
  size_t n = p->nslots * 2;
  slot *t = calloc(n, sizeof *t);
  if (t == NULL) return -1;
  for (size_t i = 0; i < p->ngroups; i++) {
    size_t h = (size_t)p->groups[i].hash & (n - 1);
    while (t[h].idx) h = (h + 1) & (n - 1);
    t[h] = (slot){p->groups[i].hash, p->groups[i].hash2, (uint32_t)i + 1};
  }
  free(p->slots);
  p->slots = t;
  p->nslots = n;
  return 0;
}

static group *find_or_add(ps_profile *p, const char *key, size_t keylen, const uint64_t hash[2],
                          int *created) {
  size_t h = (size_t)hash[0] & (p->nslots - 1);
  for (; p->slots[h].idx; h = (h + 1) & (p->nslots - 1))
    if (p->slots[h].h0 == hash[0] && p->slots[h].h1 == hash[1]) {   /* the same key */
      *created = 0;
      return &p->groups[p->slots[h].idx - 1];
    }
  if (p->ngroups >= UINT32_MAX - 1) return NULL;
  if (p->ngroups == p->capgroups) {
    size_t c = p->capgroups ? p->capgroups * 2 : 256;
    group *ng = grow_groups(p->groups, p->capgroups, c);
    if (ng == NULL) return NULL;
    p->groups = ng;
    p->capgroups = c;
  }
  group *g = &p->groups[p->ngroups];
  memset(g, 0, sizeof *g);
  g->key = malloc(keylen + 1);
  if (g->key == NULL) return NULL;
  memcpy(g->key, key, keylen);
  g->key[keylen] = 0;
  g->keylen = keylen;
  g->hash = hash[0];
  g->hash2 = hash[1];
  g->first_ns = g->last_ns = INT64_MIN;
  g->fia_file = g->fia_ordinal = -1;
  g->min = INFINITY;
  g->max = -INFINITY;
  p->slots[h] = (slot){hash[0], hash[1], (uint32_t)++p->ngroups};
  if (p->ngroups * 2 > p->nslots && grow_table(p) != 0) return NULL;
  *created = 1;
  return &p->groups[p->ngroups - 1];
}

static int in_table(const uint64_t *t, uint64_t hash) {
  for (size_t h = (size_t)hash & (DUP_SLOTS - 1); t[h]; h = (h + 1) & (DUP_SLOTS - 1))
    if (t[h] == hash) return 1;
  return 0;
}

static void prefetch_seen(const ps_profile *p, uint64_t hash) {
  if (p->seen[0] == NULL) return;
  size_t h = (size_t)(hash ? hash : 1) & (DUP_SLOTS - 1);
  __builtin_prefetch(&p->seen[0][h]);
  __builtin_prefetch(&p->seen[1][h]);
}

/* Duplicate rows: 1 when hash was seen within the window, else records it. */
static int seen_before(ps_profile *p, uint64_t hash) {
  if (hash == 0) hash = 1;
  if (p->seen[0] == NULL) {
    p->seen[0] = calloc(DUP_SLOTS, sizeof(uint64_t));
    p->seen[1] = calloc(DUP_SLOTS, sizeof(uint64_t));
    if (p->seen[0] == NULL || p->seen[1] == NULL) return 0;  /* never drop a row for it */
  }
  if (in_table(p->seen[0], hash) || in_table(p->seen[1], hash)) return 1;
  if (p->nseen == DUP_WINDOW) {   /* a new generation; the oldest is forgotten */
    uint64_t *t = p->seen[1];
    p->seen[1] = p->seen[0];
    p->seen[0] = t;
    memset(t, 0, DUP_SLOTS * sizeof *t);
    p->nseen = 0;
  }
  size_t h = (size_t)hash & (DUP_SLOTS - 1);
  while (p->seen[0][h]) h = (h + 1) & (DUP_SLOTS - 1);
  p->seen[0][h] = hash;
  p->nseen++;
  return 0;
}

static int set_cell(group *g, int c, const char *s, size_t len) {
  if (len == 0 && g->cells[c]) return 0;
  char *v = malloc(len + 1);
  if (v == NULL) return -1;
  memcpy(v, s, len);
  v[len] = 0;
  free(g->cells[c]);
  g->cells[c] = v;
  if (len) g->filled |= 1u << c;
  return 0;
}

static int add_duration(group *g, double d) {
  if (g->ndur == g->capdur) {
    size_t c = g->capdur ? g->capdur * 2 : 4;
    double *n = realloc(g->durs, c * sizeof *n);
    if (n == NULL) return -1;
    g->durs = n;
    g->capdur = c;
  }
  g->durs[g->ndur++] = d;
  g->count++;
  g->sum += d;
  if (d < g->min) g->min = d;
  if (d > g->max) g->max = d;
  return 0;
}

/* ---- one file ------------------------------------------------------------------------- */

static int missing_columns(const char *path, int *col, char *err, size_t errsize) {
  const char *miss[16];
  size_t n = 0;
  for (size_t i = 0; ps_profile_required[i]; i++)
    for (int c = 0; c < C_METRIC0; c++)
      if (strcmp(column_names[c], ps_profile_required[i]) == 0 && col[c] < 0) miss[n++] = column_names[c];
  if (n == 0) return 0;
  /* sorted, as the Python original reported them */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && strcmp(miss[j - 1], miss[j]) > 0; j--) {
      const char *t = miss[j];
      miss[j] = miss[j - 1];
      miss[j - 1] = t;
    }
  int k = snprintf(err, errsize, "%s: missing columns: ", path);
  for (size_t i = 0; i < n && k >= 0 && (size_t)k < errsize; i++)
    k += snprintf(err + k, errsize - (size_t)k, "%s%s", i ? ", " : "", miss[i]);
  return -1;
}

static void note_absent(const int *col, char *absent, size_t absentsize) {
  if (absent == NULL || absentsize == 0) return;
  absent[0] = 0;
  size_t k = 0;
  for (int c = 0; c < C_N; c++) {
    if (col[c] >= 0) continue;
    const char *name = c < C_METRIC0 ? column_names[c] : ps_counter_columns[c - C_METRIC0];
    int w = snprintf(absent + k, absentsize - k, "%s%s", k ? ", " : "", name);
    if (w < 0 || (size_t)w >= absentsize - k) break;
    k += (size_t)w;
  }
}

static int usable_id(const char *s, size_t len) {
  return len > 0 && !(len == 3 && memcmp(s, "N/A", 3) == 0);
}

/* One file's reading state, shared by the row function and the threads. */
typedef struct run {
  ps_profile *p;
  const int *col;
  int dedup;
  long file_index;
  ps_profile_counts *counts;
  const char *path;
  char *err;                  /* a data error of add_row (ROW_BAD) */
  size_t errsize;
} run;

enum { ROW_OOM = -1, ROW_BAD = -2 };

/* A signature cell beyond shape.h's limits is damaged data: an error naming it. */
static int cell_limits(run *u, const ps_scan_record *rec, const char *const *cell, const size_t *len) {
  for (int c = PS_PC_IN_SHAPES; c < PS_PC_NCELLS; c++) {
    char why[96];
    if (len[c] >= PS_SHAPE_MAX_SLOTS && ps_shape_over_limit(cell[c], len[c], why, sizeof why)) {
      snprintf(u->err, u->errsize, "%s:%ld: %s cell of %s", u->path, rec->line, column_names[c], why);
      return ROW_BAD;
    }
  }
  return 0;
}

/* Aggregates one record. Returns 0, ROW_OOM when out of memory, or ROW_BAD with the reason in
 * u->err. */
static int add_row(run *u, const ps_scan_record *rec) {
  ps_profile *p = u->p;
  ps_profile_counts *counts = u->counts;
  const char *cell[C_N];
  size_t len[C_N];
  static const char empty[] = "";
  counts->rows++;
  for (int c = 0; c < C_N; c++) {
    int i = u->col[c];
    if (i >= 0 && (size_t)i < rec->nfields) cell[c] = rec->fields[i], len[c] = rec->lens[i];
    else cell[c] = empty, len[c] = 0;
  }
  size_t tlen = len[PS_PC_TYPE];
  const char *type = ps_profile_kernel_type(cell[PS_PC_TYPE], &tlen);
  if (tlen == 0) {
    counts->no_type++;
    return 0;
  }
  if (cell_limits(u, rec, cell, len) != 0) return ROW_BAD;
  /* The tables a row probes are far apart in memory: their slots are prefetched first and
   * the parsing below hides the wait. */
  size_t keylen;
  uint64_t kh[2];
  const char *key = ps_import_key_build(p->keys, type, tlen, cell + PS_PC_IN_SHAPES,
                                        len + PS_PC_IN_SHAPES, &keylen, kh);
  if (key == NULL) return -1;
  __builtin_prefetch(&p->slots[(size_t)kh[0] & (p->nslots - 1)]);
  int64_t start_ns = INT64_MIN;
  int have_start = ps_num_us_to_ns(cell[C_START], len[C_START], &start_ns) == 0;
  uint64_t dup_hash = 0;
  int check_dup = u->dedup && have_start && usable_id(cell[C_TASK], len[C_TASK]);
  if (check_dup) {
    char buf[256];
    size_t k = 0;
    for (int c = C_TASK; c <= C_DEVICE; c++) {
      size_t l = len[c] < 64 ? len[c] : 64;
      memcpy(buf + k, cell[c], l);
      k += l;
      buf[k++] = '\x1f';
    }
    dup_hash = XXH3_64bits_withSeed(buf, k, (uint64_t)start_ns);
    prefetch_seen(p, dup_hash);
  }
  long fia_ordinal = -1;
  int is_fia = tlen == sizeof PS_PROFILE_FIA_TYPE - 1 && memcmp(type, PS_PROFILE_FIA_TYPE, tlen) == 0;
  int na = ps_profile_is_na(cell[PS_PC_IN_SHAPES], len[PS_PC_IN_SHAPES]) ||
           ps_profile_is_na(cell[PS_PC_OUT_SHAPES], len[PS_PC_OUT_SHAPES]);
  int no_dims = !na && ps_profile_no_dims(cell[PS_PC_IN_SHAPES], len[PS_PC_IN_SHAPES]);
  double d;
  int bad = ps_num_finite(cell[C_DURATION], len[C_DURATION], &d) != 0;
  if (check_dup && seen_before(p, dup_hash)) {
    counts->duplicates++;
    return 0;
  }
  if (is_fia) fia_ordinal = (long)counts->fia_rows++;
  if (na) {
    counts->na_shapes++;
    return 0;
  }
  if (no_dims) {
    counts->no_shapes++;
    return 0;
  }
  if (bad) {
    counts->bad_duration++;
    return 0;
  }
  int created = 0;
  group *g = find_or_add(p, key, keylen, kh, &created);
  if (g == NULL) return -1;
  __builtin_prefetch(g);
  __builtin_prefetch((char *)g + 64);
  __builtin_prefetch((char *)g + 128);
  /* the counters, parsed while the group comes into the cache */
  double mv[PS_NCOUNTERS];
  unsigned valid = 0;
  for (int m = 0; m < PS_NCOUNTERS; m++)
    if (len[C_METRIC0 + m] && ps_num_finite(cell[C_METRIC0 + m], len[C_METRIC0 + m], &mv[m]) == 0)
      valid |= 1u << m;
  if (add_duration(g, d) != 0) return -1;
  /* the first non-empty value of each cell */
  if (created && set_cell(g, PS_PC_TYPE, type, tlen) != 0) return -1;
  if (g->filled != (1u << PS_PC_NCELLS) - 1)
    for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++)
      if (!(g->filled & (1u << c)) && (created || len[c]) && set_cell(g, c, cell[c], len[c]) != 0)
        return -1;
  for (int m = 0; m < PS_NCOUNTERS; m++)
    if (valid & (1u << m)) {
      g->msum[m] += mv[m];
      g->mcount[m]++;
    }
  if (have_start) {
    if (g->first_ns == INT64_MIN || start_ns < g->first_ns) g->first_ns = start_ns;
    if (g->last_ns == INT64_MIN || start_ns > g->last_ns) g->last_ns = start_ns;
  }
  if (fia_ordinal >= 0 && g->fia_file < 0) {
    g->fia_file = u->file_index;
    g->fia_ordinal = fia_ordinal;
  }
  counts->used++;
  return 0;
}

static void add_counts(ps_profile_counts *to, const ps_profile_counts *c) {
  to->rows += c->rows;
  to->used += c->used;
  to->na_shapes += c->na_shapes;
  to->no_type += c->no_type;
  to->no_shapes += c->no_shapes;
  to->bad_duration += c->bad_duration;
  to->duplicates += c->duplicates;
  to->fia_rows += c->fia_rows;
}

/* ---- a big file in chunks, one thread each ------------------------------------------ */

#define SPLIT_MIN (32u << 20)   /* smaller files are read by one thread */
#define MAX_CHUNKS 64

/* Chunk k > 0 of a file: [offset, end) read by its own thread into its own groups (end 0: to
 * the end of the file). Chunk k - 1 confirms that offset is a record start when it gets
 * there (a quoted newline would not be). */
typedef struct chunk {
  const char *path;
  uint64_t offset, end;
  run u;
  ps_profile_counts counts;
  atomic_int *cancel;
  atomic_uint_least64_t done;   /* bytes read, for the progress display */
  int failed;                   /* bad data, no memory, or it ran past its end */
  char err[512];                /* unused: the first thread reads a failed chunk again */
  pthread_t thread;
} chunk;

static void *read_chunk(void *arg) {
  chunk *h = arg;
  char err[8];
  ps_scan *r = ps_scan_open_at(h->path, h->offset, err, sizeof err);
  if (r == NULL) {
    h->failed = 1;
    return NULL;
  }
  ps_scan_record rec;
  int st = 1;
  uint64_t n = 0;
  for (;;) {
    if (h->end) {
      uint64_t off = ps_scan_offset(r);
      if (off == h->end) break;                 /* the next chunk starts here: done */
      if (off > h->end) {                       /* the next chunk's start is no record start */
        st = -1;
        break;
      }
    }
    if ((st = ps_scan_next(r, &rec)) <= 0) break;
    if (add_row(&h->u, &rec) != 0) {
      st = -1;
      break;
    }
    if ((++n & 4095) == 0) {
      atomic_store(&h->done, ps_scan_bytes_read(r));
      if (atomic_load(h->cancel)) break;
    }
  }
  if (st < 0 || (st == 0 && h->end)) h->failed = 1;  /* the first thread reads it again */
  atomic_store(&h->done, ps_scan_bytes_read(r));
  ps_scan_close(r);
  return NULL;
}

/* The chunk starts: at[0] = 0, then just after the first line end past each k/n of the file.
 * Returns the number of chunks (1: read by one thread). */
static int split_points(const ps_profile *p, const char *path, uint64_t size, uint64_t *at) {
  uint64_t least = p->split_min ? p->split_min : SPLIT_MIN;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  long n = p->threads > 0 ? p->threads : cores > 0 ? cores : 1;
  if (n > MAX_CHUNKS) n = MAX_CHUNKS;
  at[0] = 0;
  if (size < least || n < 2) return 1;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 1;
  int m = 1;
  for (long k = 1; k < n; k++) {
    uint64_t pos = size / (uint64_t)n * (uint64_t)k;
    if (pos < at[m - 1]) pos = at[m - 1];
    if (fseeko(f, (off_t)pos, SEEK_SET) != 0) break;
    int c;
    while ((c = getc(f)) != EOF && c != '\n') pos++;
    if (c == EOF || pos + 1 >= size) break;
    if (pos + 1 > at[m - 1]) at[m++] = pos + 1;
  }
  fclose(f);
  return m;
}

/* Adds the groups of q (a later chunk) to p, in q's first-seen order. */
static int merge_chunk(ps_profile *p, ps_profile *q, long fia_base) {
  for (size_t i = 0; i < q->ngroups; i++) {
    group *b = &q->groups[i];
    uint64_t h[2] = {b->hash, b->hash2};
    int created;
    group *g = find_or_add(p, b->key, b->keylen, h, &created);
    if (g == NULL) return -1;
    if (g->ndur + b->ndur > g->capdur) {
      double *d = realloc(g->durs, (g->ndur + b->ndur) * sizeof *d);
      if (d == NULL) return -1;
      g->durs = d;
      g->capdur = g->ndur + b->ndur;
    }
    memcpy(g->durs + g->ndur, b->durs, b->ndur * sizeof *b->durs);
    g->ndur += b->ndur;
    g->count += b->count;
    g->sum += b->sum;
    if (b->min < g->min) g->min = b->min;
    if (b->max > g->max) g->max = b->max;
    for (int m = 0; m < PS_NCOUNTERS; m++) {
      g->msum[m] += b->msum[m];
      g->mcount[m] += b->mcount[m];
    }
    if (b->first_ns != INT64_MIN && (g->first_ns == INT64_MIN || b->first_ns < g->first_ns)) g->first_ns = b->first_ns;
    if (b->last_ns != INT64_MIN && (g->last_ns == INT64_MIN || b->last_ns > g->last_ns)) g->last_ns = b->last_ns;
    for (int c = 0; c < PS_PC_NCELLS; c++)
      if (!(g->filled & (1u << c)) && b->cells[c] && (created || b->cells[c][0]) &&
          set_cell(g, c, b->cells[c], strlen(b->cells[c])) != 0)
        return -1;
    if (g->fia_file < 0 && b->fia_file >= 0) {
      g->fia_file = b->fia_file;
      g->fia_ordinal = b->fia_ordinal + fia_base;
    }
  }
  return 0;
}

int ps_profile_add_file(ps_profile *p, const char *path, ps_profile_counts *counts,
                        char *absent, size_t absentsize, ps_profile_progress cb, void *ud,
                        char *err, size_t errsize) {
  ps_profile_counts local = {0};
  if (counts == NULL) counts = &local;
  memset(counts, 0, sizeof *counts);
  if (absent && absentsize) absent[0] = 0;
  ps_scan *r = ps_scan_open(path, err, errsize);
  if (r == NULL) return -1;
  ps_scan_record rec;
  int st = ps_scan_next(r, &rec);
  if (st <= 0) {
    if (st < 0) snprintf(err, errsize, "%s", ps_scan_error(r));
    else snprintf(err, errsize, "%s: empty file (no header)", path);
    ps_scan_close(r);
    return -1;
  }
  /* the header as C strings, for the alias-aware column lookup */
  char **header = calloc(rec.nfields, sizeof *header);
  int ok = header != NULL;
  for (size_t i = 0; ok && i < rec.nfields; i++) ok = (header[i] = strndup(rec.fields[i], rec.lens[i])) != NULL;
  int col[C_N];
  if (ok) {
    for (int c = 0; c < C_METRIC0; c++) col[c] = ps_csv_find_column(header, rec.nfields, column_names[c]);
    for (int m = 0; m < PS_NCOUNTERS; m++)
      col[C_METRIC0 + m] = ps_csv_find_column(header, rec.nfields, ps_counter_columns[m]);
  }
  for (size_t i = 0; header && i < rec.nfields; i++) free(header[i]);
  free(header);
  if (!ok) {
    snprintf(err, errsize, "%s: out of memory", path);
    ps_scan_close(r);
    return -1;
  }
  if (missing_columns(path, col, err, errsize) != 0) {
    ps_scan_close(r);
    return -1;
  }
  note_absent(col, absent, absentsize);
  if (p->seen[0]) {
    memset(p->seen[0], 0, DUP_SLOTS * sizeof(uint64_t));
    memset(p->seen[1], 0, DUP_SLOTS * sizeof(uint64_t));
  }
  p->nseen = 0;
  run u = {p, col, col[C_TASK] >= 0 && col[C_START] >= 0, p->nfiles++, counts, path, err, errsize};
  int rc = 0;

  /* a big file: chunks 1.. on other cores, each into its own groups; this thread reads
   * chunk 0 and confirms where chunk 1 starts */
  uint64_t at[MAX_CHUNKS];
  int nchunks = split_points(p, path, ps_scan_file_size(r), at);
  chunk *h = nchunks > 1 ? calloc((size_t)nchunks, sizeof *h) : NULL;
  atomic_int cancel = 0;
  int started = 1;                          /* chunks with a running thread: 1..started-1 */
  for (; h && started < nchunks; started++) {
    chunk *k = &h[started];
    ps_profile *q = ps_profile_new();
    if (q == NULL) break;
    k->path = path;
    k->offset = at[started];
    k->end = started + 1 < nchunks ? at[started + 1] : 0;
    k->cancel = &cancel;
    k->u = (run){q, col, u.dedup, u.file_index, &k->counts, path, k->err, sizeof k->err};
    if (pthread_create(&k->thread, NULL, read_chunk, k) != 0) {
      ps_profile_free(q);
      break;
    }
  }
  /* a chunk that could not start: the threads that did are told to stop, this one reads all */
  uint64_t split = h ? at[1] : 0;
  if (h && started < nchunks) {
    atomic_store(&cancel, 1);
    split = 0;
  }

  uint64_t next_report = 0;
  for (;;) {
    if (split) {
      uint64_t off = ps_scan_offset(r);
      if (off == split) break;                /* chunk 1 starts here: done */
      if (off > split) {                      /* split inside a record: read on alone */
        atomic_store(&cancel, 1);
        split = 0;
      }
    }
    if ((st = ps_scan_next(r, &rec)) <= 0) break;
    int a = add_row(&u, &rec);
    if (a != 0) {
      if (a == ROW_OOM) snprintf(err, errsize, "%s: out of memory", path);
      rc = -1;
      break;
    }
    if (cb && counts->rows >= next_report) {
      uint64_t done = ps_scan_bytes_read(r);
      for (int k = 1; k < started; k++) done += atomic_load(&h[k].done);
      cb(ud, done, ps_scan_file_size(r));
      next_report = counts->rows + 4096;
    }
  }
  if (h) {
    if (rc != 0 || st < 0) atomic_store(&cancel, 1);
    int ok = 1;
    for (int k = 1; k < started; k++) {
      pthread_join(h[k].thread, NULL);
      ok &= !h[k].failed;
    }
    if (!split || atomic_load(&cancel)) ok = 0;
    if (ok && rc == 0 && st > 0) {
      /* every chunk ended where the next began: take their groups and counts, in file order */
      for (int k = 1; k < started && rc == 0; k++) {
        long fia_base = (long)counts->fia_rows;
        if (merge_chunk(p, h[k].u.p, fia_base) != 0) {
          snprintf(err, errsize, "%s: out of memory", path);
          rc = -1;
        }
        add_counts(counts, &h[k].counts);
      }
    } else if (rc == 0 && st > 0) {
      /* a chunk failed (bad data, memory, a quoted newline at a split): read the rest here,
       * where errors get the right line numbers */
      while ((st = ps_scan_next(r, &rec)) > 0) {
        int a = add_row(&u, &rec);
        if (a != 0) {
          if (a == ROW_OOM) snprintf(err, errsize, "%s: out of memory", path);
          rc = -1;
          break;
        }
      }
    }
    for (int k = 1; k < started; k++) ps_profile_free(h[k].u.p);
    free(h);
  }
  if (rc == 0 && st < 0) {
    snprintf(err, errsize, "%s", ps_scan_error(r));
    rc = -1;
  }
  if (cb) cb(ud, ps_scan_file_size(r), ps_scan_file_size(r));
  ps_scan_close(r);
  add_counts(&p->totals, counts);
  return rc;
}

/* ---- statistics ----------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int ps_profile_group(ps_profile *p, size_t i, int stats, ps_profile_group_info *info) {
  if (i >= p->ngroups) return -1;
  group *g = &p->groups[i];
  memset(info, 0, sizeof *info);
  for (int c = 0; c < PS_PC_NCELLS; c++) info->cells[c] = g->cells[c] ? g->cells[c] : "";
  info->key = g->key;
  info->keylen = g->keylen;
  info->hash = g->hash;
  info->count = g->count;
  info->first_start_ns = g->first_ns;
  info->last_start_ns = g->last_ns;
  info->fia_file = g->fia_file;
  info->fia_ordinal = g->fia_ordinal;
  if (!stats) return 0;
  double mean = g->count ? g->sum / (double)g->count : NAN;
  info->mean = mean;
  double ss = 0;
  for (size_t k = 0; k < g->ndur; k++) ss += (g->durs[k] - mean) * (g->durs[k] - mean);
  info->std = g->count ? sqrt(ss / (double)g->count) : NAN;
  qsort(g->durs, g->ndur, sizeof *g->durs, cmp_double);
  size_t n = g->ndur;
  info->median = n == 0 ? NAN : n % 2 ? g->durs[n / 2] : (g->durs[n / 2 - 1] + g->durs[n / 2]) / 2;
  info->min = g->min;
  info->max = g->max;
  for (int m = 0; m < PS_NCOUNTERS; m++) {
    info->metric_count[m] = g->mcount[m];
    info->metric_mean[m] = g->mcount[m] ? g->msum[m] / (double)g->mcount[m] : NAN;
  }
  return 0;
}
