/* The microbench write-back merge policy (see merge.h). */
#include "merge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomicfile.h"
#include "csvscan.h"
#include "csvwrite.h"
#include "grow.h"
#include "num.h"
#include "shape.h"
#include "writeback_sig.h"
#include "text.h"
#include "u64map.h"

#define NUMW PS_MERGE_NUMW /* room for one %.6f number */
#define UPD_BITS ((size_t)1 << 20)
/* the filter's bit of hash h: its high bits (the maps index by the low bits of h * phi) */
#define UPD_BIT(h) ((size_t)((h) >> 44) & (UPD_BITS - 1))

_Static_assert(PS_MERGE_EP_SIZE + 1 == PS_SIG_NCOLUMNS, "merge.h sources follow ps_sig_columns");

/* A signature seen in the file: the file offset of its first row and its row count. The
 * first row's display is made only for a signature held by several rows (collect_dups reads
 * that row again): most signatures never need one. */
typedef struct msig { uint64_t at; uint32_t count; } msig;

/* One existing row as the scanner found it (its bytes untouched, so that a row the merge
 * leaves alone is copied as it is), with the policy's columns unquoted (NULL: no such
 * column, "" past the row's end); every field only when the row is built. The five tuple
 * cells (Input Shapes .. Output Data Types) are only what the signature reads of them
 * (sig_cell): not NUL-terminated, and a quoted one maybe stripped of its quotes. */
typedef struct mrow {
  const ps_scan_raw *raw;
  const char *v[PS_MERGE_NSRC];
  char *next;             /* where the next unquoted column goes in m->vbuf */
  size_t len[PS_MERGE_NSRC];
  ps_scan_record all;     /* after full_row */
} mrow;

struct ps_merge {
  ps_merge_opts o;
  ps_merge_result res;
  ps_scan *r;
  size_t src_ncols;       /* fields of the file's header */
  int verbatim;           /* the output columns are the file's own: rows may be copied */
  char *vbuf, *abuf;      /* the unquoted policy columns / every field of the current row */
  size_t vcap, abcap;
  const char **af;        /* every field of the current row (full_row) */
  size_t *al, capaf;
  ps_csv_writer w;
  int wopen;
  ps_sig *sig;
  ps_u64map upd;          /* update hash -> index into o.updates */
  uint64_t *updbits;      /* UPD_BITS bits, one set per update hash: most rows have none, and
                             this (128 KiB) answers them without a miss in the larger map */
  ps_u64map seen;         /* signature hash -> index into sigs */
  msig *sigs;
  size_t capsigs;
  size_t *dupsids;        /* signatures met a second time, in that order */
  size_t ndupsids, capdupsids;
  char *arena;            /* the displays, addressed by offset */
  size_t alen, acap;
  size_t capgaps, capdel;
  const char **f;         /* the output row being built */
  size_t *l;
  char *numbuf;           /* formatted numbers of the current row */
  int splice;             /* the output row is the source row's bytes but for its dirty
                             columns (build_row): f[j] NULL until read or set */
  unsigned char *dirty;   /* per output column: set by the update (splice) */
  char *rowbuf;           /* a spliced row */
  size_t rowcap;
  const ps_scan_raw *splice_raw; /* the spliced row's record */
  size_t alen_row;        /* bytes of abuf its columns read so far took */
};

static int oom(char *err, size_t es) {
  snprintf(err, es, "out of memory");
  return -1;
}

static int same_trimmed(const char *a, size_t la, const char *b, size_t lb) {
  ps_trim(&a, &la);
  ps_trim(&b, &lb);
  return la == lb && memcmp(a, b, la) == 0;
}

