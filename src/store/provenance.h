/* The lines of the provenance log (docs/rules.md, Provenance): one JSON object per row a run
 * wrote, built in C because an import or a write-back logs tens of thousands of rows, and
 * building them in Lua cost more than the import's parse. A line is
 *   {<common>,"kernel":<stem>,"key":"<16 hex>","sig":"<in> -> <out>"[,"input":..]
 *    [,"input_xxh3":..][,"samples":N][,"duration_us":N]}
 * where <common> is the run's members (run, time, version, source, ...), encoded once by the
 * caller. Strings are escaped and numbers formatted as lua-cjson does (the log's reader), so
 * a line is what cjson.encode would have written. */
#ifndef PS_PROVENANCE_H
#define PS_PROVENANCE_H

#include <stddef.h>
#include <stdint.h>

/* One written row. Strings other than the shapes are NUL-terminated; NULL means absent. */
typedef struct ps_prov_row {
  uint64_t key;              /* the row's write-back signature hash (writeback_sig.h) */
  const char *in_shapes;     /* Input Shapes (in_len bytes); NULL or empty: N/A */
  const char *out_shapes;    /* Output Shapes (out_len bytes); NULL or empty: N/A */
  size_t in_len, out_len;
  const char *input;         /* the file the values came from */
  const char *input_xxh3;
  const char *samples_text;  /* samples as a JSON string (rare), else samples if has_samples */
  int has_samples, has_duration;
  double samples, duration_us; /* non-finite values are left out (cjson cannot write them) */
} ps_prov_row;

/* A growing text buffer (malloc'd). */
typedef struct ps_prov_buf {
  char *text;
  size_t len, cap;
} ps_prov_buf;

/* Appends one line and its '\n' to b. common: the shared members without braces; kernel: the
 * CSV's stem (escaped here). Returns 0, or -1 when memory runs out. */
int ps_prov_line(ps_prov_buf *b, const char *common, size_t clen, const char *kernel, size_t klen,
                 const ps_prov_row *r);

/* The lines of many rows of one kernel and one run in two constant pieces around each row's
 * own members (an import logs every group it writes): head, `{<common>,"kernel":"<kernel>","key":"`
 * (ps_prov_head writes it into out, which needs clen + PS_JSON_QUOTED_MAX(klen) + 20 bytes;
 * returns its length), then per row the key's 16 hex digits, the sig member and tail: the
 * rest of the line, its `}` and `\n` included (the input members; see ps_prov_line). The bytes
 * are ps_prov_line's for a row without samples and duration. Returns 0, or -1 out of memory. */
size_t ps_prov_head(char *out, const char *common, size_t clen, const char *kernel, size_t klen);
/* The tail: `,"input":..,"input_xxh3":..` (each member only when given) and `}\n`, into out
 * (PS_PROV_TAIL_MAX(il, xl) bytes); returns its length. */
#define PS_PROV_TAIL_MAX(il, xl) (9 + PS_JSON_QUOTED_MAX(il) + 14 + PS_JSON_QUOTED_MAX(xl) + 2)
size_t ps_prov_tail(char *out, const char *input, size_t il, const char *xxh3, size_t xl);
int ps_prov_group_line(ps_prov_buf *b, const char *head, size_t hlen, uint64_t key, const char *in,
                       size_t inl, const char *out, size_t outl, const char *tail, size_t tlen);

/* Writes s (n bytes) as a JSON string with its quotes into out, escaping as lua-cjson does
 * (control bytes, '"', '\\', '/', DEL). out needs PS_JSON_QUOTED_MAX(n) bytes. Returns the
 * length written. */
#define PS_JSON_QUOTED_MAX(n) (6 * (n) + 2)
size_t ps_json_quote(char *out, const char *s, size_t n);

#endif
