/* The zero-copy scanner reads every file exactly as the general reader (PS_CSV_TRIM) does:
 * generated quirk fixtures, every chunk-boundary position of a small file, and every CSV of
 * the real exports (PERFSCRIPT_REAL_DATA; skipped with a note when absent). */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "csvread.h"
#include "csvscan.h"

static char dir[1024];
static int compared;

/* Compares the two readers on path; returns the number of records. */
static long same_records(const char *path) {
  char err[700];
  ps_csv_reader *a = ps_csv_open(path, PS_CSV_TRIM, err, sizeof err);
  ps_scan *b = ps_scan_open(path, err, sizeof err);
  assert_non_null(a);
  assert_non_null(b);
  ps_csv_record ra;
  ps_scan_record rb;
  long n = 0;
  for (;;) {
    int sa = ps_csv_next(a, &ra), sb = ps_scan_next(b, &rb);
    if (sa != sb) fprintf(stderr, "%s: record %ld: reader %d, scanner %d (%s | %s)\n", path, n, sa, sb,
                          sa < 0 ? ps_csv_error(a) : "", sb < 0 ? ps_scan_error(b) : "");
    assert_int_equal(sa, sb);
    if (sa <= 0) break;
    n++;
    if (ra.nfields != rb.nfields || ra.line != rb.line)
      fprintf(stderr, "%s: record %ld: %zu/%zu fields, line %ld/%ld\n", path, n, ra.nfields,
              rb.nfields, ra.line, rb.line);
    assert_int_equal(ra.nfields, rb.nfields);
    assert_int_equal(ra.line, rb.line);
    for (size_t i = 0; i < ra.nfields; i++) {
      if (ra.lens[i] != rb.lens[i] || memcmp(ra.fields[i], rb.fields[i], ra.lens[i]) != 0)
        fprintf(stderr, "%s: record %ld field %zu: [%s] vs [%.*s]\n", path, n, i, ra.fields[i],
                (int)rb.lens[i], rb.fields[i]);
      assert_int_equal(ra.lens[i], rb.lens[i]);
      assert_memory_equal(ra.fields[i], rb.fields[i], ra.lens[i]);
    }
  }
  ps_csv_close(a);
  ps_scan_close(b);
  compared++;
  return n;
}

static const char *write_file(const char *name, const char *text, size_t n) {
  static char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(text, 1, n, f);
  fclose(f);
  return path;
}

static const char *const quirks[] = {
  "a,b,c\n1,2,3\n",
  "\xEF\xBB\xBFType,Start Time(us)\r\nAdd,\"1736413971558972.912\t\"\r\nMul,1736412474730135.222\t\r\n",
  "a,b\n\"\"\"81920,4096;8192,512\"\"\",x\n\"\"\"\"\"\",\"\"\"; \"\"\"\n",
  /* triple quotes around text with quotes, """""""" and """""""""" (quotes inside), """x"""
   * with spaces around (not quoted then), """""" */
  "\"\"\"a\"\"b\"\"\",\"\"\"\"\"\"\"\",\"\"\"\"\"\"\"\"\"\"\n\"\"\"x\"\"\", \"\"\"x\"\"\" ,\"\"\"\"\"\"\n",
  "a,b\n\"multi\nline\r\nfield\",2\n3,4",
  "a,b,c\nshort\n1,2,3,4,5\n\n\r\n  \n",
  "a,b\n1,2,\n,\n",
  "a,b\nab\"c,d\n",
  "a\r\n1\r\n2\r",
  "a,b\n\" padded \" , plain \n",
  /* """text""" cut in place, and its near misses */
  "a,b,c\n\"\"\"a\"\"b\"\"\",\"\"\"\"\"\"\"\",\"\"\" 1 \"\"\"\n\"\"\"\"\"\"\"\"\"\"\"\",\"\"\"x\"\"\"y,\"\"\"\"\"\"\n",
};

static void test_quirks(void **state) {
  (void)state;
  char name[32];
  for (size_t i = 0; i < sizeof quirks / sizeof quirks[0]; i++) {
    snprintf(name, sizeof name, "quirk%zu.csv", i);
    same_records(write_file(name, quirks[i], strlen(quirks[i])));
  }
}

