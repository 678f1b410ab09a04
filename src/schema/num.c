/* The number parser behind every cell the project reads (import, write-back, database). */
#include "num.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"


static int word(const unsigned char *c, size_t n, const char *w) {
  if (n != strlen(w)) return 0;
  for (size_t i = 0; i < n; i++)
    if ((c[i] | 0x20) != (unsigned char)w[i]) return 0;
  return 1;
}

/* Digits with single underscores between them, copied without the underscores to *o.
 * Returns the count of digits, or -1 on a misplaced underscore. */
static long digits(const unsigned char **c, const unsigned char *e, char **o) {
  long n = 0;
  while (*c < e) {
    if ((unsigned)(**c - '0') < 10) {
      *(*o)++ = (char)*(*c)++;
      n++;
    } else if (**c == '_' && n > 0 && *c + 1 < e && (unsigned)((*c)[1] - '0') < 10) {
      (*c)++;
    } else {
      break;
    }
  }
  return n;
}

/* The general grammar: validated, then handed to strtod without underscores. */
static int parse_slow(const unsigned char *c, const unsigned char *e, double *out) {
  int neg = c < e && *c == '-';
  if (c < e && (*c == '-' || *c == '+')) c++;
  size_t n = (size_t)(e - c);
  if (word(c, n, "inf") || word(c, n, "infinity")) return *out = neg ? -INFINITY : INFINITY, 0;
  if (word(c, n, "nan")) return *out = NAN, 0;
  /* Python reads numbers of any length (a fuzzer found 130 digits refused): a long one is
   * copied to the heap */
  char small[128], *buf = n + 2 < sizeof small ? small : malloc(n + 2), *o = buf;
  if (buf == NULL) return -1;
  int rc = -1;
  if (neg) *o++ = '-';
  long nd = digits(&c, e, &o);
  if (c < e && *c == '.') {
    *o++ = *c++;
    if (c < e && *c == '_') goto done;
    nd += digits(&c, e, &o);
  }
  if (nd <= 0) goto done;
  if (c < e && (*c == 'e' || *c == 'E')) {
    *o++ = *c++;
    if (c < e && (*c == '-' || *c == '+')) *o++ = (char)*c++;
    if (digits(&c, e, &o) <= 0) goto done;
  }
  if (c != e) goto done;
  *o = 0;
  char *end;
  double d = strtod(buf, &end);
  if (*end) goto done;
  *out = d;
  rc = 0;
done:
  if (buf != small) free(buf);
  return rc;
}

static int num_portable;   /* ps_num_set_portable: the tests' switch */
static _Atomic int fmt6_pick;   /* fmt6_build's pick; 0: not yet */

static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                             1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR 1
/* c[0..n), 1 <= n <= 8, as a little-endian word with zeros above: loads that may overlap,
 * none outside the text. */
static inline uint64_t load_upto8(const unsigned char *c, size_t n) {
  if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, c, 4);
    memcpy(&b, c + n - 4, 4);
    return (uint64_t)a | (uint64_t)b << (8 * (n - 4));
  }
  return (uint64_t)c[0] | (uint64_t)c[n / 2] << (8 * (n / 2)) | (uint64_t)c[n - 1] << (8 * (n - 1));
}

/* The commonest cell, at most 8 bytes of digits with at most one '.', (and an optional sign
 * before), without a branch per byte: the bytes are classified and the digits combined a
 * word at a time. Returns 0 with the value as -1^neg * m / 10^nfrac (m < 10^8, exact), or
 * -1 when the text is not of that form (the general path decides then). */
static inline int short_decimal(const unsigned char *c, size_t n, uint32_t *mant, unsigned *frac,
                                int *negative) {
  int neg = 0;
  if (n > 1 && (c[0] == '-' || c[0] == '+')) neg = c[0] == '-', c++, n--;
  if (n == 0 || n > 8) return -1;
  const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
  uint64_t live = n == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * n)) - 1;
  uint64_t x = load_upto8(c, n) ^ (0x30 * ones);        /* a digit byte is now 0..9 */
  uint64_t other = (((x & (0x7f * ones)) + (0x76 * ones)) | x) & high & live;
  size_t nd = n, nfrac = 0;
  uint64_t d = x & live;
  if (other) {                                            /* one '.', digits besides */
    unsigned k = (unsigned)__builtin_ctzll(other) / 8;
    if ((other & (other - 1)) || c[k] != '.' || n == 1) return -1;
    uint64_t below = ((uint64_t)1 << (8 * k)) - 1;
    d = (d & below) | ((d >> 8) & ~below & (live >> 8));
    nd = n - 1;
    nfrac = n - 1 - k;
  }
  d <<= 8 * (8 - nd);                                     /* leading zeros below */
  d = (d * 10 + (d >> 8)) & 0x00ff00ff00ff00ffu;
  d = (d * (1 + ((uint64_t)100 << 16)) >> 16) & 0x0000ffff0000ffffu;
  *mant = (uint32_t)((d * (1 + ((uint64_t)10000 << 32))) >> 32);
  *frac = (unsigned)nfrac;
  *negative = neg;
  return 0;
}

