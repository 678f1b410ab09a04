/* The write-back signature (docs/rules.md, Write-back signature): examples checked against
 * the Python original. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "writeback_sig.h"
#include "xxh3_wide.h"

#include <stdlib.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

static ps_sig *G;

/* The tuple with fields joined by '|' for readable expectations. */
static const char *sig6(const char *op, const char *is, const char *id, const char *fm,
                        const char *os, const char *od, const char *ep) {
  static char out[1024];
  ps_sig_row r = {.op_name = op, .in_shapes = is, .in_dtypes = id, .in_formats = fm,
                  .out_shapes = os, .out_dtypes = od, .ep_size = ep};
  assert_int_equal(ps_sig_compute(G, &r), 0);
  size_t len;
  const char *t = ps_sig_text(G, &len);
  assert_true(len < sizeof out);
  for (size_t i = 0; i <= len; i++) out[i] = t[i] == PS_SIG_SEP ? '|' : t[i];
  return out;
}
#define sig(op, is, id, fm, os, od) sig6(op, is, id, fm, os, od, NULL)

static void test_generic(void **state) {
  (void)state;
  assert_string_equal(sig("RmsNorm", "\"128,4096;4096\"", "DT_BF16;DT_BF16", "ND;ND",
                          "\"128,4096;128,1\"", "DT_BF16;FLOAT"),
                      "128,4096;4096|DT_BF16;DT_BF16|ND;ND|128,4096;128,1|DT_BF16;FLOAT");
  assert_string_equal(sig("Add", "(1, 2);( 3 4 )", "A;B", "ND;ND", "(1,2)", "A"),
                      "1,2;3,4|A;B|ND;ND|1,2|A");                                     /* S2 */
  assert_string_equal(sig("Foo", "1,2;;3", "A;B;C", "ND;NULL;ND", "", "X"),
                      "1,2;;3|A;;C|ND;;ND||");                                         /* S3 */
  assert_string_equal(sig("Foo", "N/A;None;NULL;none;NA;()", "a;b;c;d;e;f", "", "5", "g;h"),
                      "|||5|g");                                                       /* S4 */
  assert_string_equal(sig("Foo", "null;2", "a;b", "ND;ND", "2", "g"),
                      "null;2|a;b|ND;ND|2|g");                                         /* S5 */
  assert_string_equal(sig("Foo", "[1,2]", "a", "ND", "[1,2]", "g"),
                      "[1,2]|a|ND|[1,2]|g");                                           /* S6 */
  assert_string_equal(sig("Foo", "1;2;3", "A", "ND;ND", "3", ""),
                      "1;2;3|A|ND;ND|3|");                                             /* S23 */
}

static void test_matmul(void **state) {
  (void)state;
  const char *s7 = "24,512;4096,512|DT_BF16;DT_BF16|ND;ND|24,4096|DT_BF16";
  assert_string_equal(sig("MatMulV2", "24,512;4096,512", "DT_BF16;DT_BF16", "ND;ND", "24,4096",
                          "DT_BF16"), s7);
  assert_true(ps_sig_is_canonical_matmul(G));
  assert_string_equal(sig("MatMulCommon", "24,512;512,4096", "DT_BF16;DT_BF16", "ND;ND",
                          "24,4096", "DT_BF16"), s7);                                  /* S8 */
  assert_string_equal(sig("MatMulV3", "512,24;512,4096", "DT_BF16;DT_BF16", "ND;ND", "24,4096",
                          "DT_BF16"), s7);                                             /* S9 */
  assert_string_equal(sig("MatMulV2", "24,512;4096,512;4096", "DT_BF16;DT_BF16;DT_BF16",
                          "ND;ND;ND", "24,4096", "DT_BF16"), s7);                      /* S10 */
  assert_string_equal(sig("MatMulV2", "24,512;32,256,16,16", "DT_BF16;DT_BF16", "ND;FRACTAL_NZ",
                          "24,4096", "DT_BF16"),
                      "24,512;32,256,16,16|DT_BF16;DT_BF16|ND;FRACTAL_NZ|24,4096|DT_BF16");
  assert_false(ps_sig_is_canonical_matmul(G));                                         /* S11 */
  assert_string_equal(sig("MatMulV2", "7,9;11,13", "A;B", "ND;ND", "7,11", "C"),
                      "7,9;11,13|A;B|ND;ND|7,11|C");                                   /* S12 */
  assert_string_equal(sig("MatMulV2", "64,64;64,128", "A;B", "ND;ND", "32,128", "C"),
                      "32,64;128,64|A;B|ND;ND|32,128|C");                              /* S13 */
  assert_string_equal(sig("BatchMatMulV2", "24,512;512,4096", "DT_BF16;DT_BF16", "ND;ND",
                          "24,4096", "DT_BF16"),
                      "24,512;512,4096|DT_BF16;DT_BF16|ND;ND|24,4096|DT_BF16");       /* S14 */
  /* S25: a database row (OP State only) and an op_summary row, op name passed. */
  ps_sig_row a = {.op_name = "MatMulV2", .op_state = "dynamic",
                  .in_shapes = "5,6144;2048,6144", .out_shapes = "5,2048"};
  ps_sig_row b = {.op_type = "MatMulV2", .in_shapes = "\"5,6144;2048,6144\"",
                  .out_shapes = "\"5,2048\""};
  ps_sig_compute(G, &a);
  uint64_t ha = ps_sig_hash(G);
  ps_sig_compute(G, &b);
  assert_true(ha == ps_sig_hash(G));
}

