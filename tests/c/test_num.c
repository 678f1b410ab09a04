/* The one cell number parser (Python float()) and the one valid-duration rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "num.h"

static int parse(const char *s, double *d) { return ps_num_parse(s, strlen(s), d); }

static void python_float_accepts(void **state) {
  (void)state;
  static const struct { const char *s; double v; } ok[] = {
    {"1", 1}, {"-2.5", -2.5}, {"+3", 3}, {" 4.25\t", 4.25}, {"5.", 5}, {".5", 0.5},
    {"1e3", 1000}, {"1E-2", 0.01}, {"2.5e+1", 25}, {"1_000", 1000}, {"1_000.000_5", 1000.0005},
    {"1e1_0", 1e10}, {"1764246877073569.640", 1764246877073569.640}, {"0.1", 0.1},
    {"123456.789012", 123456.789012}, {"\r\n7\n", 7},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    double d = -99;
    assert_int_equal(parse(ok[i].s, &d), 0);
    assert_true(d == ok[i].v);
  }
  double d;
  assert_int_equal(parse("inf", &d), 0);
  assert_true(isinf(d) && d > 0);
  assert_int_equal(parse("-Infinity", &d), 0);
  assert_true(isinf(d) && d < 0);
  assert_int_equal(parse(" NaN ", &d), 0);
  assert_true(isnan(d));
}

static void python_float_refuses(void **state) {
  (void)state;
  static const char *const bad[] = {"", "  ", "abc", "0x10", "0X1p3", "1_", "_1", "1__0", "1._5",
                                    "1 000", "1e", "e5", ".", "-", "+-1", "N/A", "1,5", "12abc",
                                    "infinit", "nan1", "1.2.3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    double d = 42;
    assert_int_equal(parse(bad[i], &d), -1);
    assert_true(d == 42);
  }
}

/* Python's float() reads a number of any length; the parser refused more than 126 characters
 * (found by fuzz/fuzz_num.c, differential against strtod). */
static void long_numbers(void **state) {
  (void)state;
  char s[4200];
  double d = 0;
  memset(s, '0', sizeof s);
  memcpy(s, ".73", 3);
  s[130] = '1';
  assert_int_equal(ps_num_parse(s, 131, &d), 0);
  assert_true(d == 0.73);
  s[0] = '7';   /* 7000...0001 (4200 digits): inf, as Python gives for a float this long */
  assert_int_equal(ps_num_parse(s, sizeof s, &d), 0);
  assert_true(isinf(d));
  memcpy(s + 4190, "e-4190_1", 8);   /* 7e-41712: 0.0; the exponent's underscores checked */
  assert_int_equal(ps_num_parse(s, 4198, &d), 0);
  assert_true(d == 0);
  s[4197] = '_';
  assert_int_equal(ps_num_parse(s, 4198, &d), -1);
}

static void finite_and_or_zero(void **state) {
  (void)state;
  double d;
  assert_int_equal(ps_num_finite("inf", 3, &d), -1);
  assert_int_equal(ps_num_finite("nan", 3, &d), -1);
  assert_int_equal(ps_num_finite(" 2 ", 3, &d), 0);
  assert_true(d == 2);
  assert_true(ps_num_or_zero("bad", 3) == 0.0);
  assert_true(ps_num_or_zero("", 0) == 0.0);
  assert_true(ps_num_or_zero("1.5", 3) == 1.5);
  assert_true(isnan(ps_num_or_zero("nan", 3)));
  /* only len bytes are read */
  assert_int_equal(ps_num_parse("12x", 2, &d), 0);
  assert_true(d == 12);
}

