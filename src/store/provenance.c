/* Provenance log lines (provenance.h). */
#include "provenance.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "grow.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "num.h"

/* One byte's escape at o (c needs one: below 0x20, '"', '\\', '/' or DEL); returns the end. */
static char *escape_byte(char *o, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  *o++ = '\\';
  switch (c) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '/': *o++ = '/'; break;
    case '\b': *o++ = 'b'; break;
    case '\t': *o++ = 't'; break;
    case '\n': *o++ = 'n'; break;
    case '\f': *o++ = 'f'; break;
    case '\r': *o++ = 'r'; break;
    default:
      *o++ = 'u', *o++ = '0', *o++ = '0';
      *o++ = hex[c >> 4], *o++ = hex[c & 15];
  }
  return o;
}

/* 1 for the bytes that need an escape: below 0x20, '"', '\\', '/' and DEL */
#define E4 1, 1, 1, 1
#define E16 E4, E4, E4, E4
static const unsigned char needs_escape[256] = {E16, E16, ['"'] = 1, ['\\'] = 1, ['/'] = 1, [0x7f] = 1};
#undef E4
#undef E16

static inline int plain_byte(unsigned char c) { return !needs_escape[c]; }

#ifdef __SSE2__
/* The bytes of the 16 at s that may need an escape, as a bit mask: below 0x20 (a signed
 * compare: bytes >= 0x80 too, a false yes that the caller copies as they are), '"', '\\', '/'
 * or DEL. */
