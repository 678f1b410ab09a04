/* The write-back merge policy (src/store/merge.c) on small files: update, keep, prune, duplicates,
 * gaps, append, and an unchanged file left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "atomicfile.h"
#include "merge.h"
#include "writeback_sig.h"
#include "testutil.h"

/* The header line of the test files (HDR's columns joined) */
#define HDR_LINE \
  "OP State,Input Shapes,Output Shapes,Average Duration(us),Profiling Average Duration(us),MicroBench aic_time(us)"

/* Add.csv columns: OP State, Input Shapes, Output Shapes, Average Duration(us),
 * Profiling Average Duration(us), MicroBench aic_time(us) */
static const char *const HDR[] = {"OP State", "Input Shapes", "Output Shapes", "Average Duration(us)",
                                  "Profiling Average Duration(us)", "MicroBench aic_time(us)"};
#define NC 6
static size_t HLEN[NC];
static const size_t MAP[NC] = {1, 2, 3, 4, 5, 6};

static uint64_t hash_of(const char *in_shapes, const char *out_shapes) {
  ps_sig *g = ps_sig_new();
  ps_sig_row r = {.op_name = "Add", .op_state = "dynamic", .in_shapes = in_shapes, .out_shapes = out_shapes};
  assert_int_equal(ps_sig_compute(g, &r), 0);
  uint64_t h = ps_sig_hash(g);
  ps_sig_free(g);
  return h;
}

static ps_merge_opts opts(const char *path, const ps_merge_update *u, size_t nu) {
  for (int j = 0; j < NC; j++) HLEN[j] = strlen(HDR[j]);
  static const int copy_out[] = {5};
  ps_merge_opts o = {.path = path, .op = "Add", .header = HDR, .header_len = HLEN, .ncols = NC,
                     .map = MAP, .mb_out = 3, .copy_out = copy_out, .ncopy = 1,
                     .updates = u, .nupdates = nu};
  o.src[PS_MERGE_OP_TYPE] = o.src[PS_MERGE_IN_DTYPES] = o.src[PS_MERGE_IN_FORMATS] = -1;
  o.src[PS_MERGE_OUT_DTYPES] = o.src[PS_MERGE_EP_SIZE] = -1;
  o.src[PS_MERGE_OP_STATE] = 0, o.src[PS_MERGE_IN_SHAPES] = 1, o.src[PS_MERGE_OUT_SHAPES] = 2;
  o.src[PS_MERGE_MB] = 3, o.src[PS_MERGE_PROF] = 4;
  for (int k = 0; k < PS_NCOUNTERS; k++) o.mean_out[k] = -1;
  return o;
}

static const char *DB =
  HDR_LINE "\n"
  "dynamic,\"1,2\",\"1,2\",,,\n"              /* no valid duration: updated */
  "dynamic,\"3,4\",\"3,4\",5.000000,6.0,\n"   /* valid: kept unless mode_all */
  "dynamic,\"5,6\",\"5,6\",,,\n"              /* nothing valid: pruned */
  "dynamic,\"5,6\",\"5,6\",inf,0,\n";         /* its duplicate, inf is not valid either */

/* The file at path holds exactly want. */
static void assert_file(const char *path, const char *want) {
  char *got = read_file(path, NULL);
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
}

