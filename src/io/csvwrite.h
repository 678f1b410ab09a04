/* CSV writing: the one quoter of perfscript and the atomic CSV writer built on it.
 * Minimal quoting, as Python's csv writes (QUOTE_MINIMAL): a field is quoted only when it holds
 * a comma, a quote, CR or LF, and quotes inside are doubled; a record of one empty field is
 * written as "" so that it does not read back as a blank line. perfscript.csv exposes it to
 * Lua as csv.quote and csv.format_row. */
#ifndef PS_CSVWRITE_H
#define PS_CSVWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "atomicfile.h"

struct ps_scan_raw;

typedef struct ps_csv_writer {
  ps_atomic file;
  const char *eol;   /* "\n" or "\r\n" */
  int bom;
  long rows;
  char *out;         /* encoded rows not yet handed to file.fp (written in large blocks) */
  size_t olen, ocap;
  uint64_t handed, synced; /* bytes handed to file.fp; those whose write-back was started */
  struct ps_csv_bg *bg;    /* a large file's background writer (csvwrite.c), or NULL */
} ps_csv_writer;

/* eol: "\n", "\r\n", or NULL to keep the existing file's style (LF for a new file).
 * bom: 1, 0, or -1 to keep the existing file's choice (none for a new file). */
int ps_csv_writer_open(ps_csv_writer *w, const char *path, const char *eol, int bom,
                       char *err, size_t errsize);
int ps_csv_writer_row(ps_csv_writer *w, const char *const *fields, const size_t *lens,
                      size_t n, char *err, size_t errsize);
/* Writes len bytes holding nrows records already encoded as ps_csv_format_row encodes them
 * with this writer's eol (a caller that copies rows of an existing file verbatim: merge.c
 * checks each first). 0, or -1 with a message. */
int ps_csv_writer_raw(ps_csv_writer *w, const char *data, size_t len, long nrows, char *err,
                      size_t errsize);
/* Returns PS_ATOMIC_CREATED/REPLACED/UNCHANGED or -1. */
int ps_csv_writer_commit(ps_csv_writer *w, int if_changed, char *err, size_t errsize);
void ps_csv_writer_abort(ps_csv_writer *w);

/* 1 when the field must be quoted (it holds a comma, a quote, CR or LF). */
int ps_csv_needs_quote(const char *s, size_t len);

/* Writes the field with minimal quoting to out (room for PS_CSV_QUOTED_MAX(len) bytes, no NUL
 * added); returns the bytes written. */
#define PS_CSV_QUOTED_MAX(len) (2 * (len) + 2)
size_t ps_csv_quote(char *out, const char *s, size_t len);

/* Bytes ps_csv_format_row may write for these fields and eol (NULL: none). */
/* ps_csv_is_formatted for a record as the CSV engine found it (ps_scan_next_raw): 1 when its
 * bytes are what ps_csv_format_row writes for its fields and eol, every field quoted exactly
 * when the quoter quotes it, the line end eol (and no other). */
int ps_csv_raw_is_formatted(const struct ps_scan_raw *rec, const char *eol);
size_t ps_csv_row_max(const size_t *lens, size_t n, const char *eol);
/* Encodes one record into out (room for ps_csv_row_max bytes, no NUL added): the fields with
 * minimal quoting joined by commas, then eol unless NULL. Returns the bytes written. */
size_t ps_csv_format_row(char *out, const char *const *fields, const size_t *lens, size_t n,
                         const char *eol);

/* 1 when rec[0, n), bytes that the CSV engine read as one record of nfields fields of these
 * lengths, are exactly what ps_csv_format_row writes for those fields and eol: eol ends them
 * and nothing else does (no blank line before), every quote opens a field, closes it before
 * a comma or the end, or doubles a quote inside, every quoted field needs its quotes, and the
 * bytes add up to the lengths, separators and quoting. A caller may then copy the bytes
 * instead of quoting the fields again (ps_csv_writer_raw). */
int ps_csv_is_formatted(const char *rec, size_t n, size_t nfields, const size_t *lens,
                        const char *eol);

/* Appends field to fp with minimal quoting. Returns 0 or -1 on a write error. */
int ps_csv_write_field(FILE *fp, const char *s, size_t len);

/* Reads the first line of an existing file: its line ending and BOM. 0 when readable. */
int ps_csv_sniff_style(const char *path, const char **eol, int *bom);

#endif
