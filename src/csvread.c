#include "csvread.h"
#include "grow.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define LFS_MAGIC "version https://git-lfs.github.com/spec/"

typedef struct field_ref { size_t off, len; } field_ref;
typedef struct record_ref { size_t first, n; long line; } record_ref;

struct ps_csv_reader {
  int fd;
  char *path;
  unsigned flags;
  struct csv_parser parser;
  unsigned char *chunk;
  uint64_t bytes_read, file_size;
  int eof, fini_done, has_bom, first_chunk;
  const char *eol;

  /* completed fields of this chunk (and of the record still open) */
  char *data; size_t data_len, data_cap;
  field_ref *fields; size_t nfields, fields_cap;
  /* completed records, consumed from 'next' */
  record_ref *records; size_t nrecords, records_cap, next;
  size_t open_first;      /* first field of the record being parsed */
  long line, open_line;   /* current physical line; start line of the open record */

  /* what ps_csv_next hands out */
  char **out_fields; size_t *out_lens; size_t out_cap;

  int failed, pending_error;
  char error[512];
};

static void set_error(ps_csv_reader *r, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(r->error, sizeof r->error, "%s:", r->path);
  va_start(ap, fmt);
  vsnprintf(r->error + n, sizeof r->error - (size_t)n, fmt, ap);
  va_end(ap);
}


static void on_field(void *s, size_t len, void *ud) {
  ps_csv_reader *r = ud;
  if (r->failed) return;
  if (r->nfields == r->open_first) r->open_line = r->line;
  if (ps_grow((void **)&r->data, &r->data_cap, r->data_len + len + 1, 1) != 0 ||
      ps_grow((void **)&r->fields, &r->fields_cap, r->nfields + 1, sizeof(field_ref)) != 0) {
    r->failed = 1;
    set_error(r, "%ld: out of memory", r->line);
    return;
  }
  memcpy(r->data + r->data_len, s, len);
  r->data[r->data_len + len] = '\0';
  r->fields[r->nfields].off = r->data_len;
  r->fields[r->nfields].len = len;
  r->nfields++;
  r->data_len += len + 1;
  for (const char *p = s, *end = p + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
    r->line++;  /* newlines inside a quoted field */
}

static void on_record(int c, void *ud) {
  ps_csv_reader *r = ud;
  if (r->failed) return;
  size_t n = r->nfields - r->open_first;
  if (n > 0) {  /* a line ending with no fields before it is a blank line: skipped */
    if (ps_grow((void **)&r->records, &r->records_cap, r->nrecords + 1, sizeof(record_ref)) != 0) {
      r->failed = 1;
      set_error(r, "%ld: out of memory", r->line);
      return;
    }
    r->records[r->nrecords++] = (record_ref){r->open_first, n, r->open_line};
    r->open_first = r->nfields;
    if (r->eol == NULL && c >= 0) r->eol = c == '\r' ? "\r\n" : "\n";
  }
  if (c == '\n') r->line++;
}

/* libcsv's parser states (libcsv.c); the struct is public, its state values are not. */
#define LIBCSV_ROW_NOT_BEGUN 0
#define LIBCSV_FIELD_BEGUN 2
#define LIBCSV_FIELD_MIGHT_HAVE_ENDED 3

/* Whitespace is data, as in RFC 4180 and Python's csv (trimming is the opt-in PS_CSV_TRIM). */
static int never_space(unsigned char c) { (void)c; return 0; }

static int fill(ps_csv_reader *r);

ps_csv_reader *ps_csv_open(const char *path, unsigned flags, char *err, size_t errsize) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errsize, "%s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(err, errsize, "%s: is a directory, not a CSV file", path);
    close(fd);
    return NULL;
  }
  ps_csv_reader *r = calloc(1, sizeof *r);
  if (r) {
    r->path = strdup(path);
    r->chunk = malloc(CHUNK);
  }
  if (r == NULL || r->path == NULL || r->chunk == NULL ||
      csv_init(&r->parser, CSV_APPEND_NULL | CSV_REPALL_NL) != 0) {
    snprintf(err, errsize, "%s: out of memory", path);
    if (r) { free(r->path); free(r->chunk); free(r); }
    close(fd);
    return NULL;
  }
  csv_set_space_func(&r->parser, never_space);
  r->fd = fd;
  r->flags = flags;
  r->file_size = (uint64_t)st.st_size;
  r->line = 1;
  r->first_chunk = 1;
  /* Read ahead now so that LFS pointers and binary files fail at open. */
  if (fill(r) < 0 || r->failed || r->pending_error) {
    snprintf(err, errsize, "%s", r->error);
    ps_csv_close(r);
    return NULL;
  }
  return r;
}