/* "<Input Shapes or N/A> -> <Output Shapes or N/A>" appended to the arena; its offset or -1. */
static long add_display(ps_merge *m, const char *is, size_t il, const char *os, size_t ol) {
  ps_trim(&is, &il);
  ps_trim(&os, &ol);
  size_t n = (il ? il : 3) + 4 + (ol ? ol : 3) + 1;
  if (ps_grow((void **)&m->arena, &m->acap, m->alen + n, 1) != 0) return -1;
  size_t off = m->alen;
  char *p = m->arena + off;
  memcpy(p, il ? is : "N/A", il ? il : 3), p += il ? il : 3;
  memcpy(p, " -> ", 4), p += 4;
  memcpy(p, ol ? os : "N/A", ol ? ol : 3), p += ol ? ol : 3;
  *p = '\0';
  m->alen += n;
  return (long)off;
}

void ps_merge_free(ps_merge *m) {
  if (m == NULL) return;
  if (m->r) ps_scan_close(m->r);
  free(m->vbuf);
  free(m->abuf);
  free(m->af);
  free(m->al);
  if (m->wopen) ps_csv_writer_abort(&m->w);
  ps_sig_free(m->sig);
  ps_u64map_free(&m->upd);
  free(m->updbits);
  ps_u64map_free(&m->seen);
  free(m->sigs);
  free(m->dupsids);
  free(m->arena);
  free(m->f);
  free(m->l);
  free(m->numbuf);
  free(m->dirty);
  free(m->rowbuf);
  free(m->res.gaps);
  free(m->res.deleted);
  free(m->res.dups);
  free(m->res.matched);
  free(m->res.applied);
  free(m);
}

static int write_row(ps_merge *m, const char *const *f, const size_t *l, char *err, size_t es) {
  return ps_csv_writer_row(&m->w, f, l, m->o.ncols, err, es);
}

ps_merge *ps_merge_open(const ps_merge_opts *o, char *err, size_t es) {
  if (o->ncols == 0) {
    snprintf(err, es, "merge: empty header");
    return NULL;
  }
  ps_merge *m = calloc(1, sizeof *m);
  if (m == NULL) return oom(err, es), NULL;
  m->o = *o;
  ps_u64map_init(&m->upd, 1 << 16);
  ps_u64map_init(&m->seen, 1 << 16);
  m->sig = ps_sig_new();
  m->f = calloc(o->ncols, sizeof *m->f);
  m->l = calloc(o->ncols, sizeof *m->l);
  m->numbuf = malloc((o->ncopy + PS_NCOUNTERS) * NUMW);
  m->dirty = calloc(o->ncols, 1);
  m->res.matched = calloc(o->nupdates ? o->nupdates : 1, 1);
  m->res.applied = calloc(o->nupdates ? o->nupdates : 1, 1);
  m->updbits = calloc(UPD_BITS / 64, sizeof *m->updbits);
  if (!m->sig || !m->f || !m->l || !m->numbuf || !m->dirty || !m->res.matched || !m->res.applied ||
      !m->updbits || ps_u64map_reserve(&m->seen, 1) != 0)
    goto nomem;
  for (size_t i = 0; i < o->nupdates; i++) {
    size_t id = i, b = UPD_BIT(o->updates[i].hash);
    if (ps_u64map_put(&m->upd, o->updates[i].hash, &id) < 0) goto nomem;
    m->updbits[b / 64] |= (uint64_t)1 << (b % 64);
  }
  m->r = ps_scan_openf(o->path, PS_SCAN_KEEP_SPACE, err, es);
  if (!m->r) goto fail;
  /* the file's header now, so that a Git LFS pointer or binary data fails the open */
  ps_scan_record hdr;
  int st = ps_scan_next(m->r, &hdr);
  if (st < 0) {
    snprintf(err, es, "%s", ps_scan_error(m->r));
    goto fail;
  }
  m->src_ncols = st > 0 ? hdr.nfields : 0;
  if (ps_csv_writer_open(&m->w, o->path, NULL, -1, err, es) != 0) goto fail;
  m->w.file.stage = o->stage;
  m->wopen = 1;
  if (write_row(m, o->header, o->header_len, err, es) != 0) goto fail;
  m->verbatim = m->src_ncols == o->ncols;
  for (size_t j = 0; j < o->ncols; j++)
    if (o->map[j] != j + 1 || (o->fill && o->fill[j])) m->verbatim = 0;
  return m;
nomem:
  oom(err, es);
fail:
  ps_merge_free(m);
  return NULL;
}

