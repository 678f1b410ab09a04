/* The streaming Chrome-trace reader (src/io/trace.c) on arbitrary bytes: besides ASan/UBSan,
 * every member it hands out is NUL-terminated text of its stated length with a key, event
 * indexes count up from 0, and an error or the end is final. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memfile.h"
#include "trace.h"

static void check(const ps_trace_member *m, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (m[i].key == NULL || m[i].value == NULL || m[i].value[m[i].len] != 0) abort();
    if (m[i].type < PS_TJ_STRING || m[i].type > PS_TJ_OBJECT) abort();
    if (ps_trace_find(m, n, m[i].key) == NULL) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[700];
  ps_trace_reader *r = ps_trace_open(fuzz_memfile(data, size), err, sizeof err);
  if (r == NULL) abort();
  ps_trace_event ev;
  uint64_t want = 0;
  int st;
  while ((st = ps_trace_next(r, &ev)) > 0) {
    if (ev.index != want++) abort();
    check(ev.members, ev.nmembers);
    check(ev.args, ev.nargs);
    if (ev.nargs && !ev.has_args) abort();
  }
  if (ps_trace_next(r, &ev) != st) abort();
  if (st < 0 && ps_trace_error(r)[0] == 0) abort();
  if (ps_trace_bytes_read(r) > size) abort();
  ps_trace_close(r);
  return 0;
}