static void test_rewrites(void **state) {
  (void)state;
  const char *s15 = "64,1728;16|DT_BF16;INT64|ND;ND|16,1728|DT_BF16";
  assert_string_equal(sig("Index", "64,1728;1;2;16", "DT_BF16;INT64;INT64;INT64", "ND;ND;ND;ND",
                          "16,1728", "DT_BF16"), s15);                                 /* S15 */
  assert_string_equal(sig("Index", "64,1728", "DT_BF16", "ND", "16,1728", "DT_BF16"),
                      "64,1728;16|DT_BF16;DT_BF16|ND;ND|16,1728|DT_BF16");             /* S16 */
  assert_string_equal(sig("Slice", "4,768;2;2", "DT_BF16;INT64;INT64", "NCL;ND;ND", "2,768",
                          "DT_BF16"), "4,768|DT_BF16|ND|2,768|DT_BF16");               /* S17 */
  assert_string_equal(sig("TransposeAiCore", "4,896;2", "DT_BF16;INT64", "FRACTAL_NZ;ND",
                          "896,4", "DT_BF16"), "4,896|DT_BF16|ND|896,4|DT_BF16");      /* S18 */
  assert_string_equal(sig6("DispatchFFNCombine", "4,16;2,16,8", "DT_BF16;DT_BF16", "ND;ND",
                           "4,16", "DT_BF16", " 16 "),
                      "4,16;2,16,8|DT_BF16;DT_BF16|ND;ND|4,16|DT_BF16|16");            /* S19 */
  assert_int_equal(ps_sig_nfields(G), 6);
  ps_sig_row s20 = {.op_type = "DispatchFFNCombine.csv", .in_shapes = "4,16"};
  ps_sig_compute(G, &s20);
  assert_string_equal(ps_sig_text(G, NULL), "4,16\x1f\x1f\x1f\x1f\x1f");               /* S20 */
  ps_sig_row s21 = {.op_state = "Index", .in_shapes = "64,1728;16",
                    .in_dtypes = "DT_BF16;INT64", .in_formats = "ND;ND",
                    .out_shapes = "16,1728", .out_dtypes = "DT_BF16"};
  ps_sig_compute(G, &s21);
  size_t len;
  const char *f = ps_sig_field(G, 0, &len);
  assert_int_equal(len, 10);
  assert_memory_equal(f, "64,1728;16", 10);
  assert_string_equal(sig("Index", "64,1728;16", "DT_BF16;INT64", "ND;ND", "16,1728", "DT_BF16"),
                      s15);
}

static void test_slot_styles(void **state) {
  (void)state;
  /* S22 / S26: generated "()" slots equal the profiler's empty slots. */
  const char *want = "1,128,1,512;;;2,16|DT_BF16;;;INT32|ND;;;ND|128,1,1,512|DT_BF16";
  assert_string_equal(sig("KvRmsNormRopeCache", "\"1,128,1,512;();();2,16;()\"",
                          "DT_BF16;DT_UNDEFINED;DT_BF16;INT32;DT_UNDEFINED", "ND;NULL;ND;ND;NULL",
                          "\"128,1,1,512;()\"", "DT_BF16;FLOAT"), want);
  ps_sig_row gen = {.in_shapes = "\"1,128,1,512;();();2,16;()\"",
                    .in_dtypes = "DT_BF16;DT_UNDEFINED;DT_BF16;INT32;DT_UNDEFINED",
                    .out_shapes = "\"128,1,1,512;()\"", .out_dtypes = "DT_BF16;FLOAT"};
  ps_sig_row prof = {.in_shapes = "\"1,128,1,512;;;2,16;\"", .in_dtypes = "DT_BF16;;;INT32;",
                     .out_shapes = "\"128,1,1,512;\"", .out_dtypes = "DT_BF16;"};
  ps_sig_compute(G, &gen);
  uint64_t h = ps_sig_hash(G);
  ps_sig_compute(G, &prof);
  assert_true(h == ps_sig_hash(G));
  /* S24: "(8)" and 8. */
  ps_sig_row r1 = {.op_name = "Add", .in_shapes = "\"(8)\"", .in_dtypes = "DT_BF16"};
  ps_sig_row r2 = {.op_name = "Add", .in_shapes = "8", .in_dtypes = "DT_BF16"};
  ps_sig_compute(G, &r1);
  h = ps_sig_hash(G);
  ps_sig_compute(G, &r2);
  assert_true(h == ps_sig_hash(G));
}