static int run(ps_merge_opts *o, ps_merge **out) {
  char err[512];
  ps_merge *m = ps_merge_open(o, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(ps_merge_rows(m, err, sizeof err), 0);
  *out = m;
  return 0;
}

static void update_keep_prune(void **state) {
  (void)state;
  const char *path = write_file("Add.csv", DB, strlen(DB));
  ps_merge_value v1 = {PS_MERGE_NUM, NULL, 0, 1.5}, v2 = {PS_MERGE_STR, "7", 1, 0};
  ps_merge_update u[] = {
    {.hash = hash_of("1,2", "1,2"), .mb = "2.000000", .mblen = 8, .record = 1, .copy = &v1},
    {.hash = hash_of("3,4", "3,4"), .mb = "4.000000", .mblen = 8, .record = 1, .copy = &v2},
    {.hash = hash_of("9", "9"), .mb = "1.000000", .mblen = 8, .record = 1, .copy = &v2},
  };
  ps_merge_opts o = opts(path, u, 3);
  o.prune = 1;
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->rows, 4);
  assert_int_equal(r->written, 2);
  assert_int_equal(r->updated, 1);
  assert_int_equal(r->unchanged, 1);
  assert_int_equal(r->matched[0], 1);
  assert_int_equal(r->matched[1], 1);
  assert_int_equal(r->matched[2], 0);
  /* applied: the updates whose values went into their row (the provenance log's rows) */
  assert_int_equal(r->applied[0] + r->applied[1], 1);
  assert_int_equal(r->applied[2], 0);
  assert_int_equal(r->ngaps, 1);
  assert_true(r->gaps[0].mb == 5.0 && r->gaps[0].prof == 6.0);
  assert_string_equal(ps_merge_text(m, r->gaps[0].disp), "3,4 -> 3,4");
  assert_int_equal(r->ndeleted, 2);
  assert_string_equal(ps_merge_text(m, r->deleted[0]), "5,6 -> 5,6");
  assert_int_equal(r->ndups, 1);
  assert_int_equal(r->dups[0].count, 2);
  const char *const extra[NC] = {"dynamic", "9", "9", "1.000000", "", ""};
  const size_t el[NC] = {7, 1, 1, 8, 0, 0};
  char err[256];
  assert_int_equal(ps_merge_append(m, extra, el, err, sizeof err), 0);
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_REPLACED);
  ps_merge_free(m);
  assert_file(path,
    HDR_LINE "\n"
    "dynamic,\"1,2\",\"1,2\",2.000000,,1.500000\n"
    "dynamic,\"3,4\",\"3,4\",5.000000,6.0,\n"
    "dynamic,9,9,1.000000,,\n");
}

static void mode_all_overwrites_and_means(void **state) {
  (void)state;
  const char *path = write_file("Add2.csv", DB, strlen(DB));
  double means[PS_NCOUNTERS];
  for (int k = 0; k < PS_NCOUNTERS; k++) means[k] = NAN;
  means[0] = 0.25;
  ps_merge_value none = {PS_MERGE_ABSENT, NULL, 0, 0};
  ps_merge_update u = {.hash = hash_of("3,4", "3,4"), .mb = "4.000000", .mblen = 8, .record = 1,
                       .copy = &none, .means = means};
  ps_merge_opts o = opts(path, &u, 1);
  o.mode_all = 1;
  o.mean_out[0] = 5;
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->updated, 1);
  assert_int_equal(r->written, 4);
  assert_int_equal(r->ndeleted, 0);
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_REPLACED);
  ps_merge_free(m);
  size_t len;
  char *got = read_file(path, &len);
  assert_non_null(strstr(got, "dynamic,\"3,4\",\"3,4\",4.000000,6.0,0.250000\n"));
  free(got);
}

static void nothing_to_do_leaves_the_file(void **state) {
  (void)state;
  const char *path = write_file("Add3.csv", DB, strlen(DB));
  struct stat before, after;
  assert_int_equal(stat(path, &before), 0);
  ps_merge_update u = {.hash = hash_of("3,4", "3,4"), .record = 0};
  ps_merge_opts o = opts(path, &u, 1);
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->matched[0], 1);
  assert_int_equal(r->applied[0], 0); /* nothing to write */
  assert_int_equal(r->unchanged, 0); /* match-only rows are not counted */
  assert_int_equal(r->changed, 0);
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_UNCHANGED);
  /* the commit drops the temporary itself: a caller that exits before freeing (a Lua state
   * never closed) must not leave it beside the database */
  assert_int_equal(temp_files(), 0);
  ps_merge_free(m);
  assert_int_equal(stat(path, &after), 0);
  assert_int_equal(before.st_ino, after.st_ino);
}

/* A write-back whose values are the ones the file holds changes nothing: it reports the row
 * unchanged (not updated), the commit says unchanged and the file is not written. */
static void same_values_report_unchanged(void **state) {
  (void)state;
  const char *path = write_file("Same.csv", DB, strlen(DB));
  struct stat before, after;
  assert_int_equal(stat(path, &before), 0);
  ps_merge_value v = {PS_MERGE_STR, "", 0, 0};
  ps_merge_update u = {.hash = hash_of("3,4", "3,4"), .mb = "5.000000", .mblen = 8, .record = 1,
                       .copy = &v};
  ps_merge_opts o = opts(path, &u, 1);
  o.mode_all = 1;
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->updated, 0);
  assert_int_equal(r->changed, 0);
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_UNCHANGED);
  assert_int_equal(temp_files(), 0);
  ps_merge_free(m);
  assert_int_equal(stat(path, &after), 0);
  assert_int_equal(before.st_ino, after.st_ino);
  assert_file(path, DB);
}

