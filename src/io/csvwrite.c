#include "csvwrite.h"
#include "csvscan.h"
#include "grow.h"
#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* 1 for the bytes that make a field quoted */
static const unsigned char special[256] = {[','] = 1, ['"'] = 1, ['\r'] = 1, ['\n'] = 1};

/* Eight bytes at a time: nonzero when the word holds one of the special bytes (a byte equal
 * to c is a zero byte of x ^ c*ONES; the zero-byte test is exact as a whole). */
#define ONES UINT64_C(0x0101010101010101)
static inline uint64_t zero_byte(uint64_t x) { return (x - ONES) & ~x & (ONES << 7); }
static inline uint64_t word_special(uint64_t x) {
  return zero_byte(x ^ (ONES * ',')) | zero_byte(x ^ (ONES * '"')) | zero_byte(x ^ (ONES * '\r')) |
         zero_byte(x ^ (ONES * '\n'));
}

int ps_csv_needs_quote(const char *s, size_t len) {
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t x;
    memcpy(&x, s + i, 8);
    if (word_special(x)) return 1;
  }
  for (; i < len; i++)
    if (special[(unsigned char)s[i]]) return 1;
  return 0;
}

/* One pass copies the field and tests its bytes, a word at a time (most cells need no quotes:
 * that is the whole cost for them), the field's last word again in part rather than byte by
 * byte; a field that needs quotes is written again over the copy. */
size_t ps_csv_quote(char *out, const char *s, size_t len) {
  uint64_t any = 0;
#ifdef __SSE2__
  if (len >= 16) {   /* 16 bytes at a time (a database row's shapes and names) */
    const __m128i comma = _mm_set1_epi8(','), quote = _mm_set1_epi8('"'), cr = _mm_set1_epi8('\r'),
                  lf = _mm_set1_epi8('\n');
    __m128i acc = _mm_setzero_si128();
    for (size_t i = 0;; i += 16) {
      if (i + 16 > len) i = len - 16;   /* the last 16 bytes, some of them again */
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
      _mm_storeu_si128((__m128i *)(void *)(out + i), x);
      acc = _mm_or_si128(acc, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, comma), _mm_cmpeq_epi8(x, quote)),
                                           _mm_or_si128(_mm_cmpeq_epi8(x, cr), _mm_cmpeq_epi8(x, lf))));
      if (i + 16 == len) break;
    }
    any = (uint64_t)_mm_movemask_epi8(acc);
  } else
#endif
  {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      uint64_t x;
      memcpy(&x, s + i, 8);
      memcpy(out + i, &x, 8);
      any |= word_special(x);
    }
    if (i < len && len >= 8) {   /* the last 8 bytes, some of them again */
      uint64_t x;
      memcpy(&x, s + len - 8, 8);
      memcpy(out + len - 8, &x, 8);
      any |= word_special(x);
    } else {
      for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (char)c;
        any |= special[c];
      }
    }
  }
  if (!any) return len;
  char *o = out;
  *o++ = '"';
  const char *end = s + len;
  while (s < end) {
    const char *q = memchr(s, '"', (size_t)(end - s));
    size_t chunk = (size_t)((q ? q + 1 : end) - s);
    memcpy(o, s, chunk);
    o += chunk;
    if (q) *o++ = '"';   /* double it */
    s += chunk;
  }
  *o++ = '"';
  return (size_t)(o - out);
}

/* The quoting rule of ps_csv_is_formatted on rec[0, n): the bytes of quoting it holds (two
 * per quoted field, one per doubled quote), or -1 when it is not what the quoter writes. */
