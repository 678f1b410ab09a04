/* The CSV writer, atomic replacement and the database directory lock. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "csvread.h"
#include "csvscan.h"
#include "csvwrite.h"
#include "dirlock.h"
#include "testutil.h"

static void write_row(ps_csv_writer *w, size_t n, const char *const *f) {
  size_t lens[16];
  char err[600];
  for (size_t i = 0; i < n; i++) lens[i] = strlen(f[i]);
  assert_int_equal(ps_csv_writer_row(w, f, lens, n, err, sizeof err), 0);
}

static void minimal_quoting_round_trip(void **state) {
  (void)state;
  char path[8300], err[600];
  snprintf(path, sizeof path, "%s/rt.csv", test_dir());
  unlink(path);
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, NULL, -1, err, sizeof err), 0);
  const char *header[] = {"Input Shapes", "Name", "Note"};
  const char *row[] = {"\"81920,4096;8192,512\"", "add", "two\nlines, \"quoted\""};
  const char *lone[] = {""};
  write_row(&w, 3, header);
  write_row(&w, 3, row);
  write_row(&w, 1, lone);
  assert_int_equal(ps_csv_writer_commit(&w, 1, err, sizeof err), PS_ATOMIC_CREATED);
  char *text = read_file(path, NULL);
  assert_string_equal(text,
    "Input Shapes,Name,Note\n"
    "\"\"\"81920,4096;8192,512\"\"\",add,\"two\nlines, \"\"quoted\"\"\"\n"
    "\"\"\n");
  free(text);
  ps_csv_reader *r = ps_csv_open(path, 0, err, sizeof err);
  ps_csv_record rec;
  assert_int_equal(ps_csv_next(r, &rec), 1);
  assert_int_equal(ps_csv_next(r, &rec), 1);
  assert_string_equal(rec.fields[0], row[0]);
  assert_string_equal(rec.fields[2], row[2]);
  assert_int_equal(ps_csv_next(r, &rec), 1);
  assert_int_equal(rec.nfields, 1);
  assert_string_equal(rec.fields[0], "");
  assert_int_equal(ps_csv_next(r, &rec), 0);
  ps_csv_close(r);
  assert_int_equal(temp_files(), 0);
}

static void keeps_line_endings_and_bom(void **state) {
  (void)state;
  char err[600];
  const char *path = write_file("crlf.csv", "\xEF\xBB\xBF" "a,b\r\n1,2\r\n", 13);
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, NULL, -1, err, sizeof err), 0);
  const char *h[] = {"a", "b"}, *r1[] = {"1", "2"}, *r2[] = {"3", "4"};
  write_row(&w, 2, h);
  write_row(&w, 2, r1);
  write_row(&w, 2, r2);
  assert_int_equal(ps_csv_writer_commit(&w, 1, err, sizeof err), PS_ATOMIC_REPLACED);
  char *text = read_file(path, NULL);
  assert_string_equal(text, "\xEF\xBB\xBF" "a,b\r\n1,2\r\n3,4\r\n");
  free(text);
}

static void identical_content_is_not_rewritten(void **state) {
  (void)state;
  char err[600];
  const char *path = write_file("same.csv", "a,b\n1,2\n", 8);
  struct stat before, after;
  stat(path, &before);
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, NULL, -1, err, sizeof err), 0);
  const char *h[] = {"a", "b"}, *r1[] = {"1", "2"};
  write_row(&w, 2, h);
  write_row(&w, 2, r1);
  assert_int_equal(ps_csv_writer_commit(&w, 1, err, sizeof err), PS_ATOMIC_UNCHANGED);
  stat(path, &after);
  assert_int_equal(before.st_ino, after.st_ino);  /* the very same file */
  assert_int_equal(temp_files(), 0);
}

static void abort_leaves_original(void **state) {
  (void)state;
  char err[600];
  const char *path = write_file("keep.csv", "a\n1\n", 4);
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, NULL, -1, err, sizeof err), 0);
  const char *r1[] = {"changed"};
  write_row(&w, 1, r1);
  assert_int_equal(temp_files(), 1);
  ps_csv_writer_abort(&w);
  assert_int_equal(temp_files(), 0);
  char *text = read_file(path, NULL);
  assert_string_equal(text, "a\n1\n");
  free(text);
}