static void test_op_names(void **state) {
  (void)state;
  const char *in[] = {"X_run.py", "PadV3_run", "SoftmaxV2.csv", "MatMulV2", "X_run.csv",
                      " X_run.py ", "X_run", "\"Add\""};
  const char *out[] = {"X", "PadV3", "SoftmaxV2", "MatMulV2", "X_run", "X", "X", "Add"};
  char buf[64];
  for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
    ps_sig_op_name(in[i], buf, sizeof buf);
    assert_string_equal(buf, out[i]);
  }
  assert_true(ps_sig_is_matmul("MatMulV3"));
  assert_false(ps_sig_is_matmul("BatchMatMulV2"));
  /* The hash is XXH3-64 of the canonical text, stable across runs. */
  assert_true(ps_sig_hash_bytes("", 0) == 0x2D06800538D394C2ULL);
}

/* A random cell: slots of digits, commas, word characters, blanks, quotes, parentheses and
 * empty tokens; mostly plain ones (the shortcut's), often not. */
static void random_cell(uint64_t *seed, int shape, char *out, size_t cap) {
  static const char *const pieces[] = {"1", "23", "0", ",", ",", ";", ";", " ", "\"", "(", ")",
                                       "DT_BF16", "ND", "x", "N/A", "()", ",,", ";;", "\t", "-"};
  size_t o = 0, k;
  *seed = *seed * 6364136223846793005u + 1442695040888963407u;
  int n = (int)((*seed >> 33) % 7);
  int plain = (*seed >> 20) % 3 != 0;
  for (int i = 0; i < n && o + 16 < cap; i++) {
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    const char *p;
    if (plain) {
      k = (*seed >> 33) % 4;
      p = shape ? (k == 0 ? ";" : k == 1 ? "," : k == 2 ? "1" : "42") : (k == 0 ? ";" : k == 1 ? "ND" : k == 2 ? "DT_BF16" : "a1");
    } else {
      p = pieces[(*seed >> 33) % (sizeof pieces / sizeof *pieces)];
    }
    size_t l = strlen(p);
    memcpy(out + o, p, l);
    o += l;
  }
  out[o] = '\0';
}

/* The shortcut for plain cells (digits and commas, word characters) gives the general way's
 * text on every cell, plain or not, for every kind of operator. */
static void test_plain_shortcut(void **state) {
  (void)state;
  static const char *const ops[] = {"Add", "DispatchFFNCombine", "MatMulV2", "Index", "Slice", "Foo"};
  uint64_t seed = 7;
  char c[5][128], a[1024], ep[8];
  for (int t = 0; t < 200000; t++) {
    for (int i = 0; i < 5; i++) random_cell(&seed, i == 0 || i == 3, c[i], sizeof c[i]);
    snprintf(ep, sizeof ep, "%s%d", t % 3 ? "" : " ", t % 5);
    ps_sig_row r = {.op_name = ops[t % 6], .in_shapes = c[0], .in_dtypes = c[1],
                    .in_formats = c[2], .out_shapes = c[3], .out_dtypes = c[4],
                    .ep_size = t % 4 ? ep : NULL};
    if (t % 7 == 0) r.in_dtypes = NULL;
    size_t la, lb;
    assert_int_equal(ps_sig_compute(G, &r), 0);
    const char *x = ps_sig_text(G, &la);
    memcpy(a, x, la + 1);
    int nf = ps_sig_nfields(G);
    size_t fl[8];
    for (int i = 0; i < nf; i++) ps_sig_field(G, i, &fl[i]);
    ps_sig_set_general(1);
    assert_int_equal(ps_sig_compute(G, &r), 0);
    const char *y = ps_sig_text(G, &lb);
    ps_sig_set_general(0);
    if (la != lb || memcmp(a, y, la) != 0)
      fail_msg("%s [%s] [%s] [%s] [%s] [%s]: shortcut [%s], general [%s]", r.op_name, c[0], c[1], c[2],
               c[3], c[4], a, y);
    assert_int_equal(nf, ps_sig_nfields(G));
    for (int i = 0; i < nf; i++) {
      size_t l;
      ps_sig_field(G, i, &l);
      assert_int_equal(l, fl[i]);
    }
  }
}