static void test_errors(void **state) {
  (void)state;
  char err[700];
  const char *p = write_file("unterminated.csv", "a,b\n1,\"open\n", 13);
  ps_scan *s = ps_scan_open(p, err, sizeof err);
  ps_scan_record r;
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(ps_scan_next(s, &r), -1);
  assert_non_null(strstr(ps_scan_error(s), "unterminated.csv:2: unterminated quoted field"));
  ps_scan_close(s);
  /* text after a closing quote belongs to the field, as in Python's csv */
  p = write_file("after.csv", "a,b\n\"x\"yz,w\n", 12);
  s = ps_scan_open(p, err, sizeof err);
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(r.lens[0], 3);
  assert_memory_equal(r.fields[0], "xyz", 3);
  ps_scan_close(s);
  p = write_file("nul.csv", "a,b\n1,2\n3\0,4\n", 13);
  s = ps_scan_open(p, err, sizeof err);
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(ps_scan_next(s, &r), -1);
  /* one message for both APIs (csvread.h said "binary data", this one "NUL byte") */
  assert_non_null(strstr(ps_scan_error(s), "nul.csv:3: binary data (a NUL byte"));
  ps_scan_close(s);
  p = write_file("lfs.csv", "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 1\n", 64);
  s = ps_scan_open(p, err, sizeof err);
  assert_int_equal(ps_scan_next(s, &r), -1);
  assert_non_null(strstr(ps_scan_error(s), "Git LFS pointer"));
  ps_scan_close(s);
}

/* Where the two readers used to disagree, both now give the stricter reading with one message:
 * UTF-16 and a NUL inside a quoted field are errors naming the file, a directory says so. */
static void test_one_rule_for_bad_input(void **state) {
  (void)state;
  char err[700], err2[700];
  ps_scan_record r;
  ps_csv_record rc;
  static const char utf16[] = "\xFF\xFE" "a\0,\0b\0\n\0";
  const char *p = write_file("utf16.csv", utf16, sizeof utf16 - 1);
  assert_null(ps_csv_open(p, 0, err, sizeof err));
  assert_non_null(strstr(err, "utf16.csv:1: a UTF-16 file"));
  ps_scan *s = ps_scan_open(p, err2, sizeof err2);
  assert_int_equal(ps_scan_next(s, &r), -1);
  assert_string_equal(ps_scan_error(s), err);
  ps_scan_close(s);

  static const char quoted_nul[] = "a,b\n1,2\n3,\"x\ny\0z\"\n5,6\n";
  p = write_file("qnul.csv", quoted_nul, sizeof quoted_nul - 1);
  ps_csv_reader *c = ps_csv_open(p, 0, err, sizeof err);
  assert_non_null(c);
  assert_int_equal(ps_csv_next(c, &rc), 1);
  assert_int_equal(ps_csv_next(c, &rc), 1);
  assert_int_equal(ps_csv_next(c, &rc), -1);
  assert_non_null(strstr(ps_csv_error(c), "qnul.csv:4: binary data (a NUL byte at offset 14)"));
  s = ps_scan_open(p, err2, sizeof err2);
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(ps_scan_next(s, &r), 1);
  assert_int_equal(ps_scan_next(s, &r), -1);
  assert_string_equal(ps_scan_error(s), ps_csv_error(c));
  assert_int_equal(ps_scan_next(s, &r), -1);  /* and it stays failed */
  ps_scan_close(s);
  ps_csv_close(c);

  assert_null(ps_csv_open(dir, 0, err, sizeof err));
  assert_null(ps_scan_open(dir, err2, sizeof err2));
  assert_string_equal(err, err2);
  assert_non_null(strstr(err, ": is a directory, not a regular file"));
}

/* Line numbers count LF, CRLF and a lone CR alike (Python's universal newlines), inside
 * quoted fields too: a CR-only file and its LF twin give every record and error the same line
 * (a quoted CR was not counted, so every later line was one short). */