static void valid_duration_is_finite_and_positive(void **state) {
  (void)state;
  assert_true(ps_num_is_duration(1e-6));
  assert_false(ps_num_is_duration(0));
  assert_false(ps_num_is_duration(-1));
  assert_false(ps_num_is_duration(INFINITY));
  assert_false(ps_num_is_duration(NAN));
  static const char *const yes[] = {"1", " 0.5 ", "3e2", "1_0"};
  static const char *const no[] = {"", "0", "-1", "inf", "nan", "abc", "0x10", "0.0"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    assert_true(ps_num_duration_cell(yes[i], strlen(yes[i])));
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    assert_false(ps_num_duration_cell(no[i], strlen(no[i])));
}

static void python_int_of_a_cell(void **state) {
  (void)state;
  static const struct { const char *s; int64_t v; } ok[] = {
    {"0", 0}, {"8", 8}, {"-16", -16}, {"+3", 3}, {" 4\t", 4}, {"007", 7}, {"1_000", 1000},
    {"\r\n12\n", 12}, {"9223372036854775807", INT64_MAX}, {"-9223372036854775808", INT64_MIN},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int64_t v = -99;
    assert_int_equal(ps_num_int(ok[i].s, strlen(ok[i].s), &v), 0);
    assert_true(v == ok[i].v);
  }
  /* int() refuses fractions, exponents, hex, misplaced underscores; int64 overflow too */
  static const char *const bad[] = {"", " ", "4.0", "1e3", "0x10", "_1", "1_", "1__0", "- 1",
                                    "+-1", "inf", "nan", "1 000", "12abc", "9223372036854775808",
                                    "-9223372036854775809", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = 42;
    assert_int_equal(ps_num_int(bad[i], strlen(bad[i]), &v), -1);
    assert_true(v == 42);
  }
}

/* ps_num_parse(s) (and ps_num_finite) against strtod on texts of digits, '.', signs and a space, where both
 * grammars agree (valid when strtod reads every byte): every text of up to 6 bytes, then
 * random ones of 7 to 12 (the word-at-a-time path takes up to 8 bytes and a sign). */
static int same_as_strtod(const char *t, size_t n) {
  char buf[16], *end;
  memcpy(buf, t, n);
  buf[n] = 0;
  double want = strtod(buf, &end), got = -7;
  int valid = n > 0 && end == buf + n && buf[0] != ' ' && (n == 0 || buf[n - 1] != ' ');
  if (buf[0] == ' ' || (n && buf[n - 1] == ' ')) return 1;   /* trimming: Python's, not strtod's */
  int rc = ps_num_parse(buf, n, &got);
  if ((rc == 0) != valid || (valid && memcmp(&got, &want, sizeof got) != 0)) {
    fprintf(stderr, "[%s]: rc %d %.17g, strtod %s %.17g\n", buf, rc, got, valid ? "valid" : "invalid", want);
    return 0;
  }
  /* ps_num_finite (its own short path: the durations) reads the same (all are finite here) */
  double fin = -7;
  int rf = ps_num_finite(buf, n, &fin);
  if (rf != rc || (rc == 0 && memcmp(&fin, &got, sizeof fin) != 0)) {
    fprintf(stderr, "[%s]: ps_num_finite %d %.17g, ps_num_parse %d %.17g\n", buf, rf, fin, rc, got);
    return 0;
  }
  return 1;
}

static void short_decimals_as_strtod(void **state) {
  (void)state;
  static const char alpha[] = "0123456789.-+ ";
  const size_t na = sizeof alpha - 1;
  char t[16];
  for (size_t n = 1; n <= 6; n++) {
    size_t total = 1;
    for (size_t i = 0; i < n; i++) total *= na;
    for (size_t k = 0; k < total; k++) {
      size_t v = k;
      for (size_t i = 0; i < n; i++, v /= na) t[i] = alpha[v % na];
      assert_true(same_as_strtod(t, n));
    }
  }
  uint64_t x = 88172645463325252ULL;
  for (int r = 0; r < 3000000; r++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = 7 + x % 6;
    uint64_t y = x;
    for (size_t i = 0; i < n; i++, y = y * 6364136223846793005u + 1442695040888963407u)
      t[i] = (y >> 60) < 12 ? alpha[(y >> 33) % 10] : alpha[10 + (y >> 40) % 3];
    assert_true(same_as_strtod(t, n));
  }
}

/* A row's cells at once give what one call per cell gives, bit for bit. */
static void finite_n_as_one_by_one(void **state) {
  (void)state;
  static const char *const cells[] = {
    "224.471", "", "nan", "-inf", "1e3", " 4.5 ", "12345678", "-1234567.8", "1_0", ".", "-0",
    "0.0000001", "123456789.5", "abc", "5.", "+.5", "1764246877073569.640", "-", "99", "7.25",
    "1.2.3", "\t", "0", "-.0", "3.14159265358979",
  };
  const int n = (int)(sizeof cells / sizeof cells[0]);
  size_t len[32];
  for (int i = 0; i < n; i++) len[i] = strlen(cells[i]);
  double out[32];
  /* padded: each cell in a buffer with digits, a '.' or a sign after it */
  char pad[32][32];
  const char *pcells[32];
  for (int i = 0; i < n; i++) {
    memcpy(pad[i], cells[i], len[i]);
    memset(pad[i] + len[i], "9.-5"[i % 4], sizeof pad[i] - len[i]);
    pcells[i] = pad[i];
  }
  for (int padded = 0; padded < 2; padded++) {
    uint32_t ok = ps_num_finite_n(padded ? pcells : cells, len, n, padded, out);
    for (int i = 0; i < n; i++) {
      double d;
      int rc = ps_num_finite(cells[i], len[i], &d);
      assert_int_equal(rc == 0, (ok >> i) & 1);
      if (rc == 0) assert_memory_equal(&d, &out[i], sizeof d);
    }
  }
}

/* The padded short-cell read, on random cells of up to 9 bytes of digits, '.', signs, 'e' and
 * spaces with random bytes after them, is ps_num_finite's, bit for bit. */
static void finite_n_padded_random(void **state) {
  (void)state;
  static const char alpha[] = "0123456789012345678901234567890123456789....-+e _x\x80";
  uint64_t x = 0x9e3779b97f4a7c15u;
  char buf[32][24];
  const char *cells[32];
  size_t len[32];
  double out[32];
  for (int r = 0; r < 200000; r++) {
    for (int i = 0; i < 25; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      len[i] = (size_t)(x % 10);
      for (size_t k = 0; k < sizeof buf[i]; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i][k] = alpha[x % (sizeof alpha - 1)];
      }
      cells[i] = buf[i];
    }
    uint32_t ok = ps_num_finite_n(cells, len, 25, 1, out);
    for (int i = 0; i < 25; i++) {
      double d;
      int rc = ps_num_finite(cells[i], len[i], &d);
      if ((rc == 0) != ((ok >> i) & 1) || (rc == 0 && memcmp(&d, &out[i], sizeof d) != 0))
        fprintf(stderr, "[%.*s]: %d %.17g, one by one %d %.17g\n", (int)len[i], cells[i],
                (int)((ok >> i) & 1), out[i], rc, d);
      assert_int_equal(rc == 0, (ok >> i) & 1);
      if (rc == 0) assert_memory_equal(&d, &out[i], sizeof d);
    }
  }
}

