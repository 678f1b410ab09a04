/* A map from 64-bit hashes to ids, shared by the modules that index rows or signatures by an
 * XXH3 hash.
 *
 *   Keys    any uint64_t (0 included), normally an XXH3 hash of the caller's real key. The
 *           home slot is the low bits of key * 2^64/phi, which mixes upward only: keys must
 *           vary in their low bits (hashes and small counters do; i << 32 would not).
 *   Values  ids (size_t, anything but PS_U64MAP_NONE), normally an index into the caller's
 *           own array of entries, where it keeps the real key and the data.
 *   Layout  open addressing with linear probing over a power-of-two array of slots
 *           {key, id + 1}; slot value 0 = empty. The table grows (doubles, rehashing in slot
 *           order) before an insertion would take it past 50% load, so probes stay short
 *           and an empty slot always ends them. Nothing is ever deleted: a lookup only
 *           returns ids that were stored, under the key they were stored with.
 *
 * Two ways to use it:
 *   - The hash is the key (a 64-bit collision is accepted): ps_u64map_put finds or adds.
 *   - The hash stands for a longer key that must be compared: walk the ids stored under the
 *     hash with ps_u64map_next, compare the full key through each id, and ps_u64map_add a new
 *     id when none matches. The same hash may then hold several ids.
 *
 * Iteration over all entries is in slot order: for (i = 0; i < m.size; i++)
 * ps_u64map_slot_id(&m, i). That order is a deterministic function of the insertions (keys,
 * their order and min_size), not meaningful in itself.
 *
 * A zeroed ps_u64map is an empty map with the default first size; ps_u64map_init picks
 * another. Adding (put, add) may move the slots: cursors and slot indexes do not survive it,
 * ids do. */
#ifndef PS_U64MAP_H
#define PS_U64MAP_H

#include <stddef.h>
#include <stdint.h>

#define PS_U64MAP_NONE SIZE_MAX
#define PS_U64MAP_DEFAULT_SIZE 1024

typedef struct ps_u64map_slot {
  uint64_t key;
  size_t val;                  /* id + 1; 0 = empty */
} ps_u64map_slot;

typedef struct ps_u64map {
  ps_u64map_slot *slots;
  size_t size;                 /* slots: 0 (nothing allocated yet) or a power of two */
  size_t used;                 /* entries */
  size_t min_size;             /* first allocation in slots; 0 = PS_U64MAP_DEFAULT_SIZE */
} ps_u64map;

/* An empty map whose first allocation will be min_size slots (rounded up to a power of two;
 * 0 = the default). Allocates nothing. */
void ps_u64map_init(ps_u64map *m, size_t min_size);

/* Frees the slots; the map is empty again and can be reused (min_size is kept). */
void ps_u64map_free(ps_u64map *m);

/* Forgets every entry and keeps the memory. */
void ps_u64map_clear(ps_u64map *m);

/* Makes room for n entries in all, so that adding up to n does not grow the table.
 * 0, or -1 when memory runs out (the map is unchanged then). */
int ps_u64map_reserve(ps_u64map *m, size_t n);

/* Find or add. When the map holds key already, sets *id to the id stored under it (the first
 * one the probe meets) and returns 0. Otherwise stores *id under key and returns 1.
 * -1 when memory runs out or *id is PS_U64MAP_NONE (nothing stored then).
 * Room is made before the lookup (one probe does both), so the table may grow even when
 * key is present. */
int ps_u64map_put(ps_u64map *m, uint64_t key, size_t *id);

/* Stores id under key even when key holds other ids already (see ps_u64map_next).
 * 0, or -1 when memory runs out or id is PS_U64MAP_NONE. */
int ps_u64map_add(ps_u64map *m, uint64_t key, size_t id);

/* The slot where the probe for key starts (m->size must be nonzero). */
static inline size_t ps_u64map_home(const ps_u64map *m, uint64_t key) {
  return (size_t)(key * 0x9E3779B97F4A7C15ULL) & (m->size - 1);
}

/* The ids stored under key, one per call in probe order: set *cursor = 0, then call until
 * PS_U64MAP_NONE. Adding to the map invalidates the cursor. */
static inline size_t ps_u64map_next(const ps_u64map *m, uint64_t key, size_t *cursor) {
  if (m->size == 0) return PS_U64MAP_NONE;
  size_t mask = m->size - 1;
  for (size_t j = (ps_u64map_home(m, key) + *cursor) & mask; m->slots[j].val; j = (j + 1) & mask) {
    ++*cursor;
    if (m->slots[j].key == key) return m->slots[j].val - 1;
  }
  return PS_U64MAP_NONE;
}

/* The (first) id stored under key, or PS_U64MAP_NONE. */
static inline size_t ps_u64map_get(const ps_u64map *m, uint64_t key) {
  size_t cursor = 0;
  return ps_u64map_next(m, key, &cursor);
}

/* The id in slot i (i < m->size), or PS_U64MAP_NONE when the slot is empty. */
static inline size_t ps_u64map_slot_id(const ps_u64map *m, size_t i) {
  return m->slots[i].val ? m->slots[i].val - 1 : PS_U64MAP_NONE;
}

#endif
