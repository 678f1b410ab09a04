/* Streaming aggregation of profiler kernel tables (torch_npu kernel_details*.csv and msprof
 * op_summary_*.csv) into per-kernel statistics.
 *
 * One pass per file, one record at a time: a row is keyed by the import key (import_key.h: the
 * kernel type and the shape, dtype and format cells as the export wrote them) through a hash
 * table of groups (docs/rules.md, Import). Per group we keep the count, the running sum (the
 * mean is sum / count, in row order, as the Python original did), the durations (8 bytes per
 * row, for the exact median and a two-pass standard deviation), per-counter sums and counts of
 * the valid values, the first and last start time as int64 nanoseconds, and the first
 * non-empty descriptive cells. Everything else is bounded by the number of groups.
 *
 * Rows are skipped, and counted by reason, when: the shapes are `N/A` (ops launched around
 * the graph engine), the Input Shapes have no dims at all (`""`, `";"`), the type is empty, the
 * duration is not a finite number, or the row is an exact duplicate of an earlier row of the
 * same file (same Task ID, Stream ID, Device_id and start time). */
#ifndef PS_PROFILE_H
#define PS_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"

#define PS_PROFILE_FIA_TYPE "FusedInferAttentionScore"

/* Descriptive cells of a group, in database column order. */
enum {
  PS_PC_TYPE,
  PS_PC_OP_STATE,
  PS_PC_CORE,
  PS_PC_IN_SHAPES,
  PS_PC_IN_DTYPES,
  PS_PC_IN_FORMATS,
  PS_PC_OUT_SHAPES,
  PS_PC_OUT_DTYPES,
  PS_PC_OUT_FORMATS,
  PS_PC_NCELLS
};

/* The 25 PMU counter names, in the database's column order. */
/* Columns a file must have (kernel_details names; op_summary names are aliases). */
extern const char *const ps_profile_required[];
/* Columns used when present. */
extern const char *const ps_profile_optional[];

typedef struct ps_profile_counts {
  uint64_t rows;          /* data records read */
  uint64_t used;          /* rows aggregated */
  uint64_t na_shapes;     /* skipped: Input or Output Shapes is N/A */
  uint64_t no_type;       /* skipped: empty Type */
  uint64_t no_shapes;     /* skipped: Input Shapes without any dims (scalar-only kernels:
                             the database's consumer cannot use an empty shape cell) */
  uint64_t bad_duration;  /* skipped: Duration(us) empty or not a finite number */
  uint64_t duplicates;    /* skipped: exact duplicate (same Task ID and start time) */
  uint64_t fia_rows;      /* FusedInferAttentionScore rows read, skipped ones included (each
                             is a launch the operator_details lists), exact duplicates not */
} ps_profile_counts;

typedef struct ps_profile ps_profile;

/* Called now and then while a file is read: bytes read so far and the file size. */
typedef void (*ps_profile_progress)(void *ud, uint64_t done, uint64_t total);

ps_profile *ps_profile_new(void);
void ps_profile_free(ps_profile *p);

/* threads: how many threads read a big file, a block of about 1 MiB each at a time (0: one per
 * online core); the results are the same bits for any count. split_min: files smaller than
 * this many bytes are read by one thread (0: 32 MiB). */
void ps_profile_set_threads(ps_profile *p, int threads, uint64_t split_min);
/* on: ps_profile_add_file also takes each file's XXH3 (what ps_sig_hash_file gives, for the
 * provenance log), from the bytes its pass reads, as it reads them (the file read once). */
void ps_profile_set_hash(ps_profile *p, int on);
/* The XXH3 of file (0-based, in add order) taken by ps_profile_add_file: 0 and *out, or -1
 * (not asked for, not read, or the file could not be read). */
int ps_profile_file_hash(const ps_profile *p, long file, uint64_t *out);
/* Tests: how many files' hashes needed the file read once more after the pass (a block's start
 * guess failed: no line end near it), not taken from the bytes the pass read. */
long ps_profile_hash_rereads(const ps_profile *p);
/* Tests: the block size, the bytes one parse task reads (0: 1.25 MiB), small to make many. */
void ps_profile_set_block(ps_profile *p, uint64_t bytes);

/* Aggregates one file. On success returns 0 and fills *counts (this file only) and the
 * names of the optional columns the file lacks, comma-separated, in absent (may be NULL).
 * On failure returns -1 with "file: missing columns: a, b" or "file:line: reason" in err;
 * rows of the file read before a data error stay aggregated. */
int ps_profile_add_file(ps_profile *p, const char *path, ps_profile_counts *counts,
                        char *absent, size_t absentsize, ps_profile_progress cb, void *ud,
                        char *err, size_t errsize);

/* Totals over all files. */
const ps_profile_counts *ps_profile_totals(const ps_profile *p);

/* Groups, in the order they were first seen. */
size_t ps_profile_ngroups(const ps_profile *p);

typedef struct ps_profile_group_info {
  const char *cells[PS_PC_NCELLS];  /* NUL-terminated, trimmed */
  const char *key;                  /* the import key (import_key.h) */
  size_t keylen;
  uint64_t hash;                    /* its XXH3-128, low 64 bits */
  uint64_t count;
  double mean, median, std;         /* std: population, two-pass */
  double min, max;
  double metric_mean[PS_NCOUNTERS];
  uint64_t metric_count[PS_NCOUNTERS]; /* 0: no valid value (the mean is NaN) */
  int64_t first_start_ns, last_start_ns;      /* INT64_MIN when no start time was read */
  /* For FusedInferAttentionScore: the file (0-based, in add order) and the 0-based
   * ordinal among that file's FIA rows (as fia_rows counts them) of the group's first row,
   * the one whose operator_details row gives the group's runtime shapes; -1 otherwise. */
  long fia_file, fia_ordinal;
} ps_profile_group_info;

