/* Profile aggregation (docs/rules.md, Import): the Python original's worked examples and the
 * quirks of real profiler exports, on small generated files. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "profile.h"
#include "num.h"
#include "import_key.h"
#include "counters.h"
#include "lifetime.h"
#include "writeback_sig.h"

static char dir[1024];

static const char *write_file(const char *name, const char *text) {
  static char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

#define HEADER_KD                                                                          \
  "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"  \
  "Duration(us),Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types," \
  "Output Formats,aicore_time(us),aic_total_cycles\n"

/* A new kernel_details file at dir/name (its path into path) with the header written: the
 * caller writes the rows and closes it. */
static FILE *new_kd(const char *name, char *path, size_t size) {
  snprintf(path, size, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(HEADER_KD, f);
  return f;
}

/* A new profile with path added (the add must succeed), its counts in *c. */
static ps_profile *imported(const char *path, ps_profile_counts *c) {
  ps_profile *p = ps_profile_new();
  assert_non_null(p);
  char err[512];
  assert_int_equal(ps_profile_add_file(p, path, c, NULL, 0, NULL, NULL, err, sizeof err), 0);
  return p;
}

static void fmt6(char *out, double v) { sprintf(out, "%.6f", v); }

static void test_statistics(void **state) {
  (void)state;
  const char *path = write_file("stats.csv",
    HEADER_KD
    "1,1,10,2,n,Add,dynamic,AI_VECTOR_CORE,100.000\t,10,\"\"\"4,8\"\"\",FLOAT,ND,\"\"\"4,8\"\"\",FLOAT,ND,1,5\n"
    "1,1,11,2,n,Add,dynamic,AI_VECTOR_CORE,\"200.5\t\",20,\"\"\"4,8\"\"\",FLOAT,ND,\"\"\"4,8\"\"\",FLOAT,ND,3,N/A\n"
    "1,1,12,2,n,Add,,AI_VECTOR_CORE,300.25,40,\"\"\"4,8\"\"\",FLOAT,ND,\"\"\"4,8\"\"\",FLOAT,ND,N/A,\n");
  ps_profile *p = ps_profile_new();
  ps_profile_counts c;
  char absent[512], err[512];
  assert_int_equal(ps_profile_add_file(p, path, &c, absent, sizeof absent, NULL, NULL, err, sizeof err), 0);
  assert_int_equal(c.rows, 3);
  assert_int_equal(c.used, 3);
  assert_int_equal(ps_profile_ngroups(p), 1);
  assert_non_null(strstr(absent, "aic_mac_time(us)"));
  ps_profile_group_info g;
  assert_int_equal(ps_profile_group(p, 0, 1, &g), 0);
  char b[64];
  fmt6(b, g.mean), assert_string_equal(b, "23.333333");
  fmt6(b, g.median), assert_string_equal(b, "20.000000");
  fmt6(b, g.std), assert_string_equal(b, "12.472191");
  /* counters: the mean of the valid values only (the Python original counted N/A as 0) */
  fmt6(b, g.metric_mean[0]), assert_string_equal(b, "2.000000");
  assert_int_equal(g.metric_count[0], 2);
  fmt6(b, g.metric_mean[1]), assert_string_equal(b, "5.000000");
  assert_true(isnan(g.metric_mean[2]));
  assert_string_equal(g.cells[PS_PC_IN_SHAPES], "\"4,8\"");  /* literal quotes kept */
  assert_string_equal(g.cells[PS_PC_OP_STATE], "dynamic");
  assert_int_equal(g.first_start_ns, 100000);
  assert_int_equal(g.last_start_ns, 300250);
  ps_profile_free(p);
}

static void test_constant_std_is_zero(void **state) {
  (void)state;
  char *text = malloc(64 * 1024);
  strcpy(text, HEADER_KD);
  for (int i = 0; i < 35; i++)
    sprintf(text + strlen(text), "1,1,%d,2,n,MatMulV2,static,AI_CORE,%d.5,123.45,\"1,2;2,3\",A;A,ND;ND,\"1,3\",A,ND,1,1\n", i, i);
  const char *path = write_file("const.csv", text);
  free(text);
  ps_profile *p = ps_profile_new();
  char err[512];
  assert_int_equal(ps_profile_add_file(p, path, NULL, NULL, 0, NULL, NULL, err, sizeof err), 0);
  ps_profile_group_info g;
  ps_profile_group(p, 0, 1, &g);
  char b[64];
  fmt6(b, g.std), assert_string_equal(b, "0.000000");  /* the Python original printed 0.000006 */
  fmt6(b, g.mean), assert_string_equal(b, "123.450000");
  assert_int_equal(g.count, 35);
  ps_profile_free(p);
}

static void test_skips_and_duplicates(void **state) {
  (void)state;
  /* BOM, CRLF, op_summary names, no final newline, a ragged short row, a multi-line
   * record, N/A shapes, an exact duplicate, an empty type, a bad duration */
  const char *path = write_file("op_summary_0_1.csv",
    "\xEF\xBB\xBF" "Device_id,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),"
    "Task Duration(us),Input Shapes,Input Data Types,Input Formats,Output Shapes,"
    "Output Data Types,Output Formats\r\n"
    "0,5,7,a,muls_add_kernel_1,AI_CORE,1736413971558972.912\t,2.5,\"2,2\",F,ND,\"2,2\",F,ND\r\n"
    "0,5,7,a,muls_add_kernel_1,AI_CORE,1736413971558972.912\t,2.5,\"2,2\",F,ND,\"2,2\",F,ND\r\n"
    "0,5,8,a,muls_add_kernel_1,AI_CORE,1736413971558972.912\t,3.5,\"2,2\",F,ND,\"2,2\",F,ND\r\n"
    "0,N/A,N/A,h,hcom_allReduce_,COMMUNICATION,1.0,9,N/A,N/A,N/A,N/A,N/A,N/A\r\n"
    "0,N/A,N/A,h,hcom_allReduce_,COMMUNICATION,1.0,9,\"\"\"N/A\"\"\",N/A,N/A,N/A,N/A\r\n"
    "0,6,7,b,,AI_CORE,2.0,1,\"1\",F,ND,\"1\",F,ND\r\n"
    "0,7,7,c,Cast,AI_CORE,3.0,N/A,\"1\",F,ND,\"1\",F,ND\r\n"
    "0,8,7,\"multi\nline\",Cast,AI_CORE,4.0,1.5,\"1\",F,ND,\"1\",F\r\n"
    "0,9,7,d,Cast,AI_CORE,5.0,2.5,\"1\",F,ND,\"1\",F,ND");
  ps_profile_counts c;
  ps_profile *p = imported(path, &c);
  assert_int_equal(c.rows, 9);
  assert_int_equal(c.duplicates, 1);
  assert_int_equal(c.na_shapes, 2);
  assert_int_equal(c.no_type, 1);
  assert_int_equal(c.bad_duration, 1);
  assert_int_equal(c.used, 4);
  assert_int_equal(ps_profile_ngroups(p), 2);
  ps_profile_group_info g;
  ps_profile_group(p, 0, 1, &g);
  assert_string_equal(g.cells[PS_PC_TYPE], "muls_add_kernel");
  assert_int_equal(g.count, 2);
  assert_int_equal(g.first_start_ns, INT64_C(1736413971558972912));
  ps_profile_group(p, 1, 1, &g);
  assert_string_equal(g.cells[PS_PC_TYPE], "Cast");
  assert_int_equal(g.count, 2);
  assert_string_equal(g.cells[PS_PC_OUT_FORMATS], "ND");  /* first non-empty */
  /* the same file again: duplicates are per file, so all of its rows count again */
  char err[512];
  assert_int_equal(ps_profile_add_file(p, path, &c, NULL, 0, NULL, NULL, err, sizeof err), 0);
  assert_int_equal(c.duplicates, 1);
  assert_int_equal(ps_profile_totals(p)->used, 8);
  ps_profile_free(p);
}

/* Issue 10 item 1: rows group by what the export wrote (type, shapes, dtypes, formats), not
 * by the write-back signature, which ignores a MatMulV2's bias slot. Durations of the real
 * msinsight level1 export. */
static void test_distinct_kernels(void **state) {
  (void)state;
  const char *path = write_file("distinct.csv",
    HEADER_KD
    "1,1,1,2,n,MatMulV2,dynamic,AI_CORE,1,114.922,\"\"\"32,4096;4096,4096;4096\"\"\",FLOAT;FLOAT;FLOAT,FORMAT_ND;FORMAT_ND;FORMAT_ND,\"\"\"32,4096\"\"\",FLOAT,FORMAT_ND,1,1\n"
    "1,1,2,2,n,MatMulV2,dynamic,AI_CORE,2,45.921,\"\"\"32,4096;4096,4096\"\"\",FLOAT;FLOAT,FORMAT_ND;FORMAT_ND,\"\"\"32,4096\"\"\",FLOAT,FORMAT_ND,1,1\n"
    /* one Cast shape, two dtype pairs: two kernels */
    "1,1,3,2,n,Cast,dynamic,AI_VECTOR_CORE,3,2,\"8,8\",BOOL,ND,\"8,8\",FLOAT,ND,1,1\n"
    "1,1,4,2,n,Cast,dynamic,AI_VECTOR_CORE,4,4,\"8,8\",INT64,ND,\"8,8\",INT32,ND,1,1\n"
    /* the first Cast again, written with quotes and spaces: the same kernel */
    "1,1,5,2,n,Cast,dynamic,AI_VECTOR_CORE,5,6,\" \"\"8,8\"\" \",\" BOOL\",ND ,\"\"\"8,8\"\"\",FLOAT,ND,1,1\n"
    /* another input format, another output dtype, a trailing empty slot: three more */
    "1,1,6,2,n,Cast,dynamic,AI_VECTOR_CORE,6,8,\"8,8\",BOOL,FRACTAL_NZ,\"8,8\",FLOAT,ND,1,1\n"
    "1,1,7,2,n,Cast,dynamic,AI_VECTOR_CORE,7,10,\"8,8\",BOOL,ND,\"8,8\",FLOAT16,ND,1,1\n"
    "1,1,8,2,n,Cast,dynamic,AI_VECTOR_CORE,8,12,\"8,8;\",BOOL,ND,\"8,8\",FLOAT,ND,1,1\n");
  ps_profile_counts c;
  ps_profile *p = imported(path, &c);
  assert_int_equal(c.used, 8);
  assert_int_equal(ps_profile_ngroups(p), 7);
  ps_profile_group_info g;
  char b[64];
  ps_profile_group(p, 0, 1, &g);
  assert_string_equal(g.cells[PS_PC_IN_SHAPES], "\"32,4096;4096,4096;4096\"");
  assert_int_equal(g.count, 1);
  fmt6(b, g.mean), assert_string_equal(b, "114.922000");
  ps_profile_group(p, 1, 1, &g);
  assert_string_equal(g.cells[PS_PC_IN_SHAPES], "\"32,4096;4096,4096\"");
  assert_string_equal(g.cells[PS_PC_IN_DTYPES], "FLOAT;FLOAT");
  fmt6(b, g.mean), assert_string_equal(b, "45.921000");
  ps_profile_group(p, 2, 1, &g);
  assert_string_equal(g.cells[PS_PC_IN_DTYPES], "BOOL");
  assert_int_equal(g.count, 2);
  fmt6(b, g.mean), assert_string_equal(b, "4.000000");
  ps_profile_group(p, 3, 1, &g);
  assert_string_equal(g.cells[PS_PC_IN_DTYPES], "INT64");
  fmt6(b, g.mean), assert_string_equal(b, "4.000000");
  for (size_t i = 4; i < 7; i++) {
    ps_profile_group(p, i, 1, &g);
    assert_int_equal(g.count, 1);
  }
  ps_profile_free(p);
}

/* The key text: the canonical type and the five cells, each stripped of whitespace and
 * surrounding quotes, nothing else changed. */
static void test_import_key(void **state) {
  (void)state;
  ps_import_key *k = ps_import_key_new();
  assert_non_null(k);
  const char *a[5] = {" \"32,4096;4096,4096;4096\" ", "FLOAT;FLOAT;FLOAT", "ND;ND;ND", "\"\"\"32,4096\"\"\"", "FLOAT "};
  size_t la[5], n;
  for (int i = 0; i < 5; i++) la[i] = strlen(a[i]);
  uint64_t h1[2], h2[2];
  const char *key = ps_import_key_build(k, "MatMulV2", 8, a, la, &n, h1);
  assert_non_null(key);
  assert_int_equal(n, strlen(key));
  assert_string_equal(key, "MatMulV2\x1f" "32,4096;4096,4096;4096\x1f" "FLOAT;FLOAT;FLOAT\x1f"
                           "ND;ND;ND\x1f" "32,4096\x1f" "FLOAT");
  /* without the bias slot: another key */
  const char *b[5] = {"32,4096;4096,4096", "FLOAT;FLOAT", "ND;ND", "32,4096", "FLOAT"};
  size_t lb[5];
  for (int i = 0; i < 5; i++) lb[i] = strlen(b[i]);
  key = ps_import_key_build(k, "MatMulV2", 8, b, lb, &n, h2);
  assert_string_equal(key, "MatMulV2\x1f" "32,4096;4096,4096\x1f" "FLOAT;FLOAT\x1f" "ND;ND\x1f"
                           "32,4096\x1f" "FLOAT");
  assert_false(h1[0] == h2[0] && h1[1] == h2[1]);
  /* cells need not be NUL-terminated; the same text gives the same hash */
  const char *c[5] = {"32,4096;4096,4096xx", "FLOAT;FLOAT", "ND;ND", "32,4096", "FLOAT"};
  key = ps_import_key_build(k, "MatMulV2", 8, c, lb, &n, h1);
  assert_string_equal(key, "MatMulV2\x1f" "32,4096;4096,4096\x1f" "FLOAT;FLOAT\x1f" "ND;ND\x1f"
                           "32,4096\x1f" "FLOAT");
  assert_true(h1[0] == h2[0] && h1[1] == h2[1]);
  /* empty cells keep their place */
  const char *e[5] = {"4", "", "", "", ""};
  size_t le[5] = {1, 0, 0, 0, 0};
  key = ps_import_key_build(k, "Add", 3, e, le, &n, h1);
  assert_memory_equal(key, "Add\x1f" "4\x1f\x1f\x1f\x1f", 9);
  assert_int_equal(n, 9);
  ps_import_key_free(k);
}

static void test_missing_columns(void **state) {
  (void)state;
  const char *path = write_file("level0.csv",
    "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim\n"
    "1,a,N/A,N/A,1.0,2.0,0,1\n");
  ps_profile *p = ps_profile_new();
  char err[1024];
  assert_int_equal(ps_profile_add_file(p, path, NULL, NULL, 0, NULL, NULL, err, sizeof err), -1);
  assert_non_null(strstr(err, "level0.csv: missing columns: Input Data Types, Input Formats, "
                              "Input Shapes, Output Data Types, Output Formats, Output Shapes"));
  assert_int_equal(ps_profile_ngroups(p), 0);
  ps_profile_free(p);
}

static void test_fia_ordinals(void **state) {
  (void)state;
  const char *path = write_file("fia.csv",
    HEADER_KD
    "1,1,1,2,n,FusedInferAttentionScore,dynamic,MIX_AIC,1,5,N/A,A,ND,N/A,A,ND,1,1\n"
    "1,1,2,2,n,FusedInferAttentionScore,dynamic,MIX_AIC,2,5,\"1,2\",A,ND,\"1,2\",A,ND,1,1\n"
    "1,1,3,2,n,FusedInferAttentionScore,dynamic,MIX_AIC,3,5,\"1,2\",A,ND,\"1,2\",A,ND,1,1\n"
    "1,1,4,2,n,FusedInferAttentionScore,dynamic,MIX_AIC,4,5,\"1,3\",A,ND,\"1,3\",A,ND,1,1\n");
  ps_profile_counts c;
  ps_profile *p = imported(path, &c);
  assert_int_equal(c.fia_rows, 4);
  ps_profile_group_info g;
  ps_profile_group(p, 0, 1, &g);
  assert_int_equal(g.fia_file, 0);
  assert_int_equal(g.fia_ordinal, 1);
  ps_profile_group(p, 1, 1, &g);
  assert_int_equal(g.fia_ordinal, 3);
  ps_profile_free(p);
}

static void test_helpers(void **state) {
  (void)state;
  int64_t ns;
  assert_int_equal(ps_num_us_to_ns("1764246877073569.640", 20, &ns), 0);
  assert_int_equal(ns, INT64_C(1764246877073569640));
  assert_int_equal(ps_num_us_to_ns(" 12\t", 4, &ns), 0);
  assert_int_equal(ns, 12000);
  assert_int_equal(ps_num_us_to_ns("1.23456", 7, &ns), 0);
  assert_int_equal(ns, 1235);
  assert_int_equal(ps_num_us_to_ns("N/A", 3, &ns), -1);
  assert_int_equal(ps_num_us_to_ns("", 0, &ns), -1);
  size_t len = 31;
  assert_string_equal(ps_profile_kernel_type("split_qkv_rmsnorm_rope_kernel_0", &len),
                      "split_qkv_rmsnorm_rope_kernel");
  len = 6;
  const char *t = ps_profile_kernel_type(" Add  ", &len);
  assert_int_equal(len, 3);
  assert_memory_equal(t, "Add", 3);
  assert_true(ps_profile_is_na("\"N/A\"", 5));
  assert_true(ps_profile_is_na(" n/a ", 5));
  assert_false(ps_profile_is_na("", 0));
  assert_false(ps_profile_is_na("NA", 2));
  assert_true(ps_profile_is_na(" \"N/A\" ", 7));
  assert_false(ps_profile_is_na("\" N/A\"", 6));
  /* every string of up to six of these bytes: N/A as the rule reads it (trimmed, then its
   * quotes stripped, then "N/A" in either case) */
  static const char abc[] = " \t\"Nn/Aa1";
  for (int n = 0; n <= 6; n++) {
    long total = 1;
    for (int i = 0; i < n; i++) total *= (long)(sizeof abc - 1);
    for (long v = 0; v < total; v++) {
      char b[8];
      long r = v;
      for (int i = 0; i < n; i++) b[i] = abc[r % (long)(sizeof abc - 1)], r /= (long)(sizeof abc - 1);
      const char *q = b;
      size_t m = (size_t)n;
      while (m && (*q == ' ' || *q == '\t')) q++, m--;
      while (m && (q[m - 1] == ' ' || q[m - 1] == '\t')) m--;
      while (m && *q == '"') q++, m--;
      while (m && q[m - 1] == '"') m--;
      int want = m == 3 && (q[0] == 'N' || q[0] == 'n') && q[1] == '/' && (q[2] == 'A' || q[2] == 'a');
      assert_int_equal(ps_profile_is_na(b, (size_t)n), want);
    }
  }
  double d;
  assert_int_equal(ps_num_finite("1.25", 4, &d), 0);
  assert_true(d == 1.25);
  assert_int_equal(ps_num_finite("0.1", 3, &d), 0);
  assert_true(d == 0.1);
  assert_int_equal(ps_num_finite("1e3", 3, &d), 0);
  assert_true(d == 1000);
  assert_int_equal(ps_num_finite("123456789012345678.5", 20, &d), 0);
  assert_true(d == 123456789012345678.5);
  assert_int_equal(ps_num_finite("bad", 3, &d), -1);
  assert_int_equal(ps_num_finite("nan", 3, &d), -1);
  assert_int_equal(ps_num_finite("0x10", 4, &d), -1);
  assert_int_equal(ps_num_finite("", 0, &d), -1);
}

static void test_fmt6(void **state) {
  (void)state;
  char a[600], b[600];
  const double fixed[] = {0.0, -0.0, 0.0078125, 0.0234375, 2.5e-7, 5e-7, 1.5e-6, 123.45, 23.333333333,
                          12.4721912, 1e-9, -1e-9, 8999999999.9999995, 9e9, 1e300, 0.5, 1.0000005,
                          4503599627.3704995, 2.675, 1e-6, 0.0000015, 999999.9999995};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    for (int sgn = 0; sgn < 2; sgn++) {
      double v = sgn ? -fixed[i] : fixed[i];
      snprintf(a, sizeof a, "%.6f", v);
      ps_num_fmt6(b, sizeof b, v);
      assert_string_equal(b, a);
    }
  }
  /* snprintf's contract: the full length returned, the text truncated to the buffer */
  assert_int_equal(ps_num_fmt6(b, 5, -12.5), 10);
  assert_string_equal(b, "-12.");
  assert_int_equal(ps_num_fmt6(b, 1, 3.0), 8);
  assert_string_equal(b, "");
  /* random values over the magnitudes statistics take, and exact binary ties */
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 2000000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double v;
    switch (i % 4) {
    case 0: v = (double)(x >> 11) / 9007199254740992.0 * 1000.0; break;
    case 1: v = ldexp((double)(x >> 11), -(int)(x % 70)); break;
    case 2: v = (double)(x % 100000000) / 1e6 + ((x >> 40) % 2 ? 5e-7 : 0); break;
    default: v = ldexp((double)((x >> 20) | 1), -(int)(x % 40) - 1) / 1e3; break;
    }
    snprintf(a, sizeof a, "%.6f", v);
    ps_num_fmt6(b, sizeof b, v);
    if (strcmp(a, b) != 0) fprintf(stderr, "%.17g: %s vs %s\n", v, a, b);
    assert_string_equal(b, a);
  }
}