/* The AVX2 read of four counter cells at once and the SSSE3 one of two (where the CPU has
 * them) and the portable one give
 * ps_num_finite's bits on rows of plain decimals mostly (the pairs the SIMD path takes): every
 * length 0 to 9, the '.' anywhere, two of them, a lone '.', signs, spaces and exponents mixed
 * in, any bytes after each cell, at every row length 1 to 32 (odd ones end with a lone cell). */
static void finite_n_simd_as_portable(void **state) {
  (void)state;
  static const char *const edge[] = {"99999999", "9999.999", ".5", "5.", ".", "0", "00000000", "1.",
                                     "12345678", "0.000001", "1..2", "..", "9.9999999", "0000.000",
                                     "7", "-1.5", "1e5", " 2.5", "12345678.", ".1234567", "0.", "00.",
                                     "0000000.", ".0", "1.000000", "9999999."};
  static const char alpha[] = "0123456789012345678901234567890123456789.";
  uint64_t x = 0x853c49e6748fea9bu;
  char buf[32][24];
  const char *cells[32];
  size_t len[32];
  double out[3][32];
  for (int r = 0; r < 300000; r++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int n = 1 + (int)(x % 32);
    for (int i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (x % 16 == 0) {
        const char *e = edge[(x >> 8) % (sizeof edge / sizeof edge[0])];
        len[i] = strlen(e);
        memcpy(buf[i], e, len[i]);
      } else {
        len[i] = (size_t)((x >> 8) % 10);
        for (size_t k = 0; k < len[i]; k++) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          buf[i][k] = x % 64 == 0 ? "+-e x"[(x >> 8) % 5] : alpha[(x >> 16) % (sizeof alpha - 1)];
        }
      }
      for (size_t k = len[i]; k < sizeof buf[i]; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i][k] = "0123456789.,-\"\r"[x % 15];
      }
      cells[i] = buf[i];
    }
    uint32_t ok[3];
    for (int mode = 0; mode < 3; mode++) {   /* the best (AVX2), portable, SSSE3 */
      ps_num_set_portable(mode);
      ok[mode] = ps_num_finite_n(cells, len, n, 1, out[mode]);
    }
    ps_num_set_portable(0);
    assert_int_equal(ok[0], ok[1]);
    assert_int_equal(ok[0], ok[2]);
    for (int i = 0; i < n; i++) {
      double d;
      int rc = ps_num_finite(cells[i], len[i], &d);
      if ((rc == 0) != ((ok[0] >> i) & 1) || (rc == 0 && memcmp(&d, &out[0][i], sizeof d) != 0))
        fprintf(stderr, "[%.*s]: %d %.17g, one by one %d %.17g\n", (int)len[i], cells[i],
                (int)((ok[0] >> i) & 1), out[0][i], rc, d);
      assert_int_equal(rc == 0, (ok[0] >> i) & 1);
      if (rc == 0) {
        assert_memory_equal(&d, &out[0][i], sizeof d);
        assert_memory_equal(&d, &out[1][i], sizeof d);
        assert_memory_equal(&d, &out[2][i], sizeof d);
      }
    }
  }
}

