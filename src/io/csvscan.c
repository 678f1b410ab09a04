#include "csvscan.h"
#include "csvsniff.h"
#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define BUFSIZE (4u << 20)
#define MINBUF (64u << 10)
#define PAD 64   /* zero bytes after the data: room for a 64-byte load at the sentinel */

typedef ps_scan_field span; /* start, end, unescape: handed out by ps_scan_next_raw */

struct ps_scan {
  int fd;
  char *path;
  char *buf;
  size_t cap, pos, end;       /* unconsumed data: buf[pos, end) */
  size_t chunk;               /* ps_scan_set_chunk: the most one refill reads (0: cap) */
  int eof, first, bom, failed;
  int avx2;                   /* the CPU has what scan_record_fast_avx2 needs (asked once) */
  unsigned flags;
  const char *eol;            /* line ending of the first record, once known */
  uint64_t bytes_read, file_size;
  uint64_t nul_offset;        /* file offset of the NUL byte found (binary data) */
  uint64_t base;              /* file offset of buf[0] */
  long line;
  span *spans;
  size_t *ends;               /* the fast scan's field ends (the byte after each field) from
                                 ends[1] on; ends[0] is the byte before the record */
  size_t *sel, nsel;          /* ps_scan_select: the fields handed out, ascending (sel NULL:
                                 all); the others' entries in fields and lens stay none, 0 */
  size_t nplain;              /* sel[nsel..nsel + nplain): the PS_SCAN_PLAIN ones, ascending */
  size_t plain_run;           /* sel[nsel + plain_run..nsel + nplain) lie side by side (a row's
                                 counters) */
  size_t qlast;               /* the fast scan's record: one past its last quote, 0: none (a
                                 field starting after it is unquoted) */
  char none[1];
  char **fields;
  size_t *lens;
  size_t capfields;
  char error[600];
};

/* 1 for the bytes that end an unquoted run: , CR LF NUL */
static const unsigned char stop[256] = {[','] = 1, ['\r'] = 1, ['\n'] = 1, [0] = 1};

static void set_error(ps_scan *s, long line, const char *fmt, ...) {
  va_list ap;
  s->failed = 1;
  int n = line > 0 ? snprintf(s->error, sizeof s->error, "%s:%ld: ", s->path, line)
                   : snprintf(s->error, sizeof s->error, "%s: ", s->path);
  va_start(ap, fmt);
  vsnprintf(s->error + n, sizeof s->error - (size_t)n, fmt, ap);
  va_end(ap);
}

ps_scan *ps_scan_open_at(const char *path, uint64_t offset, char *err, size_t errsize) {
  ps_scan *s = ps_scan_open(path, err, errsize);
  if (s == NULL || offset == 0) return s;
  if (lseek(s->fd, (off_t)offset, SEEK_SET) < 0) {
    snprintf(err, errsize, "%s: %s", path, strerror(errno));
    ps_scan_close(s);
    return NULL;
  }
  s->first = 0;
  s->base = offset;
  return s;
}

uint64_t ps_scan_offset(const ps_scan *s) { return s->base + s->pos; }
long ps_scan_line(const ps_scan *s) { return s->line; }

int ps_scan_seek(ps_scan *s, uint64_t offset, long line) {
  if (offset == 0 || lseek(s->fd, (off_t)offset, SEEK_SET) < 0) {
    set_error(s, 0, "cannot seek to offset %llu", (unsigned long long)offset);
    return -1;
  }
  s->pos = s->end = 0;
  s->eof = s->first = s->failed = 0;
  s->base = offset;
  s->line = line;
  s->error[0] = 0;
  return 0;
}

ps_scan *ps_scan_open(const char *path, char *err, size_t errsize) {
  return ps_scan_openf(path, 0, err, errsize);
}

ps_scan *ps_scan_openf(const char *path, unsigned flags, char *err, size_t errsize) {
  ps_scan *s = calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(err, errsize, "%s: out of memory", path);
    return NULL;
  }
  s->fd = ps_input_open(path, err, errsize); /* regular files only (infile.h) */
  if (s->fd < 0) {
    free(s);
    return NULL;
  }
  struct stat st;
  if (fstat(s->fd, &st) == 0) s->file_size = (uint64_t)st.st_size;
  s->path = strdup(path);
  /* a small file gets a buffer its size (databases are many small CSVs, and a 4 MiB buffer
   * per open cost the fuzzer most of its time); refill grows it for a longer record */
  s->cap = s->file_size + 1 < MINBUF ? MINBUF : s->file_size + 1 < BUFSIZE ? (size_t)s->file_size + 1 : BUFSIZE;
  s->buf = malloc(s->cap + 1 + PAD);
  if (s->path == NULL || s->buf == NULL) {
    snprintf(err, errsize, "%s: out of memory", path);
    ps_scan_close(s);
    return NULL;
  }
  s->first = 1;
  s->line = 1;
  s->flags = flags;
#ifdef __SSE2__
  s->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("pclmul") &&
            __builtin_cpu_supports("popcnt");
#endif
  return s;
}

