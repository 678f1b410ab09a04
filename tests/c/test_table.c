/* The operator table (interned cells, plain columns, indexes) and the consumer-view keys. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lookup_key.h"
#include "table.h"
#include "testutil.h"

static const char *shapes(const char *cell, const char *formats, int n, unsigned flags) {
  static char out[4096];
  char err[128];
  long k = ps_lookup_key_shapes(cell, strlen(cell), formats, formats ? strlen(formats) : 0, n, flags,
                           out, sizeof out, err, sizeof err);
  return k < 0 ? "ERR" : out;
}

static void test_shape_keys(void **state) {
  (void)state;
  /* pandas leaves the literal quotes of """...""": they are stripped, empty slots dropped */
  assert_string_equal(shapes("\"128,4,128;12307,128,128;;2048,2048;\"", NULL, 0, 0),
                      "128,4,128;12307,128,128;2048,2048");
  assert_string_equal(shapes(" 1 , 2 ;();3", NULL, 0, 0), "1,2;();3");
  assert_string_equal(shapes("1,128,4096;4096", NULL, 0, PS_LOOKUP_KEY_STRIP1), "128,4096;4096");
  assert_string_equal(shapes("1,128;1", NULL, 0, PS_LOOKUP_KEY_STRIP1), "128;1");
  assert_string_equal(shapes("a;b;c", NULL, 2, 0), "ERR");
  assert_string_equal(shapes("1,2;3,4;5", NULL, 2, 0), "1,2;3,4");
  /* FRACTAL_NZ restore: BF16 [320,48,16,16] -> (5120,768); INT8 [48,448,16,32] -> (1536,7168) */
  assert_string_equal(shapes("8,5120;320,48,16,16", "ND;FRACTAL_NZ", 0, 0), "8,5120;5120,768");
  assert_string_equal(shapes("64,48,448,16,32", "FRACTAL_NZ", 0, 0), "64,1536,7168");
  assert_string_equal(shapes("48,16,16", "FRACTAL_NZ", 0, 0), "48,16,16");
  assert_string_equal(shapes("N/A", NULL, 0, 0), "ERR");
  assert_string_equal(shapes("nan", NULL, 0, 0), "ERR");
  assert_string_equal(shapes("1.5,2", NULL, 0, 0), "ERR");
  assert_string_equal(shapes("", NULL, 0, 0), "");
}

/* Cells beyond the key's PS_SHAPE_MAX_SLOTS slots, and a FRACTAL_NZ restore that leaves int64,
 * are errors: they were cut at 64 (two cells differing after slot 64 shared one key) and
 * overflowed (UBSan). */
static void test_key_limits(void **state) {
  (void)state;
  char a[2 * PS_SHAPE_MAX_SLOTS + 8] = "", b[sizeof a];
  for (int i = 0; i < PS_SHAPE_MAX_SLOTS; i++) strcat(a, "1;");
  assert_string_not_equal(shapes(a, NULL, 0, 0), "ERR");   /* the limit: a key */
  snprintf(b, sizeof b, "%s2", a);
  strcat(a, "3");
  assert_string_equal(shapes(a, NULL, 0, 0), "ERR");       /* one more: not the key of the rest */
  assert_string_equal(shapes(b, NULL, 0, 0), "ERR");
  char out[4096], err[128];
  assert_int_equal(ps_lookup_key_shapes(a, strlen(a), NULL, 0, 0, 0, out, sizeof out, err, sizeof err), -1);
  snprintf(b, sizeof b, "more than %d slots", PS_SHAPE_MAX_SLOTS);
  assert_string_equal(err, b);
  assert_int_equal(ps_lookup_key_list(a, strlen(a), 0, 0, out, sizeof out), -1);
  assert_int_equal(ps_lookup_key_list(a, strlen(a), 2, 0, out, sizeof out), -1);
  /* the 65th slot, which the old cut dropped, is part of the key */
  char c65[200] = "";
  for (int i = 0; i < 65; i++) strcat(c65, i == 64 ? "9" : "1;");
  assert_non_null(strstr(shapes(c65, NULL, 0, 0), ";1;9"));

  const char *huge = "8888888888888888448,1,1,16";
  assert_int_equal(ps_lookup_key_shapes(huge, strlen(huge), "FRACTAL_NZ", 10, 0, 0, out, sizeof out,
                                        err, sizeof err), -1);
  assert_non_null(strstr(err, "slot 1: the FRACTAL_NZ restore leaves int64"));
  assert_string_equal(shapes("2,4611686018427387904,2,3", "FRACTAL_NZ", 0, 0), "ERR");
  assert_string_equal(shapes("2,4611686018427387903,2,3", "FRACTAL_NZ", 0, 0), "6,9223372036854775806");
  ps_lookup_key_shape sh = {4, {-3, 5, 7, INT64_MIN}};
  assert_int_equal(ps_lookup_key_nz_restore(&sh), -1);
  assert_int_equal(sh.rank, 4);
}

