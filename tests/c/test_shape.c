/* Shape-cell grammar and dtype sizes (src/schema/shape.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shape.h"

static const char *norm_slot(const char *s) {
  static char out[256];
  ps_shape_norm_slot(s, strlen(s), out);
  return out;
}

static const char *norm_cell(const char *s) {
  static char out[256];
  ps_shape_norm_cell(s, strlen(s), out);
  return out;
}

static const char *strip(const char *s) {
  static char out[256];
  const char *p = s;
  size_t n = ps_shape_strip(&p, strlen(s));
  memcpy(out, p, n);
  out[n] = '\0';
  return out;
}

/* blanks, then quotes, come off both ends (a clean cell is returned as it is) */
static void test_strip(void **state) {
  (void)state;
  assert_string_equal(strip("1,1;2,2"), "1,1;2,2");
  assert_string_equal(strip(" 1,1 "), "1,1");
  assert_string_equal(strip("\"1,1\""), "1,1");
  assert_string_equal(strip("\"\"1,1\""), "1,1");
  assert_string_equal(strip(" \"1,1\"\t"), "1,1");
  assert_string_equal(strip("\" 1,1 \""), " 1,1 ");
  assert_string_equal(strip("a\"b"), "a\"b");
  assert_string_equal(strip("\"\"\""), "");
  assert_string_equal(strip("   "), "");
  assert_string_equal(strip(""), "");
}

static void test_norm_slot(void **state) {
  (void)state;
  assert_string_equal(norm_slot("(1, 2)"), "1,2");
  assert_string_equal(norm_slot("( 3 4 )"), "3,4");
  assert_string_equal(norm_slot("[1,2]"), "[1,2]");
  assert_string_equal(norm_slot("null"), "null");
  assert_string_equal(norm_slot(" \"N/A\" "), "");
  const char *empties[] = {"()", "N/A", "NA", "NULL", "None", "none", "", "  "};
  for (size_t i = 0; i < sizeof empties / sizeof *empties; i++)
    assert_string_equal(norm_slot(empties[i]), "");
  assert_string_equal(norm_slot("n/a"), "n/a"); /* case-sensitive tokens */
  assert_string_equal(norm_slot("1,,2 ,3"), "1,2,3");
  assert_string_equal(norm_slot(",1,"), "1");
  /* the edges of the already-normal fast path: digits and single commas are kept as they
   * are; a comma run, a blank, a sign, quotes or a trailing comma take the general way */
  assert_string_equal(norm_slot("7"), "7");
  assert_string_equal(norm_slot("128,4096,1"), "128,4096,1");
  assert_string_equal(norm_slot("1,,2"), "1,2");
  assert_string_equal(norm_slot("1, 2"), "1,2");
  assert_string_equal(norm_slot("1 2"), "1,2");
  assert_string_equal(norm_slot("-1,2"), "-1,2");
  assert_string_equal(norm_slot("1,-2"), "1,-2");
  assert_string_equal(norm_slot("1,2,"), "1,2");
  assert_string_equal(norm_slot("1,x2"), "1,x2");
  assert_string_equal(norm_slot("\"1,2\""), "1,2");
  assert_string_equal(norm_slot("1\"2"), "1\"2");
}

static void test_norm_cell(void **state) {
  (void)state;
  assert_string_equal(norm_cell("\"\"\"128,4;;2048, 2048\"\"\""), "128,4;;2048,2048");
  assert_string_equal(norm_cell("\"1,128,1,512;();();2,16;()\""), "1,128,1,512;;;2,16;");
  assert_string_equal(norm_cell("  "), "");
  assert_string_equal(norm_cell("\"\"\"; \"\"\""), ";");
}

