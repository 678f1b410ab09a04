#include "profile.h"

#include <math.h>
#include <sys/mman.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL   /* the file hash, the row keys: inlined, not the library's generic build */
#include <xxhash.h>

#include "csvread.h"
#include "csvscan.h"
#include "csvwrite.h"
#include "grow.h"
#include "num.h"
#include "cores.h"
#include "import_key.h"
#include "lifetime.h"
#include "shape.h"
#include "text.h"
#include "writeback_sig.h"
#include "xxh3_wide.h"

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
  /* the valid values of counter m: mall + (mpart ? mpart[m] : 0). Most rows have every
   * counter, so a group counts them once, and the 25 counts of the rows that have some
   * live apart: the row's part of a group fits two cache lines fewer. */
  uint32_t mall;
  double msum[PS_NCOUNTERS];
  int64_t first_ns, last_ns;
  long fia_file, fia_ordinal;
  uint32_t *mpart;
  uint64_t first_row;                    /* its first row in the file (ordering a pass's new groups) */
  uint64_t hash, hash2;
  char *key;
  size_t keylen;
  char *cells[PS_PC_NCELLS];
} group;

/* A group's durations lie in its table's string chunks (add_duration) until they need more
 * than DUR_OWN bytes, then in a block of their own. */
#define DUR_OWN (16u << 10)
static inline int owns_durs(const group *g) { return g->capdur * sizeof *g->durs > DUR_OWN; }

/* Not u64map.h: the parse_profile hot path keeps its own table. A slot holds the key's whole
 * 128-bit hash, so a lookup touches a group only once it has found it. */
typedef struct slot {
  uint64_t h0, h1;
  group *g;                              /* NULL: empty */
} slot;

/* The groups themselves live in chunks that never move, so a group's address is its identity
 * for the profile's life: a pass's shares hand theirs to the profile by pointer, and the
 * groups (416 bytes each) are not copied into one array at its end (that copy and its fresh
 * pages were 10-40 ms of a 300 MB import, all of it serial). */
typedef struct group_chunk {
  struct group_chunk *next;
  size_t mapped;                         /* bytes of its mapping; 0: malloc'd */
  size_t used, cap;
  group g[];
} group_chunk;

static void free_chunks(group_chunk *c);
static void chunk_free(void *c, size_t mapped);

/* Exact-duplicate detection keeps the row keys of the last DUP_WINDOW to 2 * DUP_WINDOW rows
 * of the file in two small tables (old and current generation), so it costs constant memory
 * and stays in cache. Duplicates an export writes sit close together. */
#define DUP_WINDOW 16384
#define DUP_SLOTS (2 * DUP_WINDOW)

/* The groups' keys and cells live in chunks that are neither moved nor freed one by one: a
 * malloc per string (ten a group) and its free at the end were a tenth of a big import's time,
 * and cost 16 bytes or more each. A share's table (the pass's q) fills its own chunks, for its
 * new groups and p's, and hands them to p at the end of the pass (strings_give). */
#define STR_CHUNK (64u << 10)
/* A big table's chunks (past STR_SMALL small ones: its keys, cells and durations are tens of
 * megabytes) are mappings in huge pages: 512 times fewer page faults to fill them and pages to
 * give back at the end. */
#define STR_SMALL 16
#define STR_BIG (2u << 20)
typedef struct str_chunk {
  struct str_chunk *next;
  size_t mapped;              /* bytes of its mapping; 0: malloc'd */
  char data[];
} str_chunk;
typedef struct strings {
  str_chunk *owned;           /* the chunks this table frees */
  char *at;                   /* free room of the current chunk */
  size_t left;
  size_t made;                /* chunks of STR_CHUNK made */
} strings;

struct ps_profile {
  int threads;                /* 1: read every file in one thread */
  uint64_t split_min;         /* files below this size are read by one thread */
  uint64_t block;             /* block size (0: BLOCK; tests make it small) */
  group **groups;             /* group i, in the order of the groups' first rows */
  size_t ngroups, capgroups;
  group_chunk *chunks;        /* where the groups made here and adopted live */
  slot *slots;                /* open addressing on the key hash */
  size_t nslots;              /* power of two */
  int stale_slots;            /* groups adopted since the slots were filled: refill before a find */
  strings str;                /* the groups' keys and cells */
  uint64_t *seen[2];          /* duplicate window: current and previous generation */
  size_t nseen;
  ps_profile_counts totals;
  long nfiles;
  int hash_files;             /* ps_profile_set_hash: each file's XXH3 taken while it is read */
  uint64_t *file_hash;        /* per file: its XXH3 (ps_sig_hash_file), valid where file_hashed */
  unsigned char *file_hashed;
  size_t cap_hash;
  long hash_rereads;          /* files whose hash needed a second read (tests) */
};

ps_profile *ps_profile_new(void) {
  ps_profile *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->nslots = 1024;
  p->slots = calloc(p->nslots, sizeof *p->slots);
  if (p->slots == NULL) {
    ps_profile_free(p);
    return NULL;
  }
  return p;
}

void ps_profile_set_threads(ps_profile *p, int threads, uint64_t split_min) {
  p->threads = threads;
  p->split_min = split_min;
}

void ps_profile_set_block(ps_profile *p, uint64_t bytes) { p->block = bytes; }

void ps_profile_free(ps_profile *p) {
  if (p == NULL) return;
  /* one block of durations a group: at the process's end they go with it (lifetime.h) */
  if (!ps_exiting())
    for (size_t i = 0; i < p->ngroups; i++) {
      if (owns_durs(p->groups[i])) free(p->groups[i]->durs);
      free(p->groups[i]->mpart);
    }
  free_chunks(p->chunks);
  free(p->groups);
  for (str_chunk *c = p->str.owned, *next; c; c = next) next = c->next, chunk_free(c, c->mapped);
  free(p->slots);
  free(p->seen[0]);
  free(p->seen[1]);
  free(p->file_hash);
  free(p->file_hashed);
  free(p);
}

void ps_profile_set_hash(ps_profile *p, int on) { p->hash_files = on; }

int ps_profile_file_hash(const ps_profile *p, long file, uint64_t *out) {
  if (file < 0 || file >= p->nfiles || (size_t)file >= p->cap_hash || !p->file_hashed[file]) return -1;
  *out = p->file_hash[file];
  return 0;
}

const ps_profile_counts *ps_profile_totals(const ps_profile *p) { return &p->totals; }
long ps_profile_hash_rereads(const ps_profile *p) { return p->hash_rereads; }
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
  /* trimmed, then stripped of quotes, end by end: the front first, where a shape's digit
   * answers most cells at once */
  while (len && ps_is_space(*s)) s++, len--;
  while (len && *s == '"') s++, len--;
  if (len == 0 || (*s != 'N' && *s != 'n')) return 0;
  while (len && ps_is_space(s[len - 1])) len--;
  while (len && s[len - 1] == '"') len--;
  return len == 3 && s[1] == '/' && (s[2] == 'A' || s[2] == 'a');
}

int ps_profile_no_dims(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (!strchr(" \t\r\n\v\f\";()", s[i]) || s[i] == 0) return 0;
  return 1;
}

/* ---- groups --------------------------------------------------------------------------- */

/* A chunk's memory (the groups', the strings'): from HUGE_MIN bytes on a mapping in huge pages
 * (one TLB entry per 2 MB instead of per 4 KB, and 512 times fewer faults, when the kernel
 * grants them; only the pages touched are zeroed), malloc'd below. *mapped: the mapping's
 * bytes, 0 when malloc'd. NULL when out of memory. */
#define HUGE_MIN (2u << 20)
static void *chunk_alloc(size_t bytes, size_t *mapped) {
  *mapped = 0;
  if (bytes < HUGE_MIN) return malloc(bytes);
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(m, bytes, MADV_HUGEPAGE);
#endif
  *mapped = bytes;
  return m;
}

static void chunk_free(void *c, size_t mapped) {
  if (mapped) munmap(c, mapped);
  else free(c);
}

/* Room for n bytes at a multiple of align (a power of two, at most 8) in st's chunks, or NULL. */
static char *str_room(strings *st, size_t n, size_t align) {
  size_t pad = (size_t)(-(uintptr_t)st->at & (align - 1));
  if (st->at == NULL || pad + n > st->left) {
    int lone = n > STR_CHUNK / 4;   /* a long one: a chunk its size */
    size_t bytes = lone ? sizeof(str_chunk) + n : st->made >= STR_SMALL ? STR_BIG : sizeof(str_chunk) + STR_CHUNK;
    size_t mapped;
    str_chunk *c = chunk_alloc(bytes, &mapped);   /* data: 8-aligned */
    if (c == NULL) return NULL;
    c->mapped = mapped;
    c->next = st->owned;
    st->owned = c;
    if (lone) return c->data;
    st->at = c->data, st->left = bytes - sizeof *c, pad = 0, st->made++;
  }
  char *d = st->at + pad;
  st->at += pad + n;
  st->left -= pad + n;
  return d;
}