static void unwritable_directory_is_an_error(void **state) {
  (void)state;
  char err[600];
  ps_atomic a;
  assert_int_equal(ps_atomic_open(&a, "/nonexistent-dir/x.csv", err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent-dir/x.csv: cannot create a temporary file"));
}

static void atomic_write_preserves_mode(void **state) {
  (void)state;
  char err[600];
  const char *path = write_file("mode.txt", "old", 3);
  chmod(path, 0640);
  assert_int_equal(ps_atomic_write(path, "new", 3, 1, err, sizeof err), PS_ATOMIC_REPLACED);
  struct stat st;
  stat(path, &st);
  assert_int_equal(st.st_mode & 0777, 0640);
}

static void directory_lock_excludes_a_second_holder(void **state) {
  (void)state;
  char err[600];
  int fd = ps_dirlock_acquire(test_dir(), 0, NULL, NULL, err, sizeof err);
  assert_true(fd >= 0);
  int fd2 = ps_dirlock_acquire(test_dir(), 0, NULL, NULL, err, sizeof err);
  assert_int_equal(fd2, -1);
  assert_non_null(strstr(err, "locked by another perfscript run"));
  fd2 = ps_dirlock_acquire(test_dir(), 0.2, NULL, NULL, err, sizeof err);
  assert_int_equal(fd2, -1);
  assert_non_null(strstr(err, "still locked"));
  ps_dirlock_release(fd);
  fd2 = ps_dirlock_acquire(test_dir(), 0, NULL, NULL, err, sizeof err);
  assert_true(fd2 >= 0);
  ps_dirlock_release(fd2);
}

/* The temporary file of an atomic write names its writer's pid. */
static void temporary_file_names_its_writer(void **state) {
  (void)state;
  char err[600];
  ps_atomic a;
  const char *path = write_file("owner.csv", "a\n", 2);
  assert_int_equal(ps_atomic_open(&a, path, err, sizeof err), 0);
  const char *base = strrchr(a.tmp, '/') + 1;
  assert_int_equal(ps_atomic_tmp_owner(base), (long)getpid());
  ps_atomic_abort(&a);
  assert_int_equal(ps_atomic_tmp_owner(".Add.csv.tmp.123.aB9xYz"), 123);
  assert_int_equal(ps_atomic_tmp_owner(".a.tmp.1.abc.tmp.77.ZZZZZZ"), 77);
  assert_int_equal(ps_atomic_tmp_owner(".Add.csv.tmp.aB9xYz"), 0);    /* no pid */
  assert_int_equal(ps_atomic_tmp_owner("Add.csv.tmp.123.aB9xYz"), 0);  /* no leading dot */
  assert_int_equal(ps_atomic_tmp_owner(".Add.csv.tmp.123.aB9xY"), 0);  /* 5-char suffix */
  assert_int_equal(ps_atomic_tmp_owner(".Add.csv.tmp.123.aB9x-z"), 0);
  assert_int_equal(ps_atomic_tmp_owner(".tmp.123.aB9xYz"), 0);         /* no name */
  assert_int_equal(ps_atomic_tmp_owner(".Add.csv.tmp.0123.aB9xYz"), 0);
  assert_int_equal(ps_atomic_tmp_owner(".perfscript.lock"), 0);
}

/* With the lock held, leftovers of dead writers go; live writers' files and others stay. */
static void lock_holder_removes_leftovers_of_dead_writers(void **state) {
  (void)state;
  char err[600], name[128];
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, NULL, 0);
  snprintf(name, sizeof name, ".Gone.csv.tmp.%ld.aB9xYz", (long)dead);
  const char *gone = write_file(name, "half", 4);
  snprintf(name, sizeof name, ".Live.csv.tmp.%ld.aB9xYz", (long)getppid());
  const char *live = write_file(name, "busy", 4);
  snprintf(name, sizeof name, "Other.tmp.%ld.aB9xYz", (long)dead);
  const char *other = write_file(name, "x", 1);
  const char *legacy = write_file(".Old.csv.tmp.aB9xYz", "x", 1);
  int fd = ps_dirlock_acquire(test_dir(), 0, NULL, NULL, err, sizeof err);
  assert_true(fd >= 0);
  assert_int_equal(ps_dirlock_recover(test_dir(), NULL, NULL), 1);
  struct stat st;
  assert_int_equal(stat(gone, &st), -1);
  assert_int_equal(stat(live, &st), 0);
  assert_int_equal(stat(other, &st), 0);
  assert_int_equal(stat(legacy, &st), 0);
  ps_dirlock_release(fd);
  unlink(live), unlink(other), unlink(legacy);
}

/* ps_csv_quote's one-pass copy and test (and ps_csv_needs_quote) against the byte rule, with
 * the quoted text built here the slow way: each special byte
 * (and each byte one off it, and high bytes) at every position of fields of 0..40 bytes, at
 * every alignment. */
static void quoter_finds_every_special_byte_at_every_position(void **state) {
  (void)state;
  static const unsigned char probe[] = {',', '"', '\r', '\n', ',' - 1, ',' + 1, '"' - 1, '"' + 1,
                                        '\r' - 1, '\r' + 1, '\n' + 2, 0x80, 0xac, 0xa2, 0x8d, 0x8a, 0xff, 0};
  char buf[64];
  for (size_t align = 0; align < 8; align++)
    for (size_t len = 0; len <= 40; len++)
      for (size_t pos = 0; pos < len; pos++)
        for (size_t k = 0; k < sizeof probe; k++) {
          memset(buf, 'x', sizeof buf);
          char *s = buf + align;
          s[pos] = (char)probe[k];
          if (pos + 1 < len) s[len - 1] = (char)0xab; /* another high byte before the end */
          int want = 0;
          for (size_t i = 0; i < len; i++)
            want |= s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
          assert_int_equal(ps_csv_needs_quote(s, len), want);
          char out[PS_CSV_QUOTED_MAX(64)], ref[PS_CSV_QUOTED_MAX(64)];
          size_t r = 0;
          if (want) ref[r++] = '"';
          for (size_t i = 0; i < len; i++) {
            if (s[i] == '"') ref[r++] = '"';
            ref[r++] = s[i];
          }
          if (want) ref[r++] = '"';
          size_t n = ps_csv_quote(out, s, len);
          assert_int_equal(n, r);
          assert_memory_equal(out, ref, r);
        }
  /* a special byte just past len is not the field's */
  memcpy(buf, "abcdefgh,", 9);
  assert_int_equal(ps_csv_needs_quote(buf, 8), 0);
  assert_int_equal(ps_csv_needs_quote(buf, 9), 1);
}

/* The one quoter: minimal quoting as Python's csv writes it, and the row encoder the writer,
 * the write-back merge and perfscript.csv.format_row share. */
static void quoter_is_minimal_and_reads_back(void **state) {
  (void)state;
  static const char *const cases[][2] = {
    {"plain", "plain"}, {"", ""}, {"a,b", "\"a,b\""}, {"say \"hi\"", "\"say \"\"hi\"\"\""},
    {"\"", "\"\"\"\""}, {"two\nlines", "\"two\nlines\""}, {"cr\r", "\"cr\r\""},
    {" spaced\t", " spaced\t"}, {"\"81920,4096\"", "\"\"\"81920,4096\"\"\""}};
  char out[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = strlen(cases[i][0]);
    assert_int_equal(ps_csv_needs_quote(cases[i][0], len), strcmp(cases[i][0], cases[i][1]) != 0);
    assert_true(PS_CSV_QUOTED_MAX(len) <= sizeof out);
    size_t n = ps_csv_quote(out, cases[i][0], len);
    assert_int_equal(n, strlen(cases[i][1]));
    assert_memory_equal(out, cases[i][1], n);
  }
  const char *f[] = {"a", "b,c", "d\"e", ""};
  size_t lens[] = {1, 3, 3, 0};
  char row[128];
  assert_true(ps_csv_row_max(lens, 4, "\r\n") <= sizeof row);
  size_t n = ps_csv_format_row(row, f, lens, 4, "\r\n");
  assert_int_equal(n, strlen("a,\"b,c\",\"d\"\"e\",\r\n"));
  assert_memory_equal(row, "a,\"b,c\",\"d\"\"e\",\r\n", n);
  /* a lone empty field is "" (Python writes it so; bare it would read back as no record) */
  n = ps_csv_format_row(row, f + 3, lens + 3, 1, NULL);
  assert_int_equal(n, 2);
  assert_memory_equal(row, "\"\"", 2);
  assert_int_equal(ps_csv_format_row(row, f, lens, 0, "\n"), 1);
  /* a wide row through the writer reads back field for field */
  char path[8300], err[600];
  snprintf(path, sizeof path, "%s/wide.csv", test_dir());
  unlink(path);
  static char big[3][5000];
  memset(big[0], 'x', 4999);
  memset(big[1], '"', 4999);
  memset(big[2], ',', 4999);
  const char *wide[] = {big[0], big[1], big[2]};
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, NULL, -1, err, sizeof err), 0);
  write_row(&w, 3, wide);
  write_row(&w, 1, f + 3);
  assert_int_equal(ps_csv_writer_commit(&w, 0, err, sizeof err), PS_ATOMIC_CREATED);
  ps_csv_reader *r = ps_csv_open(path, 0, err, sizeof err);
  assert_non_null(r);
  ps_csv_record rec;
  assert_int_equal(ps_csv_next(r, &rec), 1);
  assert_int_equal(rec.nfields, 3);
  for (int i = 0; i < 3; i++) assert_string_equal(rec.fields[i], big[i]);
  assert_int_equal(ps_csv_next(r, &rec), 1);
  assert_int_equal(rec.nfields, 1);
  assert_int_equal(rec.lens[0], 0);
  assert_int_equal(ps_csv_next(r, &rec), 0);
  ps_csv_close(r);
}