static void test_parse_format_round_trip(void **state) {
  (void)state;
  const char *canon[] = {"", "1", "128,4096;4096", "1,2;;3", ";;", "4,16;2,16,8;", "-1,5",
                         "9223372036854775807"};
  ps_shape s;
  ps_shape_init(&s);
  char out[256];
  for (size_t i = 0; i < sizeof canon / sizeof *canon; i++) {
    assert_int_equal(ps_shape_parse(&s, canon[i], strlen(canon[i])), 0);
    assert_int_equal(s.nbad, 0);
    size_t n = ps_shape_format(&s, out, sizeof out);
    assert_int_equal(n, strlen(canon[i]));
    assert_string_equal(out, canon[i]);
  }
  /* Quoted and spaced forms come out canonical. */
  const char *q = "\"\"\"(1, 2); ( 3 4 );N/A\"\"\"";
  assert_int_equal(ps_shape_parse(&s, q, strlen(q)), 0);
  assert_int_equal(s.nslots, 3);
  assert_int_equal(s.state[2], PS_SLOT_EMPTY);
  assert_int_equal(ps_shape_rank(&s, 1), 2);
  assert_int_equal(ps_shape_slot(&s, 1)[1], 4);
  ps_shape_format(&s, out, sizeof out);
  assert_string_equal(out, "1,2;3,4;");
  /* Bad slots are flagged, not fatal. */
  const char *bad = "[1,2];3;abc";
  assert_int_equal(ps_shape_parse(&s, bad, strlen(bad)), 0);
  assert_int_equal(s.nbad, 2);
  assert_int_equal(s.state[0], PS_SLOT_BAD);
  assert_int_equal(s.state[1], PS_SLOT_DIMS);
  /* Truncation behaves like snprintf. */
  const char *c = "123,456";
  ps_shape_parse(&s, c, strlen(c));
  char small[4];
  assert_int_equal(ps_shape_format(&s, small, sizeof small), 7);
  assert_string_equal(small, "123");
  /* A long cell grows the buffers. */
  char big[4000];
  size_t o = 0;
  for (int i = 0; i < 500; i++) o += (size_t)snprintf(big + o, sizeof big - o, "%s%d", i ? (i % 3 ? "," : ";") : "", i);
  assert_int_equal(ps_shape_parse(&s, big, o), 0);
  char back[4000];
  ps_shape_format(&s, back, sizeof back);
  assert_string_equal(back, big);
  ps_shape_free(&s);
}

static void test_dtypes(void **state) {
  (void)state;
  assert_int_equal(ps_dtype_bytes("DT_BF16", 7), 2);
  assert_int_equal(ps_dtype_bytes(" dt_float ", 10), 4);
  assert_int_equal(ps_dtype_bytes("INT64", 5), 8);
  assert_int_equal(ps_dtype_bytes("DT_COMPLEX128", 13), 16);
  assert_int_equal(ps_dtype_bytes("FLOAT16", 7), 2);
  assert_int_equal(ps_dtype_bytes("UINT32", 6), 2);
  assert_int_equal(ps_dtype_bytes("", 0), 2);
  assert_int_equal(ps_dtype_bytes("BOOL", 4), 1);
  /* the consumer's spellings: only DT_BF16, FLOAT, INT8, INT32, INT64, BOOL are ever asked */
  assert_string_equal(ps_dtype_consumer("DT_INT8", 7), "INT8");
  assert_string_equal(ps_dtype_consumer("DT_FLOAT", 8), "FLOAT");
  assert_string_equal(ps_dtype_consumer("DT_INT64", 8), "INT64");
  assert_string_equal(ps_dtype_consumer("DT_BF16", 7), "DT_BF16");
  assert_string_equal(ps_dtype_consumer("DT_FLOAT16", 10), "DT_BF16");
  assert_null(ps_dtype_consumer("DT_UNDEFINED", 12));
  assert_null(ps_dtype_consumer("UINT8", 5));
  assert_null(ps_dtype_consumer("NOPE", 4));
  assert_true(ps_dtype_known("DT_UNDEFINED", 12));
  assert_false(ps_dtype_known("NOPE", 4));
  assert_true(ps_dtype_consumer_scales("DT_INT8", 7));
  assert_false(ps_dtype_consumer_scales("BOOL", 4));
  assert_false(ps_dtype_consumer_scales("dt_bf16", 7));  /* exact spelling only */
  int64_t d[] = {128, 4096};
  assert_int_equal(ps_shape_nbytes(d, 2, 2), 1048576);
  assert_int_equal(ps_shape_nbytes(d, 0, 2), 0);
  int64_t z[] = {4, 0};
  assert_int_equal(ps_shape_nbytes(z, 2, 4), 0);
  int64_t huge[] = {INT64_MAX, INT64_MAX};
  assert_true(ps_shape_nbytes(huge, 2, 8) == UINT64_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_strip),
    cmocka_unit_test(test_norm_slot),
    cmocka_unit_test(test_norm_cell),
    cmocka_unit_test(test_parse_format_round_trip),
    cmocka_unit_test(test_dtypes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
