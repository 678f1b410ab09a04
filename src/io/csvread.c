#include "csvread.h"
#include "csvscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ps_csv_reader {
  ps_scan *scan;
  ps_scan_record first;   /* read at open, handed out by the first ps_csv_next */
  int first_status;       /* its status: 1 a record, 0 an empty file, 2 already handed out */
};

ps_csv_reader *ps_csv_open(const char *path, unsigned flags, char *err, size_t errsize) {
  ps_csv_reader *r = calloc(1, sizeof *r);
  if (r == NULL) {
    snprintf(err, errsize, "%s: out of memory", path);
    return NULL;
  }
  r->scan = ps_scan_openf(path, (flags & PS_CSV_TRIM) ? 0 : PS_SCAN_KEEP_SPACE, err, errsize);
  if (r->scan == NULL) {
    free(r);
    return NULL;
  }
  /* Read the first record now so that LFS pointers and binary files fail at open; from a
   * small first read (a header's check opened a big file's 4 MiB buffer's worth), the rest
   * buffer-sized. */
  ps_scan_set_chunk(r->scan, 64u << 10);
  r->first_status = ps_scan_next(r->scan, &r->first);
  ps_scan_set_chunk(r->scan, 0);
  if (r->first_status < 0) {
    snprintf(err, errsize, "%s", ps_scan_error(r->scan));
    ps_csv_close(r);
    return NULL;
  }
  return r;
}

int ps_csv_next(ps_csv_reader *r, ps_csv_record *rec) {
  ps_scan_record sr;
  int st;
  if (r->first_status != 2) {
    sr = r->first;
    st = r->first_status;
    r->first_status = 2;
  } else {
    st = ps_scan_next(r->scan, &sr);
  }
  if (st != 1) return st;
  rec->nfields = sr.nfields;
  rec->fields = (char **)sr.fields;  /* the scanner's own writable array into its buffer */
  rec->lens = sr.lens;
  rec->line = sr.line;
  return 1;
}

int ps_csv_select(ps_csv_reader *r, const unsigned char *want, size_t n) {
  return ps_scan_select(r->scan, want, n);
}

const char *ps_csv_error(const ps_csv_reader *r) { return ps_scan_error(r->scan); }
const char *ps_csv_path(const ps_csv_reader *r) { return ps_scan_path(r->scan); }
int ps_csv_has_bom(const ps_csv_reader *r) { return ps_scan_has_bom(r->scan); }
const char *ps_csv_eol(const ps_csv_reader *r) { return ps_scan_eol(r->scan); }
uint64_t ps_csv_bytes_read(const ps_csv_reader *r) { return ps_scan_bytes_read(r->scan); }
uint64_t ps_csv_file_size(const ps_csv_reader *r) { return ps_scan_file_size(r->scan); }

void ps_csv_close(ps_csv_reader *r) {
  if (r == NULL) return;
  ps_scan_close(r->scan);
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