/* The oracle of ps_num_us_to_ns, worked out another way: the trimmed text split into its
 * digit runs (strspn), the integer part in 128 bits, refused past what ns fits in int64 as
 * ps_num_us_to_ns refuses it; the fourth decimal rounds half up. */
static int us_to_ns_ref(const char *s, size_t n, int64_t *ns) {
  char t[64];
  size_t a = 0, b = n;
  while (a < b && isspace((unsigned char)s[a])) a++;
  while (b > a && isspace((unsigned char)s[b - 1])) b--;
  memcpy(t, s + a, b - a);
  t[b - a] = 0;
  const char *p = t + (t[0] == '-' || t[0] == '+');
  size_t ni = strspn(p, "0123456789"), nf = 0;
  const char *f = p + ni;
  if (*f == '.') nf = strspn(++f, "0123456789");
  if (ni + nf == 0 || f[nf] != 0) return -1;
  __int128 v = 0;
  for (size_t k = 0; k < ni; k++) v = v * 10 + (p[k] - '0');
  if (v > INT64_MAX / 1000 - 1) return -1;
  int64_t r = (int64_t)v * 1000;
  for (size_t k = 0, scale = 100; k < 3; k++, scale /= 10)
    if (k < nf) r += (int64_t)(f[k] - '0') * (int64_t)scale;
  r += nf > 3 && f[3] >= '5';
  *ns = t[0] == '-' ? -r : r;
  return 0;
}

/* ps_num_us_to_ns of t[0..n) gives what the oracle gives (it reads C strings: no NUL in t). */
static void same_as_oracle(const char *t, size_t n) {
  int64_t a = 7, b = 7;
  int ra = ps_num_us_to_ns(t, n, &a), rb = us_to_ns_ref(t, n, &b);
  if (ra != rb || a != b) fprintf(stderr, "[%.*s]: %d %lld, oracle %d %lld\n", (int)n, t, ra, (long long)a, rb, (long long)b);
  assert_int_equal(ra, rb);
  assert_true(a == b);
}

/* Timestamps of 0 to 29 bytes, digits mostly, with a fraction, sign, stray bytes and spaces,
 * read as the oracle reads them (the ones near the int64 limit included). */
static void us_to_ns_as_oracle(void **state) {
  (void)state;
  static const char alpha[] = "01234567890123456789012345678901234567899999.-+ \tx";
  uint64_t x = 0x2545f4914f6cdd1du;
  char t[40];
  for (int r = 0; r < 1000000; r++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = x % 30;
    for (size_t k = 0; k < n; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      t[k] = (x >> 40) % 8 ? "0123456789"[(x >> 20) % 10] : alpha[(x >> 8) % (sizeof alpha - 1)];
    }
    same_as_oracle(t, n);
  }
  static const char *const edge[] = {"9223372036854775", "9223372036854774.999", "9223372036854775807",
                                     "18446744073709551615", "99999999999999999999", "1736413971000051.986\t",
                                     "12345678", "123456789012345678901234", "00000000000000001.5"};
  for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) same_as_oracle(edge[k], strlen(edge[k]));
}