/* ps_csv_is_formatted against the quoter itself: for every record the engine reads from a file
 * of every string of 0..4 of the bytes that matter and random longer ones (each followed by
 * the line end, which a quote may swallow), it says yes exactly when ps_csv_format_row writes
 * those very bytes back (never when it would not: a copied row must be the row the writer
 * writes; the lone empty field "" is the one match it may leave out). */
static void verbatim_check_agrees_with_the_quoter(void **state) {
  (void)state;
  static const char alpha[] = {'a', ',', '"', '\r', '\n', ' '};
  static const char *const eols[] = {"\n", "\r\n"};
  enum { NSHORT = 1555, NRAND = 20000 }; /* 1 + 6 + 36 + 216 + 1296 short strings */
  char *file = malloc((NSHORT + NRAND) * 16 + 8), out[1024], err[600];
  long yes = 0, cases = 0, raw_yes = 0;
  for (int e = 0; e < 2; e++) {
    size_t el = strlen(eols[e]), fl = 0;
    unsigned seed = 7;
    file[fl++] = 'h';
    memcpy(file + fl, eols[e], el), fl += el;
    for (long k = 0; k < NSHORT + NRAND; k++) {
      if (k < NSHORT) {
        long x = k, len = x < 1 ? 0 : x < 7 ? 1 : x < 43 ? 2 : x < 259 ? 3 : 4;
        x -= len == 0 ? 0 : len == 1 ? 1 : len == 2 ? 7 : len == 3 ? 43 : 259;
        for (long i = 0; i < len; i++, x /= 6) file[fl++] = alpha[x % 6];
      } else {
        size_t len = 5 + (seed = seed * 1103515245u + 12345u) / 65536 % 8;
        for (size_t i = 0; i < len; i++) file[fl++] = alpha[(seed = seed * 1103515245u + 12345u) / 65536 % 6];
      }
      memcpy(file + fl, eols[e], el), fl += el;
    }
    const char *path = write_file("verbatim.csv", file, fl);
    ps_scan *s = ps_scan_openf(path, PS_SCAN_KEEP_SPACE, err, sizeof err);
    assert_non_null(s);
    /* the same records as the engine finds them unedited (ps_scan_next_raw): the same
     * fields, and ps_csv_raw_is_formatted says what format_row says of their own bytes */
    ps_scan *s2 = ps_scan_openf(path, PS_SCAN_KEEP_SPACE, err, sizeof err);
    assert_non_null(s2);
    ps_scan_record rec;
    ps_scan_raw raw;
    assert_int_equal(ps_scan_next(s, &rec), 1); /* the header */
    assert_int_equal(ps_scan_next_raw(s2, &raw), 1);
    size_t start = (size_t)ps_scan_offset(s);
    int st;
    while ((st = ps_scan_next(s, &rec)) == 1) {
      size_t end = (size_t)ps_scan_offset(s);
      assert_int_equal(ps_scan_next_raw(s2, &raw), 1);
      assert_int_equal(ps_scan_offset(s2), end);
      assert_int_equal(raw.line, rec.line);
      assert_int_equal(raw.nfields, rec.nfields);
      assert_true(raw.len <= end - start);  /* its bytes, without blank lines before it */
      for (size_t i = 0; i < raw.nfields; i++) {
        char *f = malloc(ps_scan_raw_field(&raw, i).end - ps_scan_raw_field(&raw, i).start + 1); /* unquote's room */
        assert_non_null(f);
        assert_int_equal(ps_scan_unquote(&raw, i, f), rec.lens[i]);
        assert_memory_equal(f, rec.fields[i], rec.lens[i] + 1);
        free(f);
      }
      if (ps_csv_row_max(rec.lens, rec.nfields, eols[e]) <= sizeof out) {
        size_t m = ps_csv_format_row(out, rec.fields, rec.lens, rec.nfields, eols[e]);
        int same = m == end - start && memcmp(out, file + start, m) == 0;
        int says = ps_csv_is_formatted(file + start, end - start, rec.nfields, rec.lens, eols[e]);
        int lone_empty = rec.nfields == 1 && rec.lens[0] == 0;
        if (says != same && !(same && lone_empty))
          fail_msg("record %.*s (eol %d): is_formatted %d, format_row gives it back %d",
                   (int)(end - start), file + start, e, says, same);
        int raw_same = m == raw.len && memcmp(out, raw.bytes, m) == 0;
        int raw_says = ps_csv_raw_is_formatted(&raw, eols[e]);
        if (raw_says != raw_same && !(raw_same && lone_empty))
          fail_msg("record %.*s (eol %d): raw_is_formatted %d, format_row gives it back %d",
                   (int)raw.len, raw.bytes, e, raw_says, raw_same);
        yes += says, cases++, raw_yes += raw_says;
      }
      start = end;
    }
    assert_int_equal(ps_scan_next_raw(s2, &raw), st);  /* the end, or the same error */
    assert_string_equal(ps_scan_error(s2), ps_scan_error(s));
    ps_scan_close(s2);
    ps_scan_close(s);
  }
  free(file);
  if (!(cases > 20000 && yes > 4000 && raw_yes >= yes)) fail_msg("%ld cases, %ld yes, %ld raw", cases, yes, raw_yes);
  /* bytes that are not the record's (a file changed under the reader) are refused */
  const size_t l2[] = {1, 1};
  assert_int_equal(ps_csv_is_formatted("a,b\n", 4, 2, l2, "\n"), 1);
  assert_int_equal(ps_csv_is_formatted("a,bc\n", 5, 2, l2, "\n"), 0);
  assert_int_equal(ps_csv_is_formatted("\na,b\n", 5, 2, l2, "\n"), 0);   /* a blank line first */
  assert_int_equal(ps_csv_is_formatted("a,b\r\n", 5, 2, l2, "\n"), 0);  /* the other eol */
  assert_int_equal(ps_csv_is_formatted("a,b", 3, 2, l2, "\n"), 0);       /* no eol */
}