/* A file read in N chunks by N threads (2..64, so the chunk starts fall on most byte
 * positions of this small file, inside quoted multi-line cells too) aggregates as one thread
 * does. Durations and counters are binary fractions, so every sum is exact in any order. */
/* The 25 counters side by side in counter order (kernel_details) are read where the record
 * has them; a short row leaves its missing counters out (not the previous row's cells), and a
 * quoted or spaced counter cell reads as its number. */
static void test_counters_side_by_side(void **state) {
  (void)state;
  char text[8192];
  int k = snprintf(text, sizeof text, "Type,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
                   "Output Data Types,Output Formats,Duration(us)");
  for (int m = 0; m < PS_NCOUNTERS; m++) k += snprintf(text + k, sizeof text - (size_t)k, ",%s", ps_counter_columns[m]);
  k += snprintf(text + k, sizeof text - (size_t)k, "\n");
  const char *sig = "Add,\"4,8\",FLOAT,ND,\"4,8\",FLOAT,ND";
  /* row 1: counter m is m + 1; row 2: only 3 counters (a short row); row 3: all 7.5, the
   * first quoted, the second spaced, the third "N/A" */
  k += snprintf(text + k, sizeof text - (size_t)k, "%s,10", sig);
  for (int m = 0; m < PS_NCOUNTERS; m++) k += snprintf(text + k, sizeof text - (size_t)k, ",%d", m + 1);
  k += snprintf(text + k, sizeof text - (size_t)k, "\n%s,20,100,100,100\n%s,30,\"7.5\", 7.5 ,N/A", sig, sig);
  for (int m = 3; m < PS_NCOUNTERS; m++) k += snprintf(text + k, sizeof text - (size_t)k, ",7.5");
  snprintf(text + k, sizeof text - (size_t)k, "\n");
  const char *path = write_file("side_by_side.csv", text);
  ps_profile_counts c;
  ps_profile *p = imported(path, &c);
  assert_int_equal(c.used, 3);
  assert_int_equal(ps_profile_ngroups(p), 1);
  ps_profile_group_info g;
  ps_profile_group(p, 0, 1, &g);
  assert_int_equal(g.count, 3);
  assert_int_equal(g.metric_count[0], 3);
  assert_true(g.metric_mean[0] == (1 + 100 + 7.5) / 3);
  assert_true(g.metric_mean[1] == (2 + 100 + 7.5) / 3);
  assert_int_equal(g.metric_count[2], 2);   /* N/A is no number */
  assert_true(g.metric_mean[2] == (3 + 100) / 2.0);
  for (int m = 3; m < PS_NCOUNTERS; m++) {
    assert_int_equal(g.metric_count[m], 2);  /* row 2 has none */
    assert_true(g.metric_mean[m] == (m + 1 + 7.5) / 2);
  }
  ps_profile_free(p);
}

