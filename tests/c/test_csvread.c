/* The streaming CSV reader: RFC 4180 records, the profiler's quirks, and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "csvread.h"
#include "testutil.h"

#define S(lit) lit, sizeof(lit) - 1

typedef struct collected {
  size_t nrec;
  size_t nfields[64];
  char text[64][16][128];
  long line[64];
} collected;

/* Reads a whole file; returns ps_csv_next's last status (0 = clean end, -1 = error). */
static int collect(const char *path, unsigned flags, collected *c, char *err) {
  memset(c, 0, sizeof *c);
  ps_csv_reader *r = ps_csv_open(path, flags, err, 600);
  if (r == NULL) return -2;
  ps_csv_record rec;
  int st;
  while ((st = ps_csv_next(r, &rec)) == 1) {
    if (c->nrec < 64) {
      c->nfields[c->nrec] = rec.nfields;
      c->line[c->nrec] = rec.line;
      for (size_t i = 0; i < rec.nfields && i < 16; i++)
        snprintf(c->text[c->nrec][i], 128, "%s", rec.fields[i]);
    }
    c->nrec++;
  }
  if (st < 0) snprintf(err, 600, "%s", ps_csv_error(r));
  ps_csv_close(r);
  return st;
}

static void rfc4180_quoting(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("q.csv", S("a,b,c\n\"x,y\",\"he said \"\"hi\"\"\",\"two\nlines\"\nlast,,\n"));
  assert_int_equal(collect(p, 0, &c, err), 0);
  assert_int_equal(c.nrec, 3);
  assert_string_equal(c.text[1][0], "x,y");
  assert_string_equal(c.text[1][1], "he said \"hi\"");
  assert_string_equal(c.text[1][2], "two\nlines");
  assert_int_equal(c.nfields[2], 3);
  assert_string_equal(c.text[2][1], "");
  assert_int_equal(c.line[0], 1);
  assert_int_equal(c.line[1], 2);
  assert_int_equal(c.line[2], 4);  /* the quoted newline moved it down a line */
}

static void bom_crlf_and_no_final_newline(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("bom.csv", S("\xEF\xBB\xBFName,Type\r\nadd,Add\r\nmul,Mul"));
  assert_int_equal(collect(p, 0, &c, err), 0);
  assert_int_equal(c.nrec, 3);
  assert_string_equal(c.text[0][0], "Name");
  assert_string_equal(c.text[2][1], "Mul");
  ps_csv_reader *r = ps_csv_open(p, 0, err, sizeof err);
  ps_csv_record rec;
  assert_int_equal(ps_csv_next(r, &rec), 1);
  assert_true(ps_csv_has_bom(r));
  assert_string_equal(ps_csv_eol(r), "\r\n");
  ps_csv_close(r);
}

static void ragged_rows_and_blank_lines(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("ragged.csv", S("a,b,c,d\n1,2,3,4\n\n1,2,3\n1,2,3,4,5\n"));
  assert_int_equal(collect(p, 0, &c, err), 0);
  assert_int_equal(c.nrec, 4);
  assert_int_equal(c.nfields[2], 3);
  assert_int_equal(c.nfields[3], 5);
  assert_int_equal(c.line[2], 4);
}

static void profiler_quirks(void **state) {
  (void)state;
  collected c;
  char err[600];
  /* triple-quoted shapes, TAB guard outside quotes, TAB inside quotes, quote then TAB */
  const char *p = write_file("quirks.csv", S(
    "Start Time(us),Input Shapes,Name\n"
    "1736412474730135.222\t,\"\"\"81920,4096;8192,512\"\"\",add\n"
    "\"1736413971558972.912\t\",\"\"\"\"\"\",\"x\"\t\n"));
  assert_int_equal(collect(p, 0, &c, err), 0);
  assert_int_equal(c.nrec, 3);
  assert_string_equal(c.text[1][0], "1736412474730135.222\t");  /* kept without trim */
  assert_string_equal(c.text[1][1], "\"81920,4096;8192,512\"");
  assert_string_equal(c.text[2][0], "1736413971558972.912\t");
  assert_string_equal(c.text[2][1], "\"\"");
  assert_string_equal(c.text[2][2], "x\t");  /* text after a closing quote is kept, as Python */
  assert_int_equal(collect(p, PS_CSV_TRIM, &c, err), 0);
  assert_string_equal(c.text[1][0], "1736412474730135.222");
  assert_string_equal(c.text[2][0], "1736413971558972.912");
}

