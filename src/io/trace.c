#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yajl/yajl_parse.h>

#include "csvsniff.h"
#include "grow.h"
#include "infile.h"

#define CHUNK (64 * 1024)
#define MAXCHUNK ((size_t)256 << 20)   /* memory bound; tokens past it cost MAXCHUNK-sized rescans */
#define MAXDEPTH 256

typedef struct mem_ref {
  size_t key, val, len;   /* offsets into buf */
  int type, is_arg;
} mem_ref;

typedef struct event_ref {
  size_t first, n;        /* members in mems */
  int has_args;
  uint64_t index;
} event_ref;

struct ps_trace_reader {
  FILE *fp;
  char *path;
  yajl_handle h;
  unsigned char *chunk;
  size_t chunk_size;               /* bytes read at a time: CHUNK, doubled within a long token */
  uint64_t callbacks;              /* parser callbacks so far: none in a chunk = one long token */
  uint64_t bytes_read, file_size, consumed_before;
  int eof, failed, truncated;
  char error[600];

  /* parse state */
  int depth;
  unsigned char is_map[MAXDEPTH + 1], first[MAXDEPTH + 1];
  int root_is_map, want_events;    /* root object: the next value is traceEvents */
  int root_keys;                   /* members of a root object */
  int events_depth;                /* depth of the events array's members, 0 = none yet */
  int in_event, in_args;
  int render_depth;                /* > 0 while rendering a nested value */
  size_t key_off;                  /* key of the member being read */
  int have_key;
  mem_ref cur;                     /* member being rendered */
  uint64_t nevents;

  /* storage */
  char *buf; size_t len, cap;
  mem_ref *mems; size_t nmems, capmems;
  event_ref *events; size_t nevents_q, capevents, next;
  size_t ev_mem0, ev_buf0;         /* where the event in progress starts */
  int ev_has_args;

  /* what ps_trace_next hands out */
  ps_trace_member *out; size_t capout;
};

static void set_error(ps_trace_reader *r, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(r->error, sizeof r->error, "%s: ", r->path);
  va_start(ap, fmt);
  vsnprintf(r->error + n, sizeof r->error - (size_t)n, fmt, ap);
  va_end(ap);
  r->failed = 1;
}

static int put(ps_trace_reader *r, const void *s, size_t n) {
  if (ps_grow((void **)&r->buf, &r->cap, r->len + n + 1, 1) != 0) return -1;
  memcpy(r->buf + r->len, s, n);
  r->len += n;
  return 0;
}
static int puts_(ps_trace_reader *r, const char *s) { return put(r, s, strlen(s)); }
static int put_nul(ps_trace_reader *r) { return put(r, "", 1); }

/* Python's repr of a str: single quotes unless the text holds ' and no ". */
static int put_repr(ps_trace_reader *r, const unsigned char *s, size_t n) {
  int dq = memchr(s, '\'', n) && !memchr(s, '"', n);
  char q = dq ? '"' : '\'';
  if (put(r, &q, 1)) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = s[i];
    char esc[8];
    if (c == '\\' || c == (unsigned char)q) esc[0] = '\\', esc[1] = (char)c, esc[2] = 0;
    else if (c == '\n') strcpy(esc, "\\n");
    else if (c == '\r') strcpy(esc, "\\r");
    else if (c == '\t') strcpy(esc, "\\t");
    else if (c < 0x20 || c == 0x7f) snprintf(esc, sizeof esc, "\\x%02x", c);
    else esc[0] = (char)c, esc[1] = 0;
    if (puts_(r, esc)) return -1;
  }
  return put(r, &q, 1);
}

static int oom(ps_trace_reader *r) {
  set_error(r, "out of memory");
  return 0;
}

/* Where the current value goes. */
enum { AT_IGNORE, AT_EVENT_START, AT_MEMBER, AT_RENDER };

static int where(ps_trace_reader *r) {
  if (r->render_depth) return AT_RENDER;
  if (r->in_event) {
    int member_depth = r->events_depth + 1 + (r->in_args ? 1 : 0);
    if (r->depth == member_depth && r->have_key) return AT_MEMBER;
    return AT_IGNORE;
  }
  if (r->events_depth && r->depth == r->events_depth) return AT_EVENT_START;
  return AT_IGNORE;
}

/* A comma before a value or key inside a rendered container. */
static int sep(ps_trace_reader *r) {
  if (r->first[r->depth]) {
    r->first[r->depth] = 0;
    return 0;
  }
  return puts_(r, ", ");
}

