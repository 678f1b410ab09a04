#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ps_input_kind(unsigned mode) {
  if (S_ISREG(mode)) return NULL;
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

static int refuse(const char *path, unsigned mode, char *err, size_t errsize) {
  snprintf(err, errsize, "%s: is %s, not a regular file; perfscript reads only regular files",
           path, ps_input_kind(mode));
  return -1;
}

int ps_input_check(const char *path, char *err, size_t errsize) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errsize, "%s: %s", path, strerror(errno));
    return -1;
  }
  return S_ISREG(st.st_mode) ? 0 : refuse(path, st.st_mode, err, errsize);
}

int ps_input_open(const char *path, char *err, size_t errsize) {
  if (ps_input_check(path, err, errsize) != 0) return -1;
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(err, errsize, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return refuse(path, st.st_mode, err, errsize);
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

FILE *ps_input_fopen(const char *path, char *err, size_t errsize) {
  int fd = ps_input_open(path, err, errsize);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) {
    snprintf(err, errsize, "%s: %s", path, strerror(errno));
    close(fd);
  }
  return f;
}