/* A merge that changed a cell replaces the file without reading the old one back to compare
 * (a 373 MB file of the new one's size cost two full reads): here the old path is made to
 * hold the new bytes before the commit, and the commit still replaces it. */
static void changed_merge_replaces_without_compare(void **state) {
  (void)state;
  static const char *db =
    HDR_LINE "\n"
    "dynamic,\"1,2\",\"1,2\",1.000000,,\n";
  static const char *want =
    HDR_LINE "\n"
    "dynamic,\"1,2\",\"1,2\",2.000000,,\n";
  const char *path = write_file("Cmp.csv", db, strlen(db));
  ps_merge_update u = {.hash = hash_of("1,2", "1,2"), .mb = "2.000000", .mblen = 8, .record = 1};
  ps_merge_opts o = opts(path, &u, 1);
  o.mode_all = 1;
  ps_merge *m;
  run(&o, &m);
  assert_int_equal(ps_merge_result_of(m)->updated, 1);
  write_file("Cmp.csv", want, strlen(want));
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_REPLACED);
  ps_merge_free(m);
  assert_file(path, want);
}

/* A gap (microbench against profiling) needs two valid durations: an inf profiling value is
 * not one (the one rule: finite and > 0). */
static void gaps_need_two_valid_durations(void **state) {
  (void)state;
  static const char *db =
    HDR_LINE "\n"
    "dynamic,\"3,4\",\"3,4\",5.000000,inf,\n"
    "dynamic,\"1,2\",\"1,2\",5.000000,6.0,\n";
  const char *path = write_file("Gap.csv", db, strlen(db));
  ps_merge_update u[] = {
    {.hash = hash_of("3,4", "3,4"), .mb = "4.000000", .mblen = 8, .record = 1},
    {.hash = hash_of("1,2", "1,2"), .mb = "4.000000", .mblen = 8, .record = 1},
  };
  ps_merge_opts o = opts(path, u, 2);
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->unchanged, 2);
  assert_int_equal(r->ngaps, 1);
  assert_string_equal(ps_merge_text(m, r->gaps[0].disp), "1,2 -> 1,2");
  ps_merge_free(m);
}

/* Rows the merge leaves alone are copied as their own bytes when the writer would write those
 * very bytes (a blank line before one is no part of it); every other row (an update, quoting
 * the writer would not write, another line end, a ragged row) is written from its fields, as
 * before. The file is the one a merge that quotes every row again writes. */
static void untouched_rows_are_copied_only_when_identical(void **state) {
  (void)state;
  static const char *db =
    HDR_LINE "\n"
    "dynamic,\"1,2\",\"1,2\",,,\n"                 /* updated */
    "dynamic,\"\"\"3,4\"\"\",\"3,4\",5.000000,6.0,\n" /* copied: doubled quotes, minimal */
    "\"dynamic\",\"5,6\",\"5,6\",1,,\n"            /* needless quotes: written again */
    "dynamic,\"7,8\",\"7,8\",1,,x\r\n"             /* CRLF in an LF file */
    "\n"
    "dynamic,\"9,1\",\"9,1\",1,,\n"                /* copied, without the blank line before it */
    "dyn\"amic,\"9,2\",\"9,2\",1,,\n"              /* a stray quote: quoted when written */
    "dynamic,\"9,3\",\"9,3\",1\n"                  /* ragged: padded */
    "dynamic,\"9,4\",\"9,4\",1,, \n"               /* copied (whitespace is data) */
    "\"dy\"x,\"9,5\",\"9,5\",1,,\n"                /* text after the closing quote */
    "dynamic,9,9,2.5,,\n";                          /* copied */
  const char *path = write_file("Verbatim.csv", db, strlen(db));
  ps_merge_value v = {PS_MERGE_STR, "7", 1, 0};
  ps_merge_update u = {.hash = hash_of("1,2", "1,2"), .mb = "2.000000", .mblen = 8, .record = 1, .copy = &v};
  ps_merge_opts o = opts(path, &u, 1);
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->rows, 10);
  assert_int_equal(r->written, 10);
  assert_int_equal(r->updated, 1);
  assert_int_equal(r->copied, 4);
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_REPLACED);
  ps_merge_free(m);
  assert_file(path,
    HDR_LINE "\n"
    "dynamic,\"1,2\",\"1,2\",2.000000,,7\n"
    "dynamic,\"\"\"3,4\"\"\",\"3,4\",5.000000,6.0,\n"
    "dynamic,\"5,6\",\"5,6\",1,,\n"
    "dynamic,\"7,8\",\"7,8\",1,,x\n"
    "dynamic,\"9,1\",\"9,1\",1,,\n"
    "\"dyn\"\"amic\",\"9,2\",\"9,2\",1,,\n"
    "dynamic,\"9,3\",\"9,3\",1,,\n"
    "dynamic,\"9,4\",\"9,4\",1,, \n"
    "dyx,\"9,5\",\"9,5\",1,,\n"
    "dynamic,9,9,2.5,,\n");
}

