#include "atomicfile.h"
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/fs.h> /* FICLONE */
#endif

static char *dir_of(const char *path) {
  char *copy = strdup(path);
  if (copy == NULL) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

int ps_atomic_open(ps_atomic *a, const char *path, char *err, size_t errsize) {
  memset(a, 0, sizeof *a);
  char *copy = strdup(path);
  char *dir = dir_of(path);
  if (copy == NULL || dir == NULL) {
    free(copy); free(dir);
    snprintf(err, errsize, "%s: out of memory", path);
    return -1;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(dir) + strlen(base) + 48;
  char *tmp = malloc(n);
  if (tmp == NULL) {
    free(copy); free(dir);
    snprintf(err, errsize, "%s: out of memory", path);
    return -1;
  }
  /* The writer's pid in the name: a later run can tell the leftovers of a dead writer. */
  snprintf(tmp, n, "%s/.%s.tmp.%ld.XXXXXX", dir, base, (long)getpid());
  free(dir);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errsize, "%s: cannot create a temporary file beside it: %s", path,
             strerror(errno));
    free(copy); free(tmp);
    return -1;
  }
  /* The new file keeps the old one's permissions; a new file gets the usual 0666 & ~umask. */
  struct stat st;
  mode_t mode;
  if (stat(path, &st) == 0) {
    mode = st.st_mode & 07777;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  fchmod(fd, mode);
  a->fp = fdopen(fd, "wb");
  if (a->fp == NULL) {
    snprintf(err, errsize, "%s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    free(copy); free(tmp);
    return -1;
  }
  a->path = copy;
  a->tmp = tmp;
  return 0;
}

/* Copies all of src's bytes to dst (both at offset 0, dst empty): reflink, copy_file_range,
 * else read/write. 0, or -1 with errno. */
static int copy_bytes(int src, int dst, off_t size) {
#ifdef FICLONE
  if (size > 0 && ioctl(dst, FICLONE, src) == 0) return lseek(dst, 0, SEEK_END) < 0 ? -1 : 0;
#endif
  off_t done = 0;
#ifdef __linux__
  while (done < size) {
    ssize_t n = copy_file_range(src, NULL, dst, NULL, (size_t)(size - done), 0);
    if (n <= 0) break; /* unsupported here (EXDEV, EINVAL, ENOSYS) or short: go on by hand */
    done += n;
  }
#endif
  if (done < size && (lseek(src, done, SEEK_SET) < 0 || lseek(dst, done, SEEK_SET) < 0)) return -1;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(src, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(dst, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return -1;
      off += w;
    }
  }
  return 0;
}

int ps_atomic_open_append(ps_atomic *a, const char *path, int *last, char *err, size_t errsize) {
  *last = -1;
  int src = open(path, O_RDONLY | O_CLOEXEC);
  if (src < 0 && errno != ENOENT) {
    snprintf(err, errsize, "%s: cannot read: %s", path, strerror(errno));
    return -1;
  }
  if (ps_atomic_open(a, path, err, errsize) != 0) {
    if (src >= 0) close(src);
    return -1;
  }
  if (src < 0) return 0;
  struct stat st;
  unsigned char c;
  int failed = fstat(src, &st) != 0 || copy_bytes(src, fileno(a->fp), st.st_size) != 0 ||
               (st.st_size > 0 && pread(src, &c, 1, st.st_size - 1) != 1) ||
               fseeko(a->fp, 0, SEEK_END) != 0;
  int saved = errno;
  close(src);
  if (failed) {
    snprintf(err, errsize, "%s: cannot copy it to a temporary file beside it: %s (the original "
             "is untouched)", path, strerror(saved));
    ps_atomic_abort(a);
    return -1;
  }
  if (st.st_size > 0) *last = c;
  return 0;
}

long ps_atomic_tmp_owner(const char *name) {
  size_t len = strlen(name);
  const size_t suffix = 6; /* mkostemp's XXXXXX */
  if (len < 1 + 1 + 5 + 1 + 1 + suffix || name[0] != '.') return 0;
  const char *end = name + len - suffix;
  for (const char *p = end; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return 0;
  if (end[-1] != '.') return 0;
  const char *d = end - 1; /* the pid's digits end here */
  const char *q = d;
  while (q > name && q[-1] >= '0' && q[-1] <= '9') q--;
  if (q == d || d - q > 9 || *q == '0') return 0;
  if (q - name < 1 + 1 + 5 || memcmp(q - 5, ".tmp.", 5) != 0) return 0;
  long pid = 0;
  for (const char *p = q; p < d; p++) pid = pid * 10 + (*p - '0');
  return pid;
}

static void release(ps_atomic *a) {
  free(a->path);
  free(a->tmp);
  a->path = a->tmp = NULL;
  a->fp = NULL;
  a->stage = NULL;
  a->pending = 0;
}

void ps_atomic_abort(ps_atomic *a) {
  if (a->fp) fclose(a->fp);
  if (a->tmp) unlink(a->tmp);
  release(a);
}

/* 1 when the two files have the same bytes. */
static int same_content(const char *p, const char *q) {
  int same = 0;
  struct stat sp, sq;
  if (stat(p, &sp) == 0 && stat(q, &sq) == 0 && sp.st_size != sq.st_size) return 0;
  FILE *f = fopen(p, "rb"), *g = fopen(q, "rb");
  if (f && g) {
    char b1[65536], b2[65536];
    for (;;) {
      size_t n1 = fread(b1, 1, sizeof b1, f), n2 = fread(b2, 1, sizeof b2, g);
      if (n1 != n2 || memcmp(b1, b2, n1) != 0) break;
      if (n1 == 0) { same = !ferror(f) && !ferror(g); break; }
    }
  }
  if (f) fclose(f);
  if (g) fclose(g);
  return same;
}

static void fsync_dir(const char *path) {
  char *dir = dir_of(path);
  if (dir == NULL) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) { fsync(fd); close(fd); }
  free(dir);
}

int ps_atomic_check_writable(const char *path, char *err, size_t errsize) {
  struct stat st;
  /* the permission bits, not access(): root may write anything, and a file marked read-only
   * says "do not replace me" to every user */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0222) != 0) return 0;
  snprintf(err, errsize, "%s: the file is marked read-only (mode %04o); perfscript does not "
           "replace it (make it writable, e.g. chmod u+w, to allow the write)", path,
           (unsigned)(st.st_mode & 07777));
  return -1;
}