/* The file's hash a pass took from its blocks (hash_block) is the whole file's XXH3, whatever
 * the threads, blocks, quoted line ends at a block's start guess or rows longer than its
 * window (the pass then takes it from the file once more). */
static void assert_file_hash(const ps_profile *p, const char *path) {
  uint64_t want, got;
  assert_int_equal(ps_sig_hash_file(path, &want), 0);
  assert_int_equal(ps_profile_file_hash(p, 0, &got), 0);
  assert_true(got == want);
}

/* ... and taken from the bytes the pass read (blocks hashed out of turn are read again, the
 * rest of the chain goes on), unless a block's start guess failed. */
static void assert_file_hash_once(const ps_profile *p, const char *path) {
  assert_file_hash(p, path);
  assert_int_equal(ps_profile_hash_rereads(p), 0);
}

static void test_chunks_every_split(void **state) {
  (void)state;
  static char text[16384];
  size_t k = (size_t)snprintf(text, sizeof text, "%s", HEADER_KD);
  static const char *const types[] = {"Add", "Mul", "FusedInferAttentionScore", "MatMulV2"};
  for (int i = 0; i < 48; i++) {
    const char *name = i % 7 == 3 ? "\"multi\nline\n\"\"name\"\"\"" : "n";
    const char *shape = i % 11 == 5 ? "N/A" : i % 3 == 0 ? "\"\"\"4,8\"\"\"" : "\"2,2\"";
    k += (size_t)snprintf(text + k, sizeof text - k,
                          "1,1,%d,2,%s,%s,dynamic,AI_CORE,\"%d.5\t\",%d.25,%s,A,ND,\"%d\",B,ND,%d.5,%s\n",
                          i + 1, name, types[i % 4], 1000 + i * 3, 1 + i % 9, shape, i % 5,
                          i % 13, i % 4 == 1 ? "" : "7.75");
  }
  const char *path = write_file("chunks.csv", text);
  char err[512];
  ps_profile *one = ps_profile_new();
  ps_profile_set_threads(one, 1, 1);
  ps_profile_counts c1, cn;
  assert_int_equal(ps_profile_add_file(one, path, &c1, NULL, 0, NULL, NULL, err, sizeof err), 0);
  assert_int_equal(c1.rows, 48);
  for (int n = 2; n <= 64; n++) {
    ps_profile *p = ps_profile_new();
    ps_profile_set_threads(p, n, 1);
    ps_profile_set_hash(p, 1);
    assert_int_equal(ps_profile_add_file(p, path, &cn, NULL, 0, NULL, NULL, err, sizeof err), 0);
    assert_file_hash_once(p, path);
    assert_memory_equal(&cn, &c1, sizeof cn);
    assert_int_equal(ps_profile_ngroups(p), ps_profile_ngroups(one));
    for (size_t i = 0; i < ps_profile_ngroups(one); i++) {
      ps_profile_group_info a, b;
      ps_profile_group(one, i, 1, &a);
      ps_profile_group(p, i, 1, &b);
      assert_int_equal(a.keylen, b.keylen);
      assert_memory_equal(a.key, b.key, a.keylen);
      for (int c = 0; c < PS_PC_NCELLS; c++) assert_string_equal(a.cells[c], b.cells[c]);
      assert_int_equal(a.count, b.count);
      assert_true(a.mean == b.mean && a.median == b.median && a.std == b.std);
      assert_true(a.min == b.min && a.max == b.max);
      assert_int_equal(a.first_start_ns, b.first_start_ns);
      assert_int_equal(a.last_start_ns, b.last_start_ns);
      assert_int_equal(a.fia_file, b.fia_file);
      assert_int_equal(a.fia_ordinal, b.fia_ordinal);
      for (int m = 0; m < PS_NCOUNTERS; m++) {
        assert_int_equal(a.metric_count[m], b.metric_count[m]);
        assert_true(a.metric_count[m] == 0 || a.metric_mean[m] == b.metric_mean[m]);
      }
    }
    ps_profile_free(p);
  }
  ps_profile_free(one);
}