/* A NUL-terminated copy of s[0..len) in st (the empty string is a shared ""), or NULL. */
static char *str_put(strings *st, const char *s, size_t len) {
  static char empty[1];
  if (len == 0) return empty;
  char *d = str_room(st, len + 1, 1);
  if (d == NULL) return NULL;
  memcpy(d, s, len);
  d[len] = 0;
  return d;
}

/* to frees from's chunks from now on (from's groups moved to to, or to's cells set from
 * from); from keeps filling its current chunk. */
static void strings_give(strings *to, strings *from) {
  str_chunk **tail = &from->owned;
  while (*tail) tail = &(*tail)->next;
  *tail = to->owned;
  to->owned = from->owned;
  from->owned = NULL;
}

/* Room for one more group. Every row lands on a random group: big runs' chunks are huge pages
 * (chunk_alloc); small profiles stay small (16 groups first). */
#define CHUNK_MAX (8u << 20)
static group *group_room(ps_profile *p) {
  group_chunk *c = p->chunks;
  if (c == NULL || c->used == c->cap) {
    size_t bytes = c ? sizeof *c + 4 * c->cap * sizeof(group) : sizeof *c + 16 * sizeof(group);
    if (bytes > CHUNK_MAX) bytes = CHUNK_MAX;
    size_t mapped;
    group_chunk *n = chunk_alloc(bytes, &mapped);
    if (n == NULL) return NULL;
    n->mapped = mapped;
    n->cap = (bytes - sizeof *n) / sizeof(group);
    n->used = 0;
    n->next = c;
    p->chunks = c = n;
  }
  return &c->g[c->used++];
}

static void free_chunks(group_chunk *c) {
  for (group_chunk *next; c; c = next) next = c->next, chunk_free(c, c->mapped);
}

/* p's slots as a table of n (a power of two) filled with every group: 0, or -1 (p unchanged). */
static int fill_table(ps_profile *p, size_t n) {
  slot *t = calloc(n, sizeof *t);
  if (t == NULL) return -1;
  for (size_t i = 0; i < p->ngroups; i++) {
    /* the groups 16 ahead, then (their hashes read by now) the slots 8 ahead */
    if (i + 16 < p->ngroups) __builtin_prefetch(p->groups[i + 16]);
    if (i + 8 < p->ngroups) __builtin_prefetch(&t[(size_t)p->groups[i + 8]->hash & (n - 1)], 1);
    group *g = p->groups[i];
    size_t h = (size_t)g->hash & (n - 1);
    while (t[h].g) h = (h + 1) & (n - 1);
    t[h] = (slot){g->hash, g->hash2, g};
  }
  free(p->slots);
  p->slots = t;
  p->nslots = n;
  return 0;
}

static int grow_table(ps_profile *p) { return fill_table(p, p->nslots * 2); }

static group *find_or_add(ps_profile *p, const char *key, size_t keylen, const uint64_t hash[2],
                          int *created) {
  size_t h = (size_t)hash[0] & (p->nslots - 1);
  for (; p->slots[h].g; h = (h + 1) & (p->nslots - 1))
    if (p->slots[h].h0 == hash[0] && p->slots[h].h1 == hash[1]) {   /* the same key */
      *created = 0;
      return p->slots[h].g;
    }
  if (p->ngroups >= UINT32_MAX - 1) return NULL;
  if (p->ngroups == p->capgroups && ps_grow((void **)&p->groups, &p->capgroups, p->ngroups + 1, sizeof *p->groups) != 0)
    return NULL;
  group *g = group_room(p);
  if (g == NULL) return NULL;
  memset(g, 0, sizeof *g);
  if ((g->key = str_put(&p->str, key, keylen)) == NULL) return NULL;
  g->keylen = keylen;
  g->hash = hash[0];
  g->hash2 = hash[1];
  g->first_ns = g->last_ns = INT64_MIN;
  g->fia_file = g->fia_ordinal = -1;
  g->min = INFINITY;
  g->max = -INFINITY;
  p->groups[p->ngroups++] = g;
  p->slots[h] = (slot){hash[0], hash[1], g};
  if (p->ngroups * 2 > p->nslots && grow_table(p) != 0) return NULL;
  *created = 1;
  return g;
}

