#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

/* ---- the syncer: fsyncs the staged files in the order staged, on a thread of its own ----- */

typedef struct ps_stage_syncer {
  pthread_t th;
  pid_t pid;              /* the process whose thread it is (a forked child has none) */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char **tmp;             /* the queue: temporary files, copies of the entries' names */
  int *err;               /* per queued file: -1 not done, 0 durable, else errno */
  size_t n, cap, taken;
  int stop;               /* take no more files */
} ps_stage_syncer;

static void *syncer_main(void *arg) {
  ps_stage_syncer *y = arg;
  pthread_mutex_lock(&y->mu);
  for (;;) {
    while (y->taken == y->n && !y->stop) pthread_cond_wait(&y->cv, &y->mu);
    if (y->stop) break;
    size_t i = y->taken++;
    const char *tmp = y->tmp[i];
    pthread_mutex_unlock(&y->mu);
    int fd = open(tmp, O_RDONLY | O_CLOEXEC), e = fd < 0 || fsync(fd) != 0 ? errno : 0;
    if (fd >= 0) close(fd);
    pthread_mutex_lock(&y->mu);
    y->err[i] = e;
  }
  pthread_mutex_unlock(&y->mu);
  return NULL;
}

/* Queues entry e's temporary file for the syncer (started here the first time). Without one
 * (no thread, no memory) the file is left to the commit's fsyncs: e->q stays -1. */
static void syncer_add(ps_stage *s, ps_stage_entry *e) {
  e->q = -1;
  ps_stage_syncer *y = s->sync;
  if (y == NULL) {
    if ((y = calloc(1, sizeof *y)) == NULL) return;
    pthread_mutex_init(&y->mu, NULL);
    pthread_cond_init(&y->cv, NULL);
    y->pid = getpid();
    /* signals (Ctrl-C) stay the main thread's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&y->th, NULL, syncer_main, y);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
      pthread_mutex_destroy(&y->mu);
      pthread_cond_destroy(&y->cv);
      free(y);
      return;
    }
    s->sync = y;
  }
  if (y->pid != getpid()) return;   /* a forked child's copy: its thread is not here */
  char *tmp = strdup(e->file.tmp);
  pthread_mutex_lock(&y->mu);
  if (tmp && y->n == y->cap) {
    size_t cap = y->cap ? 2 * y->cap : 16;
    char **t = realloc(y->tmp, cap * sizeof *t);
    if (t) y->tmp = t;
    int *r = t ? realloc(y->err, cap * sizeof *r) : NULL;
    if (r) y->err = r, y->cap = cap;
  }
  if (tmp && y->n < y->cap) {
    y->tmp[y->n] = tmp, y->err[y->n] = -1;
    e->q = (long)y->n++;
    tmp = NULL;
    pthread_cond_signal(&y->cv);
  }
  pthread_mutex_unlock(&y->mu);
  free(tmp);
}

/* Stops the syncer (it finishes the file in hand) and waits for it; the results stay for
 * syncer_result. In a forked child the copy is dropped as it is (its thread is the parent's). */
static void syncer_stop(ps_stage *s) {
  ps_stage_syncer *y = s->sync;
  if (y == NULL || y->stop) return;
  if (y->pid != getpid()) {
    s->sync = NULL;
    return;
  }
  pthread_mutex_lock(&y->mu);
  y->stop = 1;
  pthread_cond_signal(&y->cv);
  pthread_mutex_unlock(&y->mu);
  pthread_join(y->th, NULL);
}

/* After syncer_stop: entry e's fsync by the syncer: -1 not done, 0 durable, else errno. */
static int syncer_result(const ps_stage *s, const ps_stage_entry *e) {
  ps_stage_syncer *y = s->sync;
  return y == NULL || e->q < 0 || (size_t)e->q >= y->n ? -1 : y->err[e->q];
}

static void syncer_free(ps_stage *s) {
  ps_stage_syncer *y = s->sync;
  if (y == NULL) return;
  syncer_stop(s);
  if (s->sync == NULL) return;   /* a forked child's copy */
  for (size_t i = 0; i < y->n; i++) free(y->tmp[i]);
  free(y->tmp), free(y->err);
  pthread_mutex_destroy(&y->mu);
  pthread_cond_destroy(&y->cv);
  free(y);
  s->sync = NULL;
  for (size_t i = 0; i < s->n; i++) s->e[i].q = -1;
}

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
    syncer_add(s, &s->e[s->n]);
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
    if (j->errs[i] >= 0) continue;   /* the syncer's */
    int fd = open(j->s->e[i].file.tmp, O_RDONLY | O_CLOEXEC);
    j->errs[i] = fd < 0 || fsync(fd) != 0 ? errno : 0;
    if (fd >= 0) close(fd);
  }
  return NULL;
}

/* 0, or -1 with the first failure in err: every temporary file's bytes durable (those the
 * syncer did not fsync are fsynced here, several at once). */
static int sync_staged(ps_stage *s, char *err, size_t errsize) {
  int *errs = calloc(s->n ? s->n : 1, sizeof *errs);
  if (errs == NULL) {
    snprintf(err, errsize, "out of memory");
    return -1;
  }
  syncer_stop(s);
  size_t left = 0;
  struct stat st;
  for (size_t i = 0; i < s->n; i++) {
    errs[i] = syncer_result(s, &s->e[i]);
    /* fsynced a while ago: still there (as an fsync now would have found), or no rename */
    if (errs[i] == 0 && lstat(s->e[i].file.tmp, &st) != 0) errs[i] = errno;
    left += errs[i] < 0;
  }
  size_t T = left < SYNC_THREADS ? left : SYNC_THREADS;
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
  syncer_free(s);   /* the parent's commit makes them durable */
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
  e->q = -1;        /* fsynced by the commit */
  s->n++;
  return 0;
}

void ps_stage_abort(ps_stage *s) {
  syncer_stop(s);   /* no fsync of a file being removed */
  for (size_t i = s->done; i < s->n; i++) ps_atomic_abort(&s->e[i].file);
  if (s->state == 0) s->state = 2;
  s->done = s->n;
}

void ps_stage_free(ps_stage *s) {
  ps_stage_abort(s);
  syncer_free(s);
  for (size_t i = 0; i < s->n; i++) free(s->e[i].path);
  free(s->e);
  s->e = NULL;
  s->n = s->cap = 0;
}