/* Fills text with a kernel_details file whose sums are not exact (3-decimal values, as the
 * profilers write them), 4 groups, and every 9th row written twice (an exact duplicate right
 * after its twin, so some block boundary falls between the two). Returns its length. */
static size_t inexact_file(char *text, size_t cap, int rows) {
  size_t k = (size_t)snprintf(text, cap, "%s", HEADER_KD);
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < rows; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    char row[256];
    snprintf(row, sizeof row, "1,1,%d,2,n,%s,dynamic,AI_CORE,\"%d.%03d\t\",%d.%03d,\"%d,8\",A,ND,\"%d\",B,ND,%d.%03d,%d.%03d\n",
             i + 1, i % 2 ? "Add" : "Mul", 1000 + i * 3, (int)(x % 1000), (int)(x >> 20) % 500 + 1,
             (int)(x >> 30) % 1000, i % 4, i % 4, (int)(x >> 40) % 300, (int)(x >> 10) % 1000,
             (int)(x >> 45) % 200, (int)(x >> 5) % 1000);
    for (int twice = 0; twice < 1 + (i % 9 == 4); twice++)
      k += (size_t)snprintf(text + k, cap - k, "%s", row);
  }
  return k;
}

static void assert_same_groups(ps_profile *one, ps_profile *p) {
  assert_int_equal(ps_profile_ngroups(p), ps_profile_ngroups(one));
  for (size_t i = 0; i < ps_profile_ngroups(one); i++) {
    ps_profile_group_info a, b;
    ps_profile_group(one, i, 1, &a);
    ps_profile_group(p, i, 1, &b);
    assert_int_equal(a.keylen, b.keylen);
    assert_memory_equal(a.key, b.key, a.keylen);
    assert_int_equal(a.count, b.count);
    /* bit for bit: the sums are added in file order whatever the thread count */
    assert_memory_equal(&a.mean, &b.mean, sizeof a.mean);
    assert_memory_equal(&a.std, &b.std, sizeof a.std);
    assert_memory_equal(a.metric_mean, b.metric_mean, sizeof a.metric_mean);
    assert_int_equal(a.first_start_ns, b.first_start_ns);
    assert_int_equal(a.last_start_ns, b.last_start_ns);
  }
}