/* Keeps buf[pos, end), reads more after it (growing the buffer when one record fills it). */
static int refill(ps_scan *s) {
  if (s->pos > 0) {
    memmove(s->buf, s->buf + s->pos, s->end - s->pos);
    s->end -= s->pos;
    s->base += s->pos;
    s->pos = 0;
  }
  if (s->end == s->cap) {
    char *b = realloc(s->buf, s->cap * 2 + 1 + PAD);
    if (b == NULL) {
      set_error(s, s->line, "out of memory (a record longer than %zu bytes)", s->cap);
      return -1;
    }
    s->buf = b;
    s->cap *= 2;
  }
  size_t want = s->chunk && s->chunk < s->cap - s->end ? s->end + s->chunk : s->cap;
  while (s->end < want) {
    ssize_t n = read(s->fd, s->buf + s->end, want - s->end);
    if (n < 0) {
      if (errno == EINTR) continue;
      set_error(s, 0, "read error: %s", strerror(errno));
      return -1;
    }
    if (n == 0) {
      s->eof = 1;
      break;
    }
    s->end += (size_t)n;
    s->bytes_read += (uint64_t)n;
  }
  memset(s->buf + s->end, 0, 1 + PAD);  /* a sentinel: stops the scan at the data's end */
  if (s->first && s->end > 0) {
    s->first = 0;
    const char *why = ps_csv_bad_start(s->buf, s->end, &s->pos);
    if (why != NULL) {
      set_error(s, 1, "%s", why);
      return -1;
    }
    s->bom = s->pos == 3;
  }
  return 0;
}

static int grow_fields(ps_scan *s) {
  size_t c = s->capfields ? s->capfields * 2 : 64;
  for (size_t j = 0; s->sel && j < s->nsel + s->nplain; j++)
    if (s->sel[j] >= c) c = s->sel[j] + 1;
  span *sp = realloc(s->spans, c * sizeof *sp);
  if (sp == NULL) return -1;
  s->spans = sp;
  char **f = realloc(s->fields, c * sizeof *f);
  if (f == NULL) return -1;
  s->fields = f;
  size_t *l = realloc(s->lens, c * sizeof *l);
  if (l == NULL) return -1;
  s->lens = l;
  size_t *en = realloc(s->ends, c * sizeof *en);
  if (en == NULL) return -1;
  s->ends = en;
  for (size_t i = s->capfields; i < c; i++) f[i] = s->none, l[i] = 0;
  s->capfields = c;
  return 0;
}

enum { SCAN_OK, SCAN_MORE, SCAN_NUL, SCAN_UNTERMINATED, SCAN_NOMEM };

/* Line ends in [p, e) as Python's universal newlines count them (its csv line_num): LF, CRLF
 * and a lone CR, so a CR-only file numbers its lines as an LF one does. */
static long count_lines(const char *p, const char *e) {
  long n = 0;
  for (const char *k = p; (k = memchr(k, '\n', (size_t)(e - k))) != NULL; k++) n++;
  for (const char *k = p; (k = memchr(k, '\r', (size_t)(e - k))) != NULL; k++)
    if (k + 1 == e || k[1] != '\n') n++;
  return n;
}

/* The scan jumps from one special byte to the next: a 16-byte mask of the bytes that end an
 * unquoted run (, CR LF NUL) or a quoted one (" CR LF NUL), with SSE2 (baseline on x86-64)
 * or a portable loop; both give the same masks (test_csvscan compares them at every
 * alignment). The buffer has PAD zero bytes after its data, so the 16-byte loads stay inside
 * it and stop at the NUL sentinel. */
static const unsigned char stop_q[256] = {['"'] = 1, ['\r'] = 1, ['\n'] = 1, [0] = 1};
static int scan_portable;   /* ps_scan_set_portable: the tests' switch */

void ps_scan_set_portable(int on) { scan_portable = on; }

static inline unsigned mask_table(const char *p, const unsigned char *tab) {
  unsigned m = 0;
  for (int i = 0; i < 16; i++) m |= (unsigned)tab[(unsigned char)p[i]] << i;
  return m;
}

#ifdef __SSE2__
static inline unsigned mask_sse2(const char *p, char quote_or_comma) {
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i m = _mm_or_si128(
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(quote_or_comma)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(v, _mm_setzero_si128())));
  return (unsigned)_mm_movemask_epi8(m);
}
#define MASK_U(p) (simd ? mask_sse2(p, ',') : mask_table(p, stop))
#define MASK_Q(p) (simd ? mask_sse2(p, '"') : mask_table(p, stop_q))
#else
#define MASK_U(p) mask_table(p, stop)
#define MASK_Q(p) mask_table(p, stop_q)
#endif

/* The first of the bytes c0..c3 in b[p, end), or end: a long run is left to the C library's
 * search (a 4 MiB quoted field took the unoptimised fuzzing build a second). */
static size_t first_of(const char *b, size_t p, size_t end, const char c[4]) {
  for (int i = 0; i < 4; i++) {
    const char *x = memchr(b + p, c[i], end - p);
    if (x != NULL) end = (size_t)(x - b);
  }
  return end;
}

/* The stop bytes of an unquoted run in the 64 bytes at base, one bit each: one mask serves
 * the several fields it covers. */
typedef struct window { size_t base; uint64_t bits; } window;

static inline uint64_t mask64_u(const char *p, int simd) {
  (void)simd;
  return (uint64_t)MASK_U(p) | (uint64_t)MASK_U(p + 16) << 16 | (uint64_t)MASK_U(p + 32) << 32 |
         (uint64_t)MASK_U(p + 48) << 48;
}

