/* The fuzz input as a file: the readers under test take paths, so the bytes go into an
 * anonymous memory file (memfd) named through /proc/self/fd. One per process, rewritten for
 * every input (no disk I/O, nothing left behind). */
#ifndef PS_FUZZ_MEMFILE_H
#define PS_FUZZ_MEMFILE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((unused)) static const char *fuzz_memfile(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd < 0) { perror("memfd_create"); abort(); }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0) abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    if (n <= 0) abort();
    done += (size_t)n;
  }
  return path;
}

/* Splits data into up to max pieces at '\n' (the key and number harnesses' cells). */
__attribute__((unused)) static size_t fuzz_split(const uint8_t *data, size_t size, const char **p, size_t *len, size_t max) {
  size_t n = 0, start = 0;
  for (size_t i = 0; i <= size && n < max; i++)
    if (i == size || data[i] == '\n') {
      p[n] = (const char *)data + start;
      len[n++] = i - start;
      start = i + 1;
    }
  return n;
}

#endif