/* Rows gather in blocks before they reach the file: a file of several blocks, rows quoted and
 * rows passed as their bytes (ps_csv_writer_raw) in between, reads back whole and in order. */
static void rows_and_raw_bytes_across_blocks(void **state) {
  (void)state;
  char path[8300], err[600];
  snprintf(path, sizeof path, "%s/blocks.csv", test_dir());
  unlink(path);
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, "\r\n", 0, err, sizeof err), 0);
  char a[32], b[32];
  for (int i = 0; i < 200000; i++) {
    snprintf(a, sizeof a, "%d", i);
    snprintf(b, sizeof b, "x,%d", i);
    if (i % 3 == 0) {
      char raw[80];
      int n = snprintf(raw, sizeof raw, "%s,\"%s\"\r\n", a, b);
      assert_int_equal(ps_csv_writer_raw(&w, raw, (size_t)n, 1, err, sizeof err), 0);
    } else {
      const char *f[] = {a, b};
      write_row(&w, 2, f);
    }
  }
  assert_int_equal(w.rows, 200000);
  assert_int_equal(ps_csv_writer_commit(&w, 1, err, sizeof err), PS_ATOMIC_CREATED);
  ps_csv_reader *r = ps_csv_open(path, 0, err, sizeof err);
  assert_non_null(r);
  ps_csv_record rec;
  for (int i = 0; i < 200000; i++) {
    assert_int_equal(ps_csv_next(r, &rec), 1);
    snprintf(a, sizeof a, "%d", i);
    snprintf(b, sizeof b, "x,%d", i);
    assert_string_equal(rec.fields[0], a);
    assert_string_equal(rec.fields[1], b);
  }
  assert_int_equal(ps_csv_next(r, &rec), 0);
  assert_string_equal(ps_csv_eol(r), "\r\n");
  ps_csv_close(r);
  assert_int_equal(temp_files(), 0);
}

