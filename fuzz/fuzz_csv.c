/* The CSV engine (src/io/csvscan.c) and its record API (csvread.c) on arbitrary bytes.
 * Besides ASan/UBSan, it checks what the callers rely on:
 *   - every field is NUL-terminated at its length and holds no NUL (binary data is an error);
 *   - the trimming scan equals the whitespace-keeping reader, field by field, after trimming
 *     (one grammar, one whitespace set), with the same records, lines and errors;
 *   - a scanner opened at any record offset (the import's second thread) reads on exactly as
 *     the first one did (differential: the same file read from two starting points).
 * An input whose first byte is 0xB5 is put after one long quoted field so that the engine's
 * 4 MiB buffer ends in its middle: the refill paths (a record, a quoted field, a doubled quote
 * or a CRLF cut by the buffer's end) are fuzzed too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csvread.h"
#include "csvscan.h"
#include "memfile.h"
#include "writeback_sig.h"

#define MAXREC 256

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* XXH3 (the signatures' hash, not instrumented): the padded inputs have a 4 MiB field */
static uint64_t record_hash(const ps_scan_record *r) {
  uint64_t h = r->nfields;
  for (size_t i = 0; i < r->nfields; i++) h = h * 1099511628211ull ^ ps_sig_hash_bytes(r->fields[i], r->lens[i]);
  return h;
}

#define ENGINE_BUF (4u << 20)   /* csvscan.c's BUFSIZE */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uint8_t *padded;
  if (size > 1 && data[0] == 0xB5 && size < 65536) {
    size_t fill = ENGINE_BUF - (size - 1) / 2 - 3;   /* '"' fill '"' '\n', then the input */
    if (padded == NULL && (padded = malloc(ENGINE_BUF + 65536)) == NULL) abort();
    padded[0] = '"';
    memset(padded + 1, 'a', fill);
    memcpy(padded + 1 + fill, "\"\n", 2);
    memcpy(padded + fill + 3, data + 1, size - 1);
    data = padded;
    size = fill + 3 + size - 1;
  }
  const char *path = fuzz_memfile(data, size);
  char err[700];
  static uint64_t offsets[MAXREC], hashes[MAXREC];
  size_t nrec = 0;
  int end;

  ps_scan *s = ps_scan_open(path, err, sizeof err);
  ps_csv_reader *k = ps_csv_open(path, 0, err, sizeof err);   /* keeps whitespace */
  if (s == NULL) abort();
  ps_scan_record r;
  ps_csv_record kr;
  int kst = k ? 2 : -1;   /* an open that fails is the first record's error */
  for (;;) {
    uint64_t off = ps_scan_offset(s);
    end = ps_scan_next(s, &r);
    if (k) kst = ps_csv_next(k, &kr);
    if (end != kst) abort();
    if (end < 0) {
      if (k && strcmp(ps_scan_error(s), ps_csv_error(k)) != 0) abort();
      if (!k && strcmp(ps_scan_error(s), err) != 0) abort();
      break;
    }
    if (end == 0) break;
    if (r.nfields != kr.nfields || r.line != kr.line) abort();
    for (size_t i = 0; i < r.nfields; i++) {
      if (r.fields[i][r.lens[i]] != 0 || memchr(r.fields[i], 0, r.lens[i])) abort();
      const char *t = kr.fields[i];
      size_t n = kr.lens[i];
      if (t[n] != 0) abort();
      while (n && is_space((unsigned char)*t)) t++, n--;
      while (n && is_space((unsigned char)t[n - 1])) n--;
      if (n != r.lens[i] || memcmp(t, r.fields[i], n) != 0) abort();
    }
    if (nrec < MAXREC) {
      offsets[nrec] = off;
      hashes[nrec++] = record_hash(&r);
    }
  }
  ps_scan_close(s);
  ps_csv_close(k);

  /* from a few record starts after the first (the first may hold the BOM), read on */
  for (size_t start = 1; start < nrec; start += 1 + nrec / 4) {
    ps_scan *t = ps_scan_open_at(path, offsets[start], err, sizeof err);
    if (t == NULL) abort();
    size_t i = start;
    int st;
    while ((st = ps_scan_next(t, &r)) > 0 && i < nrec)
      if (record_hash(&r) != hashes[i++]) abort();
    if (i < nrec) abort();                     /* it stopped early */
    if (nrec < MAXREC && st != end) abort();   /* it ends as the whole read did */
    ps_scan_close(t);
  }
  return 0;
}
