/* Streaming CSV reader: the record API of the CSV engine (csvscan.h, which holds the grammar:
 * what Python's csv reads, the profiler's quirks, and the errors for bad input). This layer
 * adds what its callers (perfscript.csv, the table and write-back readers) want: whitespace
 * kept unless PS_CSV_TRIM, mutable NUL-terminated fields, and bad input that shows in the
 * first record (UTF-16, Git LFS pointer, binary data) failing at open. */
#ifndef PS_CSVREAD_H
#define PS_CSVREAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct ps_csv_reader ps_csv_reader;

typedef struct ps_csv_record {
  size_t nfields;
  char **fields;        /* NUL-terminated, valid until the next ps_csv_next */
  const size_t *lens;
  long line;            /* physical line (1-based) where the record starts */
} ps_csv_record;

enum {
  PS_CSV_TRIM = 1       /* strip surrounding whitespace (the Excel TAB guards) after unquoting */
};

/* Opens path ("-" is not special). On failure returns NULL with a message in err. */
ps_csv_reader *ps_csv_open(const char *path, unsigned flags, char *err, size_t errsize);

/* 1: a record in *rec; 0: end of file; -1: error, see ps_csv_error. */
int ps_csv_next(ps_csv_reader *r, ps_csv_record *rec);

/* From the next record on, hands out only fields i < n with want[i] != 0, the others as empty
 * strings (ps_scan_select: a reader of a few columns of a wide file). 0, or -1 out of memory. */
int ps_csv_select(ps_csv_reader *r, const unsigned char *want, size_t n);

const char *ps_csv_error(const ps_csv_reader *r);
const char *ps_csv_path(const ps_csv_reader *r);
int ps_csv_has_bom(const ps_csv_reader *r);
/* Line ending of the first record: "\r\n", "\n", or NULL when not yet known. */
const char *ps_csv_eol(const ps_csv_reader *r);
uint64_t ps_csv_bytes_read(const ps_csv_reader *r);
uint64_t ps_csv_file_size(const ps_csv_reader *r);
void ps_csv_close(ps_csv_reader *r);

/* Column lookup with the profiler's known renamings ("Block Dim" finds "Block Num", ...).
 * Returns the 0-based index or -1. */
int ps_csv_find_column(char *const *header, size_t n, const char *name);

/* The alias group of name (NULL-terminated), or NULL when it has none. */
const char *const *ps_csv_aliases(const char *name);

#endif