static int in_table(const uint64_t *t, uint64_t hash) {
  for (size_t h = (size_t)hash & (DUP_SLOTS - 1); t[h]; h = (h + 1) & (DUP_SLOTS - 1))
    if (t[h] == hash) return 1;
  return 0;
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

/* (an empty cell's "" replaced later stays in the chunk: the strings are never freed alone) */
static int set_cell(strings *st, group *g, int c, const char *s, size_t len) {
  if (len == 0 && g->cells[c]) return 0;
  char *v = str_put(st, s, len);
  if (v == NULL) return -1;
  g->cells[c] = v;
  if (len) g->filled |= 1u << c;
  return 0;
}

/* A group's durations: in st's chunks while they are few, each growth a new place there and
 * a copy (a malloc and three reallocs a group were a sixth of adding the rows); past DUR_OWN
 * bytes a block of its own, grown by realloc (an old place left behind would double them). */
static int add_duration(strings *st, group *g, double d) {
  if (g->ndur == g->capdur) {
    size_t c = g->capdur ? g->capdur * 2 : 4;
    double *n;
    if (c * sizeof *n <= DUR_OWN) n = (double *)(void *)str_room(st, c * sizeof *n, _Alignof(double));
    else n = realloc(owns_durs(g) ? g->durs : NULL, c * sizeof *n);
    if (n == NULL) return -1;
    if (!owns_durs(g) && g->ndur) memcpy(n, g->durs, g->ndur * sizeof *n);
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

/* The group of a key already in p, or NULL (read only: the threads of step 3 share it). */
static group *find(const ps_profile *p, const uint64_t hash[2]) {
  for (size_t h = (size_t)hash[0] & (p->nslots - 1); p->slots[h].g; h = (h + 1) & (p->nslots - 1))
    if (p->slots[h].h0 == hash[0] && p->slots[h].h1 == hash[1]) return p->slots[h].g;
  return NULL;
}

/* ---- one file in blocks ------------------------------------------------------------------
 *
 * A file is read in blocks of up to BLOCK bytes (one block for small files or --threads 1).
 * Each block goes through three kinds of task, which T threads take from one queue as they
 * come free (next_task), so no thread waits for a round's slowest:
 *   1. parse: a block's rows into row records (the costly part: CSV, numbers, keys), any
 *      thread, blocks claimed in file order; a block k > 0 starts at the first line start at
 *      or after its nominal start;
 *   2. walk: one thread at a time, blocks in file order: checks that the block started where
 *      the one before it ended (a quoted newline can fool the guess; the block is then read
 *      again from the right place, with the right line numbers, as is a block that hit an
 *      error), and walks its records for what is sequential: the duplicate window, the FIA
 *      ordinals, the counts;
 *   3. add: the rows of one share of the groups (by key hash) to that share's groups, one
 *      thread at a time per share, blocks in file order.
 * So every group sees its rows in file order, whatever the thread count: the sums, hence the
 * means, are those of one thread, bit for bit, and a duplicate pair across a block boundary
 * is caught. A share's new groups stay in its own table for the whole file (p is only read
 * meanwhile) and join p at the end in the order of their first rows: the order one thread
 * gives. Memory holds NBUF blocks' records a thread (one for one thread) and the groups,
 * never the file. */

/* 1.25 MiB keeps the blocks in flight (their records, 300 bytes a row, and cells) small, and
 * the scanners read little past one (ps_scan_set_chunk). */
#define BLOCK (5u << 18)
#define CHUNK (BLOCK + (256u << 10))
#define MAX_THREADS 64
#define SPLIT_MIN (32u << 20)   /* smaller files are read by one thread */
#define NBUF 3                  /* blocks in flight a thread: one parsed ahead while two are added */
#define GUESS_WINDOW 65536u     /* a block's start guess looks this far for a line end */

/* The line end a block's start is guessed after: the first in p[0..n), n cut to GUESS_WINDOW
 * (p: the byte before the block's nominal start on). guess_and_parse and hash_block must agree. */
static inline const char *guess_line_end(const char *p, size_t n) {
  return memchr(p, '\n', n < GUESS_WINDOW ? n : GUESS_WINDOW);
}

enum { K_NOTYPE, K_NA, K_NODIMS, K_BAD, K_USE, K_SKIP };

/* A block whose bytes wait for the file's hash to reach it (hash_block) */
#define HASH_LATER 256
typedef struct hash_later { size_t k; uint64_t from, to; int ok, set; } hash_later;

/* A parsed row. The key and the cells of a used row are copied to the block's arena. */
typedef struct rowrec {
  /* what steps 2 and 3 read of every row, in its first cache line (the rows are aligned to
   * one: the thread of step 2 reads the rows the others wrote, a line each) */
  _Alignas(64) uint64_t h0, h1, dup;
  long fia_ordinal;                      /* set by step 2 */
  uint8_t kind, check_dup, have_start, is_fia;
  uint32_t valid;                        /* bit m: mv[m] holds a number */
  int64_t start_ns;
  uint32_t off, keylen, clen[PS_PC_NCELLS];
  double mv[PS_NCOUNTERS + 1];           /* the counters, then the duration (DUR) */
} rowrec;

#define DUR mv[PS_NCOUNTERS]

enum { B_OK, B_BAD, B_SCAN, B_OOM, B_GUESS };

typedef struct block {
  uint64_t nominal_end;                  /* records starting before it are the block's */
  uint64_t start, end;                   /* where it was read from and where it stopped */
  long lines;                            /* physical lines read */
  int status;                            /* B_OK, or why it stopped */
  uint64_t bad_rows;                     /* 1 when a damaged row stopped it (counted as read) */
  uint64_t first_row;                    /* rows of the file before it (step 2) */
  int parsed;                            /* step 1 done (under the pass's mutex) */
  rowrec *recs;
  size_t nrec, caprec;
  char *arena;
  size_t narena, caparena;
} block;

/* A thread's parser: its scanner, key builder and error text. */
typedef struct worker {
  ps_scan *scan;
  ps_import_key *keys;
  char err[1024];
} worker;

typedef struct pass {
  ps_profile *p;
  const char *path;
  int fd;                                /* the file, for the blocks' start guesses (pread) */
  const int *col;
  int metrics_at;                        /* the counters' first column when they are side by
                                            side in counter order (kernel_details), else -1 */
  int dedup, T;                          /* T threads, T shares */
  long file_index;
  uint64_t data_start, size, bsize;
  size_t nblocks, nbuf;
  size_t last;                           /* blocks to add: nblocks, or up to a failed one */
  block blk[NBUF * MAX_THREADS];         /* block k in blk[k % nbuf] */
  worker w[MAX_THREADS];
  ps_profile *q[MAX_THREADS];            /* each share's groups first seen in this file */
  /* the task queue (next_task), under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int go;                                /* threads 1..T-1 start when set */
  size_t claimed;                        /* blocks handed out to parse: [0, claimed) */
  size_t walked;                         /* blocks walked: [0, walked) */
  int walking;                           /* a thread walks block walked */
  size_t added[MAX_THREADS];             /* share s has added blocks [0, added[s]) */
  unsigned char adding[MAX_THREADS];     /* a thread adds to share s */
  uint64_t reached, shown;               /* bytes walked; progress last reported (thread 0) */
  long line0;                            /* line of the first data record */
  atomic_int oom;
  int stop, rc;
  uint64_t expect;                       /* where the next block must start */
  long line;                             /* its line number */
  /* The file's XXH3 (ps_profile_set_hash), taken from each block's bytes as its parse reads
   * them, before it cuts them, blocks in file order (hash_block): no second read of the file
   * (a thread reading all of it again cost a twentieth of a 302 MB import). hst NULL: not
   * asked; hash_broken: a block could not, and the hash is taken after the pass. */
  XXH3_state_t *hst;
  uint64_t hashed;                       /* [0, hashed) is in hst */
  size_t hblocks;                        /* blocks [0, hblocks) are */
  int hash_broken;
  hash_later later[HASH_LATER];          /* block k's deferred range in later[k % HASH_LATER] */
  char *hbuf;                            /* hash_range's buffer */
  pthread_mutex_t hmu;
  ps_profile_counts *counts;
  ps_profile_progress cb;
  void *ud;
  char *err;
  size_t errsize;
} pass;

/* A signature cell beyond shape.h's limits is damaged data: an error naming it. */
static int cell_limits(worker *w, const char *path, long line, const char *const *cell,
                       const size_t *len) {
  for (int c = PS_PC_IN_SHAPES; c < PS_PC_NCELLS; c++) {
    char why[96];
    if (len[c] >= PS_SHAPE_MAX_SLOTS && ps_shape_over_limit(cell[c], len[c], why, sizeof why)) {
      snprintf(w->err, sizeof w->err, "%s:%ld: %s cell of %s", path, line, column_names[c], why);
      return -1;
    }
  }
  return 0;
}

/* Room for len more bytes in b's arena, and 16 after them (copy_cell's whole loads). */
static char *arena_room(block *b, size_t len) {
  if (b->narena + len + 16 > b->caparena) {
    size_t c = b->caparena ? b->caparena : 1u << 20;
    while (c < b->narena + len + 16) c *= 2;
    char *a = realloc(b->arena, c);
    if (a == NULL) return NULL;
    b->arena = a;
    b->caparena = c;
  }
  return b->arena + b->narena;
}

/* A scanner's field (16 bytes readable from its start: csvscan.h) to d, with room for 16 more:
 * the short cells (states, cores, dtypes, formats) in one 16-byte move, not a call. */
static inline char *copy_cell(char *d, const char *s, size_t len) {
  if (len == 0) return d;   /* maybe the "" of a column the file lacks: nothing to read */
  memcpy(d, s, 16);
  if (len > 16) memcpy(d + 16, s + 16, len - 16);
  return d + len;
}

enum { ROW_OOM = -1, ROW_BAD = -2 };

/* Step 1 for one record: everything a row's fate and statistics need, in r. */
static int prepare_row(const pass *x, worker *w, block *b, const ps_scan_record *rec) {
  if (b->nrec == b->caprec) {
    size_t c = b->caprec ? b->caprec * 2 : 4096;
    rowrec *n = aligned_alloc(_Alignof(rowrec), c * sizeof *n);
    if (n == NULL) return ROW_OOM;
    if (b->nrec) memcpy(n, b->recs, b->nrec * sizeof *n);
    free(b->recs);
    b->recs = n;
    b->caprec = c;
  }
  rowrec *r = &b->recs[b->nrec];
  const char *cell[C_N];
  size_t len[C_N];
  static const char empty[16] = "";   /* a missing cell: as readable as a scanner's field */
  const char *const *fields = rec->fields;
  const size_t *lens = rec->lens, nf = rec->nfields;
  /* the counters side by side are read where the record has them (no copy of 25 cells) */
  int direct = x->metrics_at >= 0 && (size_t)x->metrics_at + PS_NCOUNTERS <= nf;
  /* a missing column's -1 is past any record; a constant count in the common case: unrolled */
#define CELLS(n)                                                      \
  for (int c = 0; c < (n); c++) {                                     \
    size_t i = (size_t)x->col[c];                                     \
    if (i < nf) cell[c] = fields[i], len[c] = lens[i];                \
    else cell[c] = empty, len[c] = 0;                                 \
  }
  if (direct) CELLS(C_METRIC0) else CELLS(C_N)
#undef CELLS
  const char *const *mcell = direct ? fields + x->metrics_at : cell + C_METRIC0;
  const size_t *mlen = direct ? lens + x->metrics_at : len + C_METRIC0;
  size_t tlen = len[PS_PC_TYPE];
  const char *type = ps_profile_kernel_type(cell[PS_PC_TYPE], &tlen);
  if (tlen == 0) {
    r->kind = K_NOTYPE;
    b->nrec++;
    return 0;
  }
  if (cell_limits(w, x->path, rec->line, cell, len) != 0) return ROW_BAD;
  size_t keylen;
  uint64_t kh[2];
  const char *key = ps_import_key_build(w->keys, type, tlen, cell + PS_PC_IN_SHAPES,
                                        len + PS_PC_IN_SHAPES, &keylen, kh);
  if (key == NULL) return ROW_OOM;
  r->h0 = kh[0];
  r->h1 = kh[1];
  r->start_ns = INT64_MIN;
  r->have_start = ps_num_us_to_ns(cell[C_START], len[C_START], &r->start_ns) == 0;
  r->check_dup = x->dedup && r->have_start && usable_id(cell[C_TASK], len[C_TASK]);
  if (r->check_dup) {
    char buf[256];
    size_t k = 0;
    for (int c = C_TASK; c <= C_DEVICE; c++) {   /* ids: short cells, one 16-byte move each */
      size_t l = len[c] < 64 ? len[c] : 64;
      copy_cell(buf + k, cell[c], l);
      k += l;
      buf[k++] = '\x1f';
    }
    r->dup = XXH3_64bits_withSeed(buf, k, (uint64_t)r->start_ns);
  }
  r->is_fia = tlen == sizeof PS_PROFILE_FIA_TYPE - 1 && memcmp(type, PS_PROFILE_FIA_TYPE, tlen) == 0;
  int na = ps_profile_is_na(cell[PS_PC_IN_SHAPES], len[PS_PC_IN_SHAPES]) ||
           ps_profile_is_na(cell[PS_PC_OUT_SHAPES], len[PS_PC_OUT_SHAPES]);
  int no_dims = !na && ps_profile_no_dims(cell[PS_PC_IN_SHAPES], len[PS_PC_IN_SHAPES]);
  int bad = 1;
  if (!na && !no_dims) {
    /* the counters and the duration in one call: the last counter and the duration make one
     * quad of the vector parser, not two single parses. Scanner fields, untrimmed
     * (PS_SCAN_PLAIN) and padded (csvscan.h); a column the file lacks is "". */
    const char *ns[PS_NCOUNTERS + 1];
    size_t nl[PS_NCOUNTERS + 1];
    memcpy(ns, mcell, PS_NCOUNTERS * sizeof *ns);
    memcpy(nl, mlen, PS_NCOUNTERS * sizeof *nl);
    ns[PS_NCOUNTERS] = cell[C_DURATION], nl[PS_NCOUNTERS] = len[C_DURATION];
    uint32_t ok = ps_num_finite_n(ns, nl, PS_NCOUNTERS + 1, 1, r->mv);
    bad = !(ok >> PS_NCOUNTERS & 1);
    r->valid = ok & ((1u << PS_NCOUNTERS) - 1);
  }
  r->kind = na ? K_NA : no_dims ? K_NODIMS : bad ? K_BAD : K_USE;
  if (r->kind == K_USE) {
    /* the key, the type and the other cells, one after the other in the block's arena */
    size_t need = keylen + tlen;
    for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++) need += len[c];
    char *d = arena_room(b, need);
    if (d == NULL) return ROW_OOM;
    r->off = (uint32_t)b->narena;
    r->keylen = (uint32_t)keylen;
    r->clen[PS_PC_TYPE] = (uint32_t)tlen;
    memcpy(d, key, keylen);
    memcpy(d + keylen, type, tlen);   /* maybe a renamed type's static text */
    d += keylen + tlen;
    for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++) {
      r->clen[c] = (uint32_t)len[c];
      d = copy_cell(d, cell[c], len[c]);
    }
    b->narena += need;
  }
  b->nrec++;
  return 0;
}

static void hash_block(pass *x, worker *w, size_t k, uint64_t start, int ok);

/* Step 1: parses the records of b that start in [start, b->nominal_end), lines numbered from
 * line. Sets b->status, b->end and b->lines; an error's text is in w->err. hash_k: the block's
 * number when its bytes go into the file's hash (hash_block), else -1 (a block read again). */
static void parse_block(pass *x, worker *w, block *b, uint64_t start, long line, long hash_k) {
  b->start = start;
  b->nrec = b->narena = 0;
  b->bad_rows = 0;
  b->status = B_OK;
  b->end = start;
  b->lines = 0;
  if (ps_scan_seek(w->scan, start, line) != 0) {
    snprintf(w->err, sizeof w->err, "%s", ps_scan_error(w->scan));
    b->status = B_SCAN;
    if (hash_k >= 0) hash_block(x, w, (size_t)hash_k, start, 0);
    return;
  }
  if (hash_k >= 0) hash_block(x, w, (size_t)hash_k, start, 1);
  ps_scan_record rec;
  int st = 1;
  while (ps_scan_offset(w->scan) < b->nominal_end && (st = ps_scan_next(w->scan, &rec)) > 0) {
    int a = prepare_row(x, w, b, &rec);
    if (a != 0) {
      if (a == ROW_BAD) b->bad_rows = 1, b->status = B_BAD;
      else b->status = B_OOM, snprintf(w->err, sizeof w->err, "%s: out of memory", x->path);
      break;
    }
  }
  if (b->status == B_OK && st < 0) {
    snprintf(w->err, sizeof w->err, "%s", ps_scan_error(w->scan));
    b->status = B_SCAN;
  }
  b->end = ps_scan_offset(w->scan);
  b->lines = ps_scan_line(w->scan) - line;
}

/* Block k's bytes into the file's hash, in file order: from its start to the next block's
 * start as guess_and_parse will guess it (the first line end within GUESS_WINDOW bytes from
 * its nominal start less one), from the scanner's buffer before any record is cut. When the
 * blocks before it are not all in yet, it waits for none: its range is noted (deferred), and
 * the thread that brings the chain up to it reads those bytes from the file (pread) and goes
 * on. ok 0, or bytes not at hand: the chain gives up, and the hash is taken after the pass.
 * Every block claimed comes here once. */
static int hash_range(pass *x, uint64_t from, uint64_t to);

static void hash_block(pass *x, worker *w, size_t k, uint64_t start, int ok) {
  const char *p = NULL;
  size_t n = 0;
  uint64_t to = 0;
  if (ok && ps_scan_peek(w->scan, &p, &n) != 0) ok = 0;
  if (ok && k + 1 == x->nblocks) {
    to = x->size;
    ok = start + n == x->size;   /* the whole rest is at hand */
  } else if (ok) {
    uint64_t nominal = x->data_start + (uint64_t)(k + 1) * x->bsize;
    if (nominal - 1 < start) {
      to = start;   /* its start guess passed the next block's start: that one's is the same line end */
    } else {
      size_t from = (size_t)(nominal - 1 - start);
      const char *nl = from < n ? guess_line_end(p + from, n - from) : NULL;
      ok = nl != NULL;
      if (ok) to = start + (uint64_t)(nl - p) + 1;
    }
  }
  pthread_mutex_lock(&x->hmu);
  if (x->hash_broken) {
    pthread_mutex_unlock(&x->hmu);
    return;
  }
  if (x->hblocks != k) {   /* not its turn: noted for the thread that brings the chain here */
    hash_later *d = &x->later[k % HASH_LATER];
    if (d->set) x->hash_broken = 1;   /* the chain is that far behind: give up */
    else *d = (hash_later){k, start, to, ok, 1};
    pthread_mutex_unlock(&x->hmu);
    return;
  }
  if (!ok || x->hashed != start) x->hash_broken = 1;
  else ps_xxh3_update_wide(x->hst, p, (size_t)(to - start)), x->hashed = to;
  x->hblocks = k + 1;
  /* the deferred blocks that follow, from the file */
  for (hash_later *d; !x->hash_broken && (d = &x->later[x->hblocks % HASH_LATER])->set && d->k == x->hblocks;) {
    if (!d->ok || x->hashed != d->from || hash_range(x, d->from, d->to) != 0) x->hash_broken = 1;
    else x->hashed = d->to;
    d->set = 0;
    x->hblocks++;
  }
  pthread_mutex_unlock(&x->hmu);
}

/* Step 1 for block k of the file: its start guessed at the first line start at or after
 * its nominal start (step 2 checks it). */
static void guess_and_parse(pass *x, worker *w, block *b, size_t k) {
  uint64_t nominal = x->data_start + (uint64_t)k * x->bsize;
  b->nominal_end = k + 1 == x->nblocks ? UINT64_MAX : nominal + x->bsize;
  uint64_t start = nominal;
  if (k > 0) {
    char buf[GUESS_WINDOW];
    int fd = x->fd;
    /* a row is some hundred bytes: a page first, the whole buffer when it holds no line end */
    ssize_t n = fd < 0 ? -1 : pread(fd, buf, 4096, (off_t)(nominal - 1));
    if (n == 4096 && memchr(buf, '\n', 4096) == NULL) n = pread(fd, buf, sizeof buf, (off_t)(nominal - 1));
    const char *nl = n > 0 ? guess_line_end(buf, (size_t)n) : NULL;
    if (nl == NULL) {   /* no line end near: step 2 reads it */
      b->status = B_GUESS;
      b->nrec = 0;
      if (x->hst) hash_block(x, w, k, nominal, 0);
      return;
    }
    start = nominal + (uint64_t)(nl - buf);
  }
  parse_block(x, w, b, start, k == 0 ? x->line0 : 1, x->hst ? (long)k : -1);
}

/* Step 2 for one block, in file order: the duplicate window, FIA ordinals and counts. */
static void walk_block(pass *x, block *b) {
  ps_profile *p = x->p;
  ps_profile_counts *counts = x->counts;
  b->first_row = counts->rows;
  counts->rows += b->nrec + b->bad_rows;
  for (size_t i = 0; i < b->nrec; i++) {
    rowrec *r = &b->recs[i];
    if (i + 8 < b->nrec && p->seen[0] && b->recs[i + 8].check_dup) {
      size_t h = (size_t)(b->recs[i + 8].dup ? b->recs[i + 8].dup : 1) & (DUP_SLOTS - 1);
      __builtin_prefetch(&p->seen[0][h]);
      __builtin_prefetch(&p->seen[1][h]);
    }
    if (r->kind == K_NOTYPE) {
      counts->no_type++;
      r->kind = K_SKIP;
      continue;
    }
    if (r->check_dup && seen_before(p, r->dup)) {
      counts->duplicates++;
      r->kind = K_SKIP;
      continue;
    }
    r->fia_ordinal = r->is_fia ? (long)counts->fia_rows++ : -1;
    switch (r->kind) {
    case K_NA: counts->na_shapes++, r->kind = K_SKIP; break;
    case K_NODIMS: counts->no_shapes++, r->kind = K_SKIP; break;
    case K_BAD: counts->bad_duration++, r->kind = K_SKIP; break;
    default: counts->used++; break;
    }
  }
}

/* Step 2 for block k (the next in file order), by the thread t that took it. */
static void walk_step(pass *x, int t, size_t k) {
  block *b = &x->blk[k % x->nbuf];
  if (b->status != B_OK || b->start != x->expect) parse_block(x, &x->w[t], b, x->expect, x->line, -1);
  walk_block(x, b);
  x->expect = b->end;
  x->line += b->lines;
  if (b->status != B_OK) {   /* read again from the right place: the error is real */
    snprintf(x->err, x->errsize, "%s", x->w[t].err);
    x->rc = -1;
  }
}

/* The group of a key in share table q or in p (earlier files), or NULL. */
static inline group *group_of(const ps_profile *p, const ps_profile *q, const uint64_t h[2]) {
  group *g = find(q, h);
  if (g == NULL && p->ngroups) g = find(p, h);
  return g;
}

/* Step 3: the used rows of share s in block k, in file order. */
static void add_step(pass *x, int s, size_t k) {
  ps_profile *p = x->p, *q = x->q[s];
  uint64_t S = (uint64_t)x->T;
#define MINE(r) ((r)->kind == K_USE && (S == 1 || (r)->h1 % S == (uint64_t)s))
  const block *b = &x->blk[k % x->nbuf];
  /* Rows land on random groups: the slot of row i + 16 and the group of row i + 8 are
   * fetched ahead (ring: the groups found), and the duration slot of row i + 2. */
  group *ring[16];
  for (size_t i = 0; i < b->nrec; i++) {
    if (i + 16 < b->nrec && MINE(&b->recs[i + 16]))
      __builtin_prefetch(&q->slots[(size_t)b->recs[i + 16].h0 & (q->nslots - 1)]);
    if (i + 8 < b->nrec) {
      const rowrec *a = &b->recs[i + 8];
      group *ga = NULL;
      if (MINE(a)) {
        uint64_t ha[2] = {a->h0, a->h1};
        if ((ga = group_of(p, q, ha)) != NULL)
          for (int l = 0; l < 6; l++) __builtin_prefetch((char *)ga + 64 * l, 1);
      }
      ring[(i + 8) & 15] = ga;
    }
    if (i + 2 < b->nrec && i + 2 >= 8 && ring[(i + 2) & 15] != NULL) {
      const group *gc = ring[(i + 2) & 15];
      if (gc->durs) __builtin_prefetch(gc->durs + gc->ndur, 1);
    }
    const rowrec *r = &b->recs[i];
    if (!MINE(r)) continue;
    uint64_t h[2] = {r->h0, r->h1};
    int created = 0;
    /* the ring's NULL may be a group an earlier row of this block made since */
    group *g = i >= 8 ? ring[i & 15] : NULL;
    if (g == NULL && p->ngroups) g = find(p, h);
    if (g == NULL) {
      g = find_or_add(q, b->arena + r->off, r->keylen, h, &created);
      if (g == NULL) goto oom;
      if (created) g->first_row = b->first_row + i;
    }
    if (add_duration(&q->str, g, r->DUR) != 0) goto oom;
    /* the first non-empty value of each cell */
    const char *cs = b->arena + r->off + r->keylen;
    if (created && set_cell(&q->str, g, PS_PC_TYPE, cs, r->clen[PS_PC_TYPE]) != 0) goto oom;
    if (g->filled != (1u << PS_PC_NCELLS) - 1) {
      const char *c0 = cs + r->clen[PS_PC_TYPE];
      for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++) {
        if (!(g->filled & (1u << c)) && (created || r->clen[c]) && set_cell(&q->str, g, c, c0, r->clen[c]) != 0)
          goto oom;
        c0 += r->clen[c];
      }
    }
    if (r->valid == (1u << PS_NCOUNTERS) - 1) {
      for (int m = 0; m < PS_NCOUNTERS; m++) g->msum[m] += r->mv[m];
      g->mall++;
    } else if (r->valid) {
      if (g->mpart == NULL && (g->mpart = calloc(PS_NCOUNTERS, sizeof *g->mpart)) == NULL) goto oom;
      for (int m = 0; m < PS_NCOUNTERS; m++)
        if (r->valid & (1u << m)) {
          g->msum[m] += r->mv[m];
          g->mpart[m]++;
        }
    }
    if (r->have_start) {
      if (g->first_ns == INT64_MIN || r->start_ns < g->first_ns) g->first_ns = r->start_ns;
      if (g->last_ns == INT64_MIN || r->start_ns > g->last_ns) g->last_ns = r->start_ns;
    }
    if (r->fia_ordinal >= 0 && g->fia_file < 0) {
      g->fia_file = x->file_index;
      g->fia_ordinal = r->fia_ordinal;
    }
  }
  return;
#undef MINE
oom:
  atomic_store(&x->oom, 1);
}