static void test_list_keys(void **state) {
  (void)state;
  char out[128];
  const char *cell = " DT_BF16; ;FLOAT;DT_UNDEFINED ";
  assert_int_equal(ps_lookup_key_list(cell, strlen(cell), 0, 0, out, sizeof out), 26);
  assert_string_equal(out, "DT_BF16;FLOAT;DT_UNDEFINED");
  ps_lookup_key_list(cell, strlen(cell), 2, PS_LOOKUP_KEY_FLOAT_GROUP, out, sizeof out);
  assert_string_equal(out, "FLOAT_GROUP;FLOAT_GROUP");
  assert_int_equal(ps_lookup_key_list(cell, strlen(cell), 0, 0, out, 5), -1);
}

static int key_inputs(ps_table *t, size_t row, ps_sid *key, void *ud) {
  (void)ud;
  size_t len;
  const char *s = ps_table_text(t, row, 0, &len);
  char buf[256], err[64];
  long n = ps_lookup_key_shapes(s, len, NULL, 0, 0, 0, buf, sizeof buf, err, sizeof err);
  if (n < 0) return 0;
  key[0] = ps_table_intern(t, buf, (size_t)n);
  key[1] = ps_table_cell_interned(t, row, 1);
  return 1;
}

static void test_table_and_index(void **state) {
  (void)state;
  static const char csv[] =
      "Input Shapes,Input Data Types,Average Duration(us)\n"
      "\"\"\"4,8;8,16\"\"\",DT_BF16;DT_BF16,10.5\n"
      "\"4,8;8,16\",DT_BF16;DT_BF16,\t11 \n"
      "\"bad;1\",DT_BF16,0\n"
      "\"4,8;8,16\",FLOAT;FLOAT\n"
      "\"4,8;8,16\",DT_BF16;DT_BF16,x\n";
  char err[256];
  ps_table *t = ps_table_load(write_file("t.csv", csv, sizeof csv - 1), err, sizeof err);
  assert_non_null(t);
  assert_int_equal(ps_table_nrows(t), 5);
  assert_int_equal(ps_table_ncols(t), 3);
  assert_int_equal(ps_table_column(t, "Average Duration(us)"), 2);
  assert_int_equal(ps_table_column(t, "Duration(us)"), -1);
  assert_int_equal(ps_table_line(t, 1), 3);
  assert_int_equal(ps_table_nfields(t, 3), 2);
  assert_int_equal(ps_table_cell(t, 3, 2), 0);  /* short row: empty */
  assert_true(ps_table_num(t, ps_table_cell(t, 0, 2)) == 10.5);
  assert_true(ps_table_cell_num(t, 0, 2) == 10.5);
  assert_true(ps_table_num(t, ps_table_cell(t, 1, 2)) == 11.0);  /* TAB guard trimmed */
  assert_true(isnan(ps_table_num(t, ps_table_cell(t, 4, 2))));
  assert_true(isnan(ps_table_cell_num(t, 3, 2)));
  assert_true(isnan(ps_table_num(t, 0)));
  assert_int_equal(ps_table_cell(t, 0, 1), ps_table_cell(t, 1, 1));  /* interned */

  ps_index *ix = ps_index_build(t, 2, key_inputs, NULL);
  assert_non_null(ix);
  assert_int_equal(ps_index_ngroups(ix), 2);
  assert_int_equal(ps_index_nskipped(ix), 1);
  assert_int_equal(ps_index_skipped(ix, 0), 2);
  ps_sid key[2] = { ps_table_find_str(t, "4,8;8,16", 8), ps_table_find_str(t, "DT_BF16;DT_BF16", 15) };
  long r = ps_index_find(ix, key);
  assert_int_equal(r, 0);
  assert_int_equal(ps_index_next(ix, 0), 1);
  assert_int_equal(ps_index_next(ix, 1), 4);
  assert_int_equal(ps_index_next(ix, 4), -1);
  assert_int_equal(ps_index_group_size(ix, 0), 3);
  assert_int_equal(ps_index_group_first(ix, 1), 3);
  key[1] = ps_table_find_str(t, "INT8", 4);
  assert_int_equal(key[1], PS_SID_NONE);
  ps_index_free(ix);
  ps_table_free(t);
}