/* A large file's disk write is started as it is written (the commit's fsync then waits for the
 * last blocks only): a 40 MiB file, written as rows of raw bytes, reads back whole. */
static void large_file_write_back_starts_early(void **state) {
  (void)state;
  char path[8300], err[600];
  snprintf(path, sizeof path, "%s/large.csv", test_dir());
  unlink(path);
  ps_csv_writer w;
  assert_int_equal(ps_csv_writer_open(&w, path, "\n", 0, err, sizeof err), 0);
  static char row[4096];
  memset(row, 'a', sizeof row - 1);
  row[sizeof row - 1] = '\n';
  const int n = 10240;
  for (int i = 0; i < n; i++) assert_int_equal(ps_csv_writer_raw(&w, row, sizeof row, 1, err, sizeof err), 0);
  assert_int_equal(ps_csv_writer_commit(&w, 1, err, sizeof err), PS_ATOMIC_CREATED);
#ifdef SYNC_FILE_RANGE_WRITE
  /* read once the commit has stopped the writer thread (it alone touches them before) */
  assert_true(w.synced > 0 && w.synced <= w.handed);
#endif
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, (off_t)n * (off_t)sizeof row);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char got[sizeof row];
  for (int i = 0; i < n; i++) {
    assert_int_equal(fread(got, 1, sizeof got, f), sizeof got);
    assert_memory_equal(got, row, sizeof row);
  }
  fclose(f);
  unlink(path);
  assert_int_equal(temp_files(), 0);
}