/* A byte that may follow a closing quote without changing its meaning. */
static int ends_quote(unsigned char c) { return c == '"' || c == ',' || c == '\r' || c == '\n'; }

/* Text after a closing quote ("ab"cd, or the Excel guard "x"<TAB>): libcsv's non-strict mode
 * puts the quote back and re-opens the field as quoted, swallowing the fields after it. Python's
 * reader instead reads the rest of the field as plain text (abcd, x<TAB>), and so do we: the
 * quote is taken back out of libcsv's buffer and the field goes on unquoted. libcsv keeps its
 * state in locals while it parses, so feed_libcsv cuts the input after every quote that is
 * followed by such text: between calls the stored state is exact. */
static void reopen_unquoted(struct csv_parser *p) {
  p->entry_pos -= 1 + p->spaces;  /* the closing quote (no spaces: never_space) */
  p->spaces = 0;
  p->quoted = 0;
  p->pstate = LIBCSV_FIELD_BEGUN;
}

static int feed_libcsv(ps_csv_reader *r, const unsigned char *p, size_t len) {
  size_t pos = 0;
  while (pos < len) {
    if (r->parser.pstate == LIBCSV_FIELD_MIGHT_HAVE_ENDED && !ends_quote(p[pos]))
      reopen_unquoted(&r->parser);
    size_t end = len;
    for (const unsigned char *q = p + pos;
         (q = memchr(q, '"', (size_t)(p + len - q))) != NULL; q++) {
      if (q + 1 < p + len && !ends_quote(q[1])) { end = (size_t)(q + 1 - p); break; }
    }
    if (csv_parse(&r->parser, p + pos, end - pos, on_field, on_record, r) != end - pos)
      return -1;
    pos = end;
  }
  return 0;
}

/* The fast path for the common line: one physical line, every field either unquoted or quoted
 * (text after its closing quote read as plain text, as above), no CR inside. Such a line has
 * exactly one reading, so splitting it here gives what feed_libcsv gives, at memchr speed;
 * anything else (quoted newlines, stray CRs) returns 0 and goes to libcsv.
 * s..e is the line without its '\n'. */
static int fast_line(ps_csv_reader *r, const unsigned char *s, const unsigned char *e) {
  int cr = e > s && e[-1] == '\r';
  if (cr) e--;
  size_t len = (size_t)(e - s);
  if (len == 0 || memchr(s, '\r', len) != NULL) return 0;
  if (ps_grow((void **)&r->data, &r->data_cap, r->data_len + 2 * len + 2, 1) != 0) return 0;
  size_t first = r->nfields, data_len0 = r->data_len;
  const unsigned char *f = s, *next;
  do {
    char *out = r->data + r->data_len;
    size_t n;
    if (f < e && *f == '"') {
      const unsigned char *q = f + 1, *c;
      n = 0;
      for (;;) {
        if ((c = memchr(q, '"', (size_t)(e - q))) == NULL) goto reject;  /* spans lines */
        memcpy(out + n, q, (size_t)(c - q));
        n += (size_t)(c - q);
        if (c + 1 < e && c[1] == '"') { out[n++] = '"'; q = c + 2; continue; }
        q = c + 1;
        break;
      }
      if (q == e) {
        next = NULL;
      } else if (*q == ',') {
        next = q + 1;
      } else {  /* text after the closing quote: the rest of the field is plain text */
        const unsigned char *c = memchr(q, ',', (size_t)(e - q));
        memcpy(out + n, q, (size_t)((c ? c : e) - q));
        n += (size_t)((c ? c : e) - q);
        next = c ? c + 1 : NULL;
      }
    } else {
      const unsigned char *c = memchr(f, ',', (size_t)(e - f));
      n = (size_t)((c ? c : e) - f);
      memcpy(out, f, n);
      next = c ? c + 1 : NULL;
    }
    out[n] = '\0';
    if (ps_grow((void **)&r->fields, &r->fields_cap, r->nfields + 1, sizeof(field_ref)) != 0) goto reject;
    r->fields[r->nfields++] = (field_ref){r->data_len, n};
    r->data_len += n + 1;
    f = next;
  } while (f != NULL);
  r->open_line = r->line;
  on_record(cr ? '\r' : '\n', r);
  if (cr) on_record('\n', r);
  return !r->failed;
reject:
  r->nfields = first;
  r->data_len = data_len0;
  return 0;
}

