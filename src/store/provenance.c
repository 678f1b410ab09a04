/* Provenance log lines (provenance.h). */
#include "provenance.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "grow.h"
#include "num.h"

/* Nonzero when one of the 8 bytes of v is below 0x20 or is '"', '\\', '/' or DEL (never a
 * false no; a false yes for bytes 0x80-0x9f, which then take the byte loop). */
static inline uint64_t needs_escape8(uint64_t v) {
  const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
#define ZERO(x) (((x) - ones) & ~(x) & high)
  return ZERO(v & ~high & (0x60 * ones)) | ZERO(v ^ ('"' * ones)) | ZERO(v ^ ('\\' * ones)) |
         ZERO(v ^ ('/' * ones)) | ZERO(v ^ (0x7f * ones));
#undef ZERO
}

/* s escaped as in a JSON string, without the quotes; 8 bytes at a time up to the next byte
 * that may need an escape (the lowest flagged byte of a word is a true one: out has room for
 * 6 bytes a byte, so a whole 8-byte store fits) */
static size_t json_escape(char *out, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  char *o = out;
  for (size_t i = 0; i < n; i++) {
    uint64_t v, m;
    while (i + 8 <= n) {
      memcpy(&v, s + i, 8);
      memcpy(o, &v, 8);
      if ((m = needs_escape8(v)) != 0) {
        size_t k = (size_t)__builtin_ctzll(m) / 8;
        o += k, i += k;
        break;
      }
      o += 8, i += 8;
    }
    if (i == n) break;
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c != '/' && c != 0x7f) {
      *o++ = (char)c;
      continue;
    }
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