/* The first byte at or after p that ends an unquoted run (the sentinel at e at last). */
static inline size_t next_stop(const char *b, size_t p, size_t e, window *w, int simd) {
  size_t off = p - w->base;
  if (off < 64) {
    uint64_t m = w->bits >> off;
    if (m) return p + (size_t)__builtin_ctzll(m);
    p = w->base + 64;
  }
  for (int k = 0; k < 2; k++, p += 64) {
    w->base = p;
    w->bits = mask64_u(b + p, simd);
    if (w->bits) return p + (size_t)__builtin_ctzll(w->bits);
  }
  static const char stops[4] = {',', '\r', '\n', 0};
  return first_of(b, p, e + 1, stops);   /* no sentinel within 128 bytes: p < e */
}

/* The first quote, CR, LF or NUL at or after p. */
static inline size_t next_quoted_stop(const char *b, size_t p, size_t e, int simd) {
  (void)simd;
  for (int k = 0; k < 4; k++, p += 16) {
    unsigned m = MASK_Q(b + p);
    if (m) return p + (size_t)__builtin_ctz(m);
  }
  static const char stops[4] = {'"', '\r', '\n', 0};
  return first_of(b, p, e + 1, stops);
}

/* Scans one record from s->pos without changing the data: field spans, the position after
 * its line end in *next, newlines inside quotes in *lines (LF, CRLF and a lone CR, as
 * Python's universal newlines count them). */
static inline int scan_record_with(ps_scan *s, size_t *nf, size_t *next, long *lines, int simd) {
  const char *b = s->buf;
  size_t p = s->pos, e = s->end, n = 0;
  window w = {p, mask64_u(b + p, simd)};
  *lines = 0;
  for (;;) {
    if (n == s->capfields && grow_fields(s) != 0) return SCAN_NOMEM;
    span *f = &s->spans[n++];
    f->unescape = 0;
    if (p < e && b[p] == '"') {
      f->start = ++p;
      for (;;) {
        size_t q = next_quoted_stop(b, p, e, simd);
        char c = b[q];
        if (c == '"') {
          p = q + 1;
          if (p == e && !s->eof) return SCAN_MORE;  /* a doubled quote may follow */
          if (p < e && b[p] == '"') {
            f->unescape = 1;
            p++;
            continue;
          }
          break;
        }
        if (c == 0) {
          /* binary data, quoted, when a quote closes the field after it; else the field
           * runs on past the data read */
          if (q < e && memchr(b + q, '"', e - q) != NULL) {
            s->nul_offset = s->base + (uint64_t)q;
            return SCAN_NUL;
          }
          return s->eof ? SCAN_UNTERMINATED : SCAN_MORE;
        }
        if (c == '\n' || b[q + 1] != '\n') ++*lines;   /* LF, or a CR without its LF */
        p = q + 1;
      }
      f->end = p - 1;
      if (p < e && !stop[(unsigned char)b[p]]) {
        /* text after the closing quote belongs to the field (Python's csv) */
        f->unescape = 1;
        p = next_stop(b, p, e, &w, simd);
        f->end = p;
      }
    } else {
      f->start = p;
      p = next_stop(b, p, e, &w, simd);  /* the NUL sentinel ends it at e */
      f->end = p;
    }
    if (p >= e) {
      if (!s->eof) return SCAN_MORE;
      *nf = n;
      *next = e;
      return SCAN_OK;
    }
    char c = b[p];
    if (c == ',') {
      p++;
      continue;
    }
    if (c == 0) {
      s->nul_offset = s->base + p;
      return SCAN_NUL;
    }
    if (c == '\r') {
      if (p + 1 == e && !s->eof) return SCAN_MORE;
      p += (p + 1 < e && b[p + 1] == '\n') ? 2 : 1;
    } else {
      p++;
    }
    *nf = n;
    *next = p;
    return SCAN_OK;
  }
}

#ifdef __SSE2__
#include <immintrin.h>
/* The fast scan: a structural index of each 64-byte window, built without a branch per byte.
 * q, c and nz are the masks of the quotes, the commas and the CR, LF and NUL bytes; the bytes
 * inside quotes are the prefix XOR of q (each quote toggles), so the commas and line ends
 * outside them are the field and record ends, one ctz each. That toggle reading is the
 * grammar's whenever every quote that opens a quoted region sits at a field's start or right
 * after a closing quote (a doubled one); a record where one does not (a stray quote in an
 * unquoted field or after a closing quote), or that holds a NUL or a quoted line end, or does
 * not end before the data read does, is left to the exact walk (scan_record_with): SCAN_SLOW.
 * It only finds where each field ends (s->ends): the fields are cut out afterwards, the ones
 * selected only (ps_scan_select), as the exact walk's spans would cut them (test_csvscan
 * compares the two on every quirk). */
enum { SCAN_SLOW = SCAN_NOMEM + 1, SCAN_GROW };   /* GROW: s->ends is too short, grow it */

static inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  return x ^ x << 32;
}

static inline uint64_t movemask64(__m128i a, __m128i b, __m128i c, __m128i d) {
  return (uint64_t)(unsigned)_mm_movemask_epi8(a) | (uint64_t)(unsigned)_mm_movemask_epi8(b) << 16 |
         (uint64_t)(unsigned)_mm_movemask_epi8(c) << 32 | (uint64_t)(unsigned)_mm_movemask_epi8(d) << 48;
}