static void test_plain_columns(void **state) {
  (void)state;
  /* 2000 rows: the latency column is mostly distinct and goes plain; keys still work */
  size_t cap = 2000 * 64 + 64, len = 0;
  char *csv = malloc(cap);
  len += (size_t)snprintf(csv + len, cap - len, "Input Shapes,Duration(us)\n");
  for (int i = 0; i < 2000; i++)
    len += (size_t)snprintf(csv + len, cap - len, "\"%d,%d\",%d.25\n", i % 7 + 1, 16, i);
  char err[256];
  ps_table *t = ps_table_load(write_file("plain.csv", csv, len), err, sizeof err);
  free(csv);
  assert_non_null(t);
  assert_int_equal(ps_table_nrows(t), 2000);
  assert_true(ps_table_plain(t, 1));
  assert_false(ps_table_plain(t, 0));
  assert_true(ps_table_cell_num(t, 1999, 1) == 1999.25);
  assert_true(ps_table_cell_num(t, 3, 1) == 3.25);  /* a sample row, moved into the pool */
  size_t n;
  assert_string_equal(ps_table_text(t, 1500, 0, &n), "3,16");
  assert_string_equal(ps_table_text(t, 1500, 1, &n), "1500.25");
  assert_int_equal(n, 7);
  assert_string_equal(ps_table_text(t, 10, 1, &n), "10.25");
  assert_int_equal(ps_table_find_str(t, "1500.25", 7), PS_SID_NONE);  /* plain: not interned */
  ps_sid a = ps_table_cell_interned(t, 1500, 1);
  assert_int_equal(a, ps_table_find_str(t, "1500.25", 7));
  /* the slot index: slot 1 of rows with shape (3,16) are rows 2, 9, 16, ... */
  ps_slotix *x = ps_slotix_build(t, 0, -1, 0);
  assert_non_null(x);
  assert_int_equal(ps_slotix_ngroups(x), 7);
  ps_lookup_key_shape sh = { 2, { 3, 16 } };
  long g = ps_slotix_group(x, 0, &sh);
  assert_true(g >= 0);
  size_t nr, ns;
  const uint32_t *rows = ps_slotix_rows(x, g, &nr);
  assert_int_equal(nr, 286);
  assert_int_equal(rows[0], 2);
  assert_int_equal(rows[1], 9);
  const uint32_t *gs = ps_slotix_slots(x, 9, &ns);
  assert_int_equal(ns, 1);
  assert_int_equal(gs[0], (uint32_t)g);
  ps_lookup_key_shape back;
  ps_slotix_shape(x, (size_t)g, &back);
  assert_int_equal(back.rank, 2);
  assert_int_equal(back.dims[1], 16);
  assert_int_equal(ps_slotix_group(x, 1, &sh), -1);   /* no second slot */
  sh.dims[0] = 8;
  assert_int_equal(ps_slotix_group(x, 0, &sh), -1);
  ps_slotix_free(x);
  ps_table_free(t);
}

