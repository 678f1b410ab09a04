#include "csvsniff.h"

#include <stdio.h>
#include <string.h>

#include "infile.h"

static size_t bom_len(const unsigned char *u, size_t len) {
  return len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF ? 3 : 0;
}

int ps_is_lfs_pointer(const char *data, size_t len) {
  size_t b = bom_len((const unsigned char *)data, len);
  return len - b >= sizeof PS_LFS_MAGIC - 1 &&
         memcmp(data + b, PS_LFS_MAGIC, sizeof PS_LFS_MAGIC - 1) == 0;
}

int ps_file_is_lfs_pointer(const char *path) {
  char err[8];
  FILE *f = ps_input_fopen(path, err, sizeof err); /* a FIFO must not block a sniff */
  if (f == NULL) return 0;
  char head[sizeof PS_LFS_MAGIC + 3];
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  return ps_is_lfs_pointer(head, n);
}

const char *ps_csv_bad_start(const char *data, size_t len, size_t *skip) {
  const unsigned char *u = (const unsigned char *)data;
  *skip = bom_len(u, len);
  if (len >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)))
    return "a UTF-16 file, not UTF-8 CSV (export it as UTF-8)";
  if (ps_is_lfs_pointer(data, len))
    return "a Git LFS pointer, not CSV data (fetch the real file with 'git lfs pull')";
  return NULL;
}