/* A large file's blocks are written by a thread of its own: a write that fails there (a file
 * size limit, as with `ulimit -f`, SIGXFSZ ignored as perfscript does) fails a later row or
 * the commit with its cause, the original untouched; an abort midway stops the thread and
 * leaves no temporary file. In a child process (the limit stays there). */
static void background_write_failure_and_abort(void **state) {
  (void)state;
  char path[8300];
  snprintf(path, sizeof path, "%s/bg.csv", test_dir());
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs("old\n", f);
  fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4 << 20, 4 << 20};
    setrlimit(RLIMIT_FSIZE, &rl);
    static char row[4096];
    memset(row, 'b', sizeof row - 1);
    row[sizeof row - 1] = '\n';
    char err[600] = "";
    ps_csv_writer w;
    /* an abort while a block may be in writing */
    if (ps_csv_writer_open(&w, path, "\n", 0, err, sizeof err) != 0) _exit(2);
    for (int i = 0; i < 700; i++)
      if (ps_csv_writer_raw(&w, row, sizeof row, 1, err, sizeof err) != 0) _exit(3);
    ps_csv_writer_abort(&w);
    /* 12 MiB against a 4 MiB limit */
    if (ps_csv_writer_open(&w, path, "\n", 0, err, sizeof err) != 0) _exit(4);
    int failed = 0;
    for (int i = 0; i < 3072 && !failed; i++)
      failed = ps_csv_writer_raw(&w, row, sizeof row, 1, err, sizeof err) != 0;
    if (failed) ps_csv_writer_abort(&w);
    else if (ps_csv_writer_commit(&w, 0, err, sizeof err) != -1) _exit(5);
    if (strstr(err, "bg.csv") == NULL || strstr(err, "File too large") == NULL) _exit(6);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  char *got = read_file(path, NULL);
  assert_string_equal(got, "old\n");
  free(got);
  assert_int_equal(temp_files(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(minimal_quoting_round_trip),
    cmocka_unit_test(quoter_is_minimal_and_reads_back),
    cmocka_unit_test(verbatim_check_agrees_with_the_quoter),
    cmocka_unit_test(rows_and_raw_bytes_across_blocks),
    cmocka_unit_test(large_file_write_back_starts_early),
    cmocka_unit_test(background_write_failure_and_abort),
    cmocka_unit_test(keeps_line_endings_and_bom),
    cmocka_unit_test(identical_content_is_not_rewritten),
    cmocka_unit_test(abort_leaves_original),
    cmocka_unit_test(unwritable_directory_is_an_error),
    cmocka_unit_test(atomic_write_preserves_mode),
    cmocka_unit_test(quoter_finds_every_special_byte_at_every_position),
    cmocka_unit_test(directory_lock_excludes_a_second_holder),
    cmocka_unit_test(temporary_file_names_its_writer),
    cmocka_unit_test(lock_holder_removes_leftovers_of_dead_writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
