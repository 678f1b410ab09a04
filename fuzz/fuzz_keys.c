/* The row identities and the shape grammar on arbitrary cells: import_key, writeback_sig,
 * lookup_key and shape.c. The input is cut at '\n' into a kernel type and the signature cells.
 * Besides ASan/UBSan it checks the stated contracts:
 *   - shape.h: formatting the parse of a canonical text gives it back byte for byte, and the
 *     normalised cell is never longer than the cell and (a shape) normalises to itself;
 *   - lookup_key.h: the canonical text of a shape or list cell is its own canonical text, and
 *     equal canonical texts are what two cells share (a cell and its canonical text agree);
 *   - import_key.h / writeback_sig.h: the key and the hash do not depend on the call (reusable
 *     state leaks nothing between rows). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import_key.h"
#include "lookup_key.h"
#include "memfile.h"
#include "shape.h"
#include "writeback_sig.h"

#define KEYCAP 8192

static void shapes(const char *cell, size_t len) {
  static ps_shape sh, again;
  static int init;
  if (!init) ps_shape_init(&sh), ps_shape_init(&again), init = 1;
  if (ps_shape_parse(&sh, cell, len) != 0) abort();
  size_t n = ps_shape_format(&sh, NULL, 0);
  char *canon = malloc(n + 1);
  if (ps_shape_format(&sh, canon, n + 1) != n || canon[n] != 0) abort();
  if (sh.nbad == 0) {
    if (ps_shape_parse(&again, canon, n) != 0) abort();
    size_t m = ps_shape_format(&again, NULL, 0);
    char *twice = malloc(m + 1);
    ps_shape_format(&again, twice, m + 1);
    if (m != n || memcmp(canon, twice, n) != 0) abort();
    free(twice);
    for (size_t i = 0; i < sh.nslots; i++)
      (void)ps_shape_nbytes(ps_shape_slot(&sh, i), ps_shape_rank(&sh, i), 2);
  }
  free(canon);

  char *norm = malloc(len + 1), *norm2 = malloc(len + 1);
  size_t k = ps_shape_norm_cell(cell, len, norm);
  if (k > len || norm[k] != 0) abort();
  /* idempotent on shapes (digits and separators): text slots are not, by the original's
   * order of steps (`w"\r,` gives `w"` then `w`; `(NULL)` gives `NULL` then ``) */
  size_t k2 = ps_shape_norm_cell(norm, k, norm2);
  if (strspn(norm, "0123456789,;-") == k && (k2 != k || memcmp(norm, norm2, k) != 0)) abort();
  free(norm);
  free(norm2);
}

static void lookup(const char *cell, size_t len, const char *formats, size_t flen) {
  static char out[KEYCAP], again[KEYCAP];
  char err[256];
  long n = ps_lookup_key_shapes(cell, len, NULL, 0, 0, 0, out, sizeof out, err, sizeof err);
  if (n >= 0) {
    if (out[n] != 0) abort();
    long m = ps_lookup_key_shapes(out, (size_t)n, NULL, 0, 0, 0, again, sizeof again, err, sizeof err);
    if (m != n || memcmp(out, again, (size_t)n) != 0) abort();
  }
  for (unsigned flags = 0; flags < 4; flags++)
    (void)ps_lookup_key_shapes(cell, len, formats, flen, (int)(flags + 1), flags, out, sizeof out,
                               err, sizeof err);
  n = ps_lookup_key_list(cell, len, 0, 0, out, sizeof out);
  if (n >= 0 && !memchr(out, '"', (size_t)n)) {   /* a quote behind a blank: as the consumer */
    long m = ps_lookup_key_list(out, (size_t)n, 0, 0, again, sizeof again);
    if (m != n || memcmp(out, again, (size_t)n) != 0) abort();
  }
  (void)ps_lookup_key_list(cell, len, 2, PS_LOOKUP_KEY_FLOAT_GROUP, out, sizeof out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *p[8];
  size_t len[8];
  size_t n = fuzz_split(data, size, p, len, 8);
  while (n < 8) p[n] = "", len[n++] = 0;

  /* import key: type, then Input Shapes, dtypes, formats, Output Shapes, dtypes */
  static ps_import_key *ik;
  if (!ik) ik = ps_import_key_new();
  size_t kl, kl2;
  uint64_t h[2], h2[2];
  const char *key = ps_import_key_build(ik, p[0], len[0], p + 1, len + 1, &kl, h);
  if (key == NULL) abort();
  char *copy = malloc(kl + 1);
  memcpy(copy, key, kl + 1);
  key = ps_import_key_build(ik, p[0], len[0], p + 1, len + 1, &kl2, h2);
  if (kl != kl2 || memcmp(copy, key, kl) != 0 || h[0] != h2[0] || h[1] != h2[1]) abort();
  free(copy);

  /* write-back signature: the cells as NUL-terminated strings */
  char *c[8];
  for (int i = 0; i < 8; i++) {
    c[i] = malloc(len[i] + 1);
    memcpy(c[i], p[i], len[i]);
    c[i][len[i]] = 0;
  }
  static ps_sig *g;
  if (!g) g = ps_sig_new();
  ps_sig_row row = {len[7] ? c[7] : NULL, c[0], NULL, c[1], c[2], c[3], c[4], c[5], c[6]};
  if (ps_sig_compute(g, &row) != 0) abort();
  size_t sl;
  const char *text = ps_sig_text(g, &sl);
  if (text[sl] != 0 || ps_sig_hash(g) != ps_sig_hash_bytes(text, sl)) abort();
  int nf = ps_sig_nfields(g);
  if (nf != 5 && nf != 6) abort();
  for (int i = 0; i < nf; i++) (void)ps_sig_field(g, i, &sl);

  shapes(p[1], len[1]);
  lookup(p[1], len[1], p[3], len[3]);
  for (int i = 0; i < 8; i++) free(c[i]);
  return 0;
}