#define LOAD16(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define EQ(v, ch) _mm_cmpeq_epi8(v, _mm_set1_epi8(ch))
#define NZ(v) _mm_or_si128(_mm_or_si128(EQ(v, '\n'), EQ(v, '\r')), EQ(v, 0))

/* One 64-byte window's masks: its quotes, commas, and CR, LF and NUL bytes; its NULs alone
 * (only asked for a window with a line end or a NUL). */
typedef struct masks { uint64_t q, c, nz; } masks;

static inline __attribute__((always_inline)) masks masks_sse2(const char *p) {
  __m128i v0 = LOAD16(p), v1 = LOAD16(p + 16), v2 = LOAD16(p + 32), v3 = LOAD16(p + 48);
  return (masks){movemask64(EQ(v0, '"'), EQ(v1, '"'), EQ(v2, '"'), EQ(v3, '"')),
                 movemask64(EQ(v0, ','), EQ(v1, ','), EQ(v2, ','), EQ(v3, ',')),
                 movemask64(NZ(v0), NZ(v1), NZ(v2), NZ(v3))};
}

static inline __attribute__((always_inline)) uint64_t zeros_sse2(const char *p) {
  __m128i v0 = LOAD16(p), v1 = LOAD16(p + 16), v2 = LOAD16(p + 32), v3 = LOAD16(p + 48);
  return movemask64(EQ(v0, 0), EQ(v1, 0), EQ(v2, 0), EQ(v3, 0));
}

/* The index of x's lowest set bit, 64 for 0 (the unrolled stores of scan_fast_with) */
static inline __attribute__((always_inline)) uint64_t tz_any(uint64_t x) {
  return x ? (uint64_t)__builtin_ctzll(x) : 64;
}
/* TZCNT (64 for 0) as it is: the compiler's _tzcnt_u64 clears its output register first (a
 * false dependency old Intel cores had), an instruction more a field end */
static inline __attribute__((always_inline, target("bmi"))) uint64_t tz_bmi(uint64_t x) {
#if defined(__GNUC__) && defined(__x86_64__)
  uint64_t r;
  __asm__("tzcnt %1, %0" : "=r"(r) : "r"(x) : "cc");
  return r;
#else
  return _tzcnt_u64(x);
#endif
}

/* The body of the fast scan, inlined into one function per instruction set (masks, zeros
 * and pxor: that set's window masks and prefix XOR). */
static inline __attribute__((always_inline)) int scan_fast_with(ps_scan *s, size_t *nf, size_t *next,
                                                               masks (*window)(const char *),
                                                               uint64_t (*zeros)(const char *),
                                                               uint64_t (*pxor)(uint64_t), int unrolled,
                                                               uint64_t (*tz)(uint64_t)) {
  const char *b = s->buf;
  size_t p = s->pos, e = s->end, n = 0, qlast = 0;
  uint64_t in = 0, prev_sep = 1, prev_q = 0;   /* carries from the window before */
  for (;; p += 64) {
    masks mk = window(b + p);
    uint64_t q = mk.q, c = mk.c, nz = mk.nz;
    uint64_t inside = q ? in ^ pxor(q) : in;
    uint64_t mine = ~(uint64_t)0, nl = 0;   /* the record's bits; its line end */
    if (nz) {
      uint64_t z = zeros(b + p);
      uint64_t ends = nz & ~z & ~inside;
      if (ends) mine = ends ^ (ends - 1), nl = ends & mine;
      if ((z | (nz & inside)) & mine) return SCAN_SLOW;
    }
    if (q) {
      uint64_t after_sep = (c | nz) << 1 | prev_sep, after_q = q << 1 | prev_q;
      if (q & inside & ~(after_sep | after_q) & mine) return SCAN_SLOW;
      if (q & mine) qlast = p + 64 - (size_t)__builtin_clzll(q & mine);
    }
    in = (uint64_t)((int64_t)inside >> 63);
    prev_sep = (c | nz) >> 63;
    prev_q = q >> 63;
    uint64_t bits = ((c & ~inside) | nl) & mine;
    /* no call in the loop (its registers stay): the caller grows the arrays and scans again */
    if (n + 65 > s->capfields) return SCAN_GROW;
    size_t *ends = s->ends + 1;
    if (unrolled) {
      /* four ends a round, stored whether the window has them or not (room for 64 more is
       * checked above): fewer instructions and branches than one a bit */
      size_t cnt = (size_t)__builtin_popcountll(bits), *o = ends + n;
      n += cnt;
      for (;;) {
        o[0] = p + (size_t)tz(bits), bits &= bits - 1;   /* tz(0): 64, no UB */
        o[1] = p + (size_t)tz(bits), bits &= bits - 1;
        o[2] = p + (size_t)tz(bits), bits &= bits - 1;
        o[3] = p + (size_t)tz(bits), bits &= bits - 1;
        if (!bits) break;
        o += 4;
      }
    } else {
      for (; bits; bits &= bits - 1) ends[n++] = p + (size_t)__builtin_ctzll(bits);
    }
    if (nl) {
      size_t k = ends[n - 1] + 1;
      if (b[k - 1] == '\r') {
        if (k >= e) return SCAN_SLOW;   /* its LF may come with the next read */
        if (b[k] == '\n') k++;
      }
      *nf = n;
      *next = k;
      s->qlast = qlast;
      return SCAN_OK;
    }
  }
}

