/* Streaming reader of Chrome-trace JSON files (simulator traces `{"traceEvents": [...]}`, and
 * Ascend trace_view.json, a bare array of events), on libyajl: the file is read in chunks and
 * handed out one event at a time, so memory does not grow with the file.
 *
 * An event's members come as text: strings verbatim, numbers exactly as written (a `ts` of
 * `1736412474714258.990` keeps all its digits, whether written as a number or a string),
 * true/false as `True`/`False`, null as an absent value; arrays and objects as their Python
 * repr (`[1, 2]`, `{'a': 'b'}`), the form the Python tools perfscript replaces wrote. The
 * members of `args` are given separately, in the same forms.
 *
 * An export interrupted between two events (no closing `]`) reads as complete, with
 * ps_trace_truncated() set; a file cut inside an event is an error. */
#ifndef PS_TRACE_H
#define PS_TRACE_H

#include <stddef.h>
#include <stdint.h>

enum { PS_TJ_STRING, PS_TJ_NUMBER, PS_TJ_BOOL, PS_TJ_NULL, PS_TJ_ARRAY, PS_TJ_OBJECT };

typedef struct ps_trace_member {
  const char *key;
  const char *value;   /* NUL-terminated text, see above; "" for null */
  size_t len;
  int type;            /* PS_TJ_* */
} ps_trace_member;

typedef struct ps_trace_event {
  size_t nmembers, nargs;
  const ps_trace_member *members;  /* top-level members except args */
  const ps_trace_member *args;     /* members of args, when it is an object */
  int has_args;                    /* 1 when an args object was present */
  uint64_t index;                  /* 0-based position in the events array */
} ps_trace_event;

typedef struct ps_trace_reader ps_trace_reader;

ps_trace_reader *ps_trace_open(const char *path, char *err, size_t errsize);
/* 1: an event in *ev (valid until the next call); 0: end; -1: error (ps_trace_error). */
int ps_trace_next(ps_trace_reader *r, ps_trace_event *ev);
const char *ps_trace_error(const ps_trace_reader *r);
int ps_trace_truncated(const ps_trace_reader *r);
uint64_t ps_trace_bytes_read(const ps_trace_reader *r);
uint64_t ps_trace_file_size(const ps_trace_reader *r);
void ps_trace_close(ps_trace_reader *r);

/* The member named key, or NULL. */
const ps_trace_member *ps_trace_find(const ps_trace_member *m, size_t n, const char *key);

#endif