/* Feeds a chunk line by line: the fast path where it applies, libcsv for everything else. */
static int feed(ps_csv_reader *r, const unsigned char *p, size_t len) {
  size_t pos = 0;
  int fast = !(r->flags & PS_CSV_LIBCSV_ONLY);
  while (pos < len) {
    const unsigned char *nl = memchr(p + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - p) + 1 : len;
    if (!(fast && nl && r->parser.pstate == LIBCSV_ROW_NOT_BEGUN && fast_line(r, p + pos, nl))) {
      if (r->failed || feed_libcsv(r, p + pos, end - pos) != 0) return -1;
    }
    pos = end;
  }
  return 0;
}

/* Parses one more chunk into the queue. Returns 0 at end of input, -1 on a read error. */
static int fill(ps_csv_reader *r) {
  /* Keep the fields of the still-open record, drop the consumed ones. */
  size_t keep_first = r->open_first, keep_n = r->nfields - keep_first;
  if (keep_first > 0) {
    size_t base = keep_n ? r->fields[keep_first].off : r->data_len;
    memmove(r->data, r->data + base, r->data_len - base);
    r->data_len -= base;
    for (size_t i = 0; i < keep_n; i++) {
      r->fields[i] = r->fields[keep_first + i];
      r->fields[i].off -= base;
    }
  } else if (keep_n == 0) {
    r->data_len = 0;
  }
  r->nfields = keep_n;
  r->open_first = 0;
  r->nrecords = r->next = 0;

  if (r->eof) {
    if (r->fini_done) return 0;
    r->fini_done = 1;
    /* libcsv reports an open quote at the end only in strict mode, which we do not want
     * (it rejects stray quotes that Python's reader accepts), so look at its state. */
    if (r->parser.pstate == LIBCSV_FIELD_BEGUN && r->parser.quoted) {
      set_error(r, "%ld: unterminated quoted field (a '\"' opened here is never closed)",
                r->line);
      r->pending_error = 1;
      csv_fini(&r->parser, NULL, NULL, NULL);  /* drop the partial record */
    } else if (csv_fini(&r->parser, on_field, on_record, r) != 0) {
      set_error(r, "%ld: cannot finish parsing: %s", r->line,
                csv_strerror(csv_error(&r->parser)));
      r->pending_error = 1;
    }
    return r->nrecords > 0 || r->pending_error;
  }

  ssize_t got;
  do got = read(r->fd, r->chunk, CHUNK); while (got < 0 && errno == EINTR);
  if (got < 0) {
    set_error(r, "%ld: read error: %s", r->line, strerror(errno));
    return -1;
  }
  if (got == 0) {
    r->eof = 1;
    return fill(r);
  }
  r->bytes_read += (uint64_t)got;
  unsigned char *p = r->chunk;
  size_t len = (size_t)got;
  if (r->first_chunk) {
    r->first_chunk = 0;
    if (len >= sizeof LFS_MAGIC - 1 && memcmp(p, LFS_MAGIC, sizeof LFS_MAGIC - 1) == 0) {
      set_error(r, "1: a Git LFS pointer, not CSV data (fetch the real file with 'git lfs pull')");
      return -1;
    }
    if (len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
      r->has_bom = 1;
      p += 3;
      len -= 3;
    }
  }
  unsigned char *nul = memchr(p, '\0', len);
  if (nul) {  /* deliver what precedes the NUL, then fail */
    long line = r->line;
    for (unsigned char *q = p; (q = memchr(q, '\n', (size_t)(nul - q))); q++) line++;
    set_error(r, "%ld: binary data (a NUL byte at offset %llu), not a CSV file", line,
              (unsigned long long)(r->bytes_read - (uint64_t)got + (uint64_t)(nul - r->chunk)));
    r->pending_error = 1;
    len = (size_t)(nul - p);
  }
  if (feed(r, p, len) != 0) {
    set_error(r, "%ld: %s", r->line, csv_strerror(csv_error(&r->parser)));
    return -1;
  }
  return 1;
}