/* The profilers' start times ("1736413971000024.661": sixteen digits, three decimals, read in
 * three loads) as the oracle reads them, and the same with one byte of any value in any place
 * (the general path then), up to the int64 limit. */
static void us_to_ns_start_times_as_oracle(void **state) {
  (void)state;
  uint64_t x = 0x9e3779b97f4a7c15u;
  char t[21];
  for (int r = 0; r < 400000; r++) {
    for (int k = 0; k < 20; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      t[k] = (char)('0' + (x >> 33) % 10);
    }
    t[16] = '.';
    if (r % 4 == 1) t[0] = "9876543210"[(x >> 7) % 10], memcpy(t, "92233720368547", 14);   /* near the limit */
    if (r % 2) {   /* one byte of any value (but NUL) anywhere */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      t[(x >> 20) % 20] = (char)(x >> 50) ? (char)(x >> 50) : 'x';   /* the oracle reads C strings */
    }
    same_as_oracle(t, 20);
  }
  static const char *const edge[] = {"9223372036854774.999", "9223372036854775.000", "9999999999999999.999",
                                     "0000000000000000.000", "1736413971000024.661", "1736413971000024.6a1",
                                     "1736413971000024:661", "/736413971000024.661", "17364139710000:4.661"};
  for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) same_as_oracle(edge[k], 20);
  int64_t v;
  assert_int_equal(ps_num_us_to_ns("1736413971000024.661", 20, &v), 0);
  assert_true(v == INT64_C(1736413971000024661));
  assert_int_equal(ps_num_us_to_ns("9223372036854775.000", 20, &v), -1);
}

/* ps_num_fmt6 is snprintf("%.6f") byte for byte on both of its builds (the FMA one and the
 * portable one), near rounding ties, at digit-count boundaries, and truncated to small caps. */
static void fmt6_both_builds_are_printf(void **state) {
  (void)state;
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 100000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double v;
    switch (i % 4) {
    case 0: v = (double)(x % 100000000000ULL) / 1e6 + 5e-7; break;   /* a tie, in decimal */
    case 1: v = ldexp((double)(x >> 11), -(int)(x % 90)); break;
    case 2: v = pow(10.0, (double)(x % 11)) - (double)(x % 3) * 5e-7; break;
    default: v = -(double)(x % 9000000000000ULL) / 1000.0; break;
    }
    char want[400], got[2][400];
    int n = snprintf(want, sizeof want, "%.6f", v);
    for (int portable = 0; portable < 2; portable++) {
      ps_num_set_portable(portable);
      assert_int_equal(ps_num_fmt6(got[portable], sizeof got[portable], v), n);
      assert_string_equal(got[portable], want);
      char small[8];
      ps_num_fmt6(small, sizeof small, v);
      assert_memory_equal(small, want, strlen(small));
      assert_int_equal(strlen(small), n < 7 ? n : 7);
    }
    ps_num_set_portable(0);
  }
}

/* fmt6's digits at every position: each digit 0-9 at each of the 16 places of k = v * 1e6,
 * among zeros, among nines and among others, both signs, every integer-part length, and
 * every 6 decimals, on both builds. */
