/* Small helpers shared by the C unit tests: scratch files under PERFSCRIPT_TEST_TMP. */
#ifndef PS_TESTUTIL_H
#define PS_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline const char *test_dir(void) {
  static char dir[4096];
  if (!dir[0]) {
    const char *base = getenv("PERFSCRIPT_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/ctest-%ld", base && *base ? base : "/tmp", (long)getpid());
    mkdir(dir, 0777);
  }
  return dir;
}

/* Writes len bytes to a scratch file named name and returns its path (static storage). */
static inline const char *write_file(const char *name, const char *data, size_t len) {
  static char path[8][8192];
  static int slot;
  char *p = path[slot++ % 8];
  snprintf(p, 8192, "%s/%s", test_dir(), name);
  FILE *f = fopen(p, "wb");
  if (f == NULL) { perror(p); abort(); }
  if (len && fwrite(data, 1, len, f) != len) abort();
  fclose(f);
  return p;
}

static inline char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) abort();
  buf[n] = '\0';
  fclose(f);
  if (len) *len = (size_t)n;
  return buf;
}

/* Leftover temporary files (".tmp." in the name) in the scratch directory. */
static inline int temp_files(void) {
  int n = 0;
  DIR *d = opendir(test_dir());
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp.") != NULL;
  closedir(d);
  return n;
}

#endif