/* The row's policy columns from..to - 1, unquoted into m->vbuf (after those before from). */
static void read_cols(ps_merge *m, mrow *row, int from, int to) {
  const ps_scan_raw *raw = row->raw;
  char *o = row->next;
  for (int k = from; k < to; k++) {
    int ci = m->o.src[k];
    row->v[k] = ci < 0 ? NULL : "", row->len[k] = 0;
    if (ci < 0 || (size_t)ci >= raw->nfields) continue;
    row->v[k] = o;
    row->len[k] = ps_scan_unquote(raw, (size_t)ci, o);
    o += row->len[k] + 1;
  }
  row->next = o;
}

/* Field ci's span as ps_scan_unquote reads it: a quoted one's text to its end, closing quote
 * included, when the fast scan read the record (csvscan.h, ps_scan_raw). */
static ps_scan_field raw_span(const ps_scan_raw *raw, size_t ci) {
  if (raw->spans) return raw->spans[ci];
  size_t fs = raw->ends[ci] + 1, k = raw->ends[ci + 1];
  return raw->base[fs] == '"' ? (ps_scan_field){fs + 1, k, 1} : (ps_scan_field){fs, k, 0};
}

/* Tuple cell k of the row as the signature reads it (it strips blanks and quotes from a cell's
 * ends first): the field's own bytes when it needs no unescaping; else, when the field's
 * bytes stripped so hold no quote and start and end with another byte, those (the unescaped
 * value differs from the bytes only in quotes, all of them in the stripped ends: it strips
 * to the same text); else the unquoted value. */
static void sig_cell(mrow *row, int k, size_t ci) {
  const ps_scan_raw *raw = row->raw;
  ps_scan_field f = raw_span(raw, ci);
  const char *p = raw->base + f.start;
  size_t n = f.end - f.start;
  if (f.unescape) {
    n = ps_shape_strip(&p, n);
    if (n == 0 || ps_is_space(p[0]) || ps_is_space(p[n - 1]) || memchr(p, '"', n)) {
      row->v[k] = row->next;
      row->len[k] = ps_scan_unquote(raw, ci, row->next);
      row->next += row->len[k] + 1;
      return;
    }
  }
  row->v[k] = p, row->len[k] = n;
}

/* The row's signature columns (the op's own name, when the file has one, stands for OP Type
 * and OP State); the durations later, for the rows that read them (read_durations). 0, or -1
 * when memory runs out. */
static int read_row(ps_merge *m, const ps_scan_raw *raw, mrow *row) {
  row->raw = raw;
  row->all.nfields = 0;
  /* a field's value is no longer than the record: room for every policy column's, whatever
   * columns they are (the buffer grows to that once, not per row's columns) */
  size_t need = PS_MERGE_NSRC * (raw->len + 1);
  if (ps_grow((void **)&m->vbuf, &m->vcap, need, 1) != 0) return -1;
  int named = m->o.op && *m->o.op;
  row->next = m->vbuf;
  row->v[PS_MERGE_OP_TYPE] = row->v[PS_MERGE_OP_STATE] = NULL;
  if (!named) read_cols(m, row, 0, PS_MERGE_IN_SHAPES);
  for (int k = PS_MERGE_IN_SHAPES; k <= PS_MERGE_OUT_DTYPES; k++) {
    int ci = m->o.src[k];
    row->v[k] = ci < 0 ? NULL : "", row->len[k] = 0;
    if (ci >= 0 && (size_t)ci < raw->nfields) sig_cell(row, k, (size_t)ci);
  }
  read_cols(m, row, PS_MERGE_EP_SIZE, PS_MERGE_MB);
  return 0;
}

static void read_durations(ps_merge *m, mrow *row) { read_cols(m, row, PS_MERGE_MB, PS_MERGE_NSRC); }