/* Fills *info for group i (0-based). With stats, the statistics are computed (the median
 * reorders the group's durations); without, only the cells, key, count, times and
 * FIA position are filled. Returns 0, or -1 when i is out of range. */
int ps_profile_group(ps_profile *p, size_t i, int stats, ps_profile_group_info *info);

/* Prefetches what the rows after row k of idx (up to row to) will read, for a loop over the
 * groups idx[from, to) calling ps_profile_group on row k (durs: with the statistics). */
void ps_profile_prefetch(const ps_profile *p, const size_t *idx, size_t k, size_t to, int durs);

/* Group i's kernel type (info.cells[PS_PC_TYPE] of ps_profile_group), "" when out of range. */
const char *ps_profile_group_type(const ps_profile *p, size_t i);   /* fetches ahead of a walk in order */

/* The database rows of groups idx[0..n) (0-based) as CSV text: the 8 cells after the type with
 * minimal quoting (csvwrite.h), then mean, median and std and the 25 counter means as %.6f
 * (empty when there is none), comma-separated, no line end. Row k is (*text)[off[k]..off[k+1])
 * (off has n + 1 entries); *text is malloc'd, the caller frees it. The statistics of many groups
 * are worked out on the aggregate's threads (ps_profile_set_threads), each row on one thread,
 * so the text is the same for any thread count. Returns 0, -1 when an index is out of range
 * (*bad is set to it), -2 when memory runs out. */
int ps_profile_rows_text(ps_profile *p, const size_t *idx, size_t n, char **text, size_t *off,
                         size_t *bad);

/* The same rows, each followed by eol (eollen bytes; NULL: none), in pieces: the text of the
 * rows is texts[0] .. texts[r-1] one after the other (lens[] their lengths; each malloc'd, the
 * caller frees them), r the return value, at most PS_PROFILE_MAX_PIECES: the threads' own
 * texts, not copied into one (a big database's rows are tens of MB). Returns r >= 1 (0 rows:
 * one empty piece), or -1 / -2 as ps_profile_rows_text does. */
#define PS_PROFILE_MAX_PIECES 64
int ps_profile_rows_pieces(ps_profile *p, const size_t *idx, size_t n, const char *eol,
                           size_t eollen, char **texts, size_t *lens, size_t *bad);

/* Rows rendered ahead (a new database's files: the next file's rows are made while this one
 * is written). Lists of group indices, list i being idx[start[i], start[i + 1]), are rendered
 * as ps_profile_rows_pieces renders them (each row followed by eol, at most 8 bytes; where
 * offs[i] is set, as ps_profile_rows_text does: no line ends, the rows' offsets kept), in items
 * of some hundred rows, on the aggregate's threads less one: the workers render the lists in
 * order, at most two lists ahead of the last one taken, and ps_profile_render_take(i) renders
 * what is left of list i on the calling thread, waits for the rest and hands its pieces over
 * (texts[0 .. ps_profile_render_pieces(r, i)), each malloc'd, the caller frees them; with offs,
 * also each piece's row count and offsets, rows[k] + 1 of them, malloc'd too, NULL for a list
 * without). The text of each row is the same for any thread count. A group in two lists makes
 * it one thread.
 * The aggregate must not change or be freed until ps_profile_render_stop (or _free).
 * start: NULL (*err -2: memory; -1: an index out of range, *bad set to it; -3: eol too long).
 * take: 0, -1 (i out of range, taken before, or stopped), -2 (memory: no pieces). */
typedef struct ps_profile_render ps_profile_render;
ps_profile_render *ps_profile_render_start(ps_profile *p, const size_t *idx, const size_t *start,
                                           size_t nlists, const unsigned char *offs,
                                           const char *eol, size_t eollen, int *err, size_t *bad);
size_t ps_profile_render_pieces(const ps_profile_render *r, size_t i);
/* List i's group indices (*n of them), as given to ps_profile_render_start. */
const size_t *ps_profile_render_list(const ps_profile_render *r, size_t i, size_t *n);
int ps_profile_render_take(ps_profile_render *r, size_t i, char **texts, size_t *lens,
                           size_t **offs, size_t *rows);
/* Ends the threads (those waiting or rendering finish their item first); take fails after. */
void ps_profile_render_stop(ps_profile_render *r);
void ps_profile_render_free(ps_profile_render *r);

/* How many threads work on n rows of output (ps_profile_rows_text, the provenance lines): the
 * aggregate's thread count, at most one per 128 rows (1 below 256). */
int ps_profile_row_threads(const ps_profile *p, size_t n);
/* Runs fn on jobs[0..T) (each jobsize bytes), jobs[0] on this thread, the others on threads of
 * their own (on this one when a thread cannot start), and returns when all are done. */
void ps_profile_run(int T, void *(*fn)(void *), void *jobs, size_t jobsize);

/* Canonical kernel type: whitespace trimmed, then the renaming table of docs/rules.md, Import
 * (split_qkv_rmsnorm_rope_kernel_0 -> split_qkv_rmsnorm_rope_kernel, ...). Returns a pointer
 * into s or to a static string. */
const char *ps_profile_kernel_type(const char *s, size_t *len);

/* 1 when a shape cell holds no dims at all (only whitespace, quotes, `;` and `()`). */
int ps_profile_no_dims(const char *s, size_t len);

/* 1 when a shape cell means "no shape" (`N/A` after trimming whitespace and quotes). */
int ps_profile_is_na(const char *s, size_t len);



#endif
