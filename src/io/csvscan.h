/* The CSV engine: the one reader of the CSV grammar in perfscript (csvread.h is a thin API
 * over it for callers that want mutable fields and open-time checks; perfscript.csv uses that).
 *
 * It reads what Python's csv reads, record for record: RFC 4180 quoting with doubled quotes and
 * quoted newlines, stray quotes kept inside unquoted fields and text after a closing quote
 * kept; UTF-8 BOM; CRLF, LF or CR; ragged rows; blank lines skipped; no newline at EOF. Bad
 * input is an error naming the file and line, after every good record before it: a UTF-16
 * file or a Git LFS pointer (csvsniff.h), a NUL byte anywhere (binary data), a quote never
 * closed. Whitespace around every field is trimmed unless PS_SCAN_KEEP_SPACE.
 * Zero-copy: it hands out (pointer, length) pairs into its read buffer, unquoting in place only
 * the fields that hold doubled quotes or text after the closing quote. Each field is also
 * NUL-terminated there (the byte after it is a delimiter or a dropped quote), and 16 bytes
 * can be read from its start whatever its length (the buffer is padded: ps_num_finite_n).
 * tests/c/test_csvscan.c and tests/cli/test_csv_real.sh check it on every real export. */
#ifndef PS_CSVSCAN_H
#define PS_CSVSCAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct ps_scan ps_scan;

enum { PS_SCAN_KEEP_SPACE = 1 };   /* whitespace is data (RFC 4180 / Python), no trimming */

typedef struct ps_scan_record {
  size_t nfields;
  const char *const *fields;   /* valid until the next ps_scan_next */
  const size_t *lens;
  long line;                   /* physical line where the record starts (1-based) */
} ps_scan_record;

/* Opens path, trimming fields. On failure NULL with "path: reason" in err. Checks of the data
 * (BOM, UTF-16, LFS) happen at the first ps_scan_next. */
ps_scan *ps_scan_open(const char *path, char *err, size_t errsize);
ps_scan *ps_scan_openf(const char *path, unsigned flags, char *err, size_t errsize);
/* Starts at byte offset (a record start found by the caller; no BOM or LFS check there);
 * line numbers then count from 1 at that offset. */
ps_scan *ps_scan_open_at(const char *path, uint64_t offset, char *err, size_t errsize);
/* File offset of the next unread record, and the line it starts on. */
uint64_t ps_scan_offset(const ps_scan *s);
long ps_scan_line(const ps_scan *s);
/* Moves to byte offset > 0 (a record start found by the caller), numbering the line there
 * line, and clears an error: one scanner reads many blocks of a file, one buffer for all. */
int ps_scan_seek(ps_scan *s, uint64_t offset, long line);
/* Hands out only fields i < n with want[i] != 0 from the next record on; the others come as
 * empty strings, their bytes never cut out (a reader of some columns of a wide file). nfields
 * and every check of the data (quotes, NUL bytes, line numbers) stay what they are without
 * it. want NULL: all fields again. Returns 0, or -1 when out of memory. */
int ps_scan_select(ps_scan *s, const unsigned char *want, size_t n);
/* want[i] == PS_SCAN_PLAIN: field i is handed out as it lies in the buffer, neither trimmed
 * nor NUL-terminated, when the fast scan read its record and it does not start with a quote;
 * else it is cut as any other. Its trimmed text is what want[i] == 1 gives, and 16 bytes can
 * be read from its start: for a reader that trims for itself (ps_num_finite_n's numbers),
 * which so saves the cutting of most of a row's fields. */
enum { PS_SCAN_PLAIN = 2 };
/* One read brings in at most bytes (0: the buffer's size, 4 MiB for a big file): a reader of a
 * block of the file (ps_scan_seek) reads little past it. */
void ps_scan_set_chunk(ps_scan *s, size_t bytes);
/* 1: a record; 0: end of file; -1: error (ps_scan_error; every later call fails too). */
int ps_scan_next(ps_scan *s, ps_scan_record *rec);
/* A record as it lies in the file, not edited (ps_scan_next_raw): its bytes, from its first
 * field to its line end included (no blank line before it), and each field's content
 * (ps_scan_raw_field) as offsets into base: a quoted field's text between its quotes (to the
 * end of any text after the closing quote), unescape set when ps_scan_unquote must undo
 * doubled quotes or drop a closing quote. Nothing is trimmed, whatever the flags. Valid until
 * the next ps_scan_next or _raw. (The scanner's own index, handed out as it is: the spans of
 * the exact walk, or the field ends of the fast scan, made into spans only for the fields
 * asked for: a merge reads a few fields of most records.) */
typedef struct ps_scan_field { size_t start, end; int unescape; } ps_scan_field;
typedef struct ps_scan_raw {
  const char *bytes;
  size_t len;
  size_t nfields;
  const char *base;
  const ps_scan_field *spans;   /* every field's span, or NULL: */
  const size_t *ends;           /* field i is base(ends[i], ends[i + 1]) */
  long line;                    /* physical line where the record starts (1-based) */
} ps_scan_raw;
/* Like ps_scan_next, for a caller that copies most records as they are and reads a few
 * fields: 1, 0 or -1 as ps_scan_next. The two may be mixed on one scanner. */
int ps_scan_next_raw(ps_scan *s, ps_scan_raw *rec);
/* Field i's span (i < nfields), the same whichever scan read the record. */
ps_scan_field ps_scan_span_of_ends(const char *base, const size_t *ends, size_t i);
static inline ps_scan_field ps_scan_raw_field(const ps_scan_raw *rec, size_t i) {
  return rec->spans ? rec->spans[i] : ps_scan_span_of_ends(rec->base, rec->ends, i);
}
/* Field i's value (as ps_scan_next gives it, untrimmed) into out, which has room for
 * its span's end - start + 1 bytes; NUL-terminated; returns its length. */
size_t ps_scan_unquote(const ps_scan_raw *rec, size_t i, char *out);
/* 1 when field i is quoted: its content follows a quote (an unquoted one's, a comma). */
static inline int ps_scan_quoted(const ps_scan_raw *rec, size_t i) {
  const char *c = rec->base + ps_scan_raw_field(rec, i).start;
  return c > rec->bytes && c[-1] == '"';
}
/* The bytes buffered from the scanner's offset on, as they lie in the file (a record handed
 * out is edited in place: so before the first ps_scan_next after an open or ps_scan_seek),
 * reading a chunk first when none is: for a reader that wants the raw bytes as well (the
 * import hashes each block of a file as it is read). 0 and *p, *n (0 bytes at the end of the
 * file); -1 on a read error (ps_scan_error). Valid until the next ps_scan_next. */
int ps_scan_peek(ps_scan *s, const char **p, size_t *n);
const char *ps_scan_error(const ps_scan *s);
const char *ps_scan_path(const ps_scan *s);
int ps_scan_has_bom(const ps_scan *s);
/* Line ending of the first record: "\r\n" (also for a lone CR), "\n", or NULL until known. */
const char *ps_scan_eol(const ps_scan *s);
uint64_t ps_scan_bytes_read(const ps_scan *s);
uint64_t ps_scan_file_size(const ps_scan *s);
void ps_scan_close(ps_scan *s);
/* Tests only: 1 makes every scanner use the portable byte loop, 2 the SSE2 scan, 0 the best
 * the CPU has (AVX2 where it has it); all must read every file alike. */
void ps_scan_set_portable(int on);

#endif