void ps_atomic_sync_dir(const char *path) { fsync_dir(path); }

static int finish(ps_atomic *a, int if_changed, int sync, char *err, size_t errsize) {
  if (a->fp == NULL) {
    snprintf(err, errsize, "file already committed or aborted");
    return -1;
  }
  int failed = fflush(a->fp) != 0 || ferror(a->fp) || (sync && fsync(fileno(a->fp)) != 0);
#ifdef SYNC_FILE_RANGE_WRITE
  /* unsynced: the disk starts on the bytes now (a hint that waits for nothing), so the fsync
   * to come waits less */
  if (!sync && !failed) (void)sync_file_range(fileno(a->fp), 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
  int saved = errno;
  if (fclose(a->fp) != 0 && !failed) { failed = 1; saved = errno; }
  a->fp = NULL;
  if (failed) {
    snprintf(err, errsize, "%s: write failed: %s (the original is untouched)", a->path,
             strerror(saved));
    ps_atomic_abort(a);
    return -1;
  }
  struct stat st;
  int existed = stat(a->path, &st) == 0;
  if (existed && if_changed && same_content(a->path, a->tmp)) {
    ps_atomic_abort(a);
    return PS_ATOMIC_UNCHANGED;
  }
  if (existed && ps_atomic_check_writable(a->path, err, errsize) != 0) {
    ps_atomic_abort(a);
    return -1;
  }
  a->pending = existed ? PS_ATOMIC_REPLACED : PS_ATOMIC_CREATED;
  return a->pending;
}

int ps_atomic_finish(ps_atomic *a, int if_changed, char *err, size_t errsize) {
  return finish(a, if_changed, 1, err, errsize);
}

int ps_atomic_finish_unsynced(ps_atomic *a, int if_changed, char *err, size_t errsize) {
  return finish(a, if_changed, 0, err, errsize);
}

static int publish(ps_atomic *a, int sync, char *err, size_t errsize) {
  if (a->tmp == NULL || a->pending == 0) {
    snprintf(err, errsize, "file not finished, or already committed or aborted");
    return -1;
  }
  if (rename(a->tmp, a->path) != 0) {
    snprintf(err, errsize, "%s: cannot replace: %s (the original is untouched)", a->path,
             strerror(errno));
    ps_atomic_abort(a);
    return -1;
  }
  if (sync) fsync_dir(a->path);
  int status = a->pending;
  release(a);
  return status;
}

int ps_atomic_publish(ps_atomic *a, char *err, size_t errsize) { return publish(a, 1, err, errsize); }
int ps_atomic_rename(ps_atomic *a, char *err, size_t errsize) { return publish(a, 0, err, errsize); }

int ps_atomic_commit(ps_atomic *a, int if_changed, char *err, size_t errsize) {
  if (a->stage) return ps_stage_add(a->stage, a, if_changed, err, errsize);
  int st = ps_atomic_finish(a, if_changed, err, errsize);
  if (st != PS_ATOMIC_CREATED && st != PS_ATOMIC_REPLACED) return st;
  return ps_atomic_publish(a, err, errsize);
}

int ps_atomic_write(const char *path, const void *data, size_t len, int if_changed,
                    char *err, size_t errsize) {
  ps_atomic a;
  if (ps_atomic_open(&a, path, err, errsize) != 0) return -1;
  if (len > 0 && fwrite(data, 1, len, a.fp) != len) {
    snprintf(err, errsize, "%s: write failed: %s (the original is untouched)", path,
             strerror(errno));
    ps_atomic_abort(&a);
    return -1;
  }
  return ps_atomic_commit(&a, if_changed, err, errsize);
}