/* Every field of the row, unquoted (row->all), for a row written from its fields. */
static int full_row(ps_merge *m, mrow *row) {
  const ps_scan_raw *raw = row->raw;
  size_t n = raw->nfields;
  if (ps_grow((void **)&m->abuf, &m->abcap, raw->len + n, 1) != 0 ||
      (n > m->capaf && (ps_grow((void **)&m->al, &m->capaf, n, sizeof *m->al) != 0 ||
                        !(m->af = realloc(m->af, m->capaf * sizeof *m->af)))))
    return -1;
  char *o = m->abuf;
  for (size_t i = 0; i < n; i++) {
    m->af[i] = o;
    m->al[i] = ps_scan_unquote(raw, i, o);
    o += m->al[i] + 1;
  }
  row->all = (ps_scan_record){n, (const char *const *)m->af, m->al, raw->line};
  return 0;
}

/* The row's signature (m->sig). 0, or -1 when memory runs out. */
static int signature(ps_merge *m, const mrow *row) {
  const char *const *v = row->v;
  ps_sig_row sr = {.op_name = m->o.op, .op_type = v[PS_MERGE_OP_TYPE],
                   .op_state = v[PS_MERGE_OP_STATE], .in_shapes = v[PS_MERGE_IN_SHAPES],
                   .in_dtypes = v[PS_MERGE_IN_DTYPES], .in_formats = v[PS_MERGE_IN_FORMATS],
                   .out_shapes = v[PS_MERGE_OUT_SHAPES], .out_dtypes = v[PS_MERGE_OUT_DTYPES],
                   .ep_size = v[PS_MERGE_EP_SIZE] ? v[PS_MERGE_EP_SIZE] : m->o.ep_default,
                   .lens = &row->len[PS_MERGE_IN_SHAPES]};
  return ps_sig_compute(m->sig, &sr);
}

/* The row's value of policy column k ("" when absent). */
#define FLD(row, k) ((row)->v[k] ? (row)->v[k] : "")
#define LEN(row, k) ((row)->len[k])

/* The display of the row's own shapes (their values: unquoted again, mrow holds what the
 * signature reads), appended to the arena: its offset or -1. */
static long row_display(ps_merge *m, const mrow *rec) {
  const ps_scan_raw *raw = rec->raw;
  int ci = m->o.src[PS_MERGE_IN_SHAPES], co = m->o.src[PS_MERGE_OUT_SHAPES];
  size_t ni = ci >= 0 && (size_t)ci < raw->nfields ? (size_t)ci : SIZE_MAX;
  size_t no = co >= 0 && (size_t)co < raw->nfields ? (size_t)co : SIZE_MAX;
  size_t need = 2;
  if (ni != SIZE_MAX) need += raw_span(raw, ni).end - raw_span(raw, ni).start;
  if (no != SIZE_MAX) need += raw_span(raw, no).end - raw_span(raw, no).start;
  char *b = malloc(need);
  if (b == NULL) return -1;
  size_t li = ni != SIZE_MAX ? ps_scan_unquote(raw, ni, b) : 0;
  size_t lo = no != SIZE_MAX ? ps_scan_unquote(raw, no, b + li + 1) : 0;
  long off = add_display(m, b, li, b + li + 1, lo);
  free(b);
  return off;
}

/* Registers the row's signature hash h, the row starting at file offset at (or blank lines
 * before it): *sid is its index, *first whether this row is its first. 0, or -1 when memory
 * runs out. */
static int register_sig(ps_merge *m, uint64_t at, uint64_t h, size_t *sid, int *first) {
  *sid = m->seen.used;
  int added = ps_u64map_put(&m->seen, h, sid);
  if (added < 0) return -1;
  *first = added;
  if (!added) {
    if (++m->sigs[*sid].count == 2) {
      if (ps_grow((void **)&m->dupsids, &m->capdupsids, m->ndupsids + 1, sizeof *m->dupsids) != 0)
        return -1;
      m->dupsids[m->ndupsids++] = *sid;
    }
    return 0;
  }
  if (ps_grow((void **)&m->sigs, &m->capsigs, *sid + 1, sizeof *m->sigs) != 0) return -1;
  m->sigs[*sid] = (msig){at, 1};
  return 0;
}