/* A plain decimal of 1 <= L <= 8 bytes (digits, at most one '.', a digit) in the low L bytes of
 * v (the bytes above are anything): 1 with its value in *out, else 0. The text is shifted to
 * the word's top, so the bytes after it fall out and the digits are already where the
 * combining wants them (short_decimal's steps). */
static inline int short_top(uint64_t v, size_t L, double *out) {
  const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
  unsigned sh = 8 * (unsigned)(8 - L);
  uint64_t x = (v << sh) ^ (0x30 * ones), live = ~(uint64_t)0 << sh;
  uint64_t other = (((x & (0x7f * ones)) + (0x76 * ones)) | x) & high & live;
  uint64_t d = x & live;
  unsigned nfrac = 0, pos = 0;
  if (other) pos = (unsigned)__builtin_ctzll(other) - 7;   /* its byte's lowest bit */
  if (other && ((other & (other - 1)) || ((x >> pos) & 0xff) != ('.' ^ 0x30) || L == 1)) return 0;
  if (other) {
    uint64_t below = ((uint64_t)1 << pos) - 1;           /* the digits before the '.' */
    d = (d & ~below & ~((uint64_t)0xff << pos)) | (d & below) << 8;
    nfrac = (64 - pos) / 8 - 1;
  }
  d = (d * 10 + (d >> 8)) & 0x00ff00ff00ff00ffu;
  d = (d * (1 + ((uint64_t)100 << 16)) >> 16) & 0x0000ffff0000ffffu;
  uint32_t m = (uint32_t)((d * (1 + ((uint64_t)10000 << 32))) >> 32);
  *out = (double)m / p10[nfrac];   /* independent: the divisions of a row overlap */
  return 1;
}

static inline int parse_short(const unsigned char *c, size_t n, double *out) {
  uint32_t m;
  unsigned nfrac;
  int neg;
  if (short_decimal(c, n, &m, &nfrac, &neg) != 0) return -1;
  double v = (double)m / p10[nfrac];
  *out = neg ? -v : v;
  return 0;
}
#endif

/* Exact fast paths for plain decimals (Clinger: an integer mantissa below 2^53 scaled by an
 * exact power of ten is correctly rounded); anything else takes the general grammar. */
static inline int parse(const char *s, size_t len, double *out) {
  const unsigned char *c = (const unsigned char *)s, *e = c + len;
#ifdef SWAR
  if (len - 1 < 9 && parse_short(c, len, out) == 0) return 0;
#endif
  while (c < e && ps_is_space((char)*c)) c++;
  while (e > c && ps_is_space((char)e[-1])) e--;
  if (c == e) return -1;
  const unsigned char *start = c;
  int neg = *c == '-';
  if (*c == '-' || *c == '+') c++;
  const unsigned char *d0 = c;
  uint64_t m = 0;
  while (c < e && (unsigned)(*c - '0') < 10) m = m * 10 + (unsigned)(*c++ - '0');
  size_t nint = (size_t)(c - d0), nfrac = 0;
  if (c < e && *c == '.') {
    const unsigned char *f0 = ++c;
    while (c < e && (unsigned)(*c - '0') < 10) m = m * 10 + (unsigned)(*c++ - '0');
    nfrac = (size_t)(c - f0);
  }
  if (c == e && nint + nfrac > 0 && nint + nfrac <= 18 && m < (UINT64_C(1) << 53)) {
    double d = (double)m / p10[nfrac];
    *out = neg ? -d : d;
    return 0;
  }
  return parse_slow(start, e, out);
}

int ps_num_parse(const char *s, size_t len, double *out) { return parse(s, len, out); }

