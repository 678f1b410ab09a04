/* Number parsing (src/schema/num.c), differential against the C library, which implements the
 * same decimal grammar with correct rounding:
 *   - ps_num_parse (Python's float()): whatever it accepts, strtod reads to the same double
 *     once the surrounding whitespace and the underscores are gone; whatever strtod reads
 *     whole that it refuses must be one of the C-only forms (hex, nan(...), or underscores
 *     and whitespace misplaced as Python forbids);
 *   - ps_num_int (Python's int()): agrees with strtoll on every plain decimal integer;
 *   - ps_num_fmt6 equals snprintf("%.6f") byte for byte, for the parsed value and for the
 *     input's bytes taken as a double;
 *   - ps_num_us_to_ns is within a nanosecond of the double's value times 1000 (when small
 *     enough for a double to hold the nanoseconds). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memfile.h"
#include "num.h"

/* the whitespace Python's float() and int() strip from bytes: space and \t \n \v \f \r */
static int py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* s without surrounding whitespace and underscores, NUL-terminated; 0 when it has a NUL. */
static int plain(const char *s, size_t len, char *out, int *had_underscore) {
  while (len && py_space((unsigned char)*s)) s++, len--;
  while (len && py_space((unsigned char)s[len - 1])) len--;
  size_t o = 0;
  *had_underscore = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == 0) return 0;
    if (s[i] == '_') { *had_underscore = 1; continue; }
    out[o++] = s[i];
  }
  out[o] = 0;
  return 1;
}

static void check_fmt6(double v) {
  char a[400], b[400];
  int n = ps_num_fmt6(a, sizeof a, v), m = snprintf(b, sizeof b, "%.6f", v);
  if (n != m || strcmp(a, b) != 0) {
    fprintf(stderr, "fmt6(%a): '%s' vs snprintf '%s'\n", v, a, b);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 400) return 0;
  const char *s = (const char *)data;
  char buf[401];
  int und;
  double v;
  int ok = ps_num_parse(s, size, &v) == 0;
  if (plain(s, size, buf, &und) && buf[0]) {
    char *end;
    errno = 0;
    double w = strtod(buf, &end);
    int whole = *end == 0 && !py_space((unsigned char)buf[0]);
    if (ok) {
      if (!whole) { fprintf(stderr, "num accepts '%.*s', strtod does not\n", (int)size, s); abort(); }
      if (!(isnan(v) && isnan(w)) && memcmp(&v, &w, sizeof v) != 0) {
        fprintf(stderr, "num '%.*s' = %a, strtod %a\n", (int)size, s, v, w);
        abort();
      }
    } else if (whole && !und && !strpbrk(buf, "xX(") && !memchr(buf, ' ', strlen(buf))) {
      int inner_space = 0;
      for (const char *k = buf; *k; k++) inner_space |= py_space((unsigned char)*k);
      if (!inner_space) {
        fprintf(stderr, "num refuses '%.*s', strtod reads %a\n", (int)size, s, w);
        abort();
      }
    }
  }
  if (ok) check_fmt6(v);
  if (size == sizeof(double)) {
    double raw;
    memcpy(&raw, data, sizeof raw);
    check_fmt6(raw);
  }

  int64_t iv;
  if (ps_num_int(s, size, &iv) == 0) {
    if (!plain(s, size, buf, &und)) abort();
    char *end;
    errno = 0;
    long long w = strtoll(buf, &end, 10);
    if (*end != 0 || errno != 0 || w != iv) {
      fprintf(stderr, "int '%.*s' = %lld, strtoll %lld\n", (int)size, s, (long long)iv, w);
      abort();
    }
  }

  int64_t ns;
  if (ps_num_us_to_ns(s, size, &ns) == 0) {
    double d;
    if (ps_num_parse(s, size, &d) != 0) {
      fprintf(stderr, "us_to_ns reads '%.*s', num.parse does not\n", (int)size, s);
      abort();
    }
    if (fabs(d) < 1e9) {   /* the ns fit a double's 53 bits exactly enough */
      double want = d * 1000.0;
      if (fabs((double)ns - want) > 1.0 + fabs(want) * 1e-15) {
        fprintf(stderr, "us_to_ns '%.*s' = %lld, expected about %.3f\n", (int)size, s, (long long)ns, want);
        abort();
      }
    }
  }
  return 0;
}
