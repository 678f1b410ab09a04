#include "forkmap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cores.h"

#define MAX_WORKERS 64

/* Shared by the parent and its workers (an anonymous shared mapping made before the fork). */
typedef struct shared {
  atomic_size_t next;          /* the index in keys of the next job to take */
  atomic_int stop;             /* set: take no more jobs */
  atomic_long current[MAX_WORKERS]; /* the job each worker runs (for a worker that dies) */
} shared;

/* One result record in a worker's file: the header, then len bytes. */
typedef struct record {
  int64_t key;
  int64_t ok;
  uint64_t len;
} record;

typedef struct worker {
  pid_t pid;      /* 0: reaped */
  int fd;         /* the read end of its pipe (non-blocking), -1 when none */
  char *in;       /* bytes read from it, not yet delivered */
  size_t inlen, incap;
  int status;     /* wait status once reaped */
  long last_failed; /* the key of its failed job */
  char *failed_msg;  /* its message */
} worker;

int ps_forkmap_cores(void) {
  int n = ps_online_cores();
  return n > MAX_WORKERS ? MAX_WORKERS : n;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The worker's loop; never returns. */
static void work(const ps_forkmap *m, shared *sh, int w, int fd) {
  int code = 0;
  while (!atomic_load(&sh->stop)) {
    size_t i = atomic_fetch_add(&sh->next, 1);
    if (i >= m->n) break;
    atomic_store(&sh->current[w], m->keys[i]);
    const char *out = NULL;
    size_t len = 0;
    int ok = m->fn(m->ud, m->keys[i], &out, &len) == 0;
    if (out == NULL) len = 0;
    record r = {m->keys[i], ok, len};
    if (write_all(fd, &r, sizeof r) != 0 || write_all(fd, out ? out : "", len) != 0) {
      code = 3;  /* the parent sees a worker that died, with the job it ran */
      atomic_store(&sh->stop, 1);
      break;
    }
    atomic_store(&sh->current[w], -1);
    if (!ok) {
      atomic_store(&sh->stop, 1);
      break;
    }
  }
  _exit(code);
}

/* Reads what w's pipe holds now and delivers its complete records (done asking to stop sets
 * *stopped); -2 after a failed job's record, -1 out of memory. */
static int drain(const ps_forkmap *m, worker *w, int *stopped) {
  for (;;) {
    if (w->incap - w->inlen < 65536) {
      size_t cap = w->incap ? w->incap * 2 : 131072;
      char *nb = realloc(w->in, cap);
      if (nb == NULL) return -1;
      w->in = nb;
      w->incap = cap;
    }
    ssize_t got = read(w->fd, w->in + w->inlen, w->incap - w->inlen - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  /* nothing more now (EAGAIN) or the worker's end closed */
    w->inlen += (size_t)got;
  }
  size_t at = 0;
  int rc = 0;
  while (w->inlen - at >= sizeof(record)) {
    record r;
    memcpy(&r, w->in + at, sizeof r);
    if (w->inlen - at - sizeof r < r.len) break;  /* not all there yet */
    char *bytes = w->in + at + sizeof r;
    char keep = bytes[r.len];
    bytes[r.len] = '\0';  /* the buffer has a byte to spare past what was read */
    if (m->done(m->ud, (long)r.key, (int)r.ok, bytes, (size_t)r.len) != 0) *stopped = 1;
    bytes[r.len] = keep;
    at += sizeof r + r.len;
    if (!r.ok) {
      w->last_failed = (long)r.key;
      free(w->failed_msg);
      w->failed_msg = strndup(bytes, r.len);
      rc = -2;
      break;
    }
  }
  memmove(w->in, w->in + at, w->inlen - at);
  w->inlen -= at;
  return rc;
}

int ps_forkmap_run(const ps_forkmap *m, char *err, size_t errsize) {
  err[0] = '\0';
  if (m->n == 0) return 0;
  int nw = m->workers < 1 ? 1 : m->workers;
  if (nw > MAX_WORKERS) nw = MAX_WORKERS;
  if ((size_t)nw > m->n) nw = (int)m->n;
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    snprintf(err, errsize, "workers: shared memory: %s", strerror(errno));
    return -1;
  }
  atomic_init(&sh->next, 0);
  atomic_init(&sh->stop, 0);
  for (int i = 0; i < MAX_WORKERS; i++) atomic_init(&sh->current[i], -1);
  worker ws[MAX_WORKERS];
  memset(ws, 0, sizeof ws);
  int started = 0, failed = 0;
  fflush(NULL);  /* a worker must not write the parent's buffered output again */
  for (; started < nw; started++) {
    worker *w = &ws[started];
    int p[2];
    w->fd = -1;
    if (pipe(p) != 0) {
      snprintf(err, errsize, "workers: pipe: %s", strerror(errno));
      break;
    }
    w->pid = fork();
    if (w->pid < 0) {
      snprintf(err, errsize, "workers: fork: %s", strerror(errno));
      close(p[0]);
      close(p[1]);
      w->pid = 0;
      break;
    }
    if (w->pid == 0) {
      /* the read ends of the pipes made so far are the parent's */
      for (int k = 0; k < started; k++) if (ws[k].fd >= 0) close(ws[k].fd);
      close(p[0]);
      work(m, sh, started, p[1]);
    }
    close(p[1]);
    w->fd = p[0];
    fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK);
  }
  if (started < nw) {
    failed = 1;
    atomic_store(&sh->stop, 1);
  }
  int alive = started, stopped = 0;
  struct timespec nap = {0, 2 * 1000 * 1000};
  while (alive > 0) {
    int moved = 0;
    for (int i = 0; i < started; i++) {
      worker *w = &ws[i];
      if (w->pid == 0) continue;
      pid_t r = waitpid(w->pid, &w->status, WNOHANG);
      int ended = r == w->pid || (r < 0 && errno != EINTR);
      /* what it wrote before it ended is complete now */
      int d = drain(m, w, &stopped);
      if (d == -1 && !failed) {
        failed = 1;
        atomic_store(&sh->stop, 1);
        snprintf(err, errsize, "workers: out of memory");
      }
      if (d == -2 && !failed) {
        failed = 1;
        atomic_store(&sh->stop, 1);
        snprintf(err, errsize, "job %ld: %s", ws[i].last_failed, w->failed_msg ? w->failed_msg : "failed");
      }
      if (stopped && !failed) {
        failed = 1;
        atomic_store(&sh->stop, 1);
        snprintf(err, errsize, "workers: stopped by the caller");
      }
      if (!ended) continue;
      moved = 1;
      alive--;
      long job = atomic_load(&sh->current[i]);
      if (r < 0) w->status = 0;
      int died = WIFSIGNALED(w->status) || (WIFEXITED(w->status) && WEXITSTATUS(w->status) != 0);
      if (died && !failed) {
        failed = 1;
        atomic_store(&sh->stop, 1);
        char how[64];
        if (WIFSIGNALED(w->status)) snprintf(how, sizeof how, "was killed by signal %d (%s)",
                                             WTERMSIG(w->status), strsignal(WTERMSIG(w->status)));
        else snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(w->status));
        if (job >= 0) snprintf(err, errsize, "worker %d (pid %d) %s while running job %ld", i + 1,
                               (int)w->pid, how, job);
        else snprintf(err, errsize, "worker %d (pid %d) %s", i + 1, (int)w->pid, how);
      }
      w->pid = 0;
    }
    if (alive > 0 && !moved) nanosleep(&nap, NULL);
  }
  for (int i = 0; i < started; i++) {
    if (ws[i].fd >= 0) close(ws[i].fd);
    free(ws[i].in);
    free(ws[i].failed_msg);
  }
  if (!failed && atomic_load(&sh->next) < m->n) {
    failed = 1;
    snprintf(err, errsize, "workers: not every job ran");
  }
  munmap(sh, sizeof *sh);
  return failed ? -1 : 0;
}