/* noinline: inlined, its constants were loaded in next_record around every AVX2 call too */
static __attribute__((noinline)) int scan_record_fast(ps_scan *s, size_t *nf, size_t *next) {
  return scan_fast_with(s, nf, next, masks_sse2, zeros_sse2, prefix_xor, 0, tz_any);
}

/* The same with AVX2 (two 32-byte loads a window, half the compares and movemasks) and the
 * prefix XOR as one carry-less multiply by all ones; chosen at run time where the CPU has
 * them (test_csvscan compares it with the SSE2 scan and the exact walk). */
#include <immintrin.h>
#define LOAD32(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define EQ32(v, ch) _mm256_cmpeq_epi8(v, _mm256_set1_epi8(ch))
#define MM32(x) ((uint64_t)(uint32_t)_mm256_movemask_epi8(x))

/* The five special bytes by their low nibbles (NUL 0, '"' 2, LF A, ',' C, CR D): a byte is one
 * of them when the table's entry at its low nibble is the byte itself (a byte with its top bit
 * set looks up 0, and is not 0); one shuffle and compare, not five compares and two ORs. */
static const char special_lut[32] __attribute__((aligned(32))) = {
  0, -1, '"', -1, -1, -1, -1, -1, -1, -1, '\n', -1, ',', '\r', -1, -1,
  0, -1, '"', -1, -1, -1, -1, -1, -1, -1, '\n', -1, ',', '\r', -1, -1};

static inline __attribute__((always_inline, target("avx2"))) masks masks_avx2(const char *p) {
  __m256i v0 = LOAD32(p), v1 = LOAD32(p + 32);
  const __m256i lut = _mm256_load_si256((const __m256i *)(const void *)special_lut);
  uint64_t sp = MM32(_mm256_cmpeq_epi8(_mm256_shuffle_epi8(lut, v0), v0)) |
                MM32(_mm256_cmpeq_epi8(_mm256_shuffle_epi8(lut, v1), v1)) << 32;
  uint64_t q = MM32(EQ32(v0, '"')) | MM32(EQ32(v1, '"')) << 32, c = MM32(EQ32(v0, ',')) | MM32(EQ32(v1, ',')) << 32;
  return (masks){q, c, sp & ~(q | c)};
}

static inline __attribute__((always_inline, target("avx2"))) uint64_t zeros_avx2(const char *p) {
  return MM32(EQ32(LOAD32(p), 0)) | MM32(EQ32(LOAD32(p + 32), 0)) << 32;
}

static inline __attribute__((always_inline, target("pclmul"))) uint64_t prefix_xor_clmul(uint64_t x) {
  return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)x), _mm_set1_epi8(-1), 0));
}

__attribute__((target("avx2,bmi,bmi2,pclmul,popcnt"))) static int scan_record_fast_avx2(ps_scan *s, size_t *nf,
                                                                                size_t *next) {
  return scan_fast_with(s, nf, next, masks_avx2, zeros_avx2, prefix_xor_clmul, 1, tz_bmi);
}
#undef LOAD32
#undef EQ32
#undef MM32
#undef LOAD16
#undef EQ
#undef NZ
#endif

/* Sets *fast when the fast scan read the record (its field ends in s->ends), else the exact
 * walk did (its spans in s->spans). */
static int scan_record(ps_scan *s, size_t *nf, size_t *next, long *lines, int *fast) {
  *fast = 0;
#ifdef __SSE2__
  if (scan_portable != 1) {
    int avx2 = scan_portable == 0 && s->avx2;
    int st;
    while ((st = avx2 ? scan_record_fast_avx2(s, nf, next) : scan_record_fast(s, nf, next)) == SCAN_GROW)
      if (grow_fields(s) != 0) return SCAN_NOMEM;
    if (st != SCAN_SLOW) return *lines = 0, *fast = 1, st;
    return scan_record_with(s, nf, next, lines, 1);
  }
#endif
  return scan_record_with(s, nf, next, lines, 0);
}

/* Unquotes a field that holds doubled quotes or text after its closing quote into w, which
 * may be the field's own place (in place, as ps_scan_next does); returns the length. */
static size_t unescape_to(char *w, const char *b, const span *f) {
  char *w0 = w;
  size_t p = f->start;
  if (f->end - p <= 64) {   /* short (shape cells): a byte loop costs less than the calls */
    const char *r = b + p, *e = b + f->end;   /* w <= r: in place is safe */
    for (; r < e; r++) {
      if (*r != '"') {
        *w++ = *r;
      } else if (r + 1 < e && r[1] == '"') {   /* a doubled quote */
        *w++ = '"';
        r++;
      } else {                                 /* the closing quote: dropped, the rest literal */
        for (r++; r < e; r++) *w++ = *r;
        break;
      }
    }
    return (size_t)(w - w0);
  }
  for (;;) {
    char *q = memchr(b + p, '"', f->end - p);
    if (q == NULL) {  /* no more quotes: the rest is literal */
      size_t n = f->end - p;
      memmove(w, b + p, n);
      return (size_t)(w + n - w0);
    }
    size_t n = (size_t)(q - (b + p));
    memmove(w, b + p, n);
    w += n;
    p = (size_t)(q - b) + 1;
    if (p < f->end && b[p] == '"') {   /* a doubled quote */
      *w++ = '"';
      p++;
    } else {                            /* the closing quote: drop it, keep what follows */
      size_t rest = f->end - p;
      memmove(w, b + p, rest);
      /* after the closing quote quotes are literal */
      return (size_t)(w + rest - w0);
    }
  }
}

