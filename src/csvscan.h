/* A zero-copy CSV scanner for the aggregation hot path (profiler tables of many GB).
 *
 * It reads what csvread.h reads, record for record (RFC 4180 quoting with doubled quotes and
 * quoted newlines, stray quotes kept inside unquoted fields and text after a closing quote
 * kept, as Python's csv does; UTF-8 BOM; CRLF or LF; ragged rows; blank lines skipped; no
 * newline at EOF; Git LFS pointers, NUL bytes and an unterminated quote are errors naming the
 * file and line), with whitespace trimmed around every field as PS_CSV_TRIM does. Instead of
 * copying each field through libcsv's callbacks it hands out (pointer, length) pairs into its
 * read buffer, unquoting in place only the fields that hold doubled quotes: about a quarter
 * of the instructions per byte. Fields are NOT NUL-terminated. tests/c/test_csvscan.c checks
 * it against csvread on every real export and on the quirk fixtures. */
#ifndef PS_CSVSCAN_H
#define PS_CSVSCAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct ps_scan ps_scan;

typedef struct ps_scan_record {
  size_t nfields;
  const char *const *fields;   /* valid until the next ps_scan_next */
  const size_t *lens;
  long line;                   /* physical line where the record starts (1-based) */
} ps_scan_record;

ps_scan *ps_scan_open(const char *path, char *err, size_t errsize);
/* Starts at byte offset (a record start found by the caller; no BOM or LFS check there);
 * line numbers then count from 1 at that offset. */
ps_scan *ps_scan_open_at(const char *path, uint64_t offset, char *err, size_t errsize);
/* File offset of the next unread record. */
uint64_t ps_scan_offset(const ps_scan *s);
/* 1: a record; 0: end of file; -1: error (ps_scan_error). */
int ps_scan_next(ps_scan *s, ps_scan_record *rec);
const char *ps_scan_error(const ps_scan *s);
uint64_t ps_scan_bytes_read(const ps_scan *s);
uint64_t ps_scan_file_size(const ps_scan *s);
void ps_scan_close(ps_scan *s);

#endif