/* Any thread count gives one thread's means bit for bit, and catches a duplicate pair that a
 * block boundary splits (both failed before: the chunks' sums were added chunk by chunk, and
 * each chunk had its own duplicate window). */
/* path read by n threads in blocks of block bytes: the counts and groups of one thread, bit
 * for bit (a fresh reference each time: reading the statistics reorders a group's
 * durations). Returns the counts. */
/* long_rows: the file has rows longer than a block's start guess looks (its hash may need a
 * second read); else the hash is taken from the bytes the pass read. */
static ps_profile_counts same_as_one_thread_rows(const char *path, int n, uint64_t block, int long_rows) {
  char err[512];
  ps_profile_counts c1, cn;
  ps_profile *one = ps_profile_new();
  ps_profile_set_threads(one, 1, 1);
  ps_profile_set_hash(one, 1);
  assert_int_equal(ps_profile_add_file(one, path, &c1, NULL, 0, NULL, NULL, err, sizeof err), 0);
  ps_profile *p = ps_profile_new();
  ps_profile_set_threads(p, n, 1);
  ps_profile_set_block(p, block);
  ps_profile_set_hash(p, 1);
  assert_int_equal(ps_profile_add_file(p, path, &cn, NULL, 0, NULL, NULL, err, sizeof err), 0);
  assert_memory_equal(&cn, &c1, sizeof cn);
  assert_same_groups(one, p);
  assert_file_hash_once(one, path);
  if (long_rows) assert_file_hash(p, path);
  else assert_file_hash_once(p, path);
  ps_profile_free(p);
  ps_profile_free(one);
  return c1;
}

static ps_profile_counts same_as_one_thread(const char *path, int n, uint64_t block) {
  return same_as_one_thread_rows(path, n, block, 0);
}

static void test_threads_same_bits(void **state) {
  (void)state;
  static char text[1 << 17];
  inexact_file(text, sizeof text, 1200);
  const char *path = write_file("inexact.csv", text);
  ps_profile_counts c1 = same_as_one_thread(path, 2, 0);
  assert_int_equal(c1.rows, 1200 + 133);
  assert_int_equal(c1.duplicates, 133);
  for (int n = 3; n <= 64; n++) same_as_one_thread(path, n, 0);
  /* many rounds (small blocks): groups of earlier rounds are found and updated in place */
  for (int n = 1; n <= 4; n++)
    for (uint64_t block = 97; block < 20000; block = block * 3 + 1) same_as_one_thread(path, n, block);
}

/* Two files into one aggregate: the second file's rows that hit groups of the first update
 * them (p's, read by the shares) and its new groups join after them, in first-row order: one
 * thread's groups and means, bit for bit, for any thread count and block size. */
static void test_threads_second_file(void **state) {
  (void)state;
  static char a[1 << 17], b[1 << 17];
  inexact_file(a, sizeof a, 500);
  inexact_file(b, sizeof b, 900);
  /* the second file's rows of shape "2,8" and "3,8" are new groups there */
  for (char *m = b; (m = strstr(m, ",8\",")) != NULL; m++)
    if (m[-1] == '2' || m[-1] == '3') m[1] = '9';
  char pa[2048], pb[2048], err[512];
  snprintf(pa, sizeof pa, "%s", write_file("second_a.csv", a));
  snprintf(pb, sizeof pb, "%s", write_file("second_b.csv", b));
  for (int n = 2; n <= 5; n++)
    for (uint64_t block = 0; block < 20000; block = block * 3 + 301) {
      ps_profile *one = ps_profile_new(), *p = ps_profile_new();
      ps_profile_set_threads(one, 1, 1);
      ps_profile_set_threads(p, n, 1);
      ps_profile_set_block(p, block);
      for (int f = 0; f < 2; f++) {
        assert_int_equal(ps_profile_add_file(one, f ? pb : pa, NULL, NULL, 0, NULL, NULL, err, sizeof err), 0);
        assert_int_equal(ps_profile_add_file(p, f ? pb : pa, NULL, NULL, 0, NULL, NULL, err, sizeof err), 0);
      }
      assert_int_equal(ps_profile_ngroups(one), 6);
      assert_same_groups(one, p);
      ps_profile_free(p);
      ps_profile_free(one);
    }
}