static size_t unescape(char *b, const span *f) { return unescape_to(b + f->start, b, f); }

static const unsigned char space[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\v'] = 1,
                                         ['\f'] = 1, ['\r'] = 1};

/* The text of field f, unquoted and trimmed in place and NUL-terminated there. */
static inline void cut_field(char *buf, const span *f, int trim, char **field, size_t *lenp) {
  char *t = buf + f->start;
  size_t len = f->unescape ? unescape(buf, f) : f->end - f->start;
  if (trim && len && (space[(unsigned char)t[0]] | space[(unsigned char)t[len - 1]])) {
    while (len && space[(unsigned char)*t]) t++, len--;
    while (len && space[(unsigned char)t[len - 1]]) len--;
  }
  t[len] = '\0';  /* over the delimiter or a dropped quote: the spans are already taken */
  *field = t;
  *lenp = len;
}

/* 1 when b[0, n) holds a quote. The bytes up to 16 past b + n lie in the buffer (a field,
 * then at worst the PAD zeros after the data), so a short field is one or two loads, not a
 * call of memchr (three a row of kernel_details: its start time and shape cells). */
static inline int has_quote(const char *b, size_t n) {
#ifdef __SSE2__
  if (n <= 64) {
    for (size_t o = 0; o < n; o += 16) {
      unsigned m = (unsigned)_mm_movemask_epi8(
          _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + o)), _mm_set1_epi8('"')));
      if (n - o < 16) m &= (1u << (n - o)) - 1;
      if (m) return 1;
    }
    return 0;
  }
#endif
  return memchr(b, '"', n) != NULL;
}

/* A field t[0, len) whose first or last byte is a space, trimmed (rare: out of line) */
static __attribute__((noinline)) char *trim_rare(char *t, size_t *lenp) {
  size_t len = *lenp;
  while (len && space[(unsigned char)*t]) t++, len--;
  while (len && space[(unsigned char)t[len - 1]]) len--;
  *lenp = len;
  return t;
}

/* Field (fs, k) of a record the fast scan read, which starts with a quote, cut as the exact
 * walk's span would cut it: out of line, so cut_fast's loop keeps its registers. */
static __attribute__((noinline)) void cut_quoted(char *buf, size_t fs, size_t k, int trim, char **field,
                                                 size_t *lenp) {
  char *t = buf + fs;
  size_t len = k - fs;
  if (len >= 6 && t[1] == '"' && t[2] == '"' && buf[k - 1] == '"' && buf[k - 2] == '"' && buf[k - 3] == '"' &&
      !has_quote(t + 3, len - 6)) {
    /* """text""" (the profilers' shape cells) is "text": it lies there already, from the
     * second quote to the one before the last two (no copy, nothing to trim) */
    buf[k - 2] = '\0';
    *field = t + 2;
    *lenp = len - 4;
    return;
  }
  if (len >= 2 && buf[k - 1] == '"' && !has_quote(t + 1, len - 2)) {
    /* "text" (the profilers' start times): the quotes dropped, trimmed, NUL over the last */
    t++, len -= 2;
    if (trim) {   /* a tab after the time is common: no call */
      while (len && space[(unsigned char)t[len - 1]]) len--;
      while (len && space[(unsigned char)*t]) t++, len--;
    }
    t[len] = '\0';
    *field = t;
    *lenp = len;
    return;
  }
  span f = {fs + 1, k, 1};         /* doubled quotes or text after the closing one */
  cut_field(buf, &f, trim, field, lenp);
}

/* cut_field for the fields sel[0..nsel) (sel NULL: 0..nsel) of a record the fast scan read:
 * field i is buf(ends[i], ends[i + 1]), cut as the exact walk's span would cut it. */
static inline __attribute__((always_inline)) void cut_fast(char *buf, const size_t *ends, size_t nf,
                                                          const size_t *sel, size_t nsel, int trim,
                                                          char **fields, size_t *lens) {
  if (sel)
    while (nsel && sel[nsel - 1] >= nf) nsel--;   /* ascending: the ones the record has */
  for (size_t j = 0; j < nsel; j++) {
    size_t i = sel ? sel[j] : j;
    size_t fs = ends[i] + 1, k = ends[i + 1];
    char *t = buf + fs;
    size_t len = k - fs;
    if (*t == '"') {
      cut_quoted(buf, fs, k, trim, &fields[i], &lens[i]);
      continue;
    }
    if (trim && len && (space[(unsigned char)t[0]] | space[(unsigned char)t[len - 1]])) t = trim_rare(t, &len);
    t[len] = '\0';
    fields[i] = t;
    lens[i] = len;
  }
}

/* The PS_SCAN_PLAIN fields sel[0..nsel) of a record the fast scan read: an unquoted one as it
 * lies, a quoted one cut. */