/* After the pass: the shares' groups join p in the order of their first rows. Each share
 * made its groups in file order, so that order is a merge of the shares'. The groups stay
 * where they are (p takes their chunks); p's slots are filled when a later file needs them
 * (refill_slots), not here: a single file's import never looks a key up again. */
static int adopt_all(pass *x) {
  ps_profile *p = x->p;
  size_t n = 0, at[MAX_THREADS] = {0};
  for (int s = 0; s < x->T; s++) n += x->q[s]->ngroups;
  if (n == 0) return 0;
  if (p->ngroups + n >= UINT32_MAX - 1) return -1;
  if (ps_grow((void **)&p->groups, &p->capgroups, p->ngroups + n, sizeof *p->groups) != 0) return -1;
  group **out = p->groups + p->ngroups;
  for (size_t k = 0; k < n; k++) {
    group *best = NULL;
    int bs = 0;
    for (int s = 0; s < x->T; s++) {
      const ps_profile *q = x->q[s];
      if (at[s] < q->ngroups && (best == NULL || q->groups[at[s]]->first_row < best->first_row))
        best = q->groups[at[s]], bs = s;
    }
    at[bs]++;
    out[k] = best;
  }
  p->ngroups += n;
  p->stale_slots = 1;
  for (int s = 0; s < x->T; s++) {   /* p owns their groups now */
    ps_profile *q = x->q[s];
    group_chunk **tail = &q->chunks;
    while (*tail) tail = &(*tail)->next;
    *tail = p->chunks;
    p->chunks = q->chunks;
    q->chunks = NULL;
    q->ngroups = 0;
  }
  return 0;
}