/* Sets output column oc to v (marking the file changed when it differs). */
static void set(ps_merge *m, int oc, const char *v, size_t len) {
  if (oc < 0 || (size_t)oc >= m->o.ncols) return;
  if (m->f[oc] == NULL) { /* a spliced row's column, read now (into abuf, sized by build_row) */
    m->f[oc] = m->abuf + m->alen_row;
    m->l[oc] = ps_scan_unquote(m->splice_raw, (size_t)oc, m->abuf + m->alen_row);
    m->alen_row += m->l[oc] + 1;
  }
  if (!(len == m->l[oc] && memcmp(v, m->f[oc], len) == 0)) m->res.changed = 1;
  m->f[oc] = v, m->l[oc] = len;
  m->dirty[oc] = 1;
}

/* The output row from the source row: mapped columns, then the fill values. 0, or -1 when
 * memory runs out. */
static int build_row(ps_merge *m, mrow *row) {
  const ps_scan_raw *raw = row->raw;
  /* a row the writer would write as its bytes (fast scan: each field's bytes at hand) is
   * written as those bytes but for the columns the update sets: no unquoting and quoting
   * again of its other fields */
  m->splice = m->verbatim && raw->nfields == m->o.ncols && raw->spans == NULL &&
              ps_csv_raw_is_formatted(raw, m->w.eol);
  if (m->splice) {
    if (ps_grow((void **)&m->abuf, &m->abcap, raw->len + raw->nfields, 1) != 0) return -1;
    m->splice_raw = raw;
    m->alen_row = 0;
    for (size_t j = 0; j < m->o.ncols; j++) m->f[j] = NULL, m->l[j] = 0;
    memset(m->dirty, 0, m->o.ncols);
    return 0;
  }
  if (full_row(m, row) != 0) return -1;
  const ps_scan_record *rec = &row->all;
  for (size_t j = 0; j < m->o.ncols; j++) {
    size_t i = m->o.map[j];
    m->f[j] = "", m->l[j] = 0;
    if (i >= 1 && i <= rec->nfields) m->f[j] = rec->fields[i - 1], m->l[j] = rec->lens[i - 1];
    if (m->o.fill && m->o.fill[j]) set(m, (int)j, m->o.fill[j], strlen(m->o.fill[j]));
  }
  return 0;
}

/* Writes an update's values into the output row. */
static void apply_update(ps_merge *m, const ps_merge_update *u) {
  for (size_t k = 0; u->copy && k < m->o.ncopy; k++) {
    const ps_merge_value *v = &u->copy[k];
    if (v->kind == PS_MERGE_STR) {
      set(m, m->o.copy_out[k], v->s, v->len);
    } else if (v->kind == PS_MERGE_NUM) {
      char *b = m->numbuf + k * NUMW;
      set(m, m->o.copy_out[k], b, (size_t)ps_num_fmt6(b, NUMW, v->num));
    }
  }
  if (u->means)
    for (int k = 0; k < PS_NCOUNTERS; k++) {
      char *b = m->numbuf + (m->o.ncopy + (size_t)k) * NUMW;
      double v = u->means[k];
      set(m, m->o.mean_out[k], b, isnan(v) ? (b[0] = 0, 0) : (size_t)ps_num_fmt6(b, NUMW, v));
    }
  set(m, m->o.mb_out, u->mb, u->mblen);
}

static int add_gap(ps_merge *m, double mb, double prof, size_t disp) {
  if (ps_grow((void **)&m->res.gaps, &m->capgaps, m->res.ngaps + 1, sizeof *m->res.gaps) != 0) return -1;
  m->res.gaps[m->res.ngaps++] = (ps_merge_gap){mb, prof, disp};
  return 0;
}

