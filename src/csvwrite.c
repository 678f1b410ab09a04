#include "csvwrite.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ps_csv_sniff_style(const char *path, const char **eol, int *bom) {
  FILE *f = fopen(path, "rb");
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
  int quote = 0;
  for (size_t i = 0; i < len && !quote; i++)
    quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
  if (!quote) return fwrite(s, 1, len, fp) == len ? 0 : -1;
  if (putc('"', fp) == EOF) return -1;
  const char *end = s + len;
  while (s < end) {
    const char *q = memchr(s, '"', (size_t)(end - s));
    size_t chunk = (size_t)((q ? q + 1 : end) - s);
    if (fwrite(s, 1, chunk, fp) != chunk) return -1;
    if (q && putc('"', fp) == EOF) return -1;   /* double it */
    s += chunk;
  }
  return putc('"', fp) == EOF ? -1 : 0;
}

int ps_csv_writer_row(ps_csv_writer *w, const char *const *fields, const size_t *lens,
                      size_t n, char *err, size_t errsize) {
  FILE *fp = w->file.fp;
  if (fp == NULL) {
    snprintf(err, errsize, "writer is closed");
    return -1;
  }
  if (n == 1 && lens[0] == 0) {  /* a lone empty field must not read back as a blank line */
    if (fputs("\"\"", fp) == EOF) goto fail;
    n = 0;
  }
  for (size_t i = 0; i < n; i++) {
    if ((i > 0 && putc(',', fp) == EOF) || ps_csv_write_field(fp, fields[i], lens[i]) != 0)
      goto fail;
  }
  if (fputs(w->eol, fp) == EOF) goto fail;
  w->rows++;
  return 0;
fail:
  snprintf(err, errsize, "%s: write failed: %s", w->file.path, strerror(errno));
  return -1;
}

int ps_csv_writer_commit(ps_csv_writer *w, int if_changed, char *err, size_t errsize) {
  return ps_atomic_commit(&w->file, if_changed, err, errsize);
}

void ps_csv_writer_abort(ps_csv_writer *w) { ps_atomic_abort(&w->file); }