static long formatted_quoting(const char *rec, size_t n, const char *eol) {
  size_t el = strlen(eol);
  if (n <= el || memcmp(rec + n - el, eol, el) != 0) return -1;
  if (rec[0] == '\n' || rec[0] == '\r' || (el == 1 && n >= 2 && rec[n - 2] == '\r')) return -1;
  const char *p = rec, *end = rec + n - el, *q;
  long quoting = 0;
  while (p < end && (q = memchr(p, '"', (size_t)(end - p))) != NULL) {
    if (q != rec && q[-1] != ',') return -1;   /* a quote inside an unquoted field */
    int needed = 0;
    const char *c = q + 1, *z;
    /* the next quote: often the very next byte (a value that starts or ends with a quote) */
    while ((z = c < end && *c == '"' ? c : memchr(c, '"', (size_t)(end - c))) != NULL &&
           z + 1 < end && z[1] == '"')
      quoting++, needed = 1, c = z + 2;        /* a doubled quote */
    if (z == NULL || (z + 1 < end && z[1] != ',')) return -1; /* unclosed; text after it */
    if (!needed && !ps_csv_needs_quote(q + 1, (size_t)(z - q - 1))) return -1; /* not minimal */
    quoting += 2;
    p = z + 1;
  }
  return quoting;
}

int ps_csv_is_formatted(const char *rec, size_t n, size_t nfields, const size_t *lens,
                        const char *eol) {
  long quoting = nfields ? formatted_quoting(rec, n, eol) : -1;
  if (quoting < 0) return 0;
  size_t sum = nfields - 1 + (size_t)quoting;
  for (size_t i = 0; i < nfields; i++) sum += lens[i];
  return sum == n - strlen(eol);
}

/* The record's bytes are the ones the engine split into its fields: the lengths add up. */
int ps_csv_raw_is_formatted(const ps_scan_raw *rec, const char *eol) {
  return rec->nfields && formatted_quoting(rec->bytes, rec->len, eol) >= 0;
}

size_t ps_csv_row_max(const size_t *lens, size_t n, const char *eol) {
  size_t m = n + 2 + (eol ? strlen(eol) : 0);
  for (size_t i = 0; i < n; i++) m += PS_CSV_QUOTED_MAX(lens[i]);
  return m;
}

size_t ps_csv_format_row(char *out, const char *const *fields, const size_t *lens, size_t n,
                         const char *eol) {
  char *o = out;
  if (n == 1 && lens[0] == 0) {  /* a lone empty field must not read back as a blank line */
    *o++ = '"';
    *o++ = '"';
    n = 0;
  }
  for (size_t i = 0; i < n; i++) {
    if (i > 0) *o++ = ',';
    o += ps_csv_quote(o, fields[i], lens[i]);
  }
  if (eol) {
    size_t el = strlen(eol);
    memcpy(o, eol, el);
    o += el;
  }
  return (size_t)(o - out);
}

int ps_csv_sniff_style(const char *path, const char **eol, int *bom) {
  char err[8];
  FILE *f = ps_input_fopen(path, err, sizeof err); /* a FIFO must not block */
  if (f == NULL) return -1;
  unsigned char buf[65536];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  *bom = n >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF;
  *eol = "\n";
  int quoted = 0;  /* a newline inside quotes does not end the header line */
  for (size_t i = 0; i < n; i++) {
    if (buf[i] == '"') quoted = !quoted;
    else if (buf[i] == '\n' && !quoted) {
      if (i > 0 && buf[i - 1] == '\r') *eol = "\r\n";
      break;
    }
  }
  return 0;
}

int ps_csv_writer_open(ps_csv_writer *w, const char *path, const char *eol, int bom,
                       char *err, size_t errsize) {
  memset(w, 0, sizeof *w);
  const char *old_eol = "\n";
  int old_bom = 0;
  ps_csv_sniff_style(path, &old_eol, &old_bom);
  w->eol = eol ? eol : old_eol;
  w->bom = bom >= 0 ? bom : old_bom;
  if (ps_atomic_open(&w->file, path, err, errsize) != 0) return -1;
  if (w->bom && fwrite("\xEF\xBB\xBF", 1, 3, w->file.fp) != 3) {
    snprintf(err, errsize, "%s: write failed: %s", path, strerror(errno));
    ps_atomic_abort(&w->file);
    return -1;
  }
  return 0;
}

