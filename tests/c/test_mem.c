/* The memory estimator's C core (docs/rules.md, Shape grids): saturating sums and the byte
 * figures of the Python original's example ME10. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "mem.h"
#include "shape.h"

static void format_figures(void **state) {
  (void)state;
  char buf[32];
  const struct { uint64_t n; const char *want; } cases[] = {
    {500, "500 B"}, {2048, "2.00 KiB"}, {5ull << 20, "5.00 MiB"}, {3ull << 30, "3.00 GiB"},
    {0, "0 B"}, {2ull << 30, "2.00 GiB"}, {1073741, "1.02 MiB"}, {1023, "1023 B"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ps_mem_format(cases[i].n, buf, sizeof buf);
    assert_string_equal(buf, cases[i].want);
  }
}

static void saturating_sum(void **state) {
  (void)state;
  assert_int_equal(ps_mem_add(1, 2), 3);
  assert_true(ps_mem_add(UINT64_MAX - 1, 5) == UINT64_MAX);
}

/* Row estimates built from shape.h's element sizes, as the grid does (ME4, ME6, ME13). */
static void row_estimates(void **state) {
  (void)state;
  int64_t a[] = {128, 5120}, b[] = {5120, 768}, o[] = {128, 768};
  int bf16 = ps_dtype_bytes("DT_BF16", 7);
  uint64_t sum = ps_mem_add(ps_mem_add(ps_shape_nbytes(a, 2, bf16), ps_shape_nbytes(b, 2, bf16)),
                            ps_shape_nbytes(o, 2, bf16));
  assert_true(sum == 9371648);
  int64_t big[] = {131072, 131072};
  uint64_t fp16 = ps_mem_add(ps_shape_nbytes(big, 2, 2), ps_shape_nbytes(big, 2, 2));
  assert_true(fp16 > 32ull << 30);
  assert_int_equal(ps_dtype_bytes("", 0), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(format_figures),
    cmocka_unit_test(saturating_sum),
    cmocka_unit_test(row_estimates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