/* ps_num_finite past its short decimals: a call, so theirs saves no registers */
static __attribute__((noinline)) int finite_general(const char *s, size_t len, double *out) {
  double d;
  if (parse(s, len, &d) != 0 || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

/* The import's hot path (26 cells a row): a short decimal (always finite) inlined here. */
int ps_num_finite(const char *s, size_t len, double *out) {
#ifdef SWAR
  /* a plain decimal of up to 8 bytes (a duration) as finite_padded reads one, from loads
   * inside the text; then one with a sign */
  if (len - 1 < 8 && short_top(load_upto8((const unsigned char *)s, len), len, out)) return 0;
  if (len - 1 < 9 && parse_short((const unsigned char *)s, len, out) == 0) return 0;
#endif
  return finite_general(s, len, out);
}

#ifdef SWAR
/* ps_num_finite for the cells the loop below leaves: a call, so the loop keeps its registers */
static __attribute__((noinline)) int finite_call(const char *s, size_t len, double *out) {
  return ps_num_finite(s, len, out);
}

/* ps_num_finite of one padded cell (8 bytes readable at s): a plain decimal of 1 to 8 bytes
 * (a counter cell) in one load; anything else (a sign, an exponent, spaces, longer text) by
 * the general parser. */
static inline int finite_padded(const char *s, size_t L, double *out) {
  if (L - 1 < 8) {
    uint64_t v;
    memcpy(&v, s, 8);
    if (short_top(v, L, out)) return 1;
  }
  return L && finite_call(s, L, out) == 0;
}

/* ps_num_finite_n of padded cells, one at a time, in one tight loop. */
static uint32_t finite_n_padded(const char *const *s, const size_t *len, int n, double *out) {
  uint32_t ok = 0;
  for (int i = 0; i < n; i++) ok |= (uint32_t)finite_padded(s[i], len[i], &out[i]) << i;
  return ok;
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define NUM_SSSE3 1
#include <tmmintrin.h>

/* PSHUFB patterns that put the digits of a cell of L bytes (1..8) with its '.' at byte dot
 * (0..7; 8: none) in the 8 bytes of a lane, the '.' dropped, the last digit in the lane's top
 * byte and zeros (0x80 bytes) above the first: byte j for lane byte j,
 * at [(L - 1) * 9 + dot]. */
static const uint64_t shuf[8 * 9] = {
  0x8080808080808080u, 0x0080808080808080u, 0x0080808080808080u, 0x0080808080808080u, 0x0080808080808080u, 0x0080808080808080u, 0x0080808080808080u, 0x0080808080808080u, 0x0080808080808080u,
  0x0180808080808080u, 0x0080808080808080u, 0x0100808080808080u, 0x0100808080808080u, 0x0100808080808080u, 0x0100808080808080u, 0x0100808080808080u, 0x0100808080808080u, 0x0100808080808080u,
  0x0201808080808080u, 0x0200808080808080u, 0x0100808080808080u, 0x0201008080808080u, 0x0201008080808080u, 0x0201008080808080u, 0x0201008080808080u, 0x0201008080808080u, 0x0201008080808080u,
  0x0302018080808080u, 0x0302008080808080u, 0x0301008080808080u, 0x0201008080808080u, 0x0302010080808080u, 0x0302010080808080u, 0x0302010080808080u, 0x0302010080808080u, 0x0302010080808080u,
  0x0403020180808080u, 0x0403020080808080u, 0x0403010080808080u, 0x0402010080808080u, 0x0302010080808080u, 0x0403020100808080u, 0x0403020100808080u, 0x0403020100808080u, 0x0403020100808080u,
  0x0504030201808080u, 0x0504030200808080u, 0x0504030100808080u, 0x0504020100808080u, 0x0503020100808080u, 0x0403020100808080u, 0x0504030201008080u, 0x0504030201008080u, 0x0504030201008080u,
  0x0605040302018080u, 0x0605040302008080u, 0x0605040301008080u, 0x0605040201008080u, 0x0605030201008080u, 0x0604030201008080u, 0x0504030201008080u, 0x0605040302010080u, 0x0605040302010080u,
  0x0706050403020180u, 0x0706050403020080u, 0x0706050403010080u, 0x0706050402010080u, 0x0706050302010080u, 0x0706040302010080u, 0x0705040302010080u, 0x0605040302010080u, 0x0706050403020100u,
};

/* The divisor of the digits shuf gathers: 10^(digits after the '.'), at shuf's index. */
static const double scale[8 * 9] = {
  1, 1, 1, 1, 1, 1, 1, 1, 1,
  1e1, 1, 1, 1, 1, 1, 1, 1, 1,
  1e2, 1e1, 1, 1, 1, 1, 1, 1, 1,
  1e3, 1e2, 1e1, 1, 1, 1, 1, 1, 1,
  1e4, 1e3, 1e2, 1e1, 1, 1, 1, 1, 1,
  1e5, 1e4, 1e3, 1e2, 1e1, 1, 1, 1, 1,
  1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1, 1, 1,
  1e7, 1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1, 1,
};

/* finite_n_padded two cells at a time, one in each 8-byte lane of an SSE register: both are
 * classified by compares, their digits gathered by one PSHUFB (shuf) and combined by
 * multiply-adds to two int32 mantissas, and the two divisions by the power of ten are one
 * DIVPD: the same exact integer and the same correctly rounded quotient as the scalar path,
 * so the same doubles. A pair where a cell is not a plain decimal of 1 to 8 bytes with at
 * most one '.' and a digit goes the scalar way (test_num compares the two). */
__attribute__((target("ssse3"))) static uint32_t finite_n_ssse3(const char *const *s, const size_t *len,
                                                                int n, double *out) {
  const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9), dot = _mm_set1_epi8('.' - '0');
  const __m128i w1 = _mm_set1_epi16(0x010a);                   /* bytes 10, 1 */
  const __m128i w2 = _mm_set1_epi32(0x00010064);               /* words 100, 1 */
  const __m128i w3 = _mm_set1_epi32(0x00012710);               /* words 10000, 1 */
  uint32_t ok = 0;
  int i = 0;
  for (; i + 1 < n; i += 2) {
    size_t la = len[i], lb = len[i + 1];
    if (la - 1 < 8 && lb - 1 < 8) {
      __m128i x = _mm_sub_epi8(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)s[i]),
                                                  _mm_loadl_epi64((const __m128i *)(const void *)s[i + 1])),
                               zero);
      unsigned live = ((1u << la) - 1) | ((1u << lb) - 1) << 8;
      unsigned dig = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_subs_epu8(x, nine), _mm_setzero_si128())) & live;
      unsigned dots = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, dot)) & live;
      unsigned da = dots & 0xff, db = dots >> 8;
      /* every byte a digit or a '.', one '.' at most, a digit in each: one test */
      unsigned bad = ((dig | dots) ^ live) | (da & (da - 1)) | (db & (db - 1)) | ((dig & 0xff) == 0) | (dig < 0x100);
      if (!bad) {
        unsigned ka = (la - 1) * 9 + (unsigned)__builtin_ctz(da | 0x100);   /* dot 8: none */
        unsigned kb = (lb - 1) * 9 + (unsigned)__builtin_ctz(db | 0x100);
        __m128i sh = _mm_set_epi64x((long long)(shuf[kb] + 0x0808080808080808u), (long long)shuf[ka]);
        __m128i v = _mm_maddubs_epi16(_mm_shuffle_epi8(x, sh), w1);   /* pairs of digits */
        v = _mm_madd_epi16(v, w2);                                      /* fours */
        v = _mm_madd_epi16(_mm_packs_epi32(v, v), w3);                  /* the two mantissas */
        __m128d q = _mm_div_pd(_mm_cvtepi32_pd(v), _mm_set_pd(scale[kb], scale[ka]));
        _mm_storeu_pd(out + i, q);
        ok |= 3u << i;
        continue;
      }
    }
    ok |= (uint32_t)finite_padded(s[i], la, &out[i]) << i;
    ok |= (uint32_t)finite_padded(s[i + 1], lb, &out[i + 1]) << (i + 1);
  }
  if (i < n) ok |= (uint32_t)finite_padded(s[i], len[i], &out[i]) << i;
  return ok;
}