static ps_lookup_key_shape S(int rank, int64_t a, int64_t b, int64_t c) {
  ps_lookup_key_shape s = { rank, { a, b, c } };
  return s;
}

static const char *rule(unsigned kind, int i, ps_lookup_key_shape tc, ps_lookup_key_shape csv) {
  const char *n = ps_lookup_rule_name(ps_lookup_rule(kind, i, &tc, &csv));
  return n ? n : "none";
}

static void test_input_rules(void **state) {
  (void)state;
  unsigned mm = PS_RULE_KIND_MATMUL, fl = PS_RULE_KIND_FLATTEN_3D | PS_RULE_KIND_MERGE_LAST;
  assert_string_equal(rule(0, 1, S(2, 128, 64, 0), S(2, 128, 64, 0)), "identity");
  assert_string_equal(rule(0, 1, S(3, 1, 128, 64), S(2, 128, 64, 0)), "batch_strip");
  assert_string_equal(rule(0, 1, S(-1, 0, 0, 0), S(-1, 0, 0, 0)), "identity");
  assert_string_equal(rule(0, 1, S(-1, 0, 0, 0), S(1, 1, 0, 0)), "none");
  assert_string_equal(rule(mm, 2, S(2, 64, 128, 0), S(2, 128, 64, 0)), "transpose");
  assert_string_equal(rule(mm, 1, S(2, 64, 128, 0), S(2, 128, 64, 0)), "none");  /* not input 1 */
  assert_string_equal(rule(mm, 2, S(3, 4, 64, 128), S(3, 4, 128, 64)), "batched_transpose");
  assert_string_equal(rule(0, 1, S(2, 144, 64, 0), S(2, 136, 64, 0)), "padding");
  assert_string_equal(rule(0, 1, S(2, 16, 64, 0), S(3, 1, 1, 64)), "batch_strip+padding");
  assert_string_equal(rule(0, 1, S(2, 16, 64, 0), S(2, 1, 64, 0)), "padding");  /* 1 -> 16 */
  assert_string_equal(rule(0, 1, S(2, 200, 64, 0), S(2, 136, 64, 0)), "none");  /* 64 or more */
  assert_string_equal(rule(fl, 1, S(3, 4, 8, 64), S(2, 32, 64, 0)), "flatten_3d");
  assert_string_equal(rule(fl, 1, S(3, 4, 8, 64), S(2, 4, 512, 0)), "merge_last_dims");
  assert_string_equal(rule(PS_RULE_KIND_INDEX, 1, S(2, 1, 7, 0), S(2, 7, 1, 0)), "singleton_axis_transpose");
  /* Lua's integers: wrap-around and floor division, so no overflow at the limits */
  assert_false(ps_lookup_padded(INT64_MAX, INT64_MIN));
  assert_false(ps_lookup_padded(INT64_MIN + 16, INT64_MIN));
  assert_true(ps_lookup_padded(0, -15));
  assert_true(ps_lookup_padded(16, 9));    /* 9 -> 16 is a pad of 16 ... */
  assert_true(ps_lookup_padded(16, 1));    /* ... and so is 1 -> 16 */
  assert_true(ps_lookup_padded(72, 65));   /* by 8 from 64 up */
  assert_false(ps_lookup_padded(8, 1));
}

/* The slot search's coarse index skips rows by ps_lookup_last_anchors: every shape a rule
 * matches must have its last dimension in a window of an anchor. Random TC shapes against
 * shapes related to them the way the rules relate them (transposed, a leading 1 added or
 * dropped, a dimension lowered, flattened, merged, (x,1)), for every kind and input. */
static uint64_t lcg = 14;
static int64_t rnd(int64_t a, int64_t b) {
  lcg = lcg * 6364136223846793005u + 1442695040888963407u;
  return a + (int64_t)((lcg >> 33) % (uint64_t)(b - a + 1));
}

static int64_t W(int64_t a, int64_t b, int64_t minus) {  /* a * b - minus, wrapping as Lua */
  return (int64_t)((uint64_t)a * (uint64_t)b - (uint64_t)minus);
}