static inline void plain_fast(char *buf, const size_t *restrict ends, size_t nf, const size_t *restrict sel,
                              size_t nsel, int trim, char **restrict fields, size_t *restrict lens, size_t qlast,
                              size_t run) {
  while (nsel && sel[nsel - 1] >= nf) nsel--;   /* ascending: the ones the record has */
  size_t j = 0;
  for (; j < nsel && (j < run || ends[sel[j]] + 1 < qlast); j++) {   /* one by one */
    size_t i = sel[j], fs = ends[i] + 1;
    if (buf[fs] == '"') cut_quoted(buf, fs, ends[i + 1], trim, &fields[i], &lens[i]);
    else fields[i] = buf + fs, lens[i] = ends[i + 1] - fs;
  }
  if (j == nsel) return;
  /* the rest lie side by side after the record's last quote: field i is buf(ends[i], ends[i + 1]) */
  size_t i = sel[j];
#ifdef __SSE2__
  {   /* two at a time */
    size_t top = sel[nsel - 1] + 1;
    const __m128i at = _mm_set1_epi64x((long long)(uintptr_t)(buf + 1)), one = _mm_set1_epi64x(1);
    for (; i + 1 < top; i += 2) {
      __m128i e0 = _mm_loadu_si128((const __m128i *)(const void *)(ends + i));
      __m128i e1 = _mm_loadu_si128((const __m128i *)(const void *)(ends + i + 1));
      _mm_storeu_si128((__m128i *)(void *)(fields + i), _mm_add_epi64(e0, at));
      _mm_storeu_si128((__m128i *)(void *)(lens + i), _mm_sub_epi64(_mm_sub_epi64(e1, e0), one));
    }
    if (i < top) fields[i] = buf + ends[i] + 1, lens[i] = ends[i + 1] - ends[i] - 1;
  }
#else
  for (; j < nsel; j++) i = sel[j], fields[i] = buf + ends[i] + 1, lens[i] = ends[i + 1] - ends[i] - 1;
#endif
}

/* The record at pos holds the first NUL byte: an error on the NUL's own line. */
static int nul_error(ps_scan *s) {
  const char *nul = s->buf + (s->nul_offset - s->base);
  long line = s->line + count_lines(s->buf + s->pos, nul);
  set_error(s, line, "binary data (a NUL byte at offset %llu), not a CSV file",
            (unsigned long long)s->nul_offset);
  return -1;
}

/* The error of a scan status other than SCAN_OK and SCAN_MORE: -1. */
static int scan_failed(ps_scan *s, int st) {
  if (st == SCAN_NUL) return nul_error(s);
  set_error(s, s->line, st == SCAN_UNTERMINATED ? "unterminated quoted field (a '\"' opened here is never closed)"
                                                : "out of memory");
  return -1;
}

/* The next record that is not a blank line: 1 with its field count, its first byte's offset,
 * its first line and whether the fast scan read it (its field ends in s->ends; else the exact
 * walk's spans in s->spans), 0 at the end, -1 on an error. */
static inline int next_record(ps_scan *s, size_t *nf, size_t *start, long *line, int *fast) {
  if (s->failed) return -1;
  for (;;) {
    if (s->pos >= s->end) {
      if (s->eof) return 0;
      if (refill(s) != 0) return -1;
      if (s->pos >= s->end) return 0;
    }
    size_t next = 0;
    long lines = 0;
    *nf = 0;
    *fast = 0;
    int st = scan_record(s, nf, &next, &lines, fast);
    if (st == SCAN_MORE) {
      if (refill(s) != 0) return -1;
      continue;
    }
    if (st != SCAN_OK) return scan_failed(s, st);
    *line = s->line;
    char last = s->buf[next - 1];
    int ended = next > s->pos && (last == '\n' || last == '\r');
    s->line += lines + ended;
    *start = s->pos;
    s->pos = next;
    /* a blank line is no record */
    if (*nf == 1 && (*fast ? s->ends[1] : s->spans[0].end) == *start && (s->buf[*start] != '"')) continue;
    if (s->eol == NULL && ended)
      s->eol = last == '\r' || (next - *start >= 2 && s->buf[next - 2] == '\r') ? "\r\n" : "\n";
    if (*fast) s->ends[0] = *start - 1;  /* field 0 starts after this "end" */
    return 1;
  }
}

int ps_scan_next(ps_scan *s, ps_scan_record *rec) {
  size_t nf = 0, start = 0;   /* set by next_record when it returns 1 (initialised for the compiler) */
  long line = 0;
  int fast = 0;
  int got = next_record(s, &nf, &start, &line, &fast);
  if (got <= 0) return got;
  /* locals: the NUL stores below may alias anything, s's members would be reloaded */
  int trim = !(s->flags & PS_SCAN_KEEP_SPACE);
  char *buf = s->buf, **fields = s->fields;
  const span *spans = s->spans;
  size_t *lens = s->lens;
  const size_t *sel = s->sel;
  if (fast) {
    if (sel) {
      if (trim) cut_fast(buf, s->ends, nf, sel, s->nsel, 1, fields, lens);   /* the flag a constant */
      else cut_fast(buf, s->ends, nf, sel, s->nsel, 0, fields, lens);
      if (s->nplain)
        plain_fast(buf, s->ends, nf, sel + s->nsel, s->nplain, trim, fields, lens, s->qlast, s->plain_run);
    } else {
      cut_fast(buf, s->ends, nf, NULL, nf, trim, fields, lens);
    }
  } else {
    /* the plain fields (sel[nsel..]) are cut too */
    for (size_t j = 0, nsel = sel ? s->nsel + s->nplain : nf; j < nsel; j++) {
      size_t i = sel ? sel[j] : j;
      if (i < nf) cut_field(buf, &spans[i], trim, &fields[i], &lens[i]);
    }
  }
  rec->nfields = nf;
  rec->fields = (const char *const *)s->fields;
  rec->lens = s->lens;
  rec->line = line;
  return 1;
}