static int add_member(ps_trace_reader *r, size_t val, size_t len, int type) {
  if (ps_grow((void **)&r->mems, &r->capmems, r->nmems + 1, sizeof *r->mems)) return -1;
  r->mems[r->nmems++] = (mem_ref){r->key_off, val, len, type, r->in_args};
  r->have_key = 0;
  return 0;
}

/* A scalar value: text s (n bytes) of type t; repr: the text for nested rendering. */
static int scalar(ps_trace_reader *r, const char *s, size_t n, int t, const char *repr, size_t rn) {
  if (r->failed) return 0;
  r->callbacks++;
  switch (where(r)) {
  case AT_RENDER:
    if (r->is_map[r->depth] == 0 && sep(r)) return oom(r);
    if (t == PS_TJ_STRING) {
      if (put_repr(r, (const unsigned char *)s, n)) return oom(r);
    } else if (put(r, repr, rn)) {
      return oom(r);
    }
    return 1;
  case AT_MEMBER: {
    size_t val = r->len;
    if (put(r, s, n) || put_nul(r) || add_member(r, val, n, t)) return oom(r);
    return 1;
  }
  default:
    r->have_key = 0;
    return 1;
  }
}

static int cb_null(void *ctx) { return scalar(ctx, "", 0, PS_TJ_NULL, "None", 4); }
static int cb_bool(void *ctx, int b) {
  return scalar(ctx, b ? "True" : "False", b ? 4 : 5, PS_TJ_BOOL, b ? "True" : "False", b ? 4 : 5);
}
static int cb_number(void *ctx, const char *s, size_t n) {
  return scalar(ctx, s, n, PS_TJ_NUMBER, s, n);
}
static int cb_string(void *ctx, const unsigned char *s, size_t n) {
  ps_trace_reader *r = ctx;
  if (!r->render_depth && r->root_is_map && r->depth == 1 && r->want_events) r->want_events = 0;
  return scalar(ctx, (const char *)s, n, PS_TJ_STRING, NULL, 0);
}

static int cb_key(void *ctx, const unsigned char *s, size_t n) {
  ps_trace_reader *r = ctx;
  if (r->failed) return 0;
  r->callbacks++;
  if (r->render_depth) {
    if (sep(r) || put_repr(r, s, n) || puts_(r, ": ")) return oom(r);
    return 1;
  }
  if (r->root_is_map && r->depth == 1) {
    r->root_keys++;
    r->want_events = n == 11 && memcmp(s, "traceEvents", 11) == 0 && r->events_depth == 0;
    return 1;
  }
  if (r->in_event) {
    r->key_off = r->len;
    if (put(r, s, n) || put_nul(r)) return oom(r);
    r->have_key = 1;
  }
  return 1;
}

static int open_container(ps_trace_reader *r, int is_map) {
  if (r->failed) return 0;
  r->callbacks++;
  int at = where(r);
  if (at == AT_RENDER && !r->is_map[r->depth] && sep(r)) return oom(r);
  if (r->depth >= MAXDEPTH) {
    set_error(r, "JSON nested deeper than %d levels", MAXDEPTH);
    return 0;
  }
  r->depth++;
  r->is_map[r->depth] = (unsigned char)is_map;
  r->first[r->depth] = 1;
  if (r->depth == 1 && !r->events_depth) {
    if (is_map) r->root_is_map = 1;
    else r->events_depth = 1;     /* a bare array of events */
    return 1;
  }
  if (r->root_is_map && r->depth == 2 && r->want_events) {
    r->want_events = 0;
    if (!is_map) r->events_depth = 2;
    return 1;
  }
  if (at == AT_EVENT_START && is_map) {
    r->in_event = 1;
    r->in_args = 0;
    r->ev_has_args = 0;
    r->have_key = 0;
    r->ev_mem0 = r->nmems;
    r->ev_buf0 = r->len;
    return 1;
  }
  if (at == AT_MEMBER) {
    if (is_map && !r->in_args && strcmp(r->buf + r->key_off, "args") == 0) {
      r->in_args = 1;
      r->ev_has_args = 1;
      r->have_key = 0;
      return 1;
    }
    r->render_depth = r->depth;
    r->cur = (mem_ref){r->key_off, r->len, 0, is_map ? PS_TJ_OBJECT : PS_TJ_ARRAY, r->in_args};
    if (puts_(r, is_map ? "{" : "[")) return oom(r);
    return 1;
  }
  if (at == AT_RENDER) {
    if (puts_(r, is_map ? "{" : "[")) return oom(r);
  }
  return 1;
}