#include <immintrin.h>

/* finite_n_padded four cells at a time, one in each 64-bit lane of an AVX2 register. Each
 * cell is shifted to its lane's top (VPSLLVQ by 64 - 8 * its length) after the ASCII '0' is
 * taken off, so the bytes after it fall out and zeros (leading zero digits) come in below:
 * no table of patterns. The '.' is dropped by moving the digits below it up one byte, the
 * digits are combined by multiply-adds as finite_n_ssse3 does, and the four divisions by
 * 10^(digits after the '.') (exact floats, picked by VPERMPS) are one VDIVPD: the same exact
 * integers and correctly rounded quotients as the scalar path. Four cells where one is not a
 * plain decimal of 1 to 8 bytes with at most one '.' and a digit go the scalar way (test_num
 * compares every path). */
/* quad_avx2's constants, made once a call of finite_n_avx2 and opaque to the compiler (an
 * empty asm), which otherwise built five of them again in each pass of the loop */
typedef struct quadk { __m256i nine, dot, lone, b64, one64, z30; } quadk;

__attribute__((always_inline, target("avx2"))) static inline void quadk_init(quadk *k) {
  k->nine = _mm256_set1_epi8(9);
  k->dot = _mm256_set1_epi8('.' ^ 0x30);
  k->lone = _mm256_set1_epi64x((long long)((uint64_t)('.' ^ 0x30) << 56));   /* "." (or "0.") */
  k->b64 = _mm256_set1_epi64x(64);
  k->one64 = _mm256_set1_epi64x(1);
  k->z30 = _mm256_set1_epi8(0x30);
  __asm__("" : "+x"(k->nine), "+x"(k->dot), "+x"(k->lone), "+x"(k->b64), "+x"(k->one64), "+x"(k->z30));
}