static void test_cr_only_line_numbers(void **state) {
  (void)state;
  static const char lf[] = "a,b\n1,\"x\ny\"\n\n2,3\n\"p\nq\nr\",\"s\0\"\n";
  char cr[sizeof lf], crlf[2 * sizeof lf];
  size_t n = 0;
  for (size_t i = 0; i < sizeof lf - 1; i++) {
    cr[i] = lf[i] == '\n' ? '\r' : lf[i];
    if (lf[i] == '\n') crlf[n++] = '\r';
    crlf[n++] = lf[i];
  }
  const char *texts[] = {lf, cr, crlf};
  const size_t lens[] = {sizeof lf - 1, sizeof lf - 1, n};
  for (int v = 0; v < 3; v++) {
    char err[700];
    ps_scan_record r;
    const char *p = write_file("lines.csv", texts[v], lens[v]);
    ps_scan *s = ps_scan_open(p, err, sizeof err);
    long want[] = {1, 2, 5};
    for (int k = 0; k < 3; k++) {
      assert_int_equal(ps_scan_next(s, &r), 1);
      assert_int_equal(r.line, want[k]);
    }
    assert_int_equal(ps_scan_next(s, &r), -1);
    assert_non_null(strstr(ps_scan_error(s), "lines.csv:8: binary data"));
    ps_scan_close(s);
  }
}