/* The shortcut on long cells (its checks run 16 bytes at a time: slots across block ends, a
 * separator as a block's last or first byte) and bytes next to the classes' edges
 * ('/', ':', '@', '[', '`', '{', bytes >= 0x80): the general way's text every time. */
static void test_plain_shortcut_long(void **state) {
  (void)state;
  static const char *const odd[] = {"/", ":", "@", "[", "`", "{", "\x80", "\xff", "^", ",", ";"};
  uint64_t seed = 11;
  char c[5][160], a[2048];
  for (int t = 0; t < 100000; t++) {
    for (int i = 0; i < 5; i++) {
      int shape = i == 0 || i == 3;
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      size_t want = (size_t)(seed >> 33) % 80, o = 0;
      int spoil = (seed >> 20) % 4 == 0;
      while (o < want) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        unsigned k = (unsigned)(seed >> 33);
        const char *p = shape ? (k % 5 == 0 ? ";" : k % 5 == 1 ? "," : k % 5 == 2 ? "7" : "123")
                              : (k % 5 == 0 ? ";" : k % 5 == 1 ? "DT_BF16" : k % 5 == 2 ? "Zz9" : "_a");
        if (spoil && k % 23 == 0) p = odd[(k >> 8) % (sizeof odd / sizeof *odd)];
        size_t l = strlen(p);
        memcpy(c[i] + o, p, l);
        o += l;
      }
      c[i][o] = '\0';
    }
    ps_sig_row r = {.op_name = t % 2 ? "Add" : "DispatchFFNCombine", .in_shapes = c[0],
                    .in_dtypes = c[1], .in_formats = c[2], .out_shapes = c[3], .out_dtypes = c[4],
                    .ep_size = "8"};
    size_t la, lb;
    assert_int_equal(ps_sig_compute(G, &r), 0);
    const char *x = ps_sig_text(G, &la);
    memcpy(a, x, la + 1);
    ps_sig_set_general(1);
    assert_int_equal(ps_sig_compute(G, &r), 0);
    const char *y = ps_sig_text(G, &lb);
    ps_sig_set_general(0);
    if (la != lb || memcmp(a, y, la) != 0)
      fail_msg("[%s] [%s] [%s] [%s] [%s]: shortcut [%s], general [%s]", c[0], c[1], c[2], c[3],
               c[4], a, y);
  }
}

/* The file hash's loop with AVX2 and with the baseline give XXH3's one-shot bits, for every
 * length around its stripe (64), block (1024) and buffer (256) sizes, fed in pieces. */
static void test_xxh3_wide_same_bits(void **state) {
  (void)state;
  size_t cap = 70000;
  unsigned char *buf = malloc(cap);
  assert_non_null(buf);
  for (size_t i = 0; i < cap; i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
  static const size_t lens[] = {0, 1, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4096, 9999, 65536, 70000};
  for (int base = 0; base <= 1; base++) {
    ps_xxh3_set_baseline(base);
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
      for (size_t piece = 1; piece <= 5000; piece = piece * 7 + 3) {
        XXH3_state_t *st = XXH3_createState();
        assert_non_null(st);
        XXH3_64bits_reset(st);
        for (size_t at = 0; at < lens[l]; at += piece)
          ps_xxh3_update_wide(st, buf + at, lens[l] - at < piece ? lens[l] - at : piece);
        assert_true(XXH3_64bits_digest(st) == XXH3_64bits(buf, lens[l]));
        XXH3_freeState(st);
      }
  }
  ps_xxh3_set_baseline(0);
  free(buf);
}

int main(void) {
  G = ps_sig_new();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_generic),     cmocka_unit_test(test_matmul),
    cmocka_unit_test(test_rewrites),    cmocka_unit_test(test_slot_styles),
    cmocka_unit_test(test_op_names),    cmocka_unit_test(test_plain_shortcut),
    cmocka_unit_test(test_xxh3_wide_same_bits),
    cmocka_unit_test(test_plain_shortcut_long),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ps_sig_free(G);
  return rc;
}
