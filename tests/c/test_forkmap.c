/* Jobs in forked workers (src/io/forkmap.h): every result delivered once, whatever the worker
 * count; a failed job and a dead worker stop the run with what happened and in which job. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "forkmap.h"

typedef struct seen {
  int count[64];   /* deliveries per key */
  int failed[64];
  char text[64][64];
  long fail_key;   /* the job that fails (-1: none) */
  long die_key;    /* the job whose worker dies (-1: none) */
  int slow;        /* each job takes 50 ms */
} seen;

static int job(void *ud, long key, const char **out, size_t *len) {
  seen *s = ud;
  static char buf[64];
  if (key == s->die_key) raise(SIGKILL);
  if (s->slow) usleep(50 * 1000);
  if (key == s->fail_key) {
    snprintf(buf, sizeof buf, "job %ld went wrong", key);
    *out = buf;
    *len = strlen(buf);
    return -1;
  }
  /* the result says which process ran it: a worker, never the parent */
  snprintf(buf, sizeof buf, "%ld squared is %ld (pid %ld)", key, key * key, (long)getpid());
  *out = buf;
  *len = strlen(buf);
  return 0;
}

static int done(void *ud, long key, int ok, const char *bytes, size_t len) {
  seen *s = ud;
  s->count[key]++;
  s->failed[key] = !ok;
  snprintf(s->text[key], sizeof s->text[key], "%.*s", (int)len, bytes);
  return 0;
}

static void every_result_arrives_once(void **state) {
  (void)state;
  long keys[40];
  for (int i = 0; i < 40; i++) keys[i] = 39 - i;
  for (int w = 1; w <= 5; w += 2) {
    seen s;
    memset(&s, 0, sizeof s);
    s.fail_key = s.die_key = -1;
    ps_forkmap m = {keys, 40, w, job, done, &s};
    char err[256];
    assert_int_equal(ps_forkmap_run(&m, err, sizeof err), 0);
    char want[64], parent[32];
    snprintf(parent, sizeof parent, "(pid %ld)", (long)getpid());
    for (long k = 0; k < 40; k++) {
      assert_int_equal(s.count[k], 1);
      snprintf(want, sizeof want, "%ld squared is %ld (pid ", k, k * k);
      assert_memory_equal(s.text[k], want, strlen(want));
      assert_null(strstr(s.text[k], parent));
    }
  }
  assert_true(ps_forkmap_cores() >= 1);
}

static void a_failed_job_stops_the_run(void **state) {
  (void)state;
  long keys[20];
  for (int i = 0; i < 20; i++) keys[i] = i;
  for (int w = 1; w <= 2; w++) {
    seen s;
    memset(&s, 0, sizeof s);
    s.fail_key = 3;
    s.die_key = -1;
    ps_forkmap m = {keys, 20, w, job, done, &s};
    char err[256];
    assert_int_equal(ps_forkmap_run(&m, err, sizeof err), -1);
    assert_string_equal(err, "job 3: job 3 went wrong");
    assert_int_equal(s.count[3], 1);
    assert_true(s.failed[3]);
    /* one worker: it took no job after the failed one */
    int ran = 0;
    for (int k = 0; k < 20; k++) ran += s.count[k];
    if (w == 1) assert_int_equal(ran, 4);
  }
}

static void a_dead_worker_is_named_with_its_job(void **state) {
  (void)state;
  long keys[6] = {0, 1, 2, 3, 4, 5};
  seen s;
  memset(&s, 0, sizeof s);
  s.fail_key = -1;
  s.die_key = 4;
  ps_forkmap m = {keys, 6, 1, job, done, &s};
  char err[256];
  assert_int_equal(ps_forkmap_run(&m, err, sizeof err), -1);
  assert_non_null(strstr(err, "was killed by signal 9"));
  assert_non_null(strstr(err, "while running job 4"));
  for (int k = 0; k < 4; k++) assert_int_equal(s.count[k], 1); /* delivered before it died */
  assert_int_equal(s.count[5], 0);
}

static int stop_at_first(void *ud, long key, int ok, const char *bytes, size_t len) {
  done(ud, key, ok, bytes, len);
  return -1;
}

static void the_caller_can_stop_the_run(void **state) {
  (void)state;
  long keys[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  seen s;
  memset(&s, 0, sizeof s);
  s.fail_key = s.die_key = -1;
  s.slow = 1;
  ps_forkmap m = {keys, 8, 1, job, stop_at_first, &s};
  char err[256];
  assert_int_equal(ps_forkmap_run(&m, err, sizeof err), -1);
  assert_non_null(strstr(err, "stopped by the caller"));
  /* the worker ends after the job it was running; what it finished still arrives */
  int ran = 0;
  for (int k = 0; k < 8; k++) ran += s.count[k];
  assert_true(ran >= 1 && ran < 8);
  for (int k = 0; k < ran; k++) assert_int_equal(s.count[k], 1);
  m.n = 0; /* no jobs: nothing forked */
  assert_int_equal(ps_forkmap_run(&m, err, sizeof err), 0);
}

/* Results bigger than a pipe holds (up to 1 MiB each, and many of them) arrive whole (a file
 * size limit on results is cli/test_write_safety's case 3). */
static int big_job(void *ud, long key, const char **out, size_t *len) {
  (void)ud;
  static char *buf;
  size_t n = (size_t)(key + 1) * 65536;
  free(buf);
  buf = malloc(n);
  if (!buf) return -1;
  for (size_t i = 0; i < n; i++) buf[i] = (char)('a' + (key + (long)i) % 26);
  *out = buf;
  *len = n;
  return 0;
}

static int big_done(void *ud, long key, int ok, const char *bytes, size_t len) {
  int *good = ud;
  int same = ok && len == (size_t)(key + 1) * 65536 && bytes[len] == '\0';
  for (size_t i = 0; same && i < len; i++) same = bytes[i] == (char)('a' + (key + (long)i) % 26);
  if (same) (*good)++;
  return 0;
}

static void big_results_arrive_whole(void **state) {
  (void)state;
  long keys[16];
  for (int i = 0; i < 16; i++) keys[i] = i;
  int good = 0;
  ps_forkmap m = {keys, 16, 3, big_job, big_done, &good};
  char err[256];
  assert_int_equal(ps_forkmap_run(&m, err, sizeof err), 0);
  assert_int_equal(good, 16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(every_result_arrives_once),
    cmocka_unit_test(a_failed_job_stops_the_run),
    cmocka_unit_test(a_dead_worker_is_named_with_its_job),
    cmocka_unit_test(the_caller_can_stop_the_run),
    cmocka_unit_test(big_results_arrive_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