static int close_container(ps_trace_reader *r) {
  if (r->failed) return 0;
  r->callbacks++;
  int is_map = r->is_map[r->depth];
  if (r->render_depth) {
    if (puts_(r, is_map ? "}" : "]")) return oom(r);
    if (r->depth == r->render_depth) {
      r->render_depth = 0;
      r->cur.len = r->len - r->cur.val;
      if (put_nul(r) || ps_grow((void **)&r->mems, &r->capmems, r->nmems + 1, sizeof *r->mems))
        return oom(r);
      r->mems[r->nmems++] = r->cur;
      r->have_key = 0;
    }
  } else if (r->in_event && r->in_args && r->depth == r->events_depth + 2) {
    r->in_args = 0;
    r->have_key = 0;
  } else if (r->in_event && r->depth == r->events_depth + 1) {
    r->in_event = 0;
    if (ps_grow((void **)&r->events, &r->capevents, r->nevents_q + 1, sizeof *r->events))
      return oom(r);
    r->events[r->nevents_q++] = (event_ref){r->ev_mem0, r->nmems - r->ev_mem0, r->ev_has_args,
                                            r->nevents++};
  } else if (r->events_depth && r->depth == r->events_depth) {
    r->events_depth = -1;   /* the events array is done; ignore whatever follows */
  }
  r->depth--;
  return 1;
}

static int cb_start_map(void *ctx) { return open_container(ctx, 1); }
static int cb_start_array(void *ctx) { return open_container(ctx, 0); }
static int cb_end(void *ctx) { return close_container(ctx); }

static const yajl_callbacks callbacks = {
  cb_null, cb_bool, NULL, NULL, cb_number, cb_string,
  cb_start_map, cb_key, cb_end, cb_start_array, cb_end,
};

ps_trace_reader *ps_trace_open(const char *path, char *err, size_t errsize) {
  ps_trace_reader *r = calloc(1, sizeof *r);
  if (r == NULL) {
    snprintf(err, errsize, "%s: out of memory", path);
    return NULL;
  }
  r->path = strdup(path);
  r->chunk = malloc(CHUNK);
  r->chunk_size = CHUNK;
  r->fp = ps_input_fopen(path, err, errsize); /* regular files only (infile.h) */
  if (r->fp == NULL) {
    ps_trace_close(r);
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(r->fp), &st) == 0) r->file_size = (uint64_t)st.st_size;
  r->h = yajl_alloc(&callbacks, NULL, r);
  if (r->path == NULL || r->chunk == NULL || r->h == NULL) {
    snprintf(err, errsize, "%s: out of memory", path);
    ps_trace_close(r);
    return NULL;
  }
  yajl_config(r->h, yajl_allow_partial_values, 1);
  yajl_config(r->h, yajl_dont_validate_strings, 1);
  return r;
}

/* Drops the consumed events, keeping the one in progress. */
static void compact(ps_trace_reader *r) {
  size_t m0 = r->in_event ? r->ev_mem0 : r->nmems;
  size_t b0 = r->in_event ? r->ev_buf0 : r->len;
  if (r->render_depth || r->in_event) {
    /* offsets of the event in progress move with its text */
    for (size_t i = m0; i < r->nmems; i++) {
      r->mems[i].key -= b0;
      r->mems[i].val -= b0;
    }
    if (r->render_depth) r->cur.key -= b0, r->cur.val -= b0;
    if (r->have_key) r->key_off -= b0;
  }
  if (r->nmems > m0) memmove(r->mems, r->mems + m0, (r->nmems - m0) * sizeof *r->mems);
  r->nmems -= m0;
  if (r->len > b0) memmove(r->buf, r->buf + b0, r->len - b0);
  r->len -= b0;
  r->ev_mem0 = 0;
  r->ev_buf0 = 0;
  r->nevents_q = r->next = 0;
}

static void parse_error(ps_trace_reader *r, const unsigned char *data, size_t n) {
  if (r->failed) return;
  unsigned char *msg = yajl_get_error(r->h, 0, data, n);
  uint64_t at = r->consumed_before + yajl_get_bytes_consumed(r->h);
  set_error(r, "invalid JSON near byte %llu: %s", (unsigned long long)at, msg ? (char *)msg : "?");
  if (msg) yajl_free_error(r->h, msg);
}

/* yajl keeps a token cut by a chunk's end and lexes it again from its start with each next
 * chunk: a 50 MB number in 64 KiB chunks was lexed 800 times (time grew 4x per doubling of
 * the token). While a chunk passes without a single callback (inside one token), the next
 * read doubles, so a token is lexed a bounded number of times over (linear); after a token
 * the reads go back to CHUNK. */
