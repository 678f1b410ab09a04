/* The trace reader's time against the length of one token (issue 13: it grew about 4x per
 * doubling, 35 s for a 50 MB number). For each size, a trace whose one event holds a number
 * and a string of that many bytes is written to DIR and read through ps_trace_next; prints
 * "MB seconds". Linear reading keeps seconds/MB flat.
 *   bench_trace_token DIR MB...          (tests/bench/trace_token_bench.sh runs it old vs new) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DIR MB...\n", argv[0]);
    return 2;
  }
  for (int a = 2; a < argc; a++) {
    double mb = atof(argv[a]);
    size_t n = (size_t)(mb * 1048576.0);
    char path[4096];
    snprintf(path, sizeof path, "%s/token_%s.json", argv[1], argv[a]);
    FILE *f = fopen(path, "wb");
    if (f == NULL) { perror(path); return 1; }
    fputs("[{\"name\":\"k\",\"ph\":\"X\",\"ts\":1", f);
    for (size_t i = 1; i < n; i++) fputc('0' + (int)(i % 10), f);
    fputs(",\"args\":{\"s\":\"", f);
    for (size_t i = 0; i < n; i++) fputc('a' + (int)(i % 26), f);
    fputs("\"}}]", f);
    fclose(f);
    double t0 = now();
    char err[700];
    ps_trace_reader *r = ps_trace_open(path, err, sizeof err);
    if (r == NULL) { fprintf(stderr, "%s\n", err); return 1; }
    ps_trace_event ev;
    int st, events = 0;
    size_t got = 0;
    while ((st = ps_trace_next(r, &ev)) > 0) {
      events++;
      const ps_trace_member *ts = ps_trace_find(ev.members, ev.nmembers, "ts");
      const ps_trace_member *s = ps_trace_find(ev.args, ev.nargs, "s");
      got = (ts ? ts->len : 0) + (s ? s->len : 0);
    }
    double t = now() - t0;
    if (st < 0 || events != 1 || got != 2 * n) {
      fprintf(stderr, "%s: read %d events, %zu token bytes: %s\n", path, events, got, st < 0 ? ps_trace_error(r) : "");
      return 1;
    }
    ps_trace_close(r);
    remove(path);
    printf("%8.1f MB tokens  %8.3f s  %7.3f s/MB\n", mb, t, t / mb);
    fflush(stdout);
  }
  return 0;
}