/* The first record's line ending and BOM, as the writer needs them to keep a file's style. */
static void test_style(void **state) {
  (void)state;
  char err[700];
  ps_scan_record r;
  static const char *const cases[][2] = {
    {"\xEF\xBB\xBF" "a,b\r\n1,2\n", "\r\n"}, {"\n\na,\"b\"\n", "\n"}, {"\"x\"\r\n", "\r\n"},
    {"a\rb\r", "\r\n"}, {"a,b", NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *p = write_file("style.csv", cases[i][0], strlen(cases[i][0]));
    ps_scan *s = ps_scan_open(p, err, sizeof err);
    assert_int_equal(ps_scan_next(s, &r), 1);
    if (cases[i][1]) assert_string_equal(ps_scan_eol(s), cases[i][1]);
    else assert_null(ps_scan_eol(s));
    assert_int_equal(ps_scan_has_bom(s), i == 0);
    ps_scan_close(s);
  }
}

/* A file bigger than the 4 MB buffer, with quoted newlines and doubled quotes across every
 * kind of boundary, and the offsets a second thread would start from. */
static void test_big_file(void **state) {
  (void)state;
  size_t cap = 10u << 20, n = 0;
  char *text = malloc(cap);
  n += (size_t)sprintf(text + n, "Type,Input Shapes,Note\r\n");
  for (int i = 0; n < cap - 200; i++)
    n += (size_t)sprintf(text + n, "K%d,\"\"\"%d,%d;%d\"\"\",\"%s\"\r\n", i, i, i + 1, i % 7,
                         i % 5 ? "plain" : "two\nlines \"\"q\"\"");
  const char *p = write_file("big.csv", text, n);
  free(text);
  long records = same_records(p);
  assert_true(records > 100000);
  char err[700];
  ps_scan *s = ps_scan_open(p, err, sizeof err);
  ps_scan_record r;
  uint64_t prev = ps_scan_offset(s);
  long k = 0;
  while (ps_scan_next(s, &r) > 0) {
    uint64_t off = ps_scan_offset(s);
    assert_true(off > prev);
    prev = off;
    if (++k == 50000) {   /* a scanner opened there reads on identically */
      ps_scan *t = ps_scan_open_at(p, off, err, sizeof err);
      ps_scan_record a, b;
      for (int j = 0; j < 1000; j++) {
        assert_int_equal(ps_scan_next(s, &a), 1);
        assert_int_equal(ps_scan_next(t, &b), 1);
        assert_int_equal(a.nfields, b.nfields);
        for (size_t f = 0; f < a.nfields; f++) assert_memory_equal(a.fields[f], b.fields[f], a.lens[f]);
      }
      ps_scan_close(t);
    }
  }
  ps_scan_close(s);
}

/* Every record of path as text and the final status and error, read with the SSE2 scan or the
 * portable one: with ps_scan_next its fields, lengths, lines; raw (ps_scan_next_raw), its
 * bytes, line and every field's span as the scanner hands it out (start, end, unescape) with
 * its unquoted value. The SSE2 scan reads a record through its structural index and the
 * portable one through the exact walk: both must come out the same. */
static char *transcript(const char *path, int portable, int raw, size_t *len) {
  char err[700], *out = NULL;
  FILE *f = open_memstream(&out, len);
  ps_scan_set_portable(portable);
  ps_scan *s = ps_scan_open(path, err, sizeof err);
  assert_non_null(s);
  ps_scan_record r;
  ps_scan_raw w;
  int st;
  while ((st = raw ? ps_scan_next_raw(s, &w) : ps_scan_next(s, &r)) > 0) {
    if (raw) {
      fprintf(f, "line %ld, %zu bytes [", w.line, w.len);
      fwrite(w.bytes, 1, w.len, f);
      fprintf(f, "] at %td, %zu fields:", w.bytes - w.base, w.nfields);
    } else {
      fprintf(f, "line %ld, %zu fields:", r.line, r.nfields);
    }
    for (size_t i = 0; i < (raw ? w.nfields : r.nfields); i++) {
      if (raw) {
        ps_scan_field x = ps_scan_raw_field(&w, i);
        char *v = malloc(x.end - x.start + 1);
        size_t n = ps_scan_unquote(&w, i, v);
        fprintf(f, " %zu-%zu/%d[", x.start, x.end, x.unescape);
        fwrite(v, 1, n, f);
        free(v);
      } else {
        fprintf(f, " %zu[", r.lens[i]);
        fwrite(r.fields[i], 1, r.lens[i], f);
        assert_int_equal(r.fields[i][r.lens[i]], 0);
      }
      fputc(']', f);
    }
    fprintf(f, " next %llu\n", (unsigned long long)ps_scan_offset(s));
  }
  fprintf(f, "status %d: %s eol %s\n", st, st < 0 ? ps_scan_error(s) : "",
          ps_scan_eol(s) ? ps_scan_eol(s) : "none");
  ps_scan_close(s);
  ps_scan_set_portable(0);
  fclose(f);
  return out;
}

/* mode 0: the best fast scan the CPU has (AVX2), 2: the SSE2 one; each against the portable */
static void same_both_ways(const char *path) {
  for (int raw = 0; raw < 2; raw++)
    for (int mode = 0; mode <= 2; mode += 2) {
      size_t na, nb;
      char *a = transcript(path, mode, raw, &na), *b = transcript(path, 1, raw, &nb);
      if (na != nb || memcmp(a, b, na) != 0)
        fprintf(stderr, "%s%s: %s:\n%s\nportable:\n%s\n", path, raw ? " (raw)" : "", mode ? "SSE2" : "AVX2", a,
                b);
      assert_int_equal(na, nb);
      assert_memory_equal(a, b, na);
      free(a);
      free(b);
    }
}

/* The AVX2 and SSE2 scans and the portable byte loop read alike: every quirk and bad input at every
 * position against the 16-byte loads (0 to 31 blank lines before it), random CSV-like bytes,
 * and a file bigger than the buffer. */
#define L64 "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ;:"
static void test_simd_matches_portable(void **state) {
  (void)state;
  static const char *const more[] = {   /* besides the quirks */
    "a,b\n1,\"open\n", "a,b\n\"x\"yz,w\n", "a,b\n\"x\"yz\"q\"\r", "\"p\nq\r\nr\rs\",\"t\r\"\r\n",
    "a,b\n\"a quoted field longer than sixteen bytes, with \"\"doubled\"\" quotes\",\"\"\n",
    "0123456789abcdefghijklmnopqrstuvwxyz,0123456789abcdefghijklmnopqrstuvwxyz\n",
    /* runs longer than 64 bytes: the C library's search takes over */
    "a,\"" L64 L64 "\n" L64 "\r\n" L64 "\"\"" L64 "\",b\r\n" L64 L64 ",\"" L64 "\"" L64 "x,y\n",
    L64 L64 "\r" L64 ",\"" L64 L64 "\"\"\"" L64 "\n\"" L64 L64 L64,
  };
  static const char nuls[][200] = {"a,b\n1,2\n3\0,4\n", "a,b\n1,2\n3,\"x\ny\0z\"\n5,6\n",
                                  "a,\"b\0c\n", "a,b\n1\0", "a,\"" L64 L64 "\0\"\n",
                                  "a," L64 L64 "\0,b\n"};
  static const size_t nul_lens[] = {13, 23, 7, 6, 3 + 128 + 3, 2 + 128 + 4};
  char name[64], text[8192];
  const size_t nq = sizeof quirks / sizeof quirks[0], nm = sizeof more / sizeof more[0];
  for (size_t i = 0; i < nq + nm + sizeof nuls / sizeof nuls[0]; i++)
    for (int k = 0; k < 32; k++) {
      const char *c = i < nq ? quirks[i] : i < nq + nm ? more[i - nq] : nuls[i - nq - nm];
      size_t n = i < nq + nm ? strlen(c) : nul_lens[i - nq - nm];
      memset(text, '\n', (size_t)k);
      memcpy(text + k, c, n);
      snprintf(name, sizeof name, "align%zu_%d.csv", i, k);
      same_both_ways(write_file(name, text, n + (size_t)k));
    }
  static const char alphabet[] = "ab ,,,\"\"\"\n\r\t;x";
  uint64_t seed = 12345;
  for (int t = 0; t < 500; t++) {
    size_t n = (size_t)(t * 7 % 600);
    for (size_t j = 0; j < n; j++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      text[j] = alphabet[(seed >> 33) % (sizeof alphabet - 1)];
      if ((seed >> 20) % 997 == 0) text[j] = 0;
    }
    same_both_ways(write_file("random.csv", text, n));
  }
  size_t cap = 9u << 20, n = 0;
  char *big = malloc(cap);
  for (int i = 0; n < cap - 200; i++)
    n += (size_t)sprintf(big + n, "K%d,\"\"\"%d,%d;%d\"\"\",\"%s\"%s", i, i, i + 1, i % 7,
                         i % 5 ? "plain" : "two\nlines \"\"q\"\"", i % 3 ? "\r\n" : "\n");
  same_both_ways(write_file("big2.csv", big, n));
  free(big);
}

/* Records of hundreds of fields (the fast scan's field ends outgrow their array mid-record
 * and the record is scanned again after the growth), short and quoted ones among them. */
static void test_wide_records(void **state) {
  (void)state;
  char *text = malloc(1 << 16);
  size_t n = 0;
  for (int r = 0; r < 6; r++) {
    for (int i = 0; i < 40 + r * 150; i++)
      n += (size_t)sprintf(text + n, i % 9 == 4 ? "\"%d,%d\"," : i % 3 ? "%d," : ",", i, r);
    n += (size_t)sprintf(text + n, "end%d%s", r, r % 2 ? "\r\n" : "\n");
  }
  same_both_ways(write_file("wide.csv", text, n));
  free(text);
}

/* Past 64 bytes both scans hand over to the C library's search: what it finds, by hand. */
static void test_long_runs(void **state) {
  (void)state;
  static const char text[] = "a,\"" L64 L64 "\r" L64 "\"\"" L64 "\",b\r\n" L64 L64 ",c\n\"" L64 L64 "x";
  const char *p = write_file("long.csv", text, sizeof text - 1);
  for (int portable = 0; portable < 3; portable++) {
    char err[700];
    ps_scan_set_portable(portable);
    ps_scan *s = ps_scan_open(p, err, sizeof err);
    ps_scan_record r;
    assert_int_equal(ps_scan_next(s, &r), 1);
    assert_int_equal(r.line, 1);
    assert_int_equal(r.nfields, 3);
    assert_string_equal(r.fields[1], L64 L64 "\r" L64 "\"" L64);
    assert_string_equal(r.fields[2], "b");
    assert_int_equal(ps_scan_next(s, &r), 1);
    assert_int_equal(r.line, 3);   /* the quoted lone CR is a line */
    assert_int_equal(r.nfields, 2);
    assert_string_equal(r.fields[0], L64 L64);
    assert_string_equal(r.fields[1], "c");
    assert_int_equal(ps_scan_next(s, &r), -1);
    assert_non_null(strstr(ps_scan_error(s), "long.csv:4: unterminated quoted field"));
    ps_scan_close(s);
  }
  ps_scan_set_portable(0);
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  size_t n = strlen(path);
  if (flag == FTW_F && n > 4 && strcmp(path + n - 4, ".csv") == 0 && st->st_size > 0)
    same_records(path);
  return 0;
}

static void test_real_exports(void **state) {
  (void)state;
  const char *root = getenv("PERFSCRIPT_REAL_DATA");
  char buf[2048];
  if (root == NULL) {
    const char *src = getenv("PERFSCRIPT_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/../shared/data/real", src ? src : ".");
    root = buf;
  }
  struct stat st;
  if (stat(root, &st) != 0) {
    printf("SKIP: %s is absent (set PERFSCRIPT_REAL_DATA)\n", root);
    return;
  }
  int before = compared;
  nftw(root, visit, 16, FTW_PHYS);
  printf("compared %d real CSV files\n", compared - before);
  assert_true(compared - before > 10);
}

/* ps_scan_select: the fields selected are those a full read gives, the others empty, and the
 * records, lines, errors and offsets are the same, on every quirk at every alignment (fast scan
 * and exact walk, SSE2 and portable) and on random CSV-like bytes; the same with reads of 5
 * bytes (ps_scan_set_chunk). */
static char *selected_transcript(const char *path, int portable, const unsigned char *want, size_t n,
                                  int apply) {
  char err[700], *out = NULL;
  size_t len;
  FILE *f = open_memstream(&out, &len);
  ps_scan_set_portable(portable);
  ps_scan *s = ps_scan_open(path, err, sizeof err);
  assert_non_null(s);
  if (apply) assert_int_equal(ps_scan_select(s, want, n), 0);
  if (apply == 2) ps_scan_set_chunk(s, 5);   /* records read a few bytes at a time */
  ps_scan_record r;
  int st;
  while ((st = ps_scan_next(s, &r)) > 0) {
    fprintf(f, "line %ld, %zu fields:", r.line, r.nfields);
    for (size_t i = 0; i < r.nfields; i++) {
      int on = i < n && want[i];   /* the others printed blank, and blank when selecting */
      const char *v = r.fields[i];
      size_t vlen = r.lens[i];
      if (on && apply && want[i] == PS_SCAN_PLAIN) {
        /* as it lies, or cut: trimmed, it is the full read's field */
        while (vlen && strchr(" \t\n\v\f\r", *v)) v++, vlen--;
        while (vlen && strchr(" \t\n\v\f\r", v[vlen - 1])) vlen--;
      } else if (on) {
        assert_int_equal(v[vlen], 0);
      }
      fprintf(f, " %zu[", on ? vlen : 0);
      if (on) fwrite(v, 1, vlen, f);
      else if (apply) assert_int_equal(r.lens[i], 0), assert_string_equal(r.fields[i], "");
      fputc(']', f);
    }
    fprintf(f, " next %llu\n", (unsigned long long)ps_scan_offset(s));
  }
  fprintf(f, "status %d: %s\n", st, st < 0 ? ps_scan_error(s) : "");
  ps_scan_close(s);
  ps_scan_set_portable(0);
  fclose(f);
  return out;
}

/* PS_SCAN_PLAIN fields (2) among the cut ones: trimmed, they are what a full read gives */
static void select_with(const unsigned char *want, size_t n);

static void test_select(void **state) {
  (void)state;
  static const unsigned char want[] = {1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const unsigned char plain[] = {2, 0, 1, 2, 2, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0, 0, 0, 0, 0, 1, 2};
  select_with(want, sizeof want);
  select_with(plain, sizeof plain);
}

/* The full read (fields not selected blanked) and the selected one of path are the same, with
 * each scan (AVX2, portable, SSE2) and with reads of 5 bytes. */
static void same_selected(const char *path, const unsigned char *want, size_t n) {
  for (int portable = 0; portable < 3; portable++) {
    char *all = selected_transcript(path, portable, want, n, 0);
    for (int apply = 1; apply <= 2; apply++) {
      char *some = selected_transcript(path, portable, want, n, apply);
      if (strcmp(all, some) != 0) fprintf(stderr, "%s\nall:\n%s\nselected:\n%s\n", path, all, some);
      assert_string_equal(all, some);
      free(some);
    }
    free(all);
  }
}

/* Runs of PS_SCAN_PLAIN fields side by side (a row's counters), in records the fast scan reads:
 * the last run is handed out two at a time where its fields start after the record's last
 * quote, one by one (a quoted one cut) before it. Records of 24 fields, each a number, spaces,
 * a quoted cell of any form ("x,y", """shape""", doubled quotes, text after the closing
 * quote) or empty, at random places. */
static void test_select_runs(void **state) {
  (void)state;
  static const unsigned char runs[] = {1, 0, 2, 2, 2, 2, 2, 2, 2, 1, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  static const char *const cells[] = {"12.5", " 7 ", "\"q,1\"", "\"\"\"3,4\"\"\"", "\"a\"\"b\"", "\"\"", "",
                                      "x y", "\"1736413971000024.661\t\"", "\"t\"ail", "0.001"};
  const size_t nc = sizeof cells / sizeof cells[0];
  static char text[1 << 16];
  uint64_t seed = 7;
  for (int t = 0; t < 40; t++) {
    size_t len = 0;
    for (int r = 0; r < 60; r++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      int quoted_after = (int)((seed >> 40) % 26);   /* cells from here on may be quoted */
      for (int f = 0; f < 24; f++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t k = (seed >> 33) % nc;
        if (f < quoted_after && (k == 2 || k == 3 || k == 4 || k == 5 || k == 8 || k == 9)) k = 0;
        len += (size_t)sprintf(text + len, "%s%s", f ? "," : "", cells[k]);
      }
      len += (size_t)sprintf(text + len, "%s", r % 3 ? "\n" : "\r\n");
    }
    same_selected(write_file("runs.csv", text, len), runs, sizeof runs);
  }
}

static void select_with(const unsigned char *want, size_t n) {
  char text[4096];
  static const char alphabet[] = "ab ,,,\"\"\"\n\r\t;x";
  uint64_t seed = 99;
  size_t nq = sizeof quirks / sizeof quirks[0];
  for (size_t t = 0; t < nq * 8 + 300; t++) {
    size_t len;
    if (t < nq * 8) {   /* a quirk after 0..7 blank lines */
      len = t % 8;
      memset(text, '\n', len);
      memcpy(text + len, quirks[t / 8], strlen(quirks[t / 8]));
      len += strlen(quirks[t / 8]);
    } else {            /* random bytes, lines of up to ~80 fields */
      len = (t * 13) % 3000;
      for (size_t j = 0; j < len; j++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        text[j] = alphabet[(seed >> 33) % (sizeof alphabet - 1)];
      }
    }
    same_selected(write_file("select.csv", text, len), want, n);
  }
}

int main(void) {
  const char *tmp = getenv("PERFSCRIPT_TEST_TMP");
  snprintf(dir, sizeof dir, "%s/csvscan_c", tmp ? tmp : "/tmp");
  mkdir(dir, 0777);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_quirks),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_one_rule_for_bad_input),
    cmocka_unit_test(test_cr_only_line_numbers),
    cmocka_unit_test(test_style),
    cmocka_unit_test(test_big_file),
    cmocka_unit_test(test_simd_matches_portable),
    cmocka_unit_test(test_wide_records),
    cmocka_unit_test(test_long_runs),
    cmocka_unit_test(test_real_exports),
    cmocka_unit_test(test_select),
    cmocka_unit_test(test_select_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