/* p's slots for every group, before a pass looks keys up in them (its threads only read). */
static int refill_slots(ps_profile *p) {
  if (!p->stale_slots) return 0;
  size_t n = 1024;
  while (n < 2 * p->ngroups + 2) n *= 2;   /* at most half full, as find_or_add keeps it */
  if (fill_table(p, n) != 0) return -1;
  p->stale_slots = 0;
  return 0;
}

enum { T_NONE, T_PARSE, T_WALK, T_ADD, T_END };

/* The next task for thread t (under x->mu): the walk first (every add waits for it), then an
 * add (it frees a block), then a parse (when a block is free). */
static int next_task(pass *x, int t, size_t *k, int *s) {
  if (x->stop || atomic_load(&x->oom)) return T_END;
  size_t least = x->last;   /* every share has added the blocks before it */
  for (int j = 0; j < x->T; j++)
    if (x->added[j] < least) least = x->added[j];
  if (least == x->last) return T_END;
  if (!x->walking && x->walked < x->last && x->walked < x->claimed && x->blk[x->walked % x->nbuf].parsed) {
    x->walking = 1;
    *k = x->walked;
    return T_WALK;
  }
  for (int j = 0; j < x->T; j++) {   /* its own share first */
    int sj = (t + j) % x->T;
    if (!x->adding[sj] && x->added[sj] < x->walked) {
      x->adding[sj] = 1;
      *s = sj;
      *k = x->added[sj];
      return T_ADD;
    }
  }
  if (x->claimed < x->last && x->claimed < least + x->nbuf) {
    *k = x->claimed++;
    x->blk[*k % x->nbuf].parsed = 0;
    return T_PARSE;
  }
  return T_NONE;
}