/* Text after a closing quote continues the field as plain text (Python's reading), also in a
 * record that spans lines and so goes through libcsv. */
static void text_after_closing_quote(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("after.csv", S("\"ab\"c\"d,x\n\"multi\nline\"\t,\"ab\"cd,y\n"));
  for (unsigned flags = 0; flags <= PS_CSV_LIBCSV_ONLY; flags += PS_CSV_LIBCSV_ONLY) {
    assert_int_equal(collect(p, flags, &c, err), 0);
    assert_int_equal(c.nrec, 2);
    assert_string_equal(c.text[0][0], "abc\"d");
    assert_string_equal(c.text[0][1], "x");
    assert_int_equal(c.nfields[1], 3);
    assert_string_equal(c.text[1][0], "multi\nline\t");
    assert_string_equal(c.text[1][1], "abcd");
    assert_string_equal(c.text[1][2], "y");
  }
}

static void spaces_are_data(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("spaces.csv", S("  a , b\t,\" c \"\n"));
  assert_int_equal(collect(p, 0, &c, err), 0);
  assert_string_equal(c.text[0][0], "  a ");
  assert_string_equal(c.text[0][1], " b\t");
  assert_string_equal(c.text[0][2], " c ");
}

static void empty_file(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("empty.csv", "", 0);
  assert_int_equal(collect(p, 0, &c, err), 0);
  assert_int_equal(c.nrec, 0);
}

