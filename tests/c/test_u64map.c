/* The shared 64-bit hash -> id map: find-or-add, colliding keys, growth, iteration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "u64map.h"

static void empty_map_finds_nothing(void **state) {
  (void)state;
  ps_u64map m = {0};
  assert_true(ps_u64map_get(&m, 0) == PS_U64MAP_NONE);
  assert_true(ps_u64map_get(&m, 42) == PS_U64MAP_NONE);
  size_t cur = 0;
  assert_true(ps_u64map_next(&m, 42, &cur) == PS_U64MAP_NONE);
  ps_u64map_free(&m);
  assert_int_equal(m.size, 0);
}

static void put_finds_or_adds(void **state) {
  (void)state;
  ps_u64map m;
  ps_u64map_init(&m, 16);
  size_t id = 7;
  assert_int_equal(ps_u64map_put(&m, 0, &id), 1);  /* key 0 is an ordinary key */
  assert_int_equal(id, 7);
  assert_int_equal(m.size, 16);
  id = 0;
  assert_int_equal(ps_u64map_put(&m, 99, &id), 1); /* id 0 is an ordinary id */
  id = 123;
  assert_int_equal(ps_u64map_put(&m, 0, &id), 0);
  assert_int_equal(id, 7);
  id = 5;
  assert_int_equal(ps_u64map_put(&m, 99, &id), 0);
  assert_int_equal(id, 0);
  assert_int_equal(ps_u64map_get(&m, 0), 7);
  assert_int_equal(ps_u64map_get(&m, 99), 0);
  assert_true(ps_u64map_get(&m, 1) == PS_U64MAP_NONE);
  assert_int_equal(m.used, 2);
  id = PS_U64MAP_NONE;
  assert_int_equal(ps_u64map_put(&m, 5, &id), -1);
  assert_int_equal(ps_u64map_add(&m, 5, PS_U64MAP_NONE), -1);
  assert_int_equal(m.used, 2);
  ps_u64map_free(&m);
}

/* Keys that share a home slot (multiples of the table size after the multiplication) and
 * the same key under several ids: every id comes back exactly once. */
static void colliding_keys_and_repeated_hashes(void **state) {
  (void)state;
  ps_u64map m;
  ps_u64map_init(&m, 8);
  assert_int_equal(ps_u64map_add(&m, 5, 0), 0);
  assert_int_equal(ps_u64map_add(&m, 6, 1), 0);
  assert_int_equal(ps_u64map_add(&m, 5, 2), 0);
  assert_int_equal(ps_u64map_add(&m, 5, 3), 0);
  for (size_t i = 0; i < 200; i++) assert_int_equal(ps_u64map_add(&m, 1000 + i, 10 + i), 0);
  int seen[4] = {0};
  size_t cur = 0, id;
  while ((id = ps_u64map_next(&m, 5, &cur)) != PS_U64MAP_NONE) {
    assert_true(id == 0 || id == 2 || id == 3);
    seen[id]++;
  }
  assert_int_equal(seen[0], 1);
  assert_int_equal(seen[1], 0);
  assert_int_equal(seen[2], 1);
  assert_int_equal(seen[3], 1);
  assert_int_equal(ps_u64map_get(&m, 6), 1);
  for (size_t i = 0; i < 200; i++) assert_int_equal(ps_u64map_get(&m, 1000 + i), 10 + i);
  ps_u64map_free(&m);
}

/* Many keys: the load never passes 50%, every key maps to its id through growth, keys never
 * stored are absent, and slot iteration visits every id once. */
static void growth_keeps_every_entry(void **state) {
  (void)state;
  ps_u64map m = {0};
  enum { N = 100000 };
  uint64_t x = 0x243F6A8885A308D3ULL;
  uint64_t *keys = malloc(N * sizeof *keys);
  assert_non_null(keys);
  for (size_t i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    keys[i] = (i % 3 == 0) ? i : x; /* small keys too */
    size_t id = i;
    assert_int_equal(ps_u64map_put(&m, keys[i], &id), 1);
    assert_true(m.used * 2 <= m.size);
    assert_int_equal(m.size & (m.size - 1), 0);
  }
  assert_int_equal(m.used, N);
  for (size_t i = 0; i < N; i++) assert_int_equal(ps_u64map_get(&m, keys[i]), i);
  for (size_t i = 0; i < N; i++) assert_true(ps_u64map_get(&m, N + 3 * i + 1) == PS_U64MAP_NONE);
  char *visited = calloc(N, 1);
  assert_non_null(visited);
  size_t n = 0;
  for (size_t i = 0; i < m.size; i++) {
    size_t id = ps_u64map_slot_id(&m, i);
    if (id == PS_U64MAP_NONE) continue;
    assert_true(id < N);
    assert_int_equal(visited[id], 0);
    visited[id] = 1;
    n++;
  }
  assert_int_equal(n, N);
  free(visited);
  free(keys);
  ps_u64map_free(&m);
}

/* The first allocation is min_size rounded up; growth doubles before 50% would be passed,
 * also when put meets a key that is present (room is made before the probe). */
static void sizes_and_growth_points(void **state) {
  (void)state;
  ps_u64map m;
  ps_u64map_init(&m, 5);
  size_t id = 0;
  assert_int_equal(ps_u64map_put(&m, 1, &id), 1);
  assert_int_equal(m.size, 8);
  for (uint64_t k = 2; k <= 4; k++) {
    id = k;
    assert_int_equal(ps_u64map_put(&m, k, &id), 1);
  }
  assert_int_equal(m.size, 8);    /* 4 of 8: exactly 50% */
  id = 9;
  assert_int_equal(ps_u64map_put(&m, 4, &id), 0);
  assert_int_equal(m.size, 16);
  ps_u64map_free(&m);
  assert_int_equal(m.size, 0);
  assert_int_equal(m.min_size, 5);

  ps_u64map d = {0};
  assert_int_equal(ps_u64map_add(&d, 3, 3), 0);
  assert_int_equal(d.size, PS_U64MAP_DEFAULT_SIZE);
  ps_u64map_free(&d);
}

static void reserve_and_clear(void **state) {
  (void)state;
  ps_u64map m = {0};
  assert_int_equal(ps_u64map_reserve(&m, 3000), 0);
  assert_int_equal(m.size, 8192);
  ps_u64map_slot *before = m.slots;
  for (size_t i = 0; i < 3000; i++) assert_int_equal(ps_u64map_add(&m, i * 7919, i), 0);
  assert_ptr_equal(m.slots, before);  /* no growth within the reservation */
  assert_int_equal(ps_u64map_reserve(&m, 10), 0);
  assert_int_equal(m.size, 8192);
  ps_u64map_clear(&m);
  assert_int_equal(m.used, 0);
  for (size_t i = 0; i < 3000; i++) assert_true(ps_u64map_get(&m, i * 7919) == PS_U64MAP_NONE);
  size_t id = 1;
  assert_int_equal(ps_u64map_put(&m, 7919, &id), 1);
  assert_int_equal(ps_u64map_get(&m, 7919), 1);
  assert_true(ps_u64map_get(&m, 0) == PS_U64MAP_NONE);
  assert_int_equal(ps_u64map_reserve(&m, SIZE_MAX), -1);
  assert_int_equal(ps_u64map_get(&m, 7919), 1);
  ps_u64map_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(empty_map_finds_nothing),
    cmocka_unit_test(put_finds_or_adds),
    cmocka_unit_test(colliding_keys_and_repeated_hashes),
    cmocka_unit_test(growth_keeps_every_entry),
    cmocka_unit_test(sizes_and_growth_points),
    cmocka_unit_test(reserve_and_clear),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
