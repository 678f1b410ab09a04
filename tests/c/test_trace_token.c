/* The trace reader's time is linear in a single token's length (issue 13: yajl lexed a token
 * cut by a chunk's end again from its start with every 64 KiB chunk, so a 50 MB number took
 * 35 s). One event holding an 8 MB number and an 8 MB string must read about as fast as the
 * same bytes spread over many small events (CPU time, measured back to back in this process,
 * so the machine's load cancels out); before the fix it was over 10 times slower. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"

#define TOKEN (8u << 20)

static char dir[1024];

static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Reads path; returns CPU seconds, and the total length of the members named key in *bytes. */
static double read_all(const char *path, const char *key, size_t *bytes, int *events) {
  char err[700];
  double t0 = cpu();
  ps_trace_reader *r = ps_trace_open(path, err, sizeof err);
  assert_non_null(r);
  ps_trace_event ev;
  int st;
  *bytes = 0;
  *events = 0;
  while ((st = ps_trace_next(r, &ev)) > 0) {
    const ps_trace_member *m = ps_trace_find(ev.members, ev.nmembers, key);
    const ps_trace_member *a = ps_trace_find(ev.args, ev.nargs, "s");
    *bytes += (m ? m->len : 0) + (a ? a->len : 0);
    ++*events;
  }
  assert_int_equal(st, 0);
  ps_trace_close(r);
  return cpu() - t0;
}

static void test_one_long_token_reads_linearly(void **state) {
  (void)state;
  char one[1100], many[1100];
  snprintf(one, sizeof one, "%s/one_token.json", dir);
  snprintf(many, sizeof many, "%s/many_tokens.json", dir);
  FILE *f = fopen(one, "wb");
  assert_non_null(f);
  fputs("[{\"name\":\"k\",\"ts\":1", f);
  for (size_t i = 1; i < TOKEN; i++) fputc('0' + (int)(i % 10), f);
  fputs(",\"args\":{\"s\":\"", f);
  for (size_t i = 0; i < TOKEN; i++) fputc('a' + (int)(i % 26), f);
  fputs("\"}}]", f);
  fclose(f);
  /* the same bytes as 64 KiB tokens, one event each */
  f = fopen(many, "wb");
  assert_non_null(f);
  fputc('[', f);
  size_t piece = 64u << 10;
  for (size_t k = 0; k < TOKEN / piece; k++) {
    fputs(k ? ",{\"name\":\"k\",\"ts\":1" : "{\"name\":\"k\",\"ts\":1", f);
    for (size_t i = 1; i < piece; i++) fputc('0' + (int)(i % 10), f);
    fputs(",\"args\":{\"s\":\"", f);
    for (size_t i = 0; i < piece; i++) fputc('a' + (int)(i % 26), f);
    fputs("\"}}", f);
  }
  fputc(']', f);
  fclose(f);

  size_t b1, b2;
  int e1, e2;
  double t_many = read_all(many, "ts", &b2, &e2);
  double t_one = read_all(one, "ts", &b1, &e1);
  assert_int_equal(e1, 1);
  assert_int_equal(e2, TOKEN / piece);
  assert_int_equal(b1, 2 * (size_t)TOKEN);
  assert_int_equal(b2, 2 * (size_t)TOKEN);
  printf("one 8 MB token pair: %.3f s CPU; the same bytes in %d events: %.3f s\n", t_one, e2, t_many);
  assert_true(t_one < 4 * t_many + 0.3);
  remove(one);
  remove(many);
}

int main(void) {
  const char *tmp = getenv("PERFSCRIPT_TEST_TMP");
  snprintf(dir, sizeof dir, "%s", tmp ? tmp : "/tmp");
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_one_long_token_reads_linearly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