int ps_csv_write_field(FILE *fp, const char *s, size_t len) {
  if (!ps_csv_needs_quote(s, len)) return fwrite(s, 1, len, fp) == len ? 0 : -1;
  char small[512];
  char *q = PS_CSV_QUOTED_MAX(len) <= sizeof small ? small : malloc(PS_CSV_QUOTED_MAX(len));
  if (q == NULL) return -1;
  size_t n = ps_csv_quote(q, s, len);
  int st = fwrite(q, 1, n, fp) == n ? 0 : -1;
  if (q != small) free(q);
  return st;
}

/* Rows gather in w->out and reach the stream in blocks of about this size: one write call per
 * block, not one per stdio buffer (4 KiB) or per row. */
#define OUT_BLOCK ((size_t)1 << 20)

static int write_failed(ps_csv_writer *w, const char *how, char *err, size_t errsize) {
  snprintf(err, errsize, "%s: write failed: %s%s", w->file.path, strerror(errno), how);
  return -1;
}

/* Every this many bytes the disk write of what was written so far is started: the commit's
 * fsync then waits for the last of it only, not for the whole file (a 370 MB write-back spent
 * 0.6 s in that fsync, after its CPU work was done). */
#define SYNC_STEP ((uint64_t)16 << 20)

/* Hands len bytes to the stream. 0, or -1 with errno set. */
static int hand(ps_csv_writer *w, const char *data, size_t len) {
  if (len && fwrite(data, 1, len, w->file.fp) != len) return -1;
  w->handed += len;
#ifdef SYNC_FILE_RANGE_WRITE
  if (w->handed - w->synced >= SYNC_STEP && fflush(w->file.fp) == 0) {
    /* only a hint (it waits for nothing): a failure here is met again by the commit's fsync */
    (void)sync_file_range(fileno(w->file.fp), (off_t)w->synced, 0, SYNC_FILE_RANGE_WRITE);
    w->synced = w->handed;
  }
#endif
  return 0;
}

/* A large file's blocks are handed to the stream by a thread of its own (the copy into the
 * page cache then runs beside the caller's encoding of the next block, not after it): the
 * caller fills one block while the thread writes the other. It alone touches file.fp,
 * handed and synced until it is stopped (bg_stop). */
struct ps_csv_bg {
  ps_csv_writer *w;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *buf;              /* the block being written, or the spare one when idle */
  size_t len, cap;
  int busy, quit, err;    /* err: errno of a failed write (every later hand fails too) */
};

static void *bg_main(void *arg) {
  struct ps_csv_bg *b = arg;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->busy && !b->quit) pthread_cond_wait(&b->cv, &b->mu);
    if (!b->busy) break;
    pthread_mutex_unlock(&b->mu);
    int e = b->err ? b->err : hand(b->w, b->buf, b->len) != 0 ? (errno ? errno : EIO) : 0;
    pthread_mutex_lock(&b->mu);
    b->err = e;
    b->busy = 0;
    pthread_cond_broadcast(&b->cv);
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

/* Waits for the block in writing. 0, or -1 with errno set when a write failed. */
static int bg_wait(struct ps_csv_bg *b) {
  pthread_mutex_lock(&b->mu);
  while (b->busy) pthread_cond_wait(&b->cv, &b->mu);
  int e = b->err;
  pthread_mutex_unlock(&b->mu);
  if (e) errno = e;
  return e ? -1 : 0;
}

/* Stops the thread (after the block in writing) and frees it: 0, or -1 with errno set when a
 * write failed. */
static int bg_stop(ps_csv_writer *w) {
  struct ps_csv_bg *b = w->bg;
  if (b == NULL) return 0;
  pthread_mutex_lock(&b->mu);
  b->quit = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  pthread_join(b->th, NULL);
  int e = b->err;
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->cv);
  free(b->buf);
  free(b);
  w->bg = NULL;
  if (e) errno = e;
  return e ? -1 : 0;
}

