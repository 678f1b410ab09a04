/* Jobs run in forked worker processes: the parent hands out job keys in the order given
 * (biggest first), each worker runs as many as it can take, one at a time, and the parent gets
 * every result as it arrives. A worker is a copy of the parent (fork, no exec): it sees the
 * parent's memory as it was at the fork, never returns into the caller and ends with _exit,
 * so no atexit handler, stdio buffer, finalizer or lock release of the parent's runs twice.
 *
 * Results travel through one pipe per worker, which the parent reads without blocking while
 * it polls the workers (a worker writing a big result waits for room; no file, so no file size
 * limit or full disk stands between a finished job and its parent); the next job to take is a
 * counter in shared memory.
 * A failed job (fn says so) or a worker that dies stops the others after their current job:
 * they are not killed, so a job always ends by its own code (a job cleans up what it made). */
#ifndef PS_FORKMAP_H
#define PS_FORKMAP_H

#include <stddef.h>

/* In a worker: runs job `key`. Returns 0 with the result in *out and *len, or -1 with a message
 * there (the job failed). The bytes must stay valid until the next call. */
typedef int (*ps_forkmap_fn)(void *ud, long key, const char **out, size_t *len);

/* In the parent: a result arrived (ok: fn returned 0, else bytes are the message). Returns 0
 * to go on, -1 to stop (the workers finish their current job). Every result that arrives is
 * delivered, also after a stop: it may hold something the caller must release. */
typedef int (*ps_forkmap_done)(void *ud, long key, int ok, const char *bytes, size_t len);

typedef struct ps_forkmap {
  const long *keys;  /* the jobs, in the order they are handed out */
  size_t n;
  int workers;       /* at most n workers are started; < 1: one */
  ps_forkmap_fn fn;
  ps_forkmap_done done;
  void *ud;
} ps_forkmap;

/* Runs every job. 0: each result was delivered to done. -1 with a message in err: stopped
 * early (a job failed: its key and message; a worker died: which, how and in which job; a fork
 * failed; done asked to stop); every result that arrived before was delivered. The workers
 * are all reaped when this returns. */
int ps_forkmap_run(const ps_forkmap *m, char *err, size_t errsize);

/* The processors online (at least 1): the default worker count. */
int ps_forkmap_cores(void);

#endif