static int add_deleted(ps_merge *m, size_t disp) {
  if (ps_grow((void **)&m->res.deleted, &m->capdel, m->res.ndeleted + 1, sizeof *m->res.deleted) != 0)
    return -1;
  m->res.deleted[m->res.ndeleted++] = disp;
  m->res.changed = 1;
  return 0;
}

/* A row whose signature has an update: overwrite it when allowed, count it, note its gap.
 * *mb and *mbl become the duration the row ends up with; *built is set when the output row
 * was built (and changed) from the update. */
static int merge_update(ps_merge *m, mrow *rec, size_t ui, int prof_real, const char **mb, size_t *mbl, int *built) {
  const ps_merge_update *u = &m->o.updates[ui];
  int counted = 0;
  if (u->mb && (m->o.mode_all || (!ps_num_duration_cell(*mb, *mbl) && !prof_real))) {
    ps_merge_update full = *u;
    if (m->o.load) m->o.load(m->o.load_ud, ui, &full);
    if (build_row(m, rec) != 0) return -1;
    *built = 1;
    apply_update(m, &full);
    m->res.applied[ui] = 1; /* its values were written (their provenance changes) */
    if (!same_trimmed(*mb, *mbl, u->mb, u->mblen)) m->res.updated++;
    *mb = u->mb, *mbl = u->mblen;
    counted = 1;
  } else if (u->record) {
    m->res.unchanged++;
    counted = 1;
  }
  if (!counted) return 0;
  double mv = ps_num_or_zero(*mb, *mbl);
  double pv = ps_num_or_zero(FLD(rec, PS_MERGE_PROF), LEN(rec, PS_MERGE_PROF));
  if (!ps_num_is_duration(mv) || !ps_num_is_duration(pv)) return 0;
  long disp = row_display(m, rec);
  return disp < 0 ? -1 : add_gap(m, mv, pv, (size_t)disp);
}

/* Writes a spliced row (build_row): each field's own bytes (quotes and all: the writer writes
 * those very bytes for it), a set column's value quoted, then the line end. */
static int write_spliced(ps_merge *m, const ps_scan_raw *raw, char *err, size_t es) {
  size_t n = m->o.ncols, need = raw->len + strlen(m->w.eol) + 1;
  for (size_t j = 0; j < n; j++)
    if (m->dirty[j]) need += PS_CSV_QUOTED_MAX(m->l[j]);
  if (ps_grow((void **)&m->rowbuf, &m->rowcap, need, 1) != 0) return oom(err, es);
  char *o = m->rowbuf;
  for (size_t j = 0; j < n; j++) {
    if (j) *o++ = ',';
    if (m->dirty[j]) {
      o += ps_csv_quote(o, m->f[j], m->l[j]);
    } else { /* the field's bytes: from after the byte before it to its end (csvscan.h) */
      size_t a = raw->ends[j] + 1, b = raw->ends[j + 1];
      memcpy(o, raw->base + a, b - a);
      o += b - a;
    }
  }
  size_t el = strlen(m->w.eol);
  memcpy(o, m->w.eol, el);
  o += el;
  m->res.spliced++;
  return ps_csv_writer_raw(&m->w, m->rowbuf, (size_t)(o - m->rowbuf), 1, err, es);
}

/* Writes a row: its own bytes when nothing in it changed (built = 0) and the writer would
 * write those very bytes, else from its fields. */
static int write_out(ps_merge *m, mrow *row, int built, char *err, size_t es) {
  m->res.written++;
  const ps_scan_raw *raw = row->raw;
  if (!built && m->verbatim && raw->nfields == m->o.ncols && ps_csv_raw_is_formatted(raw, m->w.eol)) {
    m->res.copied++;
    return ps_csv_writer_raw(&m->w, raw->bytes, raw->len, 1, err, es);
  }
  if (!built && build_row(m, row) != 0) return oom(err, es);
  if (built && m->splice) return write_spliced(m, raw, err, es);
  return write_row(m, m->f, m->l, err, es);
}