static void run_pass(pass *x, int t) {
  pthread_mutex_lock(&x->mu);
  for (;;) {
    size_t k = 0;
    int s = 0, task = next_task(x, t, &k, &s);
    if (task == T_END) break;
    if (task == T_NONE) {
      pthread_cond_wait(&x->cv, &x->mu);
      continue;
    }
    pthread_mutex_unlock(&x->mu);
    if (task == T_PARSE) guess_and_parse(x, &x->w[t], &x->blk[k % x->nbuf], k);
    else if (task == T_WALK) walk_step(x, t, k);
    else add_step(x, s, k);
    pthread_mutex_lock(&x->mu);
    if (task == T_PARSE) x->blk[k % x->nbuf].parsed = 1;
    else if (task == T_WALK) {   /* after an error, its rows before the bad one are the last added */
      x->walking = 0;
      x->reached = x->expect;
      if (++x->walked, x->rc != 0) x->last = x->walked;
    }
    else x->adding[s] = 0, x->added[s]++;
    pthread_cond_broadcast(&x->cv);
    if (t == 0 && x->cb && x->reached != x->shown) {   /* Lua's callback: the calling thread only */
      x->shown = x->reached;
      pthread_mutex_unlock(&x->mu);
      x->cb(x->ud, x->shown < x->size ? x->shown : x->size, x->size);
      pthread_mutex_lock(&x->mu);
    }
  }
  x->stop = 1;   /* an error or the end: the others stop too */
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

typedef struct thread_arg { pass *x; int t; } thread_arg;

/* The file's bytes [from, to) into x->hst, read with pread: 0, or -1. */
static int hash_range(pass *x, uint64_t from, uint64_t to) {
  enum { PIECE = 256 << 10 };
  if (x->hbuf == NULL && (x->hbuf = malloc(PIECE)) == NULL) return -1;
  while (from < to) {
    size_t want = to - from < PIECE ? (size_t)(to - from) : PIECE;
    ssize_t n = x->fd < 0 ? -1 : pread(x->fd, x->hbuf, want, (off_t)from);
    if (n <= 0) return -1;
    ps_xxh3_update_wide(x->hst, x->hbuf, (size_t)n);
    from += (uint64_t)n;
  }
  return 0;
}

/* The bytes before the first record (the header, a BOM) into x->hst: 0, or -1. */
static int hash_header(pass *x) {
  XXH3_64bits_reset(x->hst);
  if (hash_range(x, 0, x->data_start) != 0) return -1;
  x->hashed = x->data_start;
  return 0;
}

/* Room for file's hash in p; -1 when out of memory. */
static int hash_room(ps_profile *p, long file) {
  if ((size_t)file < p->cap_hash) return 0;
  size_t c = p->cap_hash ? 2 * p->cap_hash : 8;
  while (c <= (size_t)file) c *= 2;
  uint64_t *h = realloc(p->file_hash, c * sizeof *h);
  if (h == NULL) return -1;
  p->file_hash = h;
  unsigned char *d = realloc(p->file_hashed, c);
  if (d == NULL) return -1;
  memset(d + p->cap_hash, 0, c - p->cap_hash);
  p->file_hashed = d;
  p->cap_hash = c;
  return 0;
}

static void *pass_thread(void *arg) {
  thread_arg *a = arg;
  pthread_mutex_lock(&a->x->mu);
  while (!a->x->go) pthread_cond_wait(&a->x->cv, &a->x->mu);
  pthread_mutex_unlock(&a->x->mu);
  if (a->t >= a->x->T) return NULL;
  run_pass(a->x, a->t);
  return NULL;
}

static int threads_for(const ps_profile *p, uint64_t size) {
  long cores = ps_online_cores();
  long n = p->threads > 0 ? p->threads : cores > 0 ? cores : 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  uint64_t least = p->split_min ? p->split_min : SPLIT_MIN;
  return size < least ? 1 : (int)n;
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
  ps_scan_set_chunk(r, 64u << 10);   /* the header: not a first read of 4 MiB (3 ms at 300 MB) */
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
  if (refill_slots(p) != 0) {
    snprintf(err, errsize, "%s: out of memory", path);
    ps_scan_close(r);
    return -1;
  }
  if (p->seen[0]) {
    memset(p->seen[0], 0, DUP_SLOTS * sizeof(uint64_t));
    memset(p->seen[1], 0, DUP_SLOTS * sizeof(uint64_t));
  }
  p->nseen = 0;
  uint64_t size = ps_scan_file_size(r);
  pass *x = calloc(1, sizeof *x);
  if (x == NULL) {
    snprintf(err, errsize, "%s: out of memory", path);
    ps_scan_close(r);
    return -1;
  }
  x->p = p;
  x->path = path;
  x->fd = open(path, O_RDONLY | O_CLOEXEC);   /* -1: every block but the first is read by the walk */
  x->col = col;
  x->metrics_at = col[C_METRIC0];
  for (int m = 0; m < PS_NCOUNTERS; m++)
    if (col[C_METRIC0 + m] < 0 || col[C_METRIC0 + m] != col[C_METRIC0] + m) x->metrics_at = -1;
  x->dedup = col[C_TASK] >= 0 && col[C_START] >= 0;
  x->file_index = p->nfiles++;
  x->data_start = x->expect = ps_scan_offset(r);
  x->line0 = x->line = ps_scan_line(r);
  x->size = size;
  x->counts = counts;
  x->cb = cb;
  x->ud = ud;
  x->err = err;
  x->errsize = errsize;
  ps_scan_close(r);
  uint64_t data = size > x->data_start ? size - x->data_start : 0;
  int T = threads_for(p, size);
  uint64_t bs = p->block ? p->block : BLOCK;
  if (T > 1 && (data + (uint64_t)T - 1) / (uint64_t)T < bs) bs = (data + (uint64_t)T - 1) / (uint64_t)T;
  if (bs == 0) bs = 1;
  x->bsize = bs;
  x->nblocks = data ? (size_t)((data + bs - 1) / bs) : 1;
  if ((size_t)T > x->nblocks) T = (int)x->nblocks;
  int ready = 1;
  /* the scanners cut out only the columns read (39 of kernel_details' 47), and leave the
   * numbers where they lie (the number parser trims for itself: csvscan.h, PS_SCAN_PLAIN) */
  unsigned char want[512] = {0};
  int nwant = 0;
  for (int c = 0; c < C_N; c++)
    if (col[c] >= 0 && col[c] < (int)sizeof want) {
      int number = c == C_DURATION || c >= C_METRIC0;
      if (!want[col[c]] || !number) want[col[c]] = number ? PS_SCAN_PLAIN : 1;
      nwant = col[c] + 1 > nwant ? col[c] + 1 : nwant;
    }
  int all = 0;
  for (int c = 0; c < C_N; c++) all |= col[c] >= (int)sizeof want;   /* a very wide file: all */
  for (int t = 0; t < T && ready; t++) {
    x->w[t].scan = ps_scan_open(path, err, errsize);
    x->w[t].keys = ps_import_key_new();
    x->q[t] = ps_profile_new();
    ready = x->w[t].scan && x->w[t].keys && x->q[t] &&
            (all || ps_scan_select(x->w[t].scan, want, (size_t)nwant) == 0);
    if (x->w[t].scan) ps_scan_set_chunk(x->w[t].scan, CHUNK);
  }
  int rc = 0;
  int hashing = ready && p->hash_files;
  if (hashing) {
    ready = hash_room(p, x->file_index) == 0;
    /* the header's bytes first; the blocks' follow as they are read (hash_block) */
    if (ready && (x->hst = XXH3_createState()) != NULL && hash_header(x) != 0) x->hash_broken = 1;
    pthread_mutex_init(&x->hmu, NULL);
  }
  if (!ready) {
    if (x->w[0].scan) snprintf(err, errsize, "%s: out of memory", path);
    rc = -1;
  } else {
    /* threads 1..T-1 wait for the go: if one cannot start, the pass runs with fewer */
    pthread_t th[MAX_THREADS];
    thread_arg args[MAX_THREADS];
    int started = 1;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    for (; started < T; started++) {
      args[started] = (thread_arg){x, started};
      if (pthread_create(&th[started], NULL, pass_thread, &args[started]) != 0) break;
    }
    x->T = started;
    x->nbuf = started > 1 ? NBUF * (size_t)started : 1;
    x->last = x->nblocks;
    pthread_mutex_lock(&x->mu);
    x->go = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    run_pass(x, 0);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    rc = x->rc;
    if ((adopt_all(x) != 0 || atomic_load(&x->oom)) && rc == 0) {
      snprintf(err, errsize, "%s: out of memory", path);
      rc = -1;
    }
  }
  if (hashing) {
    uint64_t h = 0;
    int ok = 0;
    if (x->hst && !x->hash_broken && x->hashed == x->size) h = XXH3_64bits_digest(x->hst), ok = 1;
    else if (rc == 0) ok = ps_sig_hash_file(path, &h) == 0, p->hash_rereads++;   /* the chain gave up: the file once more */
    p->file_hash[x->file_index] = h;
    p->file_hashed[x->file_index] = (unsigned char)ok;
    XXH3_freeState(x->hst);
    free(x->hbuf);
    pthread_mutex_destroy(&x->hmu);
  }
  for (int t = 0; t < MAX_THREADS; t++) {
    ps_scan_close(x->w[t].scan);
    ps_import_key_free(x->w[t].keys);
    if (x->q[t]) strings_give(&p->str, &x->q[t]->str);   /* p's groups point into them */
    ps_profile_free(x->q[t]);
    for (int h = 0; h < NBUF; h++) free(x->blk[h * MAX_THREADS + t].recs), free(x->blk[h * MAX_THREADS + t].arena);
  }
  if (x->fd >= 0) close(x->fd);
  free(x);
  if (cb) cb(ud, size, size);
  add_counts(&p->totals, counts);
  return rc;
}

/* ---- statistics ----------------------------------------------------------------------- */

/* The k-th smallest of a[0..n) (Hoare's selection, median-of-three pivots): afterwards a[k]
 * holds it, a[0..k) nothing larger and a[k+1..n) nothing smaller. The median needs only its
 * one or two middle values, not the sorted durations (a sort was 4% of the import). */
static void select_kth(double *a, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (hi > lo) {
    size_t mid = lo + (hi - lo) / 2;
    double x = a[lo], y = a[mid], z = a[hi];
    double pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
    size_t i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (pivot < a[j]) j--;
      if (i <= j) {
        double t = a[i];
        a[i] = a[j], a[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}

/* The median of a[0..n) (n > 0) as the sorted list gives it; reorders a. */
static double median_of(double *a, size_t n) {
  size_t h = n / 2;
  select_kth(a, n, h);
  if (n % 2) return a[h];
  double below = a[0];   /* the largest of a[0..h): the sorted list's a[h - 1] */
  for (size_t k = 1; k < h; k++) if (a[k] > below) below = a[k];
  return (below + a[h]) / 2;
}

const char *ps_profile_group_type(const ps_profile *p, size_t i) {
  /* its caller walks the groups in order, one cache miss a group (they lie in the chunks of
   * the pass's shares, interleaved): the group 8 ahead, and the type of the one 4 ahead */
  if (i + 8 < p->ngroups) __builtin_prefetch(&p->groups[i + 8]->cells[PS_PC_TYPE]);
  if (i + 4 < p->ngroups) __builtin_prefetch(p->groups[i + 4]->cells[PS_PC_TYPE]);
  return i < p->ngroups && p->groups[i]->cells[PS_PC_TYPE] ? p->groups[i]->cells[PS_PC_TYPE] : "";
}

int ps_profile_group(ps_profile *p, size_t i, int stats, ps_profile_group_info *info) {
  if (i >= p->ngroups) return -1;
  group *g = p->groups[i];
  if (!stats)   /* with stats every member is set below */
    memset(&info->mean, 0, offsetof(ps_profile_group_info, first_start_ns) - offsetof(ps_profile_group_info, mean));
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
  info->median = g->ndur == 0 ? NAN : median_of(g->durs, g->ndur);
  info->min = g->min;
  info->max = g->max;
  for (int m = 0; m < PS_NCOUNTERS; m++) {
    uint64_t n = (uint64_t)g->mall + (g->mpart ? g->mpart[m] : 0);
    info->metric_count[m] = n;
    info->metric_mean[m] = n ? g->msum[m] / (double)n : NAN;
  }
  return 0;
}

void ps_profile_prefetch(const ps_profile *p, const size_t *idx, size_t k, size_t to, int durs) {
  /* a group is 9 cache lines, its cells and durations more elsewhere, none of them near the
   * previous row's: waiting on them was most of a row's time. Two steps: the groups 8 rows
   * ahead, then (their pointers read by now) the cells and durations of those 4 ahead. */
  enum { GROUP_AHEAD = 8, DATA_AHEAD = 4 };
  if (k + GROUP_AHEAD < to && idx[k + GROUP_AHEAD] < p->ngroups) {
    const char *g = (const char *)p->groups[idx[k + GROUP_AHEAD]];
    for (size_t o = 0; o < sizeof(group); o += 64) __builtin_prefetch(g + o);
  }
  if (k + DATA_AHEAD < to && idx[k + DATA_AHEAD] < p->ngroups) {
    const group *g = p->groups[idx[k + DATA_AHEAD]];
    for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++)
      if (g->cells[c]) __builtin_prefetch(g->cells[c]);
    if (durs && g->durs)
      for (size_t o = 0; o < g->ndur * sizeof *g->durs && o < 1024; o += 64)
        __builtin_prefetch((const char *)g->durs + o);
  }
}

/* ---- database rows as text ----------------------------------------------------------- */

typedef struct rows_job {
  ps_profile *p;
  const size_t *idx;
  size_t from, to;        /* rows [from, to) of idx */
  size_t *off;            /* their offsets, relative to this job's text (NULL: not wanted) */
  const char *eol;        /* each row's line end (NULL: none) */
  size_t eollen;
  char *text;
  size_t len, cap;
  int rc;
} rows_job;

static void *rows_work(void *arg) {
  rows_job *j = arg;
  for (size_t k = j->from; k < j->to; k++) {
    ps_profile_group_info g;
    ps_profile_prefetch(j->p, j->idx, k, j->to, 1);
    ps_profile_group(j->p, j->idx[k], 1, &g);
    size_t lens[PS_PC_NCELLS], need = (3 + PS_NCOUNTERS) * (PS_NUM_FMT6_MAX + 1) + j->eollen;
    for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++)
      lens[c] = strlen(g.cells[c]), need += PS_CSV_QUOTED_MAX(lens[c]) + 1;
    if (ps_grow((void **)&j->text, &j->cap, j->len + need, 1) != 0) {
      j->rc = -2;
      return NULL;
    }
    if (j->off) j->off[k - j->from] = j->len;
    char *w = j->text + j->len;
    for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++) {
      if (c > PS_PC_OP_STATE) *w++ = ',';
      w += ps_csv_quote(w, g.cells[c], lens[c]);
    }
    double num[3 + PS_NCOUNTERS] = {g.mean, g.median, g.std};   /* NaN: an empty cell */
    memcpy(num + 3, g.metric_mean, sizeof g.metric_mean);
    w += ps_num_fmt6_cells(w, num, 3 + PS_NCOUNTERS);
    if (j->eol) memcpy(w, j->eol, j->eollen), w += j->eollen;
    j->len = (size_t)(w - j->text);
  }
  return NULL;
}

#define ROWS_PER_THREAD_MIN 128   /* fewer rows are not worth a thread (one call per kernel type) */

int ps_profile_row_threads(const ps_profile *p, size_t n) {
  long cores = ps_online_cores();
  long T = p->threads > 0 ? p->threads : cores > 0 ? cores : 1;
  if (T > MAX_THREADS) T = MAX_THREADS;
  if (n < 2 * ROWS_PER_THREAD_MIN) T = 1;
  else if ((size_t)T > n / ROWS_PER_THREAD_MIN) T = (long)(n / ROWS_PER_THREAD_MIN);
  return (int)T;
}

void ps_profile_run(int T, void *(*fn)(void *), void *jobs, size_t jobsize) {
  pthread_t th[MAX_THREADS];
  int started[MAX_THREADS] = {0};
  if (T > MAX_THREADS) T = MAX_THREADS;
  char *j = jobs;
  for (int t = 1; t < T; t++) started[t] = pthread_create(&th[t], NULL, fn, j + (size_t)t * jobsize) == 0;
  fn(j);
  for (int t = 1; t < T; t++) {
    if (started[t]) pthread_join(th[t], NULL);
    else fn(j + (size_t)t * jobsize);   /* no thread: this one does it */
  }
}

/* The thread count for rows idx[0..n), or -1 (*bad: the index out of range), -2 (memory). */
static long rows_threads(ps_profile *p, const size_t *idx, size_t n, size_t *bad) {
  /* the statistics reorder a group's durations: a group asked for twice is done by one thread */
  unsigned char *seen = calloc(p->ngroups ? p->ngroups : 1, 1);
  if (seen == NULL) return -2;
  int dup = 0;
  for (size_t k = 0; k < n; k++) {
    if (idx[k] >= p->ngroups) {
      *bad = idx[k];
      free(seen);
      return -1;
    }
    dup |= seen[idx[k]];
    seen[idx[k]] = 1;
  }
  free(seen);
  return dup ? 1 : ps_profile_row_threads(p, n);
}

/* Renders rows idx[0..n) on T threads into job[0..T) (off: the rows' offsets, or NULL). */
static int rows_render(ps_profile *p, const size_t *idx, size_t n, long T, size_t *off,
                       const char *eol, size_t eollen, rows_job *job) {
  for (long t = 0; t < T; t++)
    job[t] = (rows_job){p, idx, n * (size_t)t / (size_t)T, n * (size_t)(t + 1) / (size_t)T,
                        off ? off + n * (size_t)t / (size_t)T : NULL, eol, eol ? eollen : 0,
                        NULL, 0, 0, 0};
  ps_profile_run((int)T, rows_work, job, sizeof *job);
  int rc = 0;
  for (long t = 0; t < T; t++)
    if (job[t].rc != 0) rc = job[t].rc;
  if (rc != 0)
    for (long t = 0; t < T; t++) free(job[t].text), job[t].text = NULL;
  return rc;
}

_Static_assert(PS_PROFILE_MAX_PIECES >= MAX_THREADS, "a piece per thread");

int ps_profile_rows_pieces(ps_profile *p, const size_t *idx, size_t n, const char *eol,
                           size_t eollen, char **texts, size_t *lens, size_t *bad) {
  long T = rows_threads(p, idx, n, bad);
  if (T < 0) return (int)T;
  rows_job job[MAX_THREADS];
  int rc = rows_render(p, idx, n, T, NULL, eol, eollen, job);
  if (rc != 0) return rc;
  for (long t = 0; t < T; t++) texts[t] = job[t].text, lens[t] = job[t].len;
  return (int)T;
}

int ps_profile_rows_text(ps_profile *p, const size_t *idx, size_t n, char **text, size_t *off,
                         size_t *bad) {
  *text = NULL;
  long T = rows_threads(p, idx, n, bad);
  if (T < 0) return (int)T;
  rows_job job[MAX_THREADS];
  int rc = rows_render(p, idx, n, T, off, NULL, 0, job);
  if (rc != 0) return rc;
  size_t total = 0;
  for (long t = 0; t < T; t++) total += job[t].len;
  if (T == 1) {
    *text = job[0].text;
    off[n] = job[0].len;
    return 0;
  }
  char *all = malloc(total ? total : 1);
  if (all == NULL) rc = -2;
  size_t at = 0;
  for (long t = 0; t < T; t++) {
    if (rc == 0) {
      memcpy(all + at, job[t].text, job[t].len);
      for (size_t k = job[t].from; k < job[t].to; k++) off[k] += at;
      at += job[t].len;
    }
    free(job[t].text);
  }
  if (rc != 0) return rc;
  off[n] = at;
  *text = all;
  return 0;
}

/* ---- rows rendered ahead --------------------------------------------------------------- */

#define RENDER_CHUNK 512   /* rows a work item: a list's items are shared out among the threads */
#define RENDER_AHEAD 2     /* lists the workers may render past the one taken (memory: a few MB) */

typedef struct render_item {
  size_t list, from, to;   /* rows idx[from, to), of list `list` */
  char *text;
  size_t len;
  size_t *off;             /* the rows' offsets in text (to - from + 1), for a list with them */
  int done, rc;
} render_item;

struct ps_profile_render {
  ps_profile *p;
  size_t *idx;              /* every list's group indices, one list after the other */
  size_t *first;            /* list i's items: item[first[i], first[i + 1]) */
  unsigned char *taken;     /* list i has been taken */
  unsigned char *offs;      /* list i is rendered without line ends, with the rows' offsets */
  size_t nlists, nitems;
  render_item *item;
  size_t next;              /* the first item no thread has started */
  size_t limit;             /* the workers start no item of a list >= limit */
  char eol[8];
  size_t eollen;
  int stop, nthreads;
  pthread_mutex_t mu;
  pthread_cond_t more;      /* for the workers: limit moved, or stop */
  pthread_cond_t done;      /* an item is done */
  pthread_t th[MAX_THREADS];
};

/* Renders item k (r->mu held on entry and on return; released while it works). */
static void render_item_do(ps_profile_render *r, size_t k) {
  render_item *it = &r->item[k];
  pthread_mutex_unlock(&r->mu);
  size_t n = it->to - it->from;
  size_t *off = r->offs[it->list] ? malloc((n + 1) * sizeof *off) : NULL;
  int plain = !r->offs[it->list];
  rows_job j = {r->p, r->idx, it->from, it->to, off, plain && r->eollen ? r->eol : NULL,
                plain ? r->eollen : 0, NULL, 0, 0, 0};
  /* one allocation for most items: a row is some 600 bytes (ps_grow doubles from here) */
  j.cap = (it->to - it->from) * 640;
  j.text = malloc(j.cap ? j.cap : 1);
  if (j.text == NULL) j.cap = 0;
  if (off == NULL && !plain) j.rc = -2;
  else rows_work(&j);
  if (off) off[n] = j.len;
  pthread_mutex_lock(&r->mu);
  it->text = j.text, it->len = j.len, it->off = off, it->rc = j.rc, it->done = 1;
  pthread_cond_broadcast(&r->done);
}

static void *render_work(void *arg) {
  ps_profile_render *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->stop && r->next < r->nitems && r->item[r->next].list >= r->limit)
      pthread_cond_wait(&r->more, &r->mu);
    if (r->stop || r->next >= r->nitems) break;
    render_item_do(r, r->next++);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

ps_profile_render *ps_profile_render_start(ps_profile *p, const size_t *idx, const size_t *start,
                                           size_t nlists, const unsigned char *offs,
                                           const char *eol, size_t eollen, int *err, size_t *bad) {
  *err = -2;
  if (eollen > sizeof ((ps_profile_render *)0)->eol) {
    *err = -3;
    return NULL;
  }
  size_t n = start[nlists], nitems = 0;
  long T = rows_threads(p, idx, n, bad);   /* the indices checked; 1 for a group asked twice */
  if (T < 0) {
    *err = (int)T;
    return NULL;
  }
  for (size_t i = 0; i < nlists; i++)
    nitems += (start[i + 1] - start[i] + RENDER_CHUNK - 1) / RENDER_CHUNK;
  ps_profile_render *r = calloc(1, sizeof *r);
  if (r == NULL || (r->idx = malloc((n ? n : 1) * sizeof *r->idx)) == NULL ||
      (r->first = malloc((nlists + 1) * sizeof *r->first)) == NULL ||
      (r->taken = calloc(nlists ? nlists : 1, 1)) == NULL ||
      (r->offs = calloc(nlists ? nlists : 1, 1)) == NULL ||
      (r->item = calloc(nitems ? nitems : 1, sizeof *r->item)) == NULL) {
    ps_profile_render_free(r);
    return NULL;
  }
  memcpy(r->idx, idx, n * sizeof *idx);
  r->p = p, r->nlists = nlists, r->nitems = nitems, r->limit = 1;
  if (offs) memcpy(r->offs, offs, nlists);
  memcpy(r->eol, eol ? eol : "", eol ? eollen : 0), r->eollen = eol ? eollen : 0;
  size_t m = 0;
  for (size_t i = 0; i < nlists; i++) {
    r->first[i] = m;
    for (size_t a = start[i]; a < start[i + 1]; a += RENDER_CHUNK, m++)
      r->item[m] = (render_item){i, a, a + RENDER_CHUNK < start[i + 1] ? a + RENDER_CHUNK : start[i + 1],
                                 NULL, 0, NULL, 0, 0};
  }
  r->first[nlists] = m;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->more, NULL);
  pthread_cond_init(&r->done, NULL);
  /* the taker is a thread too (it renders the items of the list it waits for) */
  for (long t = 0; t < T - 1; t++)
    if (pthread_create(&r->th[r->nthreads], NULL, render_work, r) == 0) r->nthreads++;
  *err = 0;
  return r;
}

