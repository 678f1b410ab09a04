/* The microbench write-back merge policy (docs/rules.md, Write-back): one streaming
 * pass over an existing database CSV that matches every row's write-back signature against the
 * incoming updates, rewrites the matched rows, prunes rows without a valid duration, reports
 * duplicates and gaps, then appends the caller's new rows and replaces the file atomically.
 * Plain C: the Lua binding (lua_csvedit.c) only converts its options and results. */
#ifndef PS_MERGE_H
#define PS_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"

/* Columns of the existing file the policy reads (0-based source columns, -1 when absent):
 * the signature's columns in ps_sig_columns order (writeback_sig.h), then the two durations. */
enum {
  PS_MERGE_OP_TYPE, PS_MERGE_OP_STATE, PS_MERGE_IN_SHAPES, PS_MERGE_IN_DTYPES,
  PS_MERGE_IN_FORMATS, PS_MERGE_OUT_SHAPES, PS_MERGE_OUT_DTYPES, PS_MERGE_EP_SIZE,
  PS_MERGE_MB,   /* the microbench duration (Average Duration(us) or its legacy name) */
  PS_MERGE_PROF, /* Profiling Average Duration(us) */
  PS_MERGE_NSRC
};

enum { PS_MERGE_ABSENT, PS_MERGE_STR, PS_MERGE_NUM };

/* A value copied into a matched row: text, or a number written as %.6f. */
typedef struct ps_merge_value {
  int kind;
  const char *s;
  size_t len;
  double num;
} ps_merge_value;

/* The incoming measurement of one signature. The strings must outlive the merge. */
typedef struct ps_merge_update {
  uint64_t hash;          /* the write-back signature hash (writeback_sig.h) */
  const char *mb;         /* the new duration text, or NULL (nothing to write) */
  size_t mblen;
  int record;             /* a row to merge (1) or a match-only profiling row (0) */
  const ps_merge_value *copy; /* ncopy values for opts.copy_out, when mb is set (or loaded) */
  const double *means;    /* PS_NCOUNTERS counter means (NaN: blank) for opts.mean_out, or NULL */
} ps_merge_update;

/* Fills u->copy and u->means of update i just before they are written (only matched updates
 * pay for their values); what it points to must stay valid until the next call. */
typedef void (*ps_merge_load)(void *ud, size_t i, ps_merge_update *u);

typedef struct ps_merge_opts {
  const char *path;       /* the existing CSV, rewritten in place */
  const char *op;         /* the file's op name (its stem), part of every signature */
  const char *ep_default; /* EP Size of the signatures when the file has none, or NULL */
  const char *const *header; /* ncols output column names */
  const size_t *header_len;
  size_t ncols;
  const size_t *map;      /* source column (1-based) of each output column; 0: empty */
  const char *const *fill;/* per output column a value for every row, or NULL (fill may be NULL) */
  int src[PS_MERGE_NSRC];
  int mb_out;             /* output column (0-based) of the microbench duration, or -1 */
  const int *copy_out;    /* output column (0-based) of each of ncopy copied values */
  size_t ncopy;
  int mean_out[PS_NCOUNTERS]; /* output column (0-based) of each counter mean, or -1 */
  int mode_all;           /* overwrite rows that already hold a valid duration */
  int prune;              /* drop rows left without a valid duration */
  const ps_merge_update *updates;
  size_t nupdates;
  ps_merge_load load;     /* NULL: the updates carry their values */
  void *load_ud;
  struct ps_stage *stage; /* non-NULL: the commit only stages the file (src/io/stage.h) */
} ps_merge_opts;

typedef struct ps_merge_gap { double mb, prof; size_t disp; } ps_merge_gap;
typedef struct ps_merge_dup { size_t disp; uint32_t count; } ps_merge_dup;

typedef struct ps_merge_result {
  long rows, written, updated, unchanged;
  long copied;              /* rows written as their own bytes (not quoted again) */
  long spliced;             /* updated rows written as their own bytes but for the set cells */
  int changed;              /* the output differs from the file */
  ps_merge_gap *gaps;       /* rows with both a microbench and a profiling duration */
  size_t ngaps;
  size_t *deleted;          /* displays of the pruned rows */
  size_t ndeleted;
  ps_merge_dup *dups;       /* signatures held by several rows (after ps_merge_rows) */
  size_t ndups;
  unsigned char *matched;   /* per update: it met its signature's first row */
  unsigned char *applied;   /* per update: its values were written into that row */
} ps_merge_result;

typedef struct ps_merge ps_merge;

/* Opens the file and the atomic writer and writes the header. NULL with a message on error. */
ps_merge *ps_merge_open(const ps_merge_opts *o, char *err, size_t errsize);
/* Streams the existing rows through the policy. 0, or -1 with a message. */
int ps_merge_rows(ps_merge *m, char *err, size_t errsize);
/* The text of one cell of an appended row (docs/rules.md, Write-back): the row's own value
 * (a number as %.6f); else, in counter column k >= 0, the counter's mean (blank when it had
 * no valid sample or means is NULL); else blank. num: room for one number; returns the
 * length, *s the text. */
#define PS_MERGE_NUMW 32
size_t ps_merge_cell(const ps_merge_value *own, int k, const double *means,
                     char num[PS_MERGE_NUMW], const char **s);
/* Appends one output row of opts.ncols fields (after ps_merge_rows). 0, or -1. */
int ps_merge_append(ps_merge *m, const char *const *fields, const size_t *lens, char *err,
                    size_t errsize);
/* Replaces the file when something changed: PS_ATOMIC_REPLACED, or PS_ATOMIC_UNCHANGED when
 * nothing did (the file is left alone), or -1 with a message. */
int ps_merge_commit(ps_merge *m, char *err, size_t errsize);
const ps_merge_result *ps_merge_result_of(const ps_merge *m);
/* A display ("<Input Shapes> -> <Output Shapes>") named by a result offset. */
const char *ps_merge_text(const ps_merge *m, size_t disp);
void ps_merge_free(ps_merge *m);

#endif
