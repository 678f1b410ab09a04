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
 * record that spans lines. */
static void text_after_closing_quote(void **state) {
  (void)state;
  collected c;
  char err[600];
  const char *p = write_file("after.csv", S("\"ab\"c\"d,x\n\"multi\nline\"\t,\"ab\"cd,y\n"));
  {
    assert_int_equal(collect(p, 0, &c, err), 0);
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

/* Python's csv reader (Modules/_csv.c, default dialect, strict off, lines split as a file
 * opened with newline="" splits them), written out as its state machine: the reference the
 * engine must agree with on random text. Blank lines (Python's []) are skipped, as perfscript
 * does. Returns the number of records; *open_quote is set when the text ends inside quotes,
 * where Python returns the partial field and perfscript reports an error. */
enum { START_RECORD, START_FIELD, IN_FIELD, IN_QUOTED, QUOTE_IN_QUOTED, EAT_CRNL };
typedef struct pyrec { size_t n, used, off[256], len[256]; char data[2048]; } pyrec;

static size_t python_csv(const char *t, size_t len, pyrec *out, size_t max, int *open_quote) {
  size_t nrec = 0, i = 0;
  int st = START_RECORD;
  pyrec cur = {0};
  while (i < len) {
    size_t e = i;  /* one line: up to and including \n, \r\n or a lone \r */
    while (e < len && t[e] != '\n' && t[e] != '\r') e++;
    if (e < len) e += (t[e] == '\r' && e + 1 < len && t[e + 1] == '\n') ? 2 : 1;
    for (size_t k = i; k <= e; k++) {
      int c = k < e ? (unsigned char)t[k] : -1;  /* -1: the end of the line */
      int nl = c == '\n' || c == '\r' || c == -1;
      assert_true(cur.n < 255);
      if (st == START_FIELD || st == START_RECORD) cur.off[cur.n] = cur.used;
      char *f = cur.data + cur.off[cur.n];
      switch (st) {
      case START_RECORD:
        if (c == -1) break;
        if (c == '\n' || c == '\r') { st = EAT_CRNL; break; }
        st = START_FIELD; /* fall through */
      case START_FIELD:
        if (nl) { cur.len[cur.n++] = 0; st = c == -1 ? START_RECORD : EAT_CRNL; }
        else if (c == '"') st = IN_QUOTED;
        else if (c == ',') cur.len[cur.n++] = 0;
        else { f[0] = (char)c; cur.len[cur.n] = 1; cur.used++; st = IN_FIELD; }
        break;
      case IN_FIELD:
        if (nl) { cur.n++; st = c == -1 ? START_RECORD : EAT_CRNL; }
        else if (c == ',') { cur.n++; st = START_FIELD; }
        else { f[cur.len[cur.n]++] = (char)c; cur.used++; }
        break;
      case IN_QUOTED:
        if (c == '"') st = QUOTE_IN_QUOTED;
        else if (c != -1) { f[cur.len[cur.n]++] = (char)c; cur.used++; }
        break;
      case QUOTE_IN_QUOTED:
        if (c == '"') { { f[cur.len[cur.n]++] = '"'; cur.used++; } st = IN_QUOTED; }
        else if (c == ',') { cur.n++; st = START_FIELD; }
        else if (nl) { cur.n++; st = c == -1 ? START_RECORD : EAT_CRNL; }
        else { { f[cur.len[cur.n]++] = (char)c; cur.used++; } st = IN_FIELD; }
        break;
      case EAT_CRNL:
        if (c == -1) st = START_RECORD;
        break;
      }
      if (st == START_RECORD && c == -1) {
        if (cur.n > 0 && nrec < max) out[nrec] = cur;
        nrec += cur.n > 0;
        memset(&cur, 0, sizeof cur);
      }
    }
    i = e;
  }
  *open_quote = st == IN_QUOTED;
  return nrec;
}

/* Random text over the characters that matter reads as Python's csv reads it, record for
 * record and field for field; a quote still open at the end is an error. */
static void random_text_reads_as_python_csv(void **state) {
  (void)state;
  static const char alphabet[] = "ab,,\"\"\" \t\r\n\n1";
  static pyrec want[512];
  unsigned seed = 7;
  char err[600];
  for (int round = 0; round < 400; round++) {
    char text[2048];
    size_t len = (size_t)(round % 7 == 0 ? 1900 : 40 + round % 200);
    for (size_t i = 0; i < len; i++) {
      seed = seed * 1103515245u + 12345u;
      text[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
    }
    int open_quote;
    size_t nwant = python_csv(text, len, want, 512, &open_quote);
    const char *p = write_file("diff.csv", text, len);
    ps_csv_reader *a = ps_csv_open(p, 0, err, sizeof err);
    size_t got = 0;
    int st = a ? 1 : -1;
    while (a && (st = ps_csv_next(a, &(ps_csv_record){0})) != 0) {
      if (st < 0) break;
      got++;
    }
    if (a) ps_csv_close(a);
    /* read again, comparing */
    a = ps_csv_open(p, 0, err, sizeof err);
    for (size_t r = 0; a && r < got; r++) {
      ps_csv_record ra;
      assert_int_equal(ps_csv_next(a, &ra), 1);
      assert_int_equal(ra.nfields, want[r].n);
      for (size_t i = 0; i < ra.nfields; i++) {
        assert_int_equal(ra.lens[i], want[r].len[i]);
        assert_memory_equal(ra.fields[i], want[r].data + want[r].off[i], ra.lens[i]);
        assert_int_equal(ra.fields[i][ra.lens[i]], '\0');
      }
    }
    if (a) ps_csv_close(a);
    if (open_quote) {  /* every complete record before it, then the error */
      assert_int_equal(st, -1);
      assert_int_equal(got, nwant);
      if (a == NULL) assert_non_null(strstr(err, "unterminated quoted field"));
    } else {
      assert_int_equal(st, 0);
      assert_int_equal(got, nwant);
    }
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
    cmocka_unit_test(random_text_reads_as_python_csv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