static void lfs_pointer_fails_at_open(void **state) {
  (void)state;
  char err[600];
  const char *p = write_file("lfs.csv", S(
    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n"));
  assert_null(ps_csv_open(p, 0, err, sizeof err));
  assert_non_null(strstr(err, "lfs.csv:1: a Git LFS pointer"));
}

static void binary_data_fails(void **state) {
  (void)state;
  char err[600];
  const char *p = write_file("bin.csv", S("\x7f" "ELF\x02\x01\x01\0\0\0\0"));
  assert_null(ps_csv_open(p, 0, err, sizeof err));
  assert_non_null(strstr(err, "bin.csv:1: binary data"));
}

static void unterminated_quote_fails_with_line(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("open.csv", S("a,b\n1,2\n3,\"never closed\n4,5\n"));
  assert_int_equal(collect(p, 0, &c, err), -1);
  assert_int_equal(c.nrec, 2);  /* the good records before it were delivered */
  assert_non_null(strstr(err, "open.csv:3: unterminated quoted field"));
}

static void missing_file(void **state) {
  (void)state;
  char err[600];
  assert_null(ps_csv_open("/nonexistent/x.csv", 0, err, sizeof err));
  assert_non_null(strstr(err, "/nonexistent/x.csv: No such file"));
  assert_null(ps_csv_open(test_dir(), 0, err, sizeof err));
  assert_non_null(strstr(err, "is a directory"));
}

/* Records and quoted newlines that straddle the 256 KiB read chunks come out whole, and a NUL
 * byte deep in a file fails after every record before it. */
static void large_file_across_chunks(void **state) {
  (void)state;
  const size_t n = 40000;
  size_t cap = n * 64 + 64, len = 0;
  char *buf = malloc(cap);
  len += (size_t)sprintf(buf + len, "id,shape,note\n");
  for (size_t i = 0; i < n; i++)
    len += (size_t)sprintf(buf + len, "%zu,\"\"\"%zu,%zu\"\"\",\"x\ny\"\n", i, i * 3, i + 7);
  const char *p = write_file("big.csv", buf, len);
  char err[600];
  ps_csv_reader *r = ps_csv_open(p, 0, err, sizeof err);
  assert_non_null(r);
  ps_csv_record rec;
  assert_int_equal(ps_csv_next(r, &rec), 1);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(ps_csv_next(r, &rec), 1);
    assert_int_equal(rec.nfields, 3);
    char want[64];
    sprintf(want, "%zu", i);
    assert_string_equal(rec.fields[0], want);
    sprintf(want, "\"%zu,%zu\"", i * 3, i + 7);
    assert_string_equal(rec.fields[1], want);
    assert_string_equal(rec.fields[2], "x\ny");
    assert_int_equal(rec.line, (long)(2 + 2 * i));
  }
  assert_int_equal(ps_csv_next(r, &rec), 0);
  ps_csv_close(r);

  buf[len - 100] = '\0';  /* a NUL near the end */
  p = write_file("bignul.csv", buf, len);
  r = ps_csv_open(p, 0, err, sizeof err);
  assert_non_null(r);
  size_t good = 0;
  int st;
  while ((st = ps_csv_next(r, &rec)) == 1) good++;
  assert_int_equal(st, -1);
  assert_true(good > n - 10);
  assert_non_null(strstr(ps_csv_error(r), "binary data"));
  ps_csv_close(r);
  free(buf);
}

static void column_aliases(void **state) {
  (void)state;
  char *header[] = {"Op Name", "OP Type", "Block Num", "Task Start Time(us)"};
  assert_int_equal(ps_csv_find_column(header, 4, "Name"), 0);
  assert_int_equal(ps_csv_find_column(header, 4, "Type"), 1);
  assert_int_equal(ps_csv_find_column(header, 4, "Block Dim"), 2);
  assert_int_equal(ps_csv_find_column(header, 4, "Start Time(us)"), 3);
  assert_int_equal(ps_csv_find_column(header, 4, "Op Name"), 0);
  assert_int_equal(ps_csv_find_column(header, 4, "Duration(us)"), -1);
}

/* The fast path and libcsv read random files identically: record by record, field by field,
 * line numbers and errors included. The alphabet is made of the characters that matter. */
static void fast_path_agrees_with_libcsv(void **state) {
  (void)state;
  static const char alphabet[] = "ab,,\"\"\" \t\r\n\n1";
  unsigned seed = 7;
  char err[600];
  for (int round = 0; round < 400; round++) {
    char text[2048];
    size_t len = (size_t)(round % 7 == 0 ? 1900 : 40 + round % 200);
    for (size_t i = 0; i < len; i++) {
      seed = seed * 1103515245u + 12345u;
      text[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
    }
    const char *p = write_file("diff.csv", text, len);
    ps_csv_reader *a = ps_csv_open(p, 0, err, sizeof err);
    ps_csv_reader *b = ps_csv_open(p, PS_CSV_LIBCSV_ONLY, err, sizeof err);
    assert_non_null(a);
    assert_non_null(b);
    for (;;) {
      ps_csv_record ra, rb;
      int sa = ps_csv_next(a, &ra), sb = ps_csv_next(b, &rb);
      assert_int_equal(sa, sb);
      if (sa <= 0) {
        if (sa < 0) assert_string_equal(ps_csv_error(a), ps_csv_error(b));
        break;
      }
      assert_int_equal(ra.nfields, rb.nfields);
      assert_int_equal(ra.line, rb.line);
      for (size_t i = 0; i < ra.nfields; i++) {
        assert_int_equal(ra.lens[i], rb.lens[i]);
        assert_memory_equal(ra.fields[i], rb.fields[i], ra.lens[i]);
      }
    }
    ps_csv_close(a);
    ps_csv_close(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(rfc4180_quoting),
    cmocka_unit_test(bom_crlf_and_no_final_newline),
    cmocka_unit_test(ragged_rows_and_blank_lines),
    cmocka_unit_test(profiler_quirks),
    cmocka_unit_test(spaces_are_data),
    cmocka_unit_test(text_after_closing_quote),
    cmocka_unit_test(empty_file),
    cmocka_unit_test(lfs_pointer_fails_at_open),
    cmocka_unit_test(binary_data_fails),
    cmocka_unit_test(unterminated_quote_fails_with_line),
    cmocka_unit_test(missing_file),
    cmocka_unit_test(large_file_across_chunks),
    cmocka_unit_test(column_aliases),
    cmocka_unit_test(fast_path_agrees_with_libcsv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
