/* CSV writer with minimal quoting (a field is quoted only when it holds a comma, a quote,
 * CR or LF; quotes are doubled), written through an atomic replace. */
#ifndef PS_CSVWRITE_H
#define PS_CSVWRITE_H

#include <stddef.h>

#include "atomicfile.h"

typedef struct ps_csv_writer {
  ps_atomic file;
  const char *eol;   /* "\n" or "\r\n" */
  int bom;
  long rows;
} ps_csv_writer;

/* eol: "\n", "\r\n", or NULL to keep the existing file's style (LF for a new file).
 * bom: 1, 0, or -1 to keep the existing file's choice (none for a new file). */
int ps_csv_writer_open(ps_csv_writer *w, const char *path, const char *eol, int bom,
                       char *err, size_t errsize);
int ps_csv_writer_row(ps_csv_writer *w, const char *const *fields, const size_t *lens,
                      size_t n, char *err, size_t errsize);
/* Returns PS_ATOMIC_CREATED/REPLACED/UNCHANGED or -1. */
int ps_csv_writer_commit(ps_csv_writer *w, int if_changed, char *err, size_t errsize);
void ps_csv_writer_abort(ps_csv_writer *w);

/* Appends field to fp with minimal quoting. Returns 0 or -1 on a write error. */
int ps_csv_write_field(FILE *fp, const char *s, size_t len);

/* Reads the first line of an existing file: its line ending and BOM. 0 when readable. */
int ps_csv_sniff_style(const char *path, const char **eol, int *bom);

#endif