int ps_csv_next(ps_csv_reader *r, ps_csv_record *rec) {
  while (r->next >= r->nrecords) {
    if (r->failed) return -1;
    if (r->pending_error) { r->failed = 1; return -1; }
    int st = fill(r);
    if (st < 0) { r->failed = 1; return -1; }
    if (r->failed) return -1;
    if (st == 0) return 0;
  }
  record_ref *rr = &r->records[r->next++];
  if (ps_grow((void **)&r->out_fields, &r->out_cap, rr->n, sizeof(char *)) != 0) {
    set_error(r, "%ld: out of memory", rr->line);
    r->failed = 1;
    return -1;
  }
  size_t cap = r->out_cap;
  size_t *lens = realloc(r->out_lens, cap * sizeof *lens);
  if (lens == NULL) { r->failed = 1; set_error(r, "%ld: out of memory", rr->line); return -1; }
  r->out_lens = lens;
  for (size_t i = 0; i < rr->n; i++) {
    field_ref *f = &r->fields[rr->first + i];
    char *s = r->data + f->off;
    size_t len = f->len;
    if (r->flags & PS_CSV_TRIM) s = ps_csv_trim(s, &len);
    r->out_fields[i] = s;
    lens[i] = len;
  }
  rec->nfields = rr->n;
  rec->fields = r->out_fields;
  rec->lens = lens;
  rec->line = rr->line;
  return 1;
}

char *ps_csv_trim(char *s, size_t *len) {
  size_t n = *len;
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    n--;
  while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) { s++; n--; }
  s[n] = '\0';
  *len = n;
  return s;
}

const char *ps_csv_error(const ps_csv_reader *r) { return r->error; }
const char *ps_csv_path(const ps_csv_reader *r) { return r->path; }
int ps_csv_has_bom(const ps_csv_reader *r) { return r->has_bom; }
const char *ps_csv_eol(const ps_csv_reader *r) { return r->eol; }
uint64_t ps_csv_bytes_read(const ps_csv_reader *r) { return r->bytes_read; }
uint64_t ps_csv_file_size(const ps_csv_reader *r) { return r->file_size; }

void ps_csv_close(ps_csv_reader *r) {
  if (r == NULL) return;
  csv_free(&r->parser);
  if (r->fd >= 0) close(r->fd);
  free(r->path); free(r->chunk); free(r->data); free(r->fields); free(r->records);
  free(r->out_fields); free(r->out_lens);
  free(r);
}

/* ---- column names ------------------------------------------------------------------------ */

/* Renamings between kernel_details, op_summary and older exports (formats_and_quirks A.3). */
static const char *const alias_groups[][4] = {
  {"Name", "Op Name", NULL},
  {"Type", "OP Type", NULL},
  {"Accelerator Core", "Task Type", NULL},
  {"Start Time(us)", "Task Start Time(us)", NULL},
  {"Duration(us)", "Task Duration(us)", NULL},
  {"Wait Time(us)", "Task Wait Time(us)", NULL},
  {"Block Dim", "Block Num", NULL},
  {"Mix Block Dim", "Mix Block Num", NULL},
  {"Stream ID", "Stream Id", NULL},
  {"Task ID", "Task Id", NULL},
  {"Device_id", "Device ID", "Device Id", NULL},
};

const char *const *ps_csv_aliases(const char *name) {
  for (size_t g = 0; g < sizeof alias_groups / sizeof alias_groups[0]; g++)
    for (size_t i = 0; alias_groups[g][i]; i++)
      if (strcmp(alias_groups[g][i], name) == 0) return alias_groups[g];
  return NULL;
}

static int find_exact(char *const *header, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(header[i], name) == 0) return (int)i;
  return -1;
}

int ps_csv_find_column(char *const *header, size_t n, const char *name) {
  int i = find_exact(header, n, name);
  if (i >= 0) return i;
  const char *const *group = ps_csv_aliases(name);
  for (; group && *group; group++)
    if ((i = find_exact(header, n, *group)) >= 0) return i;
  return -1;
}