static int grow_chunk(ps_trace_reader *r, int inside_token) {
  size_t want = inside_token ? r->chunk_size * 2 : CHUNK;
  if (want > MAXCHUNK) want = MAXCHUNK;
  if (want == r->chunk_size) return 0;
  if (want > r->chunk_size) {
    unsigned char *c = realloc(r->chunk, want);
    if (c == NULL) {
      set_error(r, "out of memory (a JSON token longer than %zu bytes)", r->chunk_size);
      return -1;
    }
    r->chunk = c;
  }
  r->chunk_size = want;
  return 0;
}

static int fill(ps_trace_reader *r) {
  compact(r);
  while (r->nevents_q == 0 && !r->eof && !r->failed) {
    size_t n = fread(r->chunk, 1, r->chunk_size, r->fp);
    if (n == 0) {
      if (ferror(r->fp)) {
        set_error(r, "read error: %s", strerror(errno));
        return -1;
      }
      r->eof = 1;
      if (yajl_complete_parse(r->h) != yajl_status_ok) {
        parse_error(r, NULL, 0);
        return -1;
      }
      if (r->bytes_read == 0) {
        set_error(r, "an empty file, not a Chrome trace");
        return -1;
      }
      if (r->depth == 0 && r->events_depth == 0 && !(r->root_is_map && r->root_keys == 0)) {
        /* other JSON than a trace must not become an empty CSV; `{}` is the original's empty
         * trace (docs/rules.md, Trace to CSV) */
        set_error(r, "not a Chrome trace: neither a top-level array of events nor an object "
                  "with \"traceEvents\"");
        return -1;
      }
      if (r->depth > 0) {
        if (r->events_depth > 0 && r->depth == r->events_depth && !r->in_event) {
          r->truncated = 1;   /* an interrupted export: every event before the cut is whole */
        } else {
          set_error(r, "unexpected end of file%s", r->in_event ? " inside an event" : "");
          return -1;
        }
      }
      break;
    }
    size_t skip = 0;
    if (r->bytes_read == 0 && ps_is_lfs_pointer((const char *)r->chunk, n)) {
      set_error(r, "a Git LFS pointer, not the trace (fetch the real file with 'git lfs pull')");
      return -1;
    }
    if (r->bytes_read == 0 && n >= 3 && memcmp(r->chunk, "\xEF\xBB\xBF", 3) == 0) skip = 3;
    r->bytes_read += n;
    uint64_t before = r->callbacks;
    if (yajl_parse(r->h, r->chunk + skip, n - skip) != yajl_status_ok) {
      parse_error(r, r->chunk + skip, n - skip);
      return -1;
    }
    r->consumed_before += n;
    if (grow_chunk(r, r->callbacks == before) != 0) return -1;
  }
  return r->failed ? -1 : 0;
}

int ps_trace_next(ps_trace_reader *r, ps_trace_event *ev) {
  if (r->failed) return -1;
  if (r->next >= r->nevents_q && fill(r) != 0) return -1;
  if (r->next >= r->nevents_q) return 0;
  event_ref *e = &r->events[r->next++];
  if (ps_grow((void **)&r->out, &r->capout, e->n ? e->n : 1, sizeof *r->out)) {
    set_error(r, "out of memory");
    return -1;
  }
  /* top-level members first, then the args members, each in file order */
  size_t k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = e->first; i < e->first + e->n; i++) {
      mem_ref *m = &r->mems[i];
      if (m->is_arg != pass) continue;
      r->out[k++] = (ps_trace_member){r->buf + m->key, r->buf + m->val, m->len, m->type};
    }
  size_t ntop = 0;
  for (size_t i = e->first; i < e->first + e->n; i++) ntop += !r->mems[i].is_arg;
  ev->members = r->out;
  ev->nmembers = ntop;
  ev->args = r->out + ntop;
  ev->nargs = e->n - ntop;
  ev->has_args = e->has_args;
  ev->index = e->index;
  return 1;
}

const char *ps_trace_error(const ps_trace_reader *r) { return r->error; }
int ps_trace_truncated(const ps_trace_reader *r) { return r->truncated; }
uint64_t ps_trace_bytes_read(const ps_trace_reader *r) { return r->bytes_read; }
uint64_t ps_trace_file_size(const ps_trace_reader *r) { return r->file_size; }

void ps_trace_close(ps_trace_reader *r) {
  if (r == NULL) return;
  if (r->h) yajl_free(r->h);
  if (r->fp) fclose(r->fp);
  free(r->path);
  free(r->chunk);
  free(r->buf);
  free(r->mems);
  free(r->events);
  free(r->out);
  free(r);
}

const ps_trace_member *ps_trace_find(const ps_trace_member *m, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(m[i].key, key) == 0) return &m[i];
  return NULL;
}