/* A signature held by several rows is shown with its first row's shapes, as that row spells
 * them (the display is made from the row read again at the end: near rows are reached by
 * reading on, far ones by a seek; blank lines before a first row are no part of it). */
static void duplicates_show_their_first_row(void **state) {
  (void)state;
  size_t cap = 1 << 20, len = 0;
  char *db = malloc(cap);
  len += (size_t)snprintf(db + len, cap - len, "%s\n",
    HDR_LINE);
  for (int i = 0; i < 6000; i++) {
    const char *row = NULL;
    char buf[128];
    if (i == 1) row = "\n\ndynamic,\" 1,2 \",\"1,2\",1,,\n";   /* A's first, after blank lines */
    else if (i == 3000) row = "dynamic,\"\"\"7,7\"\"\",7,1,,\n"; /* B's first */
    else if (i == 3001 || i == 3003) row = "dynamic,\"7,7\",\"7\",2,,\n"; /* B again, twice */
    else if (i == 3002) row = "dynamic,8;8,8,1,,\n";                /* C's first: near B's */
    else if (i == 4000) row = "dynamic,\"8;8\",\"8\",4,,\n";    /* C again */
    else if (i == 5999) row = "dynamic,\"1,2\",\"1,2\",3,,\n";     /* A again, far on */
    else snprintf(buf, sizeof buf, "dynamic,\"%d,1\",\"%d\",1,,\n", i, i), row = buf;
    len += (size_t)snprintf(db + len, cap - len, "%s", row);
  }
  const char *path = write_file("Dups.csv", db, len);
  free(db);
  ps_merge_opts o = opts(path, NULL, 0);
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->rows, 6000);
  assert_int_equal(r->ndups, 3); /* in the order their second row came */
  assert_string_equal(ps_merge_text(m, r->dups[0].disp), "\"7,7\" -> 7");
  assert_int_equal(r->dups[0].count, 3);
  assert_string_equal(ps_merge_text(m, r->dups[1].disp), "8;8 -> 8");
  assert_int_equal(r->dups[1].count, 2);
  assert_string_equal(ps_merge_text(m, r->dups[2].disp), "1,2 -> 1,2");
  assert_int_equal(r->dups[2].count, 2);
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_UNCHANGED);
  ps_merge_free(m);
}

/* A row's signature is the one of its cells' values, however they are quoted: the merge
 * reads a quoted cell's bytes without unquoting it when stripping its ends gives the same
 * text, and unquotes every other one (a quote inside, blanks next to the stripped quotes). */
static void quoted_cells_match_their_values(void **state) {
  (void)state;
  static const char *const in[] = {"\"1,2\"", " 3;4", "5,\"6\"", " \"7,8\" ", "9,1", "\"2;2 \"",
                                   "\"\"", "x\"y"};
  static const char *db =
    HDR_LINE "\n"
    "dynamic,\"\"\"1,2\"\"\",0,,,\n"          /* "1,2" */
    "dynamic,\"\" 3;4,1,,,\n"                     /* text after the closing quote: " 3;4" */
    "dynamic,\"5,\"\"6\"\"\",2,,,\n"          /* 5,"6" */
    "dynamic,\" \"\"7,8\"\" \",3,,,\n"        /* ' "7,8" ' */
    "dynamic,\"9,1\",4,,,\n"
    "dynamic,\"\"\"2;2 \"\"\",5,,,\n"         /* '"2;2 "' */
    "dynamic,\"\"\"\"\"\",6,,,\n"             /* '""' */
    "dynamic,\"x\"\"y\",7,,,\n";                /* x"y */
  const char *path = write_file("Quoted.csv", db, strlen(db));
  ps_merge_update u[8];
  char outs[8][2];
  for (int i = 0; i < 8; i++) {
    snprintf(outs[i], sizeof outs[i], "%d", i);
    u[i] = (ps_merge_update){.hash = hash_of(in[i], outs[i]), .mb = "1.000000", .mblen = 8, .record = 1};
  }
  ps_merge_opts o = opts(path, u, 8);
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  for (int i = 0; i < 8; i++) {
    if (!r->matched[i]) fail_msg("row %d (Input Shapes [%s]) did not match its value's signature", i, in[i]);
  }
  assert_int_equal(r->updated, 8);
  ps_merge_free(m);
}