static void fmt6_every_digit_place(void **state) {
  (void)state;
  char want[400], got[400];
  for (int place = 0; place < 16; place++)
    for (int dgt = 0; dgt <= 9; dgt++)
      for (int fill = 0; fill < 3; fill++)
        for (int sign = 0; sign < 2; sign++) {
          char digs[17];
          for (int i = 0; i < 16; i++) digs[i] = fill == 0 ? '0' : fill == 1 ? '9' : (char)('0' + (i * 7 + place) % 10);
          digs[place] = (char)('0' + dgt);
          digs[16] = 0;
          if (digs[0] == '9') digs[0] = '8';   /* |v| < 9e9: the fast path */
          double v = (double)strtoull(digs, NULL, 10) / 1e6;
          for (int lead = 0; lead < 10; lead++) {   /* the integer part's length */
            double x = (sign ? -1 : 1) * fmod(v, pow(10.0, 10 - lead));
            int n = snprintf(want, sizeof want, "%.6f", x);
            for (int portable = 0; portable < 2; portable++) {
              ps_num_set_portable(portable);
              assert_int_equal(ps_num_fmt6(got, sizeof got, x), n);
              assert_string_equal(got, want);
            }
          }
        }
  /* every 6 decimals (made a pair a multiplication, from one product: jeaiii's) */
  for (int f = 0; f < 1000000; f++) {
    double x = (f % 2 ? -3.0 : 41.0) + (f % 2 ? -1 : 1) * (f / 1e6);
    int n = snprintf(want, sizeof want, "%.6f", x);
    for (int portable = 0; portable < 2; portable++) {
      ps_num_set_portable(portable);
      if (ps_num_fmt6(got, sizeof got, x) != n || strcmp(got, want) != 0) fail_msg("%s: %s", want, got);
    }
  }
  static const double edge[] = {0.0, -0.0, 5e-7, -5e-7, 4.999999e-7, 1.5e-6, 2.5e-6, 0.9999995,
                                9.9999995, 99.9999995, 8999999999.999999, -8999999999.999999,
                                8999999999.9999995, 9e9, 1e9, 999999999.9999996, 1e-300, -1e-300,
                                4503599627.370496, 123456789.0000005};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    int n = snprintf(want, sizeof want, "%.6f", edge[i]);
    for (int portable = 0; portable < 2; portable++) {
      ps_num_set_portable(portable);
      assert_int_equal(ps_num_fmt6(got, sizeof got, edge[i]), n);
      assert_string_equal(got, want);
    }
  }
  ps_num_set_portable(0);
}

/* ps_num_fmt6_cells: a row's numbers as ',' and ps_num_fmt6's text each, a NaN as an empty
 * cell, big and infinite values by snprintf's path, on both builds. */
static void fmt6_cells_are_fmt6_joined(void **state) {
  (void)state;
  uint64_t x = 1234567;
  static char got[40 * (PS_NUM_FMT6_MAX + 1)], want[40 * (PS_NUM_FMT6_MAX + 1)];
  for (int round = 0; round < 2000; round++) {
    double v[40];
    int n = round % 41;
    for (int i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      switch (x % 7) {
      case 0: v[i] = NAN; break;
      case 1: v[i] = (x & 8) ? INFINITY : -1e300; break;
      case 2: v[i] = -(double)(x % 100000000000ULL) / 1e6; break;
      case 3: v[i] = ldexp((double)(x >> 11), -(int)(x % 70)); break;
      default: v[i] = (double)(x % 1000000) / 1e3; break;
      }
    }
    for (int portable = 0; portable < 2; portable++) {
      ps_num_set_portable(portable);
      size_t w = 0;
      for (int i = 0; i < n; i++) {
        want[w++] = ',';
        if (!isnan(v[i])) w += (size_t)snprintf(want + w, PS_NUM_FMT6_MAX, "%.6f", v[i]);
      }
      memset(got, 'x', sizeof got);
      assert_int_equal(ps_num_fmt6_cells(got, v, n), w);
      assert_memory_equal(got, want, w);
    }
  }
  ps_num_set_portable(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(python_float_accepts),
    cmocka_unit_test(short_decimals_as_strtod),
    cmocka_unit_test(us_to_ns_start_times_as_oracle),
    cmocka_unit_test(finite_n_as_one_by_one),
    cmocka_unit_test(finite_n_padded_random),
    cmocka_unit_test(finite_n_simd_as_portable),
    cmocka_unit_test(us_to_ns_as_oracle),
    cmocka_unit_test(python_float_refuses),
    cmocka_unit_test(long_numbers),
    cmocka_unit_test(finite_and_or_zero),
    cmocka_unit_test(valid_duration_is_finite_and_positive),
    cmocka_unit_test(python_int_of_a_cell),
    cmocka_unit_test(fmt6_both_builds_are_printf),
    cmocka_unit_test(fmt6_every_digit_place),
    cmocka_unit_test(fmt6_cells_are_fmt6_joined),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
