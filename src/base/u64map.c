/* 64-bit hash -> id map; see u64map.h. */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

void ps_u64map_init(ps_u64map *m, size_t min_size) {
  *m = (ps_u64map){.min_size = min_size};
}

void ps_u64map_free(ps_u64map *m) {
  free(m->slots);
  *m = (ps_u64map){.min_size = m->min_size};
}

void ps_u64map_clear(ps_u64map *m) {
  if (m->size) memset(m->slots, 0, m->size * sizeof *m->slots);
  m->used = 0;
}

/* Rehashes into at least want slots (a power of two), old slots in order. */
static int rehash(ps_u64map *m, size_t want) {
  size_t ns = m->size;
  if (ns == 0) {
    size_t first = m->min_size ? m->min_size : PS_U64MAP_DEFAULT_SIZE;
    for (ns = 2; ns < first; ns *= 2)
      if (ns > SIZE_MAX / 4) return -1;
  }
  while (ns < want) {
    if (ns > SIZE_MAX / 2) return -1;
    ns *= 2;
  }
  if (ns == m->size) return 0;
  if (ns > SIZE_MAX / sizeof(ps_u64map_slot)) return -1;
  ps_u64map_slot *s = calloc(ns, sizeof *s);
  if (s == NULL) return -1;
  for (size_t i = 0; i < m->size; i++) {
    if (!m->slots[i].val) continue;
    size_t j = (size_t)(m->slots[i].key * 0x9E3779B97F4A7C15ULL) & (ns - 1);
    while (s[j].val) j = (j + 1) & (ns - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->size = ns;
  return 0;
}

/* Room for one more entry at no more than 50% load. */
static int room_for_one(ps_u64map *m) {
  if ((m->used + 1) * 2 <= m->size) return 0;
  if (m->used > SIZE_MAX / 2 - 1) return -1;
  return rehash(m, m->size ? m->size * 2 : 0);
}

int ps_u64map_reserve(ps_u64map *m, size_t n) {
  if (n > SIZE_MAX / 2) return -1;
  if (n * 2 <= m->size) return 0;
  return rehash(m, n * 2);
}

int ps_u64map_put(ps_u64map *m, uint64_t key, size_t *id) {
  if (*id == PS_U64MAP_NONE || room_for_one(m) != 0) return -1;
  size_t mask = m->size - 1, j = ps_u64map_home(m, key);
  while (m->slots[j].val && m->slots[j].key != key) j = (j + 1) & mask;
  if (m->slots[j].val) {
    *id = m->slots[j].val - 1;
    return 0;
  }
  m->slots[j] = (ps_u64map_slot){key, *id + 1};
  m->used++;
  return 1;
}

int ps_u64map_add(ps_u64map *m, uint64_t key, size_t id) {
  if (id == PS_U64MAP_NONE || room_for_one(m) != 0) return -1;
  size_t mask = m->size - 1, j = ps_u64map_home(m, key);
  while (m->slots[j].val) j = (j + 1) & mask;
  m->slots[j] = (ps_u64map_slot){key, id + 1};
  m->used++;
  return 0;
}
