#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "grow.h"

static long fail_write, fail_rename; /* the test hook: counted down, 0 = off */

void ps_stage_inject_failure(long nth_write, long mth_rename) {
  fail_write = nth_write > 0 ? nth_write : 0;
  fail_rename = mth_rename > 0 ? mth_rename : 0;
}

void ps_stage_init(ps_stage *s) { memset(s, 0, sizeof *s); }

int ps_stage_add(ps_stage *s, ps_atomic *a, int if_changed, char *err, size_t errsize) {
  a->stage = NULL;
  if (s->state != 0) {
    snprintf(err, errsize, "%s: the stage is already committed or aborted", a->path);
    ps_atomic_abort(a);
    return -1;
  }
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->e[i].file.path, a->path) == 0) {
      snprintf(err, errsize, "%s: staged twice in one run", a->path);
      ps_atomic_abort(a);
      return -1;
    }
  if (fail_write > 0 && --fail_write == 0) {
    snprintf(err, errsize, "%s: write failed: %s (the original is untouched)", a->path,
             strerror(ENOSPC));
    ps_atomic_abort(a);
    return -1;
  }
  if (ps_grow((void **)&s->e, &s->cap, s->n + 1, sizeof *s->e) != 0) {
    snprintf(err, errsize, "%s: out of memory", a->path);
    ps_atomic_abort(a);
    return -1;
  }
  char *path = strdup(a->path);
  if (path == NULL) {
    snprintf(err, errsize, "%s: out of memory", a->path);
    ps_atomic_abort(a);
    return -1;
  }
  int st = ps_atomic_finish_unsynced(a, if_changed, err, errsize);   /* fsynced at the commit */
  if (st != PS_ATOMIC_CREATED && st != PS_ATOMIC_REPLACED) {
    free(path);
  } else {
    s->e[s->n].path = path;
    s->e[s->n].file = *a;
    s->e[s->n].status = st;
    s->n++;
    memset(a, 0, sizeof *a); /* the stage owns path and tmp now */
  }
  return st;
}

/* The staged temporary files are fsynced at the commit, several at once: one after the other,
 * each waited for its own journal commit (an import of 24 kernel types spent a fifth of its
 * time there); fsyncs in flight together share them. */
#define SYNC_THREADS 8
typedef struct sync_job { ps_stage *s; size_t t, step; int *errs; } sync_job;

static void *sync_files(void *arg) {
  sync_job *j = arg;
  for (size_t i = j->t; i < j->s->n; i += j->step) {
    int fd = open(j->s->e[i].file.tmp, O_RDONLY | O_CLOEXEC);
    j->errs[i] = fd < 0 || fsync(fd) != 0 ? errno : 0;
    if (fd >= 0) close(fd);
  }
  return NULL;
}

/* 0, or -1 with the first failure in err: every temporary file's bytes durable. */
static int sync_staged(ps_stage *s, char *err, size_t errsize) {
  int *errs = calloc(s->n ? s->n : 1, sizeof *errs);
  if (errs == NULL) {
    snprintf(err, errsize, "out of memory");
    return -1;
  }
  size_t T = s->n < SYNC_THREADS ? s->n : SYNC_THREADS;
  sync_job job[SYNC_THREADS];
  pthread_t th[SYNC_THREADS];
  int started[SYNC_THREADS] = {0};
  for (size_t t = 0; t < T; t++) job[t] = (sync_job){s, t, T, errs};
  for (size_t t = 1; t < T; t++) started[t] = pthread_create(&th[t], NULL, sync_files, &job[t]) == 0;
  if (T > 0) sync_files(&job[0]);
  for (size_t t = 1; t < T; t++) {
    if (started[t]) pthread_join(th[t], NULL);
    else sync_files(&job[t]);
  }
  int rc = 0;
  for (size_t i = 0; i < s->n && rc == 0; i++)
    if (errs[i]) {
      snprintf(err, errsize, "%s: write failed: %s (the original is untouched)", s->e[i].path,
               strerror(errs[i]));
      rc = -1;
    }
  free(errs);
  return rc;
}

/* fsyncs the directories of the targets e[0 .. n-1], each once. */
static void sync_dirs(ps_stage *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *p = s->e[i].path, *slash = strrchr(p, '/');
    size_t dl = slash ? (size_t)(slash - p) : 0;
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) {
      const char *q = s->e[j].path, *qs = strrchr(q, '/');
      seen = (size_t)(qs ? qs - q : 0) == dl && strncmp(p, q, dl) == 0;
    }
    if (!seen) ps_atomic_sync_dir(p);
  }
}

