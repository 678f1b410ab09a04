/* The input opener (src/io/infile.c): regular files only; a FIFO is refused without blocking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "csvscan.h"
#include "infile.h"
#include "testutil.h"

static void regular_files_only(void **state) {
  (void)state;
  char err[600], fifo[8300];
  const char *file = write_file("in.csv", "a,b\n1,2\n", 8);
  int fd = ps_input_open(file, err, sizeof err);
  assert_true(fd >= 0);
  char buf[16];
  assert_int_equal(read(fd, buf, sizeof buf), 8);  /* blocking mode restored, whole file read */
  close(fd);

  snprintf(fifo, sizeof fifo, "%s/pipe.csv", test_dir());
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(ps_input_open(fifo, err, sizeof err), -1);  /* returns at once: no writer */
  assert_non_null(strstr(err, "pipe.csv: is a named pipe (FIFO), not a regular file"));
  assert_null(ps_input_fopen(fifo, err, sizeof err));
  assert_null(ps_scan_open(fifo, err, sizeof err));             /* the CSV engine opens through it */
  assert_non_null(strstr(err, "is a named pipe (FIFO)"));
  assert_int_equal(ps_input_check(fifo, err, sizeof err), -1);
  unlink(fifo);

  assert_int_equal(ps_input_open("/dev/null", err, sizeof err), -1);
  assert_string_equal(err, "/dev/null: is a character device, not a regular file; perfscript reads "
                           "only regular files");
  assert_int_equal(ps_input_open(test_dir(), err, sizeof err), -1);
  assert_non_null(strstr(err, ": is a directory, not a regular file"));
  snprintf(fifo, sizeof fifo, "%s/absent.csv", test_dir());
  assert_int_equal(ps_input_open(fifo, err, sizeof err), -1);
  assert_non_null(strstr(err, "absent.csv: No such file or directory"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(regular_files_only)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