/* The thread, started at a file's first full block; NULL when it cannot be (the blocks are
 * then written by the caller). */
static struct ps_csv_bg *bg_start(ps_csv_writer *w) {
  struct ps_csv_bg *b = calloc(1, sizeof *b);
  if (b == NULL) return NULL;
  b->w = w;
  if (pthread_mutex_init(&b->mu, NULL) != 0) return free(b), NULL;
  if (pthread_cond_init(&b->cv, NULL) != 0 || pthread_create(&b->th, NULL, bg_main, b) != 0) {
    pthread_cond_destroy(&b->cv); /* harmless when its init failed: nothing was made */
    pthread_mutex_destroy(&b->mu);
    free(b);
    return NULL;
  }
  return b;
}

/* Hands the gathered rows to the stream: a full block to the thread (swapping blocks with
 * it), else by the caller. 0, or -1 with errno set. */
static int out_flush(ps_csv_writer *w, int block) {
  if (block && w->bg == NULL) w->bg = bg_start(w);
  struct ps_csv_bg *b = w->bg;
  if (b == NULL) {
    int st = hand(w, w->out, w->olen);
    w->olen = 0;
    return st;
  }
  if (bg_wait(b) != 0) return -1;
  if (!block) { /* the last rows: written here, the thread gone */
    if (bg_stop(w) != 0) return -1;
    int st = hand(w, w->out, w->olen);
    w->olen = 0;
    return st;
  }
  char *full = w->out;
  size_t cap = w->ocap, len = w->olen;
  w->out = b->buf, w->ocap = b->cap, w->olen = 0;
  pthread_mutex_lock(&b->mu);
  b->buf = full, b->cap = cap, b->len = len, b->busy = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  return 0;
}

/* Room for n more bytes at w->out + w->olen (flushing a full block first). */
static char *out_room(ps_csv_writer *w, size_t n, char *err, size_t errsize) {
  if (w->file.fp == NULL) {
    snprintf(err, errsize, "writer is closed");
    return NULL;
  }
  if (w->olen && w->olen + n > OUT_BLOCK && out_flush(w, 1) != 0) {
    write_failed(w, "", err, errsize);
    return NULL;
  }
  if (ps_grow((void **)&w->out, &w->ocap, w->olen + n, 1) != 0) {
    snprintf(err, errsize, "%s: out of memory for a row", w->file.path);
    return NULL;
  }
  return w->out + w->olen;
}

int ps_csv_writer_row(ps_csv_writer *w, const char *const *fields, const size_t *lens,
                      size_t n, char *err, size_t errsize) {
  char *o = out_room(w, ps_csv_row_max(lens, n, w->eol), err, errsize);
  if (o == NULL) return -1;
  w->olen += ps_csv_format_row(o, fields, lens, n, w->eol);
  w->rows++;
  return 0;
}

int ps_csv_writer_raw(ps_csv_writer *w, const char *data, size_t len, long nrows, char *err,
                      size_t errsize) {
  char *o = out_room(w, len, err, errsize);
  if (o == NULL) return -1;
  memcpy(o, data, len);
  w->olen += len;
  w->rows += nrows;
  return 0;
}

static void out_free(ps_csv_writer *w) {
  free(w->out);
  w->out = NULL;
  w->olen = w->ocap = 0;
}

void ps_csv_writer_abort(ps_csv_writer *w) {
  bg_stop(w); /* a failed write is no news to an abort */
  out_free(w);
  ps_atomic_abort(&w->file);
}

int ps_csv_writer_commit(ps_csv_writer *w, int if_changed, char *err, size_t errsize) {
  if (w->file.fp != NULL && out_flush(w, 0) != 0) { /* worded as ps_atomic_finish words it */
    write_failed(w, " (the original is untouched)", err, errsize);
    ps_csv_writer_abort(w);
    return -1;
  }
  out_free(w);
  return ps_atomic_commit(&w->file, if_changed, err, errsize);
}