int ps_stage_commit(ps_stage *s, char *err, size_t errsize) {
  if (s->state != 0) {
    snprintf(err, errsize, "the stage is already committed or aborted");
    return -1;
  }
  s->done = 0;
  if (sync_staged(s, err, errsize) != 0) {
    s->state = 3;
    for (size_t j = 0; j < s->n; j++) ps_atomic_abort(&s->e[j].file);
    return -1;
  }
  for (size_t i = 0; i < s->n; i++) {
    ps_atomic *a = &s->e[i].file;
    int st;
    if (fail_rename > 0 && --fail_rename == 0) {
      snprintf(err, errsize, "%s: cannot replace: %s (the original is untouched)", a->path,
               strerror(EIO));
      ps_atomic_abort(a);
      st = -1;
    } else {
      st = ps_atomic_rename(a, err, errsize);
    }
    if (st < 0) {
      s->state = 3;
      for (size_t j = i + 1; j < s->n; j++) ps_atomic_abort(&s->e[j].file);
      sync_dirs(s, s->done);
      return -1;
    }
    s->done++;
  }
  sync_dirs(s, s->n);
  s->state = 1;
  return 0;
}

void ps_stage_detach(ps_stage *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->e[i].path);
    free(s->e[i].file.path);
    free(s->e[i].file.tmp);
  }
  s->n = s->done = 0;
}

/* 1 when tmp is named as ps_atomic_open names a temporary file of path (same directory). */
static int tmp_of(const char *path, const char *tmp) {
  const char *pb = strrchr(path, '/'), *tb = strrchr(tmp, '/');
  size_t pd = pb ? (size_t)(pb - path) : 0, td = tb ? (size_t)(tb - tmp) : 0;
  if ((pb == NULL) != (tb == NULL) || pd != td || memcmp(path, tmp, pd) != 0) return 0;
  pb = pb ? pb + 1 : path;
  tb = tb ? tb + 1 : tmp;
  size_t n = strlen(pb);
  return tb[0] == '.' && strncmp(tb + 1, pb, n) == 0 && strncmp(tb + 1 + n, ".tmp.", 5) == 0 &&
         ps_atomic_tmp_owner(tb) != 0;
}

int ps_stage_adopt(ps_stage *s, const char *path, const char *tmp, int status, char *err,
                   size_t errsize) {
  struct stat st;
  if (s->state != 0) {
    snprintf(err, errsize, "%s: the stage is already committed or aborted", path);
    return -1;
  }
  if (status != PS_ATOMIC_CREATED && status != PS_ATOMIC_REPLACED) {
    snprintf(err, errsize, "%s: a staged file is created or replaced", path);
    return -1;
  }
  if (!tmp_of(path, tmp)) {
    snprintf(err, errsize, "%s: %s is not a temporary file of it", path, tmp);
    return -1;
  }
  if (lstat(tmp, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errsize, "%s: its staged temporary file %s is gone", path, tmp);
    return -1;
  }
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->e[i].file.path, path) == 0) {
      snprintf(err, errsize, "%s: staged twice in one run", path);
      return -1;
    }
  if (ps_grow((void **)&s->e, &s->cap, s->n + 1, sizeof *s->e) != 0) {
    snprintf(err, errsize, "%s: out of memory", path);
    return -1;
  }
  ps_stage_entry *e = &s->e[s->n];
  memset(e, 0, sizeof *e);
  e->path = strdup(path);
  e->file.path = strdup(path);
  e->file.tmp = strdup(tmp);
  if (e->path == NULL || e->file.path == NULL || e->file.tmp == NULL) {
    free(e->path); free(e->file.path); free(e->file.tmp);
    snprintf(err, errsize, "%s: out of memory", path);
    return -1;
  }
  e->file.pending = status;
  e->status = status;
  s->n++;
  return 0;
}

void ps_stage_abort(ps_stage *s) {
  for (size_t i = s->done; i < s->n; i++) ps_atomic_abort(&s->e[i].file);
  if (s->state == 0) s->state = 2;
  s->done = s->n;
}

void ps_stage_free(ps_stage *s) {
  ps_stage_abort(s);
  for (size_t i = 0; i < s->n; i++) free(s->e[i].path);
  free(s->e);
  s->e = NULL;
  s->n = s->cap = 0;
}