/* An updated row the writer would write as its bytes is written as those bytes but for the
 * cells the update sets (quoted as the writer quotes them); any other updated row (needless
 * quotes, a stray quote) from its fields, as before: the same file either way. CRLF kept. */
static void updated_rows_keep_their_other_bytes(void **state) {
  (void)state;
  static const char *db =
    HDR_LINE "\r\n"
    "dynamic,\"\"\"1,2\"\"\",\"1,2\",,\"a,\"\"b\"\"\",\r\n"   /* spliced */
    "\"dynamic\",\"3,4\",\"3,4\",,,\r\n"                           /* needless quotes */
    "dy\"n,\"5,6\",\"5,6\",,x,\r\n"                                  /* a stray quote */
    "dynamic,7,7,9.0,,\r\n";                                          /* spliced */
  const char *path = write_file("Splice.csv", db, strlen(db));
  ps_merge_value v = {PS_MERGE_STR, "q\"r", 3, 0}, w = {PS_MERGE_NUM, NULL, 0, 0.5};
  ps_merge_update u[] = {
    {.hash = hash_of("\"1,2\"", "1,2"), .mb = "2.000000", .mblen = 8, .record = 1, .copy = &v},
    {.hash = hash_of("3,4", "3,4"), .mb = "3.000000", .mblen = 8, .record = 1, .copy = &v},
    {.hash = hash_of("5,6", "5,6"), .mb = "4.000000", .mblen = 8, .record = 1, .copy = &w},
    {.hash = hash_of("7", "7"), .mb = "5,0", .mblen = 3, .record = 1, .copy = &w},
  };
  ps_merge_opts o = opts(path, u, 4);
  o.mode_all = 1;
  ps_merge *m;
  run(&o, &m);
  const ps_merge_result *r = ps_merge_result_of(m);
  assert_int_equal(r->updated, 4);
  assert_int_equal(r->spliced, 2); /* the two formatted ones (read by the fast scan) */
  char err[256];
  assert_int_equal(ps_merge_commit(m, err, sizeof err), PS_ATOMIC_REPLACED);
  ps_merge_free(m);
  assert_file(path,
    HDR_LINE "\r\n"
    "dynamic,\"\"\"1,2\"\"\",\"1,2\",2.000000,\"a,\"\"b\"\"\",\"q\"\"r\"\r\n"
    "dynamic,\"3,4\",\"3,4\",3.000000,,\"q\"\"r\"\r\n"
    "\"dy\"\"n\",\"5,6\",\"5,6\",4.000000,x,0.500000\r\n"
    "dynamic,7,7,\"5,0\",,0.500000\r\n");
}

static void missing_file_is_an_error(void **state) {
  (void)state;
  ps_merge_opts o = opts("/nonexistent/dir/Add.csv", NULL, 0);
  char err[256] = "";
  assert_null(ps_merge_open(&o, err, sizeof err));
  assert_non_null(strstr(err, "/nonexistent/dir/Add.csv"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(update_keep_prune),
    cmocka_unit_test(mode_all_overwrites_and_means),
    cmocka_unit_test(nothing_to_do_leaves_the_file),
    cmocka_unit_test(same_values_report_unchanged),
    cmocka_unit_test(changed_merge_replaces_without_compare),
    cmocka_unit_test(gaps_need_two_valid_durations),
    cmocka_unit_test(untouched_rows_are_copied_only_when_identical),
    cmocka_unit_test(duplicates_show_their_first_row),
    cmocka_unit_test(quoted_cells_match_their_values),
    cmocka_unit_test(updated_rows_keep_their_other_bytes),
    cmocka_unit_test(missing_file_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