static void test_last_anchors(void **state) {
  (void)state;
  static const int64_t dims[] = { 1, 2, 3, 7, 8, 15, 16, 17, 63, 64, 65, 72, 100, 128, 130, 960, 4096,
                                  0, -1, -17, INT64_MAX, INT64_MIN, 4294967295, 4294967296 };
  int nd = (int)(sizeof dims / sizeof *dims), hits = 0, bounded = 0;
  for (int n = 0; n < 200000; n++) {
    ps_lookup_key_shape tc = { (int)rnd(-1, 4), { 0 } }, c;
    for (int d = 0; d < tc.rank; d++) tc.dims[d] = dims[rnd(0, nd - 1)];
    if (tc.rank > 1 && rnd(0, 2) == 0) tc.dims[0] = 1;
    c = tc;
    int r = tc.rank;
    switch (rnd(0, 7)) {
      case 0: if (r >= 2) { c.dims[r - 2] = tc.dims[r - 1]; c.dims[r - 1] = tc.dims[r - 2]; } break;
      case 1: if (r >= 0 && r < 4) { c.rank = r + 1; c.dims[0] = 1; memcpy(c.dims + 1, tc.dims, (size_t)r * 8); } break;
      case 2: if (r > 1 && tc.dims[0] == 1) { c.rank = r - 1; memcpy(c.dims, tc.dims + 1, (size_t)(r - 1) * 8); } break;
      case 3: if (r >= 1) { int d = (int)rnd(0, r - 1); c.dims[d] = W(tc.dims[d], 1, rnd(1, 70)); } break;
      case 4: if (r == 3) c = S(2, W(tc.dims[0], tc.dims[1], 0), W(tc.dims[2], 1, rnd(0, 20)), 0); break;
      case 5: if (r == 3) c = S(2, tc.dims[0], W(tc.dims[1], tc.dims[2], rnd(0, 1) * rnd(1, 20)), 0); break;
      case 6: if (r == 2) c = S(2, tc.dims[1], 1, 0); break;
      default: c.rank = (int)rnd(-1, 4); for (int d = 0; d < c.rank; d++) c.dims[d] = dims[rnd(0, nd - 1)];
    }
    for (unsigned kind = 0; kind < 16; kind++)
      for (int i = 1; i <= 3; i++) {
        if (ps_lookup_rule(kind, i, &tc, &c) == PS_RULE_NONE) continue;
        hits++;
        int64_t a[PS_LOOKUP_ANCHORS];
        int na = ps_lookup_last_anchors(kind, i, &tc, a);
        if (na < 0 || c.rank <= 0) continue;
        bounded++;
        int64_t last = c.dims[c.rank - 1];
        int in = 0;
        for (int k = 0; k < na; k++) in |= a[k] >= last && (uint64_t)a[k] - (uint64_t)last < 64;
        if (!in) fail_msg("rule %s (kind %u, input %d) matches a last dimension %lld outside the anchors",
                          ps_lookup_rule_name(ps_lookup_rule(kind, i, &tc, &c)), kind, i, (long long)last);
      }
  }
  assert_true(hits > 100000 && bounded > 50000);
}

static void test_load_errors(void **state) {
  (void)state;
  char err[256];
  static const char lfs[] = "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n";
  assert_null(ps_table_load(write_file("lfs.csv", lfs, sizeof lfs - 1), err, sizeof err));
  assert_non_null(strstr(err, "lfs.csv"));
  assert_null(ps_table_load(write_file("empty.csv", "", 0), err, sizeof err));
  assert_non_null(strstr(err, "empty"));
  assert_null(ps_table_load("/nonexistent/x.csv", err, sizeof err));
}

/* The one-pass parse of plain cells equals the general parser on random cells of digits,
 * separators, quotes, blanks, parentheses and signs (either both fail or both give the same
 * slots), for several slot limits. */