static inline unsigned escape_mask16(const char *s) {
  __m128i x = _mm_loadu_si128((const __m128i *)s);
  __m128i m = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
  m = _mm_or_si128(m, _mm_cmpeq_epi8(x, _mm_set1_epi8('"')));
  m = _mm_or_si128(m, _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
  m = _mm_or_si128(m, _mm_cmpeq_epi8(x, _mm_set1_epi8('/')));
  m = _mm_or_si128(m, _mm_cmpeq_epi8(x, _mm_set1_epi8(0x7f)));
  return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* s escaped as in a JSON string, without the quotes. Most cells need no escape but a shape's
 * quotes at its ends: 16 bytes at a time (copied whole, the output has room for 6 bytes a
 * byte) up to the next byte that may need one; the last bytes (fewer than 16) one by one. */
static size_t json_escape(char *out, const char *s, size_t n) {
  char *o = out;
  size_t i = 0;
#ifdef __SSE2__
  while (i + 16 <= n) {
    memcpy(o, s + i, 16);
    unsigned m = escape_mask16(s + i);
    if (m == 0) {
      o += 16, i += 16;
      continue;
    }
    size_t k = (size_t)__builtin_ctz(m);
    o += k, i += k;
    unsigned char c = (unsigned char)s[i++];
    if (plain_byte(c)) *o++ = (char)c;
    else o = escape_byte(o, c);
  }
#endif
  for (; i < n; i++) {   /* each byte stored, then kept or escaped (one table look-up) */
    unsigned char c = (unsigned char)s[i];
    *o = (char)c;
    if (needs_escape[c]) o = escape_byte(o, c);
    else o++;
  }
  return (size_t)(o - out);
}

size_t ps_json_quote(char *out, const char *s, size_t n) {
  out[0] = '"';
  size_t len = 1 + json_escape(out + 1, s, n);
  out[len] = '"';
  return len + 1;
}

static int reserve(ps_prov_buf *b, size_t more) {
  return ps_grow((void **)&b->text, &b->cap, b->len + more, 1);
}

static void put(ps_prov_buf *b, const char *s, size_t n) {
  memcpy(b->text + b->len, s, n);
  b->len += n;
}

#define PUT_LIT(b, lit) put(b, lit, sizeof lit - 1)

/* ,"name":"value" (value escaped); room was reserved by the caller */
static void put_string_member(ps_prov_buf *b, const char *name, size_t nlen, const char *v, size_t vlen) {
  put(b, name, nlen);
  b->len += ps_json_quote(b->text + b->len, v, vlen);
}

/* v as snprintf("%.14g") writes it (out: 32 bytes). A v of 1e-4 <= |v| < 1e8 that its %.6f
 * with the trailing zeros cut reads back as exactly (a duration, a count) is that text: at
 * most 14 significant digits, within half an ulp of v, so the 14-digit rounding %g makes is
 * it too. Others (and a text that does not read back) by snprintf, ten times slower. */
static size_t fmt_g14(char *out, double v) {
  double a = fabs(v);
  if (a >= 1e-4 && a < 1e8) {
    size_t n = (size_t)ps_num_fmt6(out, 32, v);
    while (out[n - 1] == '0') n--;
    if (out[n - 1] == '.') n--;
    double back;
    if (ps_num_finite(out, n, &back) == 0 && back == v) return out[n] = '\0', n;
  }
  return (size_t)snprintf(out, 32, "%.14g", v);
}

/* ,"name":number as cjson writes it (%.14g) */
static void put_number_member(ps_prov_buf *b, const char *name, size_t nlen, double v) {
  put(b, name, nlen);
  b->len += fmt_g14(b->text + b->len, v);
}

static size_t slen(const char *s) { return s ? strlen(s) : 0; }

int ps_prov_line(ps_prov_buf *b, const char *common, size_t clen, const char *kernel, size_t klen,
                 const ps_prov_row *r) {
  const char *in = r->in_shapes, *out = r->out_shapes;
  size_t inl = in ? r->in_len : 0, outl = out ? r->out_len : 0;
  if (inl == 0) in = "N/A", inl = 3;
  if (outl == 0) out = "N/A", outl = 3;
  size_t il = slen(r->input), xl = slen(r->input_xxh3), sl = slen(r->samples_text);
  size_t need = clen + PS_JSON_QUOTED_MAX(klen) + PS_JSON_QUOTED_MAX(inl + 4 + outl) +
                PS_JSON_QUOTED_MAX(il) + PS_JSON_QUOTED_MAX(xl) + PS_JSON_QUOTED_MAX(sl) + 160;
  if (reserve(b, need) != 0) return -1;
  PUT_LIT(b, "{");
  put(b, common, clen);
  put_string_member(b, ",\"kernel\":", 10, kernel, klen);
  PUT_LIT(b, ",\"key\":\""); /* %016llx */
  for (int i = 15; i >= 0; i--) b->text[b->len++] = "0123456789abcdef"[(r->key >> (4 * i)) & 15];
  PUT_LIT(b, "\"");
  /* "sig": "<in> -> <out>" (perf.sig.display), one string */
  PUT_LIT(b, ",\"sig\":\"");
  b->len += json_escape(b->text + b->len, in, inl);
  PUT_LIT(b, " -> ");
  b->len += json_escape(b->text + b->len, out, outl);
  PUT_LIT(b, "\"");
  if (r->input) put_string_member(b, ",\"input\":", 9, r->input, il);
  if (r->input_xxh3) put_string_member(b, ",\"input_xxh3\":", 14, r->input_xxh3, xl);
  if (r->samples_text) put_string_member(b, ",\"samples\":", 11, r->samples_text, sl);
  else if (r->has_samples && isfinite(r->samples)) put_number_member(b, ",\"samples\":", 11, r->samples);
  if (r->has_duration && isfinite(r->duration_us))
    put_number_member(b, ",\"duration_us\":", 15, r->duration_us);
  PUT_LIT(b, "}\n");
  return 0;
}

size_t ps_prov_head(char *out, const char *common, size_t clen, const char *kernel, size_t klen) {
  char *o = out;
  *o++ = '{';
  memcpy(o, common, clen), o += clen;
  memcpy(o, ",\"kernel\":", 10), o += 10;
  o += ps_json_quote(o, kernel, klen);
  memcpy(o, ",\"key\":\"", 8), o += 8;
  return (size_t)(o - out);
}

size_t ps_prov_tail(char *out, const char *input, size_t il, const char *xxh3, size_t xl) {
  char *o = out;
  if (input) memcpy(o, ",\"input\":", 9), o += 9, o += ps_json_quote(o, input, il);
  if (xxh3) memcpy(o, ",\"input_xxh3\":", 14), o += 14, o += ps_json_quote(o, xxh3, xl);
  memcpy(o, "}\n", 2), o += 2;
  return (size_t)(o - out);
}

int ps_prov_group_line(ps_prov_buf *b, const char *head, size_t hlen, uint64_t key, const char *in,
                       size_t inl, const char *out, size_t outl, const char *tail, size_t tlen) {
  /* "00".."ff": the key's 16 digits two at a time */
  static const char hex2[513] =
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
      "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
      "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
      "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
      "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
      "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
      "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
      "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
  if (inl == 0) in = "N/A", inl = 3;
  if (outl == 0) out = "N/A", outl = 3;
  if (reserve(b, hlen + 16 + 9 + 6 * (inl + outl) + 4 + 1 + tlen + 16) != 0) return -1;
  char *o = b->text + b->len;
  memcpy(o, head, hlen), o += hlen;
  for (int i = 7; i >= 0; i--, o += 2) memcpy(o, hex2 + 2 * ((key >> (8 * i)) & 0xff), 2);
  memcpy(o, "\",\"sig\":\"", 9), o += 9;
  o += json_escape(o, in, inl);
  memcpy(o, " -> ", 4), o += 4;
  o += json_escape(o, out, outl);
  *o++ = '"';
  memcpy(o, tail, tlen), o += tlen;
  b->len = (size_t)(o - b->text);
  return 0;
}