/* Rows longer than the page a block's start is looked for in first (and one longer than the
 * whole look-ahead): blocks that start inside them find the next line start further on, or
 * leave it to the serial step; the result is one thread's, bit for bit. */
static void test_threads_long_rows(void **state) {
  (void)state;
  size_t cap = 1 << 19, k = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  k += (size_t)snprintf(text + k, cap - k, "%s", HEADER_KD);
  for (int i = 0; i < 300; i++) {
    size_t name = i % 40 == 7 ? 9000 : i == 150 ? 70000 : 3;
    k += (size_t)snprintf(text + k, cap - k, "1,1,%d,2,", i);
    memset(text + k, 'x', name), k += name;
    k += (size_t)snprintf(text + k, cap - k, ",Add,dynamic,AI_CORE,%d.5,%d.25,\"\"\"%d,8\"\"\",FLOAT,ND,"
                          "\"\"\"4,8\"\"\",FLOAT,ND,%d,7\n", 1000 + i, i % 7 + 1, i % 5 + 1, i);
  }
  text[k] = 0;
  const char *path = write_file("long_rows.csv", text);
  free(text);
  for (int n = 2; n <= 3; n++)
    for (uint64_t block = 1000; block < 200000; block = block * 3 + 7)
      assert_int_equal(same_as_one_thread_rows(path, n, block, 1).used, 300);
}

/* A data error in a file read by several threads: the message and line of one thread, and
 * the rows before it aggregated as one thread aggregates them. */
static void test_threads_error_line(void **state) {
  (void)state;
  static char text[1 << 17];
  size_t k = inexact_file(text, sizeof text, 700);
  snprintf(text + k, sizeof text - k, "1,1,9999,2,n,Add,dynamic,AI_CORE,1.5,2.5,\"4,8\",A,ND,\"open,B\n1,2\n");
  const char *path = write_file("late_error.csv", text);
  char err1[512], errn[512];
  ps_profile *one = ps_profile_new();
  ps_profile_set_threads(one, 1, 1);
  ps_profile_counts c1, cn;
  assert_int_equal(ps_profile_add_file(one, path, &c1, NULL, 0, NULL, NULL, err1, sizeof err1), -1);
  assert_non_null(strstr(err1, "late_error.csv:780: unterminated quoted field"));
  ps_profile_free(one);
  for (int n = 2; n <= 24; n++) {
    one = ps_profile_new();
    ps_profile_set_threads(one, 1, 1);
    assert_int_equal(ps_profile_add_file(one, path, &c1, NULL, 0, NULL, NULL, err1, sizeof err1), -1);
    ps_profile *p = ps_profile_new();
    ps_profile_set_threads(p, n, 1);
    assert_int_equal(ps_profile_add_file(p, path, &cn, NULL, 0, NULL, NULL, errn, sizeof errn), -1);
    assert_string_equal(errn, err1);
    assert_memory_equal(&cn, &c1, sizeof cn);
    assert_same_groups(one, p);
    ps_profile_free(p);
    ps_profile_free(one);
  }
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median is the sorted list's middle (or the mean of its two middles) for groups of every
 * size from 1 to 160, with many ties, runs in order, reversed and random, and the std is still
 * taken over the durations in row order (it is computed before the selection reorders them). */
static void test_median_any_order(void **state) {
  (void)state;
  enum { NG = 160 };
  char path[2048];
  FILE *f = new_kd("median.csv", path, sizeof path);
  static double durs[NG][NG];
  unsigned seed = 12345;
  for (int g = 0; g < NG; g++)
    for (int k = 0; k <= g; k++) {
      seed = seed * 1103515245u + 12345u;
      int kind = g % 4;
      double d = kind == 0 ? (double)(k + 1) : kind == 1 ? (double)(g - k + 1)
               : kind == 2 ? (double)((seed >> 16) % 5 + 1) : (double)((seed >> 8) % 100000) / 1000.0;
      durs[g][k] = d;
    }
  /* rows interleaved over the groups, so each group's durations arrive in its own order */
  for (int k = 0; k < NG; k++)
    for (int g = k; g < NG; g++)
      fprintf(f, "1,1,%d,2,n,Add,dynamic,AI_CORE,,%.3f,\"%d,8\",FLOAT,ND,\"%d,8\",FLOAT,ND,1,1\n",
              k, durs[g][k], g + 1, g + 1);
  fclose(f);
  ps_profile *p = ps_profile_new();
  ps_profile_counts c;
  char absent[512], err[512];
  assert_int_equal(ps_profile_add_file(p, path, &c, absent, sizeof absent, NULL, NULL, err, sizeof err), 0);
  assert_int_equal(ps_profile_ngroups(p), NG);
  for (int g = 0; g < NG; g++) {
    ps_profile_group_info info;
    assert_int_equal(ps_profile_group(p, (size_t)g, 1, &info), 0);
    int n = g + 1;
    assert_int_equal(info.count, n);
    double sum = 0, ss = 0, sorted[NG];
    for (int k = 0; k < n; k++) sum += durs[g][k];
    double mean = sum / n;
    for (int k = 0; k < n; k++) ss += (durs[g][k] - mean) * (durs[g][k] - mean), sorted[k] = durs[g][k];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_dbl);
    double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    assert_true(info.median == median);
    assert_true(info.std == sqrt(ss / n));
    assert_true(info.min == sorted[0] && info.max == sorted[n - 1]);
  }
  ps_profile_free(p);
}

/* Checks group i of p against the durations d[0..n): count, mean, median, std, min, max. */
static void assert_stats(ps_profile *p, size_t i, const double *d, int n) {
  ps_profile_group_info info;
  assert_int_equal(ps_profile_group(p, i, 1, &info), 0);
  assert_int_equal(info.count, n);
  double sum = 0, ss = 0;
  for (int k = 0; k < n; k++) sum += d[k];
  double mean = sum / n;
  for (int k = 0; k < n; k++) ss += (d[k] - mean) * (d[k] - mean);
  double *sorted = malloc((size_t)n * sizeof *sorted);
  assert_non_null(sorted);
  memcpy(sorted, d, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_dbl);
  assert_true(info.mean == mean);
  assert_true(info.median == (n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2));
  assert_true(info.std == sqrt(ss / n));
  assert_true(info.min == sorted[0] && info.max == sorted[n - 1]);
  free(sorted);
}

/* A group's durations outgrow the table's chunks (past 2048 a block of their own, then grown
 * in place) across two files and two threads; a small group beside it stays in the chunks. */