/* One existing row through the policy. */
static int merge_row(ps_merge *m, const ps_scan_raw *raw, uint64_t at, char *err, size_t es) {
  mrow row, *rec = &row;
  size_t sid;
  int first, built = 0;
  if (read_row(m, raw, rec) != 0 || signature(m, rec) != 0) return oom(err, es);
  uint64_t h = ps_sig_hash(m->sig);
  /* the signature table is large and its slots are met at random: fetched now, used below */
  __builtin_prefetch(&m->seen.slots[ps_u64map_home(&m->seen, h)]);
  size_t b = UPD_BIT(h);
  size_t ui = m->updbits[b / 64] >> (b % 64) & 1 ? ps_u64map_get(&m->upd, h) : PS_U64MAP_NONE;
  if (ui == PS_U64MAP_NONE && !m->o.prune) { /* most rows: nothing to do but copy and count */
    if (write_out(m, rec, 0, err, es) != 0) return -1;
    return register_sig(m, at, h, &sid, &first) != 0 ? oom(err, es) : 0;
  }
  if (register_sig(m, at, h, &sid, &first) != 0) return oom(err, es);
  read_durations(m, rec);
  const char *mb = FLD(rec, PS_MERGE_MB);
  size_t mbl = LEN(rec, PS_MERGE_MB);
  int prof_real = ps_num_duration_cell(FLD(rec, PS_MERGE_PROF), LEN(rec, PS_MERGE_PROF));
  if (ui != PS_U64MAP_NONE && first) { /* an update meets its signature's first row */
    m->res.matched[ui] = 1;
    if (merge_update(m, rec, ui, prof_real, &mb, &mbl, &built) != 0)
      return oom(err, es);
  }
  if (m->o.prune && !ps_num_duration_cell(mb, mbl) && !prof_real) {
    long disp = row_display(m, rec); /* a duplicate's own display too */
    return disp < 0 || add_deleted(m, (size_t)disp) != 0 ? oom(err, es) : 0;
  }
  return write_out(m, rec, built, err, es);
}
#undef FLD
#undef LEN

/* A duplicate to display: its first row's file offset, its index in res.dups. */
typedef struct dupat { uint64_t at; size_t k; } dupat;

static int by_offset(const void *a, const void *b) {
  uint64_t x = ((const dupat *)a)->at, y = ((const dupat *)b)->at;
  return x < y ? -1 : x > y;
}

/* Moves the scanner to the row at file offset at: forward over the rows in between when it
 * is near (a seek rereads a whole chunk), else by a seek. *pos is the offset the scanner is
 * at. 0 with the row in raw, or -1 with a message. */
#define DUP_CHUNK ((size_t)64 << 10)
static int row_at(ps_merge *m, uint64_t at, uint64_t *pos, ps_scan_raw *raw, char *err, size_t es) {
  if (at < *pos || at - *pos > DUP_CHUNK) {
    if (ps_scan_seek(m->r, at, 1) != 0) return snprintf(err, es, "%s", ps_scan_error(m->r)), -1;
    *pos = at;
  }
  while (*pos <= at) {
    uint64_t start = *pos;
    int st = ps_scan_next_raw(m->r, raw);
    if (st < 0) return snprintf(err, es, "%s", ps_scan_error(m->r)), -1;
    if (st == 0) break;
    *pos = ps_scan_offset(m->r);
    if (start == at) return 0;
  }
  snprintf(err, es, "%s: changed while it was merged (no row at byte %llu)", ps_scan_path(m->r),
           (unsigned long long)at);
  return -1;
}

/* The signatures held by several rows, in the order their second row came (the caller
 * sorts them; a walk over the whole signature table met every signature at random), with
 * the display of each one's first row, read again from the file in file order. */