__attribute__((always_inline, target("avx2"))) static inline int quad_avx2(const char *const *s, const size_t *len,
                                                                            double *out, const quadk *k) {
  const __m256i ones64 = k->one64, zero = _mm256_setzero_si256(), b1 = _mm256_set1_epi8(1);
  __m256i L = _mm256_loadu_si256((const __m256i *)(const void *)len);
  if (!_mm256_testz_si256(_mm256_sub_epi64(L, ones64), _mm256_set1_epi64x(~(long long)7)))
    return 0;   /* a length outside 1..8 */
  uint64_t a, b, c, d;
  memcpy(&a, s[0], 8), memcpy(&b, s[1], 8), memcpy(&c, s[2], 8), memcpy(&d, s[3], 8);
  __m256i v = _mm256_xor_si256(_mm256_setr_epi64x((long long)a, (long long)b, (long long)c, (long long)d), k->z30);
  __m256i x = _mm256_sllv_epi64(v, _mm256_sub_epi64(k->b64, _mm256_slli_epi64(L, 3)));
  __m256i dig = _mm256_cmpeq_epi8(_mm256_subs_epu8(x, k->nine), zero);   /* the zeros shifted in too */
  __m256i D = _mm256_cmpeq_epi8(x, k->dot);
  if (_mm256_movemask_epi8(_mm256_or_si256(dig, D)) != -1) return 0;
  __m256i bit = _mm256_and_si256(D, b1);                                  /* 1 << the '.''s bit */
  __m256i lone = k->lone;
  __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_sad_epu8(bit, zero), ones64), _mm256_cmpeq_epi64(x, lone));
  if (!_mm256_testz_si256(bad, bad)) return 0;
  __m256i nodot = _mm256_cmpeq_epi64(bit, zero);
  __m256i below = _mm256_andnot_si256(nodot, _mm256_sub_epi64(bit, ones64));   /* digits before the '.' */
  __m256i gone = _mm256_or_si256(below, D);
  __m256i nfrac = _mm256_sad_epu8(_mm256_andnot_si256(gone, _mm256_andnot_si256(nodot, b1)), zero);
  x = _mm256_or_si256(_mm256_andnot_si256(gone, x), _mm256_slli_epi64(_mm256_and_si256(x, below), 8));
  __m256i m = _mm256_madd_epi16(_mm256_maddubs_epi16(x, _mm256_set1_epi16(0x010a)), _mm256_set1_epi32(0x00010064));
  m = _mm256_madd_epi16(_mm256_packs_epi32(m, m), _mm256_set1_epi32(0x00012710));   /* per 128: a b a b */
  __m128i m4 = _mm256_castsi256_si128(_mm256_permute4x64_epi64(m, 0x08));
  const __m256 pow10f = _mm256_setr_ps(1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f);   /* exact */
  __m256 sc = _mm256_permutevar8x32_ps(pow10f, _mm256_permutevar8x32_epi32(nfrac, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
  _mm256_storeu_pd(out, _mm256_div_pd(_mm256_cvtepi32_pd(m4), _mm256_cvtps_pd(_mm256_castps256_ps128(sc))));
  return 1;
}

__attribute__((target("avx2"))) static uint32_t finite_n_avx2(const char *const *s, const size_t *len,
                                                              int n, double *out) {
  uint32_t ok = 0, redo = 0;   /* the vector loop first, without calls: its constants stay */
  int i = 0;
  quadk k;
  quadk_init(&k);
  for (; i + 3 < n; i += 4) {
    if (quad_avx2(s + i, len + i, out + i, &k)) ok |= 15u << i;
    else redo |= 15u << i;
  }
  if (i + 1 == n) {   /* the last cell alone (25 counters): one scalar parse, not a quad */
    ok |= (uint32_t)finite_padded(s[i], len[i], &out[i]) << i;
  } else if (i < n) {   /* the last 2 or 3 cells, with cells "1" after them */
    const char *ts[4] = {"11111111", "11111111", "11111111", "11111111"};
    size_t tl[4] = {1, 1, 1, 1};
    double to[4];
    int r = n - i;   /* unrolled: a loop here became calls of memcpy */
    ts[0] = s[i], tl[0] = len[i];
    if (r > 1) ts[1] = s[i + 1], tl[1] = len[i + 1];
    if (r > 2) ts[2] = s[i + 2], tl[2] = len[i + 2];
    uint32_t mine = ((1u << r) - 1) << i;
    if (quad_avx2(ts, tl, to, &k)) {
      out[i] = to[0];
      if (r > 1) out[i + 1] = to[1];
      if (r > 2) out[i + 2] = to[2];
      ok |= mine;
    } else {
      redo |= mine;
    }
  }
  for (; redo; redo &= redo - 1) {
    int k = __builtin_ctz(redo);
    ok |= (uint32_t)finite_padded(s[k], len[k], &out[k]) << k;
  }
  return ok;
}

#endif
#endif

void ps_num_set_portable(int on) {
  num_portable = on;
  atomic_store(&fmt6_pick, 0);
}

uint32_t ps_num_finite_n(const char *const *s, const size_t *len, int n, int padded, double *out) {
  uint32_t ok = 0;
#ifdef SWAR
#ifdef NUM_SSSE3
  if (padded && num_portable != 1 && __builtin_cpu_supports("avx2") && num_portable != 2)
    return finite_n_avx2(s, len, n, out);
  if (padded && num_portable != 1 && __builtin_cpu_supports("ssse3")) return finite_n_ssse3(s, len, n, out);
#endif
  if (padded) return finite_n_padded(s, len, n, out);
  uint32_t m[32], sign = 0, fast = 0;
  unsigned nfrac[32];
  for (int i = 0; i < n; i++) {
    int neg;
    const unsigned char *c = (const unsigned char *)s[i];
    if (len[i] - 1 < 9 && short_decimal(c, len[i], &m[i], &nfrac[i], &neg) == 0)
      fast |= 1u << i, sign |= (uint32_t)neg << i;
    else if (len[i] && ps_num_finite(s[i], len[i], &out[i]) == 0)
      ok |= 1u << i;
  }
  /* the divisions apart from the parsing: independent, they overlap */
  for (int i = 0; i < n; i++)
    if (fast & (1u << i)) {
      double v = (double)m[i] / p10[nfrac[i]];
      out[i] = sign & (1u << i) ? -v : v;
    }
  return ok | fast;
#else
  (void)padded;
  for (int i = 0; i < n; i++)
    if (len[i] && ps_num_finite(s[i], len[i], &out[i]) == 0) ok |= 1u << i;
  return ok;
#endif
}

double ps_num_or_zero(const char *s, size_t len) {
  double d;
  return ps_num_parse(s, len, &d) == 0 ? d : 0.0;
}

int ps_num_is_duration(double v) { return v > 0 && isfinite(v); }

int ps_num_duration_cell(const char *s, size_t len) {
  double d;
  return ps_num_parse(s, len, &d) == 0 && ps_num_is_duration(d);
}

/* printf("%.6f") for the statistics, without printf's multi-precision path: the exact
 * product v * 1e6 is p + e (fma), rounded to the nearest integer with ties to even, as glibc
 * rounds the exact binary value. Falls back to snprintf outside |v| < 9e9. One body, two
 * builds: with FMA and SSE4.1 (fma and floor one instruction each, not library calls: 172 ->
 * ~100 instructions a number; the decimals a multiplication a pair: ~86) where the processor
 * has them, and the portable one. */
/* v's text (|v| < 9e9: at most 18 bytes, no NUL) written at o, which has room for 24; its
 * length. */
static inline __attribute__((always_inline)) size_t fmt6_digits(char *o, double v) {
  double a = fabs(v);
  double p = a * 1e6, e = fma(a, 1e6, -p), n = floor(p);
  double s = (p - n) - 0.5;  /* both steps exact */
  int cmp;                   /* sign of the true excess over one half: s + e */
  if (s > 0) cmp = e >= 0 ? 1 : (s > -e ? 1 : s == -e ? 0 : -1);
  else if (s < 0) cmp = e <= 0 ? -1 : (-s > e ? -1 : -s == e ? 0 : 1);
  else cmp = e > 0 ? 1 : e < 0 ? -1 : 0;
  uint64_t k = (uint64_t)n;
  if (cmp > 0 || (cmp == 0 && (k & 1))) k++;
  /* the digits by hand, two at a time: snprintf cost the import a sixth of its instructions */
  static const char pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";
  /* built from the end in t (the text ends at t + 24), then one fixed-size copy of 24 bytes:
   * cheaper than counting the integer part's digits first */
  char t[48], *w = t + 17;
  uint64_t ip = k / 1000000;
  /* the 6 decimals left to right, a pair a multiplication (jeaiii): t32 / 2^32 is frac / 10^4
   * with a fraction exact enough to hold the next digits for every frac < 10^6 */
  uint64_t t32 = (k - ip * 1000000) * 429497;
  memcpy(w + 1, pairs + 2 * (t32 >> 32), 2), t32 = (uint32_t)t32 * (uint64_t)100;
  memcpy(w + 3, pairs + 2 * (t32 >> 32), 2), t32 = (uint32_t)t32 * (uint64_t)100;
  memcpy(w + 5, pairs + 2 * (t32 >> 32), 2);
  *w = '.';
  while (ip >= 100) w -= 2, memcpy(w, pairs + 2 * (ip % 100), 2), ip /= 100;
  if (ip >= 10) w -= 2, memcpy(w, pairs + 2 * ip, 2);
  else *--w = (char)('0' + ip);
  if (signbit(v)) *--w = '-';
  memcpy(o, w, 24);
  return (size_t)(t + 24 - w);
}

/* printf("%.6f") for the statistics, without printf's multi-precision path: the exact
 * product v * 1e6 is p + e (fma), rounded to the nearest integer with ties to even, as glibc
 * rounds the exact binary value. Falls back to snprintf outside |v| < 9e9. One body, two
 * builds: with FMA and SSE4.1 (fma and floor one instruction each, not library calls: 172 ->
 * ~100 instructions a number; the decimals a multiplication a pair: ~86) where the processor
 * has them, and the portable one. */
static inline __attribute__((always_inline)) int fmt6_body(char *out, size_t cap, double v) {
  if (!(fabs(v) < 9e9)) return snprintf(out, cap, "%.6f", v);
  if (cap > 24) {
    size_t len = fmt6_digits(out, v);
    out[len] = 0;
    return (int)len;
  }
  char t[32];
  size_t len = fmt6_digits(t, v);
  if (cap > 0) {   /* snprintf's contract: truncated to cap - 1, the full length returned */
    size_t c = len < cap ? len : cap - 1;
    memcpy(out, t, c);
    out[c] = 0;
  }
  return (int)len;
}

static inline __attribute__((always_inline)) size_t fmt6_cells_body(char *out, const double *v, int n) {
  char *w = out;
  for (int i = 0; i < n; i++) {
    *w++ = ',';
    if (isnan(v[i])) continue;
    w += fabs(v[i]) < 9e9 ? fmt6_digits(w, v[i]) : (size_t)snprintf(w, PS_NUM_FMT6_MAX, "%.6f", v[i]);
  }
  return (size_t)(w - out);
}

__attribute__((target("fma,sse4.1"))) static int fmt6_fma(char *out, size_t cap, double v) {
  return fmt6_body(out, cap, v);
}

__attribute__((target("fma,sse4.1"))) static size_t fmt6_cells_fma(char *out, const double *v, int n) {
  return fmt6_cells_body(out, v, n);
}

static int fmt6_portable(char *out, size_t cap, double v) { return fmt6_body(out, cap, v); }

static size_t fmt6_cells_portable(char *out, const double *v, int n) {
  return fmt6_cells_body(out, v, n);
}

/* The build for this processor, picked once (1: FMA, 2: portable). */
static int fmt6_build(void) {
  int b = atomic_load_explicit(&fmt6_pick, memory_order_relaxed);
  if (b == 0) {
    b = !num_portable && __builtin_cpu_supports("fma") && __builtin_cpu_supports("sse4.1") ? 1 : 2;
    atomic_store_explicit(&fmt6_pick, b, memory_order_relaxed);
  }
  return b;
}

int ps_num_fmt6(char *out, size_t cap, double v) {
  return fmt6_build() == 1 ? fmt6_fma(out, cap, v) : fmt6_portable(out, cap, v);
}

size_t ps_num_fmt6_cells(char *out, const double *v, int n) {
  return fmt6_build() == 1 ? fmt6_cells_fma(out, v, n) : fmt6_cells_portable(out, v, n);
}

int ps_num_int(const char *s, size_t len, int64_t *out) {
  ps_trim(&s, &len);
  size_t i = 0;
  int neg = 0;
  if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  /* magnitudes up to 2^63: INT64_MIN's is one more than INT64_MAX's */
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  size_t nd = 0;
  for (; i < len; i++) {
    if (s[i] >= '0' && s[i] <= '9') {
      uint64_t d = (uint64_t)(s[i] - '0');
      if (v > (lim - d) / 10) return -1;
      v = v * 10 + d;
      nd++;
    } else if (!(s[i] == '_' && nd > 0 && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9')) {
      return -1;
    }
  }
  if (nd == 0) return -1;
  *out = !neg ? (int64_t)v : v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v;
  return 0;
}

static int us_to_ns_general(const char *s, size_t len, int64_t *ns);

/* Integers only: a double resolves just 0.25 us at today's timestamps. */
int ps_num_us_to_ns(const char *s, size_t len, int64_t *ns) {
#ifdef SWAR
  if (len == 20 && s[16] == '.') {
    /* the profilers' start times (sixteen digits, three decimals: "1736413971000024.661")
     * in three loads, as the general steps below read them: the same v and frac */
    const uint64_t ones = 0x0101010101010101u;
    uint64_t a, b;
    uint32_t f;
    memcpy(&a, s, 8);
    memcpy(&b, s + 8, 8);
    memcpy(&f, s + 16, 4);
    a ^= 0x30 * ones;
    b ^= 0x30 * ones;
    uint64_t c = (uint64_t)((f ^ 0x30303030u) & 0xffffff00u);   /* the '.' as a 0 digit */
    uint64_t bad = ((((a & (0x7f * ones)) + (0x76 * ones)) | a) | (((b & (0x7f * ones)) + (0x76 * ones)) | b) |
                    (((c & (0x7f * ones)) + (0x76 * ones)) | c)) & (0x80 * ones);
    if (!bad) {
      a = (a * 10 + (a >> 8)) & 0x00ff00ff00ff00ffu;
      b = (b * 10 + (b >> 8)) & 0x00ff00ff00ff00ffu;
      a = (a * (1 + ((uint64_t)100 << 16)) >> 16) & 0x0000ffff0000ffffu;
      b = (b * (1 + ((uint64_t)100 << 16)) >> 16) & 0x0000ffff0000ffffu;
      uint64_t v = ((a * (1 + ((uint64_t)10000 << 32))) >> 32) * 100000000 + ((b * (1 + ((uint64_t)10000 << 32))) >> 32);
      uint64_t frac = ((c >> 8) & 0xff) * 100 + ((c >> 16) & 0xff) * 10 + (c >> 24);
      if (v > (uint64_t)INT64_MAX / 1000 - 1) return -1;
      *ns = (int64_t)(v * 1000 + frac);
      return 0;
    }
  }
#endif
  return us_to_ns_general(s, len, ns);
}

/* ps_num_us_to_ns of any text: a call, so the start times' path saves no registers */
static __attribute__((noinline)) int us_to_ns_general(const char *s, size_t len, int64_t *ns) {
  ps_trim(&s, &len);
  size_t i = 0;
  int neg = 0;
  if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  uint64_t v = 0;
  size_t digits = 0;
#ifdef SWAR
  /* eight digits a word (timestamps have sixteen before the point): v stays below 10^19, so
   * the byte loop's overflow check could not have fired on them */
  const uint64_t ones = 0x0101010101010101u;
  while (i + 8 <= len && v < UINT64_C(100000000000)) {
    uint64_t d;
    memcpy(&d, s + i, 8);
    d ^= 0x30 * ones;
    if ((((d & (0x7f * ones)) + (0x76 * ones)) | d) & (0x80 * ones)) break;   /* a non-digit */
    d = (d * 10 + (d >> 8)) & 0x00ff00ff00ff00ffu;
    d = (d * (1 + ((uint64_t)100 << 16)) >> 16) & 0x0000ffff0000ffffu;
    v = v * 100000000 + ((d * (1 + ((uint64_t)10000 << 32))) >> 32);
    i += 8;
    digits += 8;
  }
#endif
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  uint64_t frac = 0;
  int nfrac = 0, round_up = 0;
  if (i < len && s[i] == '.') {
    for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
      if (nfrac < 3) frac = frac * 10 + (uint64_t)(s[i] - '0'), nfrac++;
      else if (nfrac == 3) round_up = s[i] >= '5', nfrac = 4;
    }
  }
  if (i != len || digits == 0) return -1;
  for (int k = nfrac > 3 ? 3 : nfrac; k < 3; k++) frac *= 10;
  if (v > (uint64_t)INT64_MAX / 1000 - 1) return -1;
  int64_t r = (int64_t)(v * 1000 + frac) + round_up;
  *ns = neg ? -r : r;
  return 0;
}