void ps_scan_set_chunk(ps_scan *s, size_t bytes) { s->chunk = bytes; }

int ps_scan_select(ps_scan *s, const unsigned char *want, size_t n) {
  size_t *sel = NULL, k = 0, np = 0;
  if (want != NULL && (sel = malloc((n ? n : 1) * sizeof *sel)) == NULL) return -1;
  for (size_t i = 0; sel && i < n; i++)
    if (want[i] && want[i] != PS_SCAN_PLAIN) sel[k++] = i;
  for (size_t i = 0; sel && i < n; i++)
    if (want[i] == PS_SCAN_PLAIN) sel[k + np++] = i;
  free(s->sel);
  s->sel = sel;
  s->nsel = k;
  s->nplain = np;
  s->plain_run = np;
  while (s->plain_run > 0 && sel[k + s->plain_run - 1] + (np - s->plain_run + 1) == sel[k + np - 1] + 1)
    s->plain_run--;
  for (size_t i = 0; i < s->capfields; i++) s->fields[i] = s->none, s->lens[i] = 0;
  size_t top = 0;
  for (size_t j = 0; j < k + np; j++) top = sel[j] + 1 > top ? sel[j] + 1 : top;
  if (top > s->capfields && grow_fields(s) != 0) return -1;
  return 0;
}

/* The span the exact walk would give field i of a record the fast scan read (field i is
 * b(ends[i], ends[i + 1])): an unquoted field as it is; "text" between its quotes; a quoted
 * field with doubled quotes or text after its closing quote up to that quote, or to the
 * field's end when text follows, to be unescaped. */
ps_scan_field ps_scan_span_of_ends(const char *b, const size_t *ends, size_t i) {
  size_t fs = ends[i] + 1, k = ends[i + 1];
  if (b[fs] != '"') return (span){fs, k, 0};
  size_t q = fs + 1;                  /* the closing quote: the first one not doubled */
  for (;;) {
    const char *z = memchr(b + q, '"', k - q);
    if (z == NULL) {                  /* cannot be: the fast scan saw it closed */
      q = k;
      break;
    }
    q = (size_t)(z - b);
    if (q + 1 < k && b[q + 1] == '"') {
      q += 2;
      continue;
    }
    break;
  }
  int plain = q + 1 >= k && memchr(b + fs + 1, '"', q - fs - 1) == NULL;
  return (span){fs + 1, q + 1 >= k ? q : k, !plain};
}

int ps_scan_next_raw(ps_scan *s, ps_scan_raw *rec) {
  size_t nf = 0, start = 0;   /* set by next_record when it returns 1 (initialised for the compiler) */
  long line = 0;
  int fast = 0;
  int got = next_record(s, &nf, &start, &line, &fast);
  if (got <= 0) return got;
  rec->bytes = s->buf + start;
  rec->len = s->pos - start;
  rec->nfields = nf;
  rec->base = s->buf;
  rec->spans = fast ? NULL : s->spans;
  rec->ends = s->ends;
  rec->line = line;
  return 1;
}

size_t ps_scan_unquote(const ps_scan_raw *rec, size_t i, char *out) {
  ps_scan_field f;
  if (rec->spans) {
    f = rec->spans[i];
  } else { /* read by the fast scan: a quoted field unescaped to its end, as cut_fast does */
    size_t fs = rec->ends[i] + 1, k = rec->ends[i + 1];
    f = rec->base[fs] == '"' ? (span){fs + 1, k, 1} : (span){fs, k, 0};
  }
  size_t n = f.end - f.start;
  if (f.unescape) n = unescape_to(out, rec->base, &f);
  else memcpy(out, rec->base + f.start, n);
  out[n] = '\0';
  return n;
}

int ps_scan_peek(ps_scan *s, const char **p, size_t *n) {
  if (s->failed) return -1;
  if (s->pos >= s->end && !s->eof && refill(s) != 0) return -1;
  *p = s->buf + s->pos;
  *n = s->end - s->pos;
  return 0;
}

const char *ps_scan_error(const ps_scan *s) { return s->error; }
const char *ps_scan_path(const ps_scan *s) { return s->path; }
int ps_scan_has_bom(const ps_scan *s) { return s->bom; }
const char *ps_scan_eol(const ps_scan *s) { return s->eol; }
uint64_t ps_scan_bytes_read(const ps_scan *s) { return s->bytes_read; }
uint64_t ps_scan_file_size(const ps_scan *s) { return s->file_size; }

void ps_scan_close(ps_scan *s) {
  if (s == NULL) return;
  if (s->fd >= 0) close(s->fd);
  free(s->path);
  free(s->buf);
  free(s->spans);
  free(s->ends);
  free(s->sel);
  free(s->fields);
  free(s->lens);
  free(s);
}