static int collect_dups(ps_merge *m, char *err, size_t es) {
  if (m->ndupsids == 0) return 0;
  size_t n = m->ndupsids;
  dupat *ord = malloc(n * sizeof *ord);
  m->res.dups = malloc(n * sizeof *m->res.dups);
  if (m->res.dups == NULL || ord == NULL) return free(ord), oom(err, es);
  for (size_t k = 0; k < n; k++) {
    const msig *g = &m->sigs[m->dupsids[k]];
    m->res.dups[k] = (ps_merge_dup){0, g->count};
    ord[k] = (dupat){g->at, k};
  }
  m->res.ndups = n;
  qsort(ord, n, sizeof *ord, by_offset);
  ps_scan_set_chunk(m->r, DUP_CHUNK);
  uint64_t pos = UINT64_MAX;
  int rc = 0;
  for (size_t k = 0; k < n && rc == 0; k++) {
    ps_scan_raw raw;
    mrow row;
    long disp;
    if (row_at(m, ord[k].at, &pos, &raw, err, es) != 0) rc = -1;
    else if (read_row(m, &raw, &row) != 0 || (disp = row_display(m, &row)) < 0) rc = oom(err, es);
    else m->res.dups[ord[k].k].disp = (size_t)disp;
  }
  free(ord);
  return rc;
}

int ps_merge_rows(ps_merge *m, char *err, size_t es) {
  ps_scan_raw rec;
  int st = 0;
  uint64_t first = ps_scan_offset(m->r); /* rows start after the header */
  uint64_t at = first;                   /* where the next row starts */
  while (m->src_ncols && (st = ps_scan_next_raw(m->r, &rec)) > 0) {
    uint64_t end = ps_scan_offset(m->r);
    long n = ++m->res.rows;
    if (n >= 4096 && (n & (n - 1)) == 0 && end > first) {
      /* the rows to come, from the bytes the rows so far took: the signature table grows
       * to that once, not by doubling (and rehashing) on the way. A little under the
       * estimate (tables come in powers of two: one just over would be twice too large), and
       * at most 16 times the rows so far, in case these were much shorter than the rest. */
      double est = 0.9 * (double)n * (double)(ps_scan_file_size(m->r) - first) / (double)(end - first);
      if (est > 16.0 * (double)n) est = 16.0 * (double)n;
      if (est > (double)n) { /* a failure only leaves the table growing as it goes */
        ps_u64map_reserve(&m->seen, (size_t)est);
        ps_grow((void **)&m->sigs, &m->capsigs, (size_t)est, sizeof *m->sigs);
      }
    }
    if (merge_row(m, &rec, at, err, es) != 0) return -1;
    at = end;
  }
  if (st < 0) {
    snprintf(err, es, "%s", ps_scan_error(m->r));
    return -1;
  }
  int rc = collect_dups(m, err, es);
  ps_scan_close(m->r);
  m->r = NULL;
  return rc;
}

size_t ps_merge_cell(const ps_merge_value *own, int k, const double *means, char num[NUMW],
                     const char **s) {
  double v;
  if (own->kind == PS_MERGE_STR) return *s = own->s, own->len;
  if (own->kind == PS_MERGE_NUM) v = own->num;
  else if (k >= 0 && k < PS_NCOUNTERS && means && !isnan(means[k])) v = means[k];
  else return *s = "", 0;
  *s = num;
  return (size_t)ps_num_fmt6(num, NUMW, v);
}

int ps_merge_append(ps_merge *m, const char *const *fields, const size_t *lens, char *err, size_t es) {
  if (write_row(m, fields, lens, err, es) != 0) return -1;
  m->res.written++;
  m->res.changed = 1;
  return 0;
}

int ps_merge_commit(ps_merge *m, char *err, size_t es) {
  if (!m->res.changed) { /* nothing to replace: drop the temporary now, not at ps_merge_free */
    if (m->wopen) ps_csv_writer_abort(&m->w);
    m->wopen = 0;
    return PS_ATOMIC_UNCHANGED;
  }
  m->wopen = 0;
  /* a cell changed, so the bytes differ: no byte-by-byte compare with the old file (up to
   * twice its size read back when the sizes match) */
  return ps_csv_writer_commit(&m->w, 0, err, es);
}

const ps_merge_result *ps_merge_result_of(const ps_merge *m) { return &m->res; }
const char *ps_merge_text(const ps_merge *m, size_t disp) { return m->arena + disp; }
