/* The file-start checks every CSV read goes through: Git LFS pointers, UTF-16, the BOM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "csvsniff.h"
#include "testutil.h"

#define S(lit) lit, sizeof(lit) - 1

static const char POINTER[] = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n";

static void lfs_pointer_in_memory(void **state) {
  (void)state;
  assert_true(ps_is_lfs_pointer(S(POINTER)));
  assert_true(ps_is_lfs_pointer(S("\xEF\xBB\xBF" "version https://git-lfs.github.com/spec/v1\n")));
  assert_false(ps_is_lfs_pointer(S("version https://git-lfs.github.com/spe")));  /* cut short */
  assert_false(ps_is_lfs_pointer(S("Name,version https://git-lfs.github.com/spec/v1\n")));
  assert_false(ps_is_lfs_pointer(S(" version https://git-lfs.github.com/spec/v1\n")));
  assert_false(ps_is_lfs_pointer("", 0));
}

static void lfs_pointer_on_disk(void **state) {
  (void)state;
  assert_true(ps_file_is_lfs_pointer(write_file("ptr.csv", S(POINTER))));
  assert_false(ps_file_is_lfs_pointer(write_file("data.csv", S("Name,Type\nadd,Add\n"))));
  assert_false(ps_file_is_lfs_pointer(write_file("empty.csv", "", 0)));
  assert_false(ps_file_is_lfs_pointer("/nonexistent/ptr.csv"));
}

static void bad_starts(void **state) {
  (void)state;
  size_t skip = 9;
  assert_null(ps_csv_bad_start(S("a,b\n"), &skip));
  assert_int_equal(skip, 0);
  assert_null(ps_csv_bad_start(S("\xEF\xBB\xBF" "a,b\n"), &skip));
  assert_int_equal(skip, 3);
  assert_non_null(strstr(ps_csv_bad_start(S("\xFF\xFE" "a\0"), &skip), "UTF-16"));
  assert_non_null(strstr(ps_csv_bad_start(S("\xFE\xFF" "\0a"), &skip), "UTF-16"));
  assert_non_null(strstr(ps_csv_bad_start(S(POINTER), &skip), "a Git LFS pointer"));
  assert_null(ps_csv_bad_start("", 0, &skip));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(lfs_pointer_in_memory),
    cmocka_unit_test(lfs_pointer_on_disk),
    cmocka_unit_test(bad_starts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