static void test_parse_fast_equals_general(void **state) {
  (void)state;
  static const char alpha[] = "0123456789,,,;;\"\" ()-+1x";
  uint32_t seed = 16;
  int simple = 0;
  for (int it = 0; it < 200000; it++) {
    char cell[64];
    seed = seed * 1103515245u + 12345u;
    int len = (int)(seed >> 16) % 40, plain = (seed >> 8) % 3 != 0;
    for (int i = 0; i < len; i++) {
      seed = seed * 1103515245u + 12345u;
      cell[i] = plain ? "0123456789,;1"[(seed >> 16) % 13] : alpha[(seed >> 16) % (sizeof alpha - 1)];
    }
    cell[len] = 0;
    if ((seed >> 4) % 4 == 0 && len > 2) cell[0] = '"', cell[len - 1] = '"';
    for (int max = 1; max <= 5; max += 2) {
      ps_lookup_key_shape a[PS_LOOKUP_KEY_MAXSLOTS], b[PS_LOOKUP_KEY_MAXSLOTS];
      char ea[128], eb[128];
      int na = ps_lookup_key_parse_shapes(cell, (size_t)len, a, max, ea, sizeof ea);
      int nb = ps_lookup_key_parse_shapes_general(cell, (size_t)len, b, max, eb, sizeof eb);
      if (na != nb) fail_msg("'%s' max %d: %d slots, general %d", cell, max, na, nb);
      if (na < 0) { assert_string_equal(ea, eb); continue; }
      simple++;
      for (int i = 0; i < na; i++) {
        assert_int_equal(a[i].rank, b[i].rank);
        for (int d = 0; d < a[i].rank; d++) assert_true(a[i].dims[d] == b[i].dims[d]);
      }
    }
  }
  assert_true(simple > 100000);
}

/* ps_slotix_added: the groups of the row just added, slot by slot (what ps_slotix_slots gives
 * for it once the index is finished); none after a row without slots or a failed add. */
static void test_slotix_added(void **state) {
  (void)state;
  ps_slotix *x = ps_slotix_new(4);
  assert_non_null(x);
  ps_lookup_key_shape sh[2] = { { .rank = 2, .dims = { 4, 8 } }, { .rank = 2, .dims = { 8, 16 } } };
  size_t n;
  uint32_t first[2];
  assert_int_equal(ps_slotix_add(x, 0, sh, 2), 0);
  const uint32_t *g = ps_slotix_added(x, &n);
  assert_int_equal(n, 2);
  memcpy(first, g, sizeof first);
  assert_true(first[0] != first[1]);
  assert_int_equal(ps_slotix_add(x, 1, sh, -1), 0);  /* no slots */
  ps_slotix_added(x, &n);
  assert_int_equal(n, 0);
  ps_lookup_key_shape other = { .rank = 1, .dims = { 4 } };
  ps_lookup_key_shape two[2] = { other, sh[1] };
  assert_int_equal(ps_slotix_add(x, 2, two, 2), 0);
  g = ps_slotix_added(x, &n);
  assert_int_equal(n, 2);
  assert_true(g[0] != first[0]);
  assert_int_equal(g[1], first[1]);                 /* the same shape at the same slot */
  assert_int_equal(ps_slotix_add(x, 9, sh, 2), -1);  /* past the rows: nothing added */
  ps_slotix_added(x, &n);
  assert_int_equal(n, 0);
  assert_int_equal(ps_slotix_add(x, 3, sh, 1), 0);
  g = ps_slotix_added(x, &n);
  assert_int_equal(n, 1);
  assert_int_equal(g[0], first[0]);
  assert_int_equal(ps_slotix_finish(x), 0);
  const uint32_t *s0 = ps_slotix_slots(x, 0, &n);
  assert_int_equal(n, 2);
  assert_int_equal(s0[0], first[0]);
  assert_int_equal(s0[1], first[1]);
  ps_slotix_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_slotix_added),
    cmocka_unit_test(test_shape_keys),
    cmocka_unit_test(test_parse_fast_equals_general),
    cmocka_unit_test(test_key_limits),
    cmocka_unit_test(test_list_keys),
    cmocka_unit_test(test_table_and_index),
    cmocka_unit_test(test_plain_columns),
    cmocka_unit_test(test_input_rules),
    cmocka_unit_test(test_last_anchors),
    cmocka_unit_test(test_load_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