static void test_many_durations(void **state) {
  (void)state;
  enum { BIG1 = 5000, BIG2 = 1500, SMALL = 7 };
  static double big[BIG1 + BIG2], small[SMALL];
  char path[2][2048];
  unsigned seed = 777;
  int nb = 0, ns = 0;
  for (int f = 0; f < 2; f++) {
    FILE *out = new_kd(f ? "many1.csv" : "many0.csv", path[f], sizeof path[f]);
    for (int k = 0; k < (f ? BIG2 : BIG1); k++) {
      seed = seed * 1103515245u + 12345u;
      char text[32];   /* the value is the text's (the parser's is strtod's) */
      snprintf(text, sizeof text, "%u.%03u", (seed >> 8) % 1000, seed % 1000 + 1);
      big[nb] = strtod(text, NULL);
      fprintf(out, "1,1,%d,2,n,MatMul,dynamic,AI_CORE,,%s,\"64,64\",FLOAT,ND,\"64,64\",FLOAT,ND,1,1\n", nb, text);
      nb++;
      if (f == 0 && k % 700 == 0 && ns < SMALL) {
        small[ns] = ns + 1.5;
        fprintf(out, "1,1,%d,2,n,Add,dynamic,AI_CORE,,%.3f,\"8\",FLOAT,ND,\"8\",FLOAT,ND,1,1\n", 100000 + ns,
                small[ns]);
        ns++;
      }
    }
    fclose(out);
  }
  assert_int_equal(ns, SMALL);
  /* one file, then both (the statistics reorder a group's durations: each profile asked once) */
  for (int files = 1; files <= 2; files++) {
    ps_profile *p = ps_profile_new();
    assert_non_null(p);
    ps_profile_set_threads(p, 2, 1);
    ps_profile_set_block(p, 4096);
    char err[512];
    for (int f = 0; f < files; f++)
      assert_int_equal(ps_profile_add_file(p, path[f], NULL, NULL, 0, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(ps_profile_ngroups(p), 2);
    assert_stats(p, 0, big, files == 1 ? BIG1 : BIG1 + BIG2);
    assert_stats(p, 1, small, SMALL);
    ps_profile_free(p);
  }
}

/* A table whose keys, cells and durations outgrow its small string chunks (the big ones are
 * mappings): every group keeps its cells and statistics. */
static void test_many_groups(void **state) {
  (void)state;
  enum { NG = 20000 };   /* two shares of over 1 MB each */
  char path[2048];
  FILE *f = new_kd("groups.csv", path, sizeof path);
  for (int r = 0; r < 2; r++)
    for (int g = 0; g < NG; g++)
      fprintf(f, "1,1,%d,2,n,Add,dynamic,AI_VECTOR_CORE,,%d.5,\"%d,4096,7168\",DT_BF16;DT_BF16,ND;ND,\"%d,4096\",DT_BF16,ND,1,1\n",
              r * NG + g, g + r + 1, g + 1, g + 1);
  fclose(f);
  ps_profile *p = ps_profile_new();
  assert_non_null(p);
  ps_profile_set_threads(p, 2, 1);
  char err[512];
  assert_int_equal(ps_profile_add_file(p, path, NULL, NULL, 0, NULL, NULL, err, sizeof err), 0);
  assert_int_equal(ps_profile_ngroups(p), NG);
  for (int g = 0; g < NG; g += 997) {
    ps_profile_group_info info;
    assert_int_equal(ps_profile_group(p, (size_t)g, 1, &info), 0);
    char want[64];
    snprintf(want, sizeof want, "%d,4096,7168", g + 1);
    assert_string_equal(info.cells[PS_PC_IN_SHAPES], want);
    assert_string_equal(info.cells[PS_PC_OUT_DTYPES], "DT_BF16");
    assert_int_equal(info.count, 2);
    assert_true(info.mean == g + 2.0);
  }
  ps_profile_free(p);
}

/* ps_profile_rows_text: the same text for any thread count (rows split over 4 threads here),
 * a group asked for twice gets the same row twice, an index out of range is refused. */
static void test_rows_text_threads(void **state) {
  (void)state;
  enum { NG = 3000 };
  char path[2048];
  FILE *f = new_kd("rows_text.csv", path, sizeof path);
  for (int k = 0; k < 4; k++)
    for (int g = 0; g < NG; g++)
      fprintf(f, "1,1,%d,2,n,%s,%s,AI_CORE,,%d.%03d,\"%d,8\",FLOAT,ND,\"%d,8\",FLOAT,ND,%d.5,%s\n",
              k, g % 3 ? "Add" : "Mul", g % 7 ? "dyn" : "\"dyn,x\"", (g * 7 + k * 13) % 97 + 1, k * 111,
              g + 1, g + 1, g, k % 2 ? "N/A" : "3");
  fclose(f);
  char *text[2];
  size_t *off[2], idx[NG], bad = 0;
  for (int run = 0; run < 2; run++) {
    ps_profile *p = ps_profile_new();
    ps_profile_set_threads(p, run ? 4 : 1, 0);
    ps_profile_counts c;
    char absent[512], err[512];
    assert_int_equal(ps_profile_add_file(p, path, &c, absent, sizeof absent, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(ps_profile_ngroups(p), NG);
    for (size_t k = 0; k < NG; k++) idx[k] = (k * 17) % NG;   /* every group, out of order */
    off[run] = malloc((NG + 1) * sizeof **off);
    assert_int_equal(ps_profile_rows_text(p, idx, NG, &text[run], off[run], &bad), 0);
    size_t again[3] = {5, 5, 6}, aoff[4];
    char *t2;
    assert_int_equal(ps_profile_rows_text(p, again, 3, &t2, aoff, &bad), 0);
    assert_int_equal(aoff[1] - aoff[0], aoff[2] - aoff[1]);
    assert_memory_equal(t2, t2 + aoff[1], aoff[1]);
    free(t2);
    size_t out[1] = {NG};
    assert_int_equal(ps_profile_rows_text(p, out, 1, &t2, aoff, &bad), -1);
    assert_int_equal(bad, NG);
    assert_int_equal(ps_profile_rows_text(p, idx, 0, &t2, aoff, &bad), 0);
    assert_int_equal(aoff[0], 0);
    free(t2);
    ps_profile_free(p);
  }
  assert_int_equal(off[0][NG], off[1][NG]);
  assert_memory_equal(off[0], off[1], (NG + 1) * sizeof **off);
  assert_memory_equal(text[0], text[1], off[0][NG]);
  /* group 0 (Mul, "dyn,x" quoted): durations 1, 14.111, 27.222, 40.333 */
  size_t r0 = 0;
  while (idx[r0] != 0) r0++;
  const char *want = "\"dyn,x\",AI_CORE,\"1,8\",FLOAT,ND,\"1,8\",FLOAT,ND,20.666500,20.666500,";
  assert_memory_equal(text[0] + off[0][r0], want, strlen(want));
  for (int run = 0; run < 2; run++) free(text[run]), free(off[run]);
}

/* The lists' text of ps_profile_render_take (pieces joined) into a malloc'd buffer. */
static char *taken(ps_profile_render *r, size_t i, size_t *len) {
  size_t np = ps_profile_render_pieces(r, i);
  char *texts[16] = {0};
  size_t lens[16] = {0};
  assert_true(np <= 16);
  assert_int_equal(ps_profile_render_take(r, i, texts, lens, NULL, NULL), 0);
  char *all = malloc(1 << 22);
  assert_non_null(all);
  *len = 0;
  for (size_t k = 0; k < np; k++) memcpy(all + *len, texts[k], lens[k]), *len += lens[k], free(texts[k]);
  return all;
}

/* ps_profile_render: each list's rows as ps_profile_rows_pieces gives them, for any thread
 * count and order of the takes (workers render ahead while the taker renders what is left);
 * a list is taken once; an index out of range and a long line end are refused; stopped with
 * lists not taken, or freed so, nothing leaks. Run under ThreadSanitizer by ./setup.sh tsan. */
static void test_render_ahead(void **state) {
  (void)state;
  enum { NG = 3000 };
  char path[2048];
  snprintf(path, sizeof path, "%s/rows_text.csv", dir);   /* test_rows_text_threads's file */
  size_t idx[NG], start[4] = {0, 1300, 1300, NG}, bad = 0;
  for (size_t k = 0; k < NG; k++) idx[k] = (k * 17) % NG;
  char *want[3] = {0};
  size_t wlen[3] = {0};
  ps_profile_counts c;
  char absent[512], err[512];
  ps_profile *ref = ps_profile_new();   /* the rows as one call a list renders them */
  assert_int_equal(ps_profile_add_file(ref, path, &c, absent, sizeof absent, NULL, NULL, err, sizeof err), 0);
  for (int i = 0; i < 3; i++) {
    char *texts[PS_PROFILE_MAX_PIECES];
    size_t lens[PS_PROFILE_MAX_PIECES];
    int r = ps_profile_rows_pieces(ref, idx + start[i], start[i + 1] - start[i], "\r\n", 2, texts, lens, &bad);
    assert_true(r >= 1);
    want[i] = malloc(1 << 22);
    for (int k = 0; k < r; k++) {
      if (lens[k]) memcpy(want[i] + wlen[i], texts[k], lens[k]);
      wlen[i] += lens[k];
      free(texts[k]);
    }
  }
  ps_profile_free(ref);
  for (int threads = 1; threads <= 8; threads *= 2) {
    ps_profile *p = ps_profile_new();
    ps_profile_set_threads(p, threads, 0);
    assert_int_equal(ps_profile_add_file(p, path, &c, absent, sizeof absent, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(ps_profile_ngroups(p), NG);
    int e;
    ps_profile_render *r = ps_profile_render_start(p, idx, start, 3, NULL, "\r\n", 2, &e, &bad);
    assert_non_null(r);
    assert_int_equal(ps_profile_render_pieces(r, 0), 3);
    assert_int_equal(ps_profile_render_pieces(r, 1), 0);
    for (int k = 0; k < 3; k++) {
      size_t i = threads == 4 ? (size_t)(2 - k) : (size_t)k, len;
      char *got = taken(r, i, &len);
      assert_int_equal(len, wlen[i]);
      assert_memory_equal(got, want[i], len);
      free(got);
    }
    char *t1[4];
    size_t l1[4];
    assert_int_equal(ps_profile_render_take(r, 0, t1, l1, NULL, NULL), -1);   /* taken before */
    assert_int_equal(ps_profile_render_take(r, 3, t1, l1, NULL, NULL), -1);   /* no such list */
    ps_profile_render_free(r);
    /* stopped with nothing taken, then freed: the rendered items are freed with it */
    r = ps_profile_render_start(p, idx, start, 3, NULL, "\n", 1, &e, &bad);
    assert_non_null(r);
    ps_profile_render_stop(r);
    assert_int_equal(ps_profile_render_take(r, 0, t1, l1, NULL, NULL), -1);
    ps_profile_render_free(r);
    size_t out[2] = {1, NG}, s2[2] = {0, 2};
    assert_null(ps_profile_render_start(p, out, s2, 1, NULL, "\n", 1, &e, &bad));
    assert_int_equal(e, -1);
    assert_int_equal(bad, NG);
    assert_null(ps_profile_render_start(p, idx, start, 3, NULL, "123456789", 9, &e, &bad));
    assert_int_equal(e, -3);
    ps_profile_free(p);
  }
  for (int i = 0; i < 3; i++) free(want[i]);
}

/* At the process's end (lifetime.h) a profile is freed without its groups' durations one by
 * one: the flag reads back set (never under AddressSanitizer, whose leak check this test then
 * runs as for any other), and a profile with groups frees all the same. Last: the flag stays. */
static void test_free_at_exit(void **state) {
  (void)state;
  const char *path = write_file("exit.csv", HEADER_KD
    "1,1,1,2,n,Cast,dynamic,AI_CORE,1,2,\"8,8\",BOOL,ND,\"8,8\",FLOAT,ND,1,1\n"
    "1,1,2,2,n,Cast,dynamic,AI_CORE,2,4,\"8,8\",INT64,ND,\"8,8\",INT32,ND,1,1\n");
  ps_profile_counts c;
  ps_profile *p = imported(path, &c);
  assert_int_equal(ps_profile_ngroups(p), 2);
  assert_int_equal(ps_exiting(), 0);
  ps_set_exiting();
#if defined(__SANITIZE_ADDRESS__)
  assert_int_equal(ps_exiting(), 0);
#else
  assert_int_equal(ps_exiting(), 1);
#endif
  ps_profile_free(p);
}

int main(void) {
  const char *tmp = getenv("PERFSCRIPT_TEST_TMP");
  snprintf(dir, sizeof dir, "%s/profile_c", tmp ? tmp : "/tmp");
  mkdir(dir, 0777);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_statistics),
    cmocka_unit_test(test_constant_std_is_zero),
    cmocka_unit_test(test_median_any_order),
    cmocka_unit_test(test_many_durations),
    cmocka_unit_test(test_many_groups),
    cmocka_unit_test(test_rows_text_threads),
    cmocka_unit_test(test_render_ahead),
    cmocka_unit_test(test_skips_and_duplicates),
    cmocka_unit_test(test_distinct_kernels),
    cmocka_unit_test(test_import_key),
    cmocka_unit_test(test_missing_columns),
    cmocka_unit_test(test_fia_ordinals),
    cmocka_unit_test(test_helpers),
    cmocka_unit_test(test_fmt6),
    cmocka_unit_test(test_counters_side_by_side),
    cmocka_unit_test(test_chunks_every_split),
    cmocka_unit_test(test_threads_same_bits),
    cmocka_unit_test(test_threads_long_rows),
    cmocka_unit_test(test_threads_second_file),
    cmocka_unit_test(test_threads_error_line),
    cmocka_unit_test(test_free_at_exit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