const size_t *ps_profile_render_list(const ps_profile_render *r, size_t i, size_t *n) {
  *n = 0;
  if (i >= r->nlists || r->first[i] == r->first[i + 1]) return r->idx;
  size_t from = r->item[r->first[i]].from;
  *n = r->item[r->first[i + 1] - 1].to - from;
  return r->idx + from;
}

size_t ps_profile_render_pieces(const ps_profile_render *r, size_t i) {
  return i < r->nlists ? r->first[i + 1] - r->first[i] : 0;
}

int ps_profile_render_take(ps_profile_render *r, size_t i, char **texts, size_t *lens,
                           size_t **offs, size_t *rows) {
  if (i >= r->nlists || r->stop || r->taken[i]) return -1;
  r->taken[i] = 1;
  pthread_mutex_lock(&r->mu);
  if (r->limit < i + 1 + RENDER_AHEAD) {   /* the workers go on while this list is written */
    r->limit = i + 1 + RENDER_AHEAD;
    pthread_cond_broadcast(&r->more);
  }
  size_t a = r->first[i], b = r->first[i + 1];
  while (r->next < b) render_item_do(r, r->next++);
  int rc = 0;
  for (size_t k = a; k < b; k++) {
    while (!r->item[k].done) pthread_cond_wait(&r->done, &r->mu);
    if (r->item[k].rc != 0 || r->item[k].text == NULL) rc = -2;
    texts[k - a] = r->item[k].text, lens[k - a] = r->item[k].len;
    if (offs) offs[k - a] = r->item[k].off, rows[k - a] = r->item[k].to - r->item[k].from;
    else free(r->item[k].off);
    r->item[k].text = NULL, r->item[k].off = NULL;   /* the caller's now */
  }
  pthread_mutex_unlock(&r->mu);
  if (rc != 0)
    for (size_t k = a; k < b; k++) {
      free(texts[k - a]), texts[k - a] = NULL;
      if (offs) free(offs[k - a]), offs[k - a] = NULL;
    }
  return rc;
}

void ps_profile_render_stop(ps_profile_render *r) {
  if (r == NULL || r->p == NULL) return;
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  pthread_cond_broadcast(&r->more);
  pthread_mutex_unlock(&r->mu);
  for (int t = 0; t < r->nthreads; t++) pthread_join(r->th[t], NULL);
  r->nthreads = 0;
}

void ps_profile_render_free(ps_profile_render *r) {
  if (r == NULL) return;
  if (r->p) {   /* started: threads and locks exist */
    ps_profile_render_stop(r);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->more);
    pthread_cond_destroy(&r->done);
  }
  for (size_t k = 0; r->item && k < r->nitems; k++) free(r->item[k].text), free(r->item[k].off);
  free(r->item), free(r->first), free(r->taken), free(r->offs), free(r->idx), free(r);
}
