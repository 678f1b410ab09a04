/* perfscript.table: operator tables in C for the database explorer.
 *   local T = require "perfscript.table"
 *   local t = assert(T.load("MatMulV2.csv"))     -- or nil, "file:line: reason"
 *   #t, t:columns(), t:column(name) -> 1-based index | nil, t:cell(row, col), t:num(row, col),
 *   t:nums(col) -> {number | false}, t:strs(col), t:record(row), t:line(row), t:nfields(row)
 *   local ix = t:index{ {col = "Input Shapes", kind = "shapes", formats = "Input Formats",
 *                        strip1 = true, n = 2}, {col = "Input Data Types", kind = "list"} }
 *   t:key(component, text [, formats]) -> canonical text | nil, why   (the query side)
 *   t:shapes(text [, formats]) -> {{d1, d2}, {scalar = true}, ...} | nil, why
 *   t:inputs(row, shapes_col [, formats_col [, dtypes_col]]) -> shapes, {dtypes} | nil, why
 *   t:unquoted(row, col) -> the cell without leading and trailing '"' runs
 *   t:shapes_key(shapes, n) -> t:key of match.shapes_text(shapes) (strip1, n slots) | false
 *   t:shapes_label(shapes) -> "(128,4096)x(4096)" as perfscript.db.shapes_label | false
 *   ix:find(k1, ..., kn) -> {rows}, ix:find_keys({k1, ...}, last) -> {rows},
 *   ix:ngroups(), ix:group(g) -> size, first, k1, ..., kn,
 *   ix:groups(min) -> {{rows}...}, ix:skipped() -> {rows}
 *   T.new_table(narray, nhash) -> {} sized for that many items and fields
 * Rows and columns are 1-based. Keys are canonical texts (src/schema/lookup_key.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include <xxhash.h>

#include "exact.h"
#include "lookup_key.h"
#include "luabind.h"
#include "table.h"
#include "text.h"

#define TABLE "perfscript.table"
#define INDEX "perfscript.table.index"
#define SLOTIX "perfscript.table.slots"
#define KEYBUF 65536
#define BAD (PS_SID_NONE - 1)

/* keybuf: t:key's scratch buffer (KEYBUF bytes), allocated on first use and kept, so a
 * query key costs no allocation. */
typedef struct table_ud { ps_table *t; char *keybuf; } table_ud;

enum { K_RAW, K_LIST, K_SHAPES };

/* slot: where the component's key starts in the C index's key; hashed: a shapes or list key of
 * a plain column (a text per row, nearly all distinct) is held as the 64-bit hash of its
 * canonical text in two slots instead of an interned string, which would cost the text, an
 * id and a hash entry per row. Rows whose texts collide in 64 bits share a group. */
typedef struct component {
  int col, fcol, kind, n, slot, hashed;
  unsigned flags;
} component;

#define MAXCOMP 8

/* The dtypes key of the last exact lookup whose dtypes text had one (ix:exact): queries
 * repeat their dtypes, so the next with the same text skips the key's render and hash. One
 * entry; a text longer than DKEY_TEXT is not kept. */
enum { DKEY_TEXT = 256 };
typedef struct dkey_memo { size_t len; ps_sid key; int valid; char text[DKEY_TEXT]; } dkey_memo;

typedef struct index_ud {
  ps_index *ix;
  size_t nkey, nslots;
  component comp[MAXCOMP];
  ps_exact_cols cols; int has_cols;  /* ix:prepare's columns of the exact match */
  dkey_memo dkey;
} index_ud;

/* A slot index (t:slot_index) and its search memo. */
typedef struct slot_ud { ps_slotix *x; int scol, fcol, n; ps_exact_memo *memo; } slot_ud;

/* The functions of this module hold the three metatables as upvalues (UP_TABLE, UP_INDEX,
 * UP_SLOTIX): a check compares the argument's metatable with one of them, where
 * luaL_checkudata looks its name up in the registry (a lookup makes some ten such calls). */
enum { UP_TABLE = 1, UP_INDEX, UP_SLOTIX, NUP };

static void *check_udata(lua_State *L, int i, int up, const char *name) {
  void *p = lua_touserdata(L, i);
  if (p != NULL && lua_getmetatable(L, i)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(up));
    lua_pop(L, 1);
    if (same) return p;
  }
  return luaL_checkudata(L, i, name);  /* its error, or a caller without the upvalues */
}

static ps_table *check_table(lua_State *L, int i) {
  table_ud *u = check_udata(L, i, UP_TABLE, TABLE);
  if (u->t == NULL) luaL_error(L, "attempt to use a freed table");
  return u->t;
}

static index_ud *check_index(lua_State *L, int i) {
  index_ud *u = check_udata(L, i, UP_INDEX, INDEX);
  if (u->ix == NULL) luaL_error(L, "attempt to use a freed index");
  return u;
}

/* A column given as a 1-based number or a name; returns the 0-based index or -1. */
static int column_arg(lua_State *L, ps_table *t, int i) {
  if (lua_type(L, i) == LUA_TNUMBER) {
    lua_Integer c = luaL_checkinteger(L, i);
    return c >= 1 && (size_t)c <= ps_table_ncols(t) ? (int)c - 1 : -1;
  }
  return ps_table_column(t, luaL_checkstring(L, i));
}

static size_t row_arg(lua_State *L, ps_table *t, int i) {
  lua_Integer r = luaL_checkinteger(L, i);
  luaL_argcheck(L, r >= 1 && (size_t)r <= ps_table_nrows(t), i, "row out of range");
  return (size_t)r - 1;
}

static void push_cell(lua_State *L, const ps_table *t, size_t row, size_t col) {
  size_t len;
  const char *s = ps_table_text(t, row, col, &len);
  lua_pushlstring(L, s, len);
}

static void push_sid(lua_State *L, ps_table *t, ps_sid id) {
  size_t len;
  const char *s = ps_table_str(t, id, &len);
  lua_pushlstring(L, s, len);
}

static int t_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  table_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->t = NULL;
  u->keybuf = NULL;
  luaL_setmetatable(L, TABLE);
  char err[1024];
  u->t = ps_table_load(path, err, sizeof err);
  return u->t ? 1 : ps_fail(L, err);
}

static int t_gc(lua_State *L) {
  table_ud *u = luaL_checkudata(L, 1, TABLE);
  ps_table_free(u->t);
  u->t = NULL;
  free(u->keybuf);
  u->keybuf = NULL;
  return 0;
}

static int t_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ps_table_nrows(check_table(L, 1)));
  return 1;
}

static int t_tostring(lua_State *L) {
  table_ud *u = luaL_checkudata(L, 1, TABLE);
  if (u->t == NULL) lua_pushliteral(L, "table (freed)");
  else lua_pushfstring(L, "table %s (%d rows, %d columns)", ps_table_path(u->t),
                       (int)ps_table_nrows(u->t), (int)ps_table_ncols(u->t));
  return 1;
}

static int t_ncols(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ps_table_ncols(check_table(L, 1)));
  return 1;
}

static int t_path(lua_State *L) {
  lua_pushstring(L, ps_table_path(check_table(L, 1)));
  return 1;
}

static int t_memory(lua_State *L) {
  ps_table *t = check_table(L, 1);
  lua_pushinteger(L, (lua_Integer)ps_table_memory(t));
  lua_pushinteger(L, (lua_Integer)ps_table_nstrings(t));
  return 2;
}

static int t_columns(lua_State *L) {
  ps_table *t = check_table(L, 1);
  size_t n = ps_table_ncols(t);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, ps_table_colname(t, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int t_column(lua_State *L) {
  ps_table *t = check_table(L, 1);
  int c = ps_table_column(t, luaL_checkstring(L, 2));
  if (c < 0) lua_pushnil(L);
  else lua_pushinteger(L, c + 1);
  return 1;
}

static int t_cell(lua_State *L) {
  ps_table *t = check_table(L, 1);
  size_t r = row_arg(L, t, 2);
  int c = column_arg(L, t, 3);
  if (c < 0) return luaL_argerror(L, 3, "no such column");
  push_cell(L, t, r, (size_t)c);
  return 1;
}

static int t_num(lua_State *L) {
  ps_table *t = check_table(L, 1);
  size_t r = row_arg(L, t, 2);
  int c = column_arg(L, t, 3);
  if (c < 0) return luaL_argerror(L, 3, "no such column");
  double v = ps_table_cell_num(t, r, (size_t)c);
  if (isnan(v)) lua_pushnil(L);
  else lua_pushnumber(L, v);
  return 1;
}

/* The whole column as numbers, false where a cell is not a number: one call for a scan. */
static int t_nums(lua_State *L) {
  ps_table *t = check_table(L, 1);
  int c = column_arg(L, t, 2);
  if (c < 0) return luaL_argerror(L, 2, "no such column");
  size_t n = ps_table_nrows(t);
  lua_createtable(L, (int)n, 0);
  for (size_t r = 0; r < n; r++) {
    double v = ps_table_cell_num(t, r, (size_t)c);
    if (isnan(v)) lua_pushboolean(L, 0);
    else lua_pushnumber(L, v);
    lua_rawseti(L, -2, (lua_Integer)r + 1);
  }
  return 1;
}

static int t_strs(lua_State *L) {
  ps_table *t = check_table(L, 1);
  int c = column_arg(L, t, 2);
  if (c < 0) return luaL_argerror(L, 2, "no such column");
  size_t n = ps_table_nrows(t);
  lua_createtable(L, (int)n, 0);
  for (size_t r = 0; r < n; r++) {
    push_cell(L, t, r, (size_t)c);
    lua_rawseti(L, -2, (lua_Integer)r + 1);
  }
  return 1;
}

static int t_record(lua_State *L) {
  ps_table *t = check_table(L, 1);
  size_t r = row_arg(L, t, 2);
  size_t n = ps_table_ncols(t);
  lua_createtable(L, 0, (int)n);
  for (size_t c = 0; c < n; c++) {
    push_cell(L, t, r, c);
    lua_setfield(L, -2, ps_table_colname(t, c));
  }
  return 1;
}

static int t_line(lua_State *L) {
  ps_table *t = check_table(L, 1);
  lua_pushinteger(L, ps_table_line(t, row_arg(L, t, 2)));
  return 1;
}

static int t_nfields(lua_State *L) {
  ps_table *t = check_table(L, 1);
  lua_pushinteger(L, (lua_Integer)ps_table_nfields(t, row_arg(L, t, 2)));
  return 1;
}

/* ---- keys ------------------------------------------------------------------------------- */

static void parse_component(lua_State *L, ps_table *t, int i, component *c, int need_col) {
  luaL_checktype(L, i, LUA_TTABLE);
  c->col = c->fcol = -1;
  if (lua_getfield(L, i, "col") != LUA_TNIL) {
    c->col = ps_table_column(t, luaL_checkstring(L, -1));
    if (c->col < 0 && need_col) luaL_error(L, "no column '%s' in %s", lua_tostring(L, -1),
                                           ps_table_path(t));
  }
  lua_pop(L, 1);
  const char *kind = (lua_getfield(L, i, "kind"), luaL_optstring(L, -1, "raw"));
  if (strcmp(kind, "raw") == 0) c->kind = K_RAW;
  else if (strcmp(kind, "list") == 0) c->kind = K_LIST;
  else if (strcmp(kind, "shapes") == 0) c->kind = K_SHAPES;
  else luaL_error(L, "unknown key kind '%s' (raw, list, shapes)", kind);
  lua_pop(L, 1);
  if (lua_getfield(L, i, "formats") != LUA_TNIL) c->fcol = ps_table_column(t, luaL_checkstring(L, -1));
  lua_pop(L, 1);
  c->n = (lua_getfield(L, i, "n"), (int)luaL_optinteger(L, -1, 0));
  lua_pop(L, 1);
  if (c->n < 0 || c->n > 63) luaL_error(L, "key slot count n must be 0..63");
  c->flags = 0;
  if (lua_getfield(L, i, "strip1"), lua_toboolean(L, -1)) c->flags |= PS_LOOKUP_KEY_STRIP1;
  if (lua_getfield(L, i, "float_group"), lua_toboolean(L, -1)) c->flags |= PS_LOOKUP_KEY_FLOAT_GROUP;
  lua_pop(L, 2);
}

/* Canonical text of (s, f) under c into buf; -1 with a reason in err. */
static long canon(const component *c, const char *s, size_t len, const char *f, size_t flen,
                  char *buf, char *err, size_t errsize) {
  if (c->kind == K_LIST) {
    long n = ps_lookup_key_list(s, len, c->n, c->flags, buf, KEYBUF);
    if (n < 0) snprintf(err, errsize, "cell too long or more than %d parts", PS_LOOKUP_KEY_MAXSLOTS);
    return n;
  }
  if (c->kind == K_SHAPES)
    return ps_lookup_key_shapes(s, len, f, flen, c->n, c->flags, buf, KEYBUF, err, errsize);
  if (len >= KEYBUF) { snprintf(err, errsize, "cell too long"); return -1; }
  memcpy(buf, s, len);
  buf[len] = '\0';
  return (long)len;
}

/* While an index is built, each component remembers the key of each distinct cell (by the
 * cell's id, with the formats id it was computed with): canonical text is made once per
 * distinct value, not once per row. */
typedef struct keyctx {
  index_ud *u;
  char *buf;
  size_t ncache;
  ps_sid *cache_b[MAXCOMP], *cache_v[MAXCOMP];
  ps_slotix *sx;              /* the slot index built in the same pass, or NULL */
  ps_lookup_key_shape *sh;    /* PS_LOOKUP_KEY_MAXSLOTS slots */
  int oom;
  /* per slot group of sx: its slot's hash (slot_hash_words under the shapes component's
   * flags), made when the group is first met; gstate 0 not yet, 1 made, 2 none */
  uint64_t *ghash; unsigned char *gstate; size_t gcap;
} keyctx;

static ps_sid row_component(ps_table *t, size_t row, const component *c, char *buf,
                            ps_sid *cache_b, ps_sid *cache_v, size_t ncache) {
  if (c->col < 0 && c->kind == K_RAW) return 0;
  if (c->kind == K_RAW) return ps_table_cell_interned(t, row, (size_t)c->col);
  /* cell values (ids, or offsets in a plain column) stand for their texts within a column */
  ps_sid a = c->col >= 0 ? ps_table_cell(t, row, (size_t)c->col) : 0;
  int fmt = c->fcol >= 0 && c->kind == K_SHAPES;
  ps_sid b = fmt ? ps_table_cell(t, row, (size_t)c->fcol) : 0;
  if (a < ncache && cache_v[a] != PS_SID_NONE && cache_b[a] == b) return cache_v[a];
  ps_sid v;
  size_t len = 0, flen = 0;
  const char *s = c->col >= 0 ? ps_table_text(t, row, (size_t)c->col, &len) : "";
  const char *f = fmt ? ps_table_text(t, row, (size_t)c->fcol, &flen) : "";
  char err[256];
  long n = canon(c, s, len, c->fcol >= 0 ? f : NULL, flen, buf, err, sizeof err);
  v = n < 0 ? BAD : ps_table_intern(t, buf, (size_t)n);
  if (a < ncache) { cache_b[a] = b; cache_v[a] = v; }
  return v;
}

static void put_hash(ps_sid *key, uint64_t h) {
  key[0] = (ps_sid)(h & 0xffffffffu);
  key[1] = (ps_sid)(h >> 32);
}

#define SK_MAXDIM 100000000000000000LL  /* 1e17: read back by parse_int without overflow */

/* The hash of a shapes key, from its k parsed slots as the canonical text writes them (strip1
 * already applied): the slots' ranks and dimensions hashed as they are, which is the text's
 * own hash without writing the text (a row's key costs no render). Returns 0 (hash the text)
 * for a list whose text does not read back as these slots: a slot of rank 0 or over the
 * limit, a dimension of 1e17 or more. Both sides use it: the rows' slots (shapes_hash) and a
 * query's canonical text parsed back (key_hash). */
/* One word into a slots hash: the word added, then murmur3's 64-bit finalizer (every input
 * bit moves every output bit), so that lists of small integers spread like text hashes. */
static inline uint64_t slots_mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

#define SLOTS_SEED 0x5ba9e5ull  /* not a text's hash */

/* The hash of one slot: its rank (after strip1 under flags), then its dimensions; "()" (rank
 * -1) one word of -1. 0 for a slot whose text would not read back as it. */
static int slot_hash_words(const ps_lookup_key_shape *s, unsigned flags, uint64_t *h) {
  int r = s->rank;
  if (r < 0) { *h = slots_mix(SLOTS_SEED, (uint64_t)-1); return 1; }
  int first = (flags & PS_LOOKUP_KEY_STRIP1) && r > 1 && s->dims[0] == 1;
  if (r - first < 1 || r > PS_LOOKUP_KEY_MAXRANK) return 0;
  uint64_t x = slots_mix(SLOTS_SEED, (uint64_t)(r - first));
  for (int d = first; d < r; d++) {
    int64_t v = s->dims[d];
    if (v >= SK_MAXDIM || v <= -SK_MAXDIM) return 0;
    x = slots_mix(x, (uint64_t)v);
  }
  *h = x;
  return 1;
}

/* A list's hash from its slots' hashes in order (the index build keeps each slot group's). */
static inline uint64_t slots_fold(uint64_t x, uint64_t slot_hash) { return slots_mix(x, slot_hash); }

static int slots_hash_with(const ps_lookup_key_shape *sh, int k, int repl, const ps_lookup_key_shape *rv,
                           unsigned flags, uint64_t *h) {
  uint64_t x = SLOTS_SEED;
  for (int i = 0; i < k; i++) {
    uint64_t hs;
    if (!slot_hash_words(i == repl ? rv : &sh[i], flags, &hs)) return 0;
    x = slots_fold(x, hs);
  }
  *h = x;
  return 1;
}

static int slots_hash(const ps_lookup_key_shape *sh, int k, unsigned flags, uint64_t *h) {
  return slots_hash_with(sh, k, -1, NULL, flags, h);
}

/* 1 when s is exactly the text ps_lookup_key_render writes (no flags) for the slots it parses
 * into, and those slots hash as slots (slots_hash): at most MAXSLOTS slots separated by ';',
 * each "()" or 1 to MAXRANK integers separated by ',', each integer 0 or an optional '-' and
 * 1 to 17 digits without a leading zero. */
static int canonical_shapes(const char *s, size_t len) {
  const char *p = s, *e = s + len;
  if (p == e) return 1;
  for (int slots = 1;; slots++) {
    if (slots > PS_LOOKUP_KEY_MAXSLOTS) return 0;
    if (e - p >= 2 && p[0] == '(' && p[1] == ')') {
      p += 2;
    } else {
      for (int rank = 1;; rank++) {
        if (rank > PS_LOOKUP_KEY_MAXRANK) return 0;
        if (p < e && *p == '-') p++;
        const char *d = p;
        while (p < e && (unsigned)(*p - '0') < 10) p++;
        if (p == d || p - d > 17 || (*d == '0' && (p - d > 1 || (d > s && d[-1] == '-')))) return 0;
        if (p == e || *p != ',') break;
        p++;
      }
    }
    if (p == e) return 1;
    if (*p++ != ';' || p == e) return 0;
  }
}

/* The key hash of a canonical text of component c: a shapes text that reads back as its
 * slots hashes as them (slots_hash); any other text as itself. */
static uint64_t key_hash(const component *c, const char *s, size_t len) {
  if (c->kind == K_SHAPES && canonical_shapes(s, len)) {
    ps_lookup_key_shape sh[PS_LOOKUP_KEY_MAXSLOTS];
    char err[8];
    int k = ps_lookup_key_parse_shapes(s, len, sh, PS_LOOKUP_KEY_MAXSLOTS, err, sizeof err);
    uint64_t h;
    if (k >= 0 && slots_hash(sh, k, 0, &h)) return h;
  }
  return XXH3_64bits(s, len);
}

/* The key hash of a row's k parsed slots under c's flags (what key_hash gives for the text
 * ps_lookup_key_render makes of them); buf: KEYBUF bytes of scratch. */
static uint64_t shapes_hash(const component *c, const ps_lookup_key_shape *sh, int k, char *buf, int *ok) {
  uint64_t h;
  *ok = 1;
  if (slots_hash(sh, k, c->flags, &h)) return h;
  long n = ps_lookup_key_render(sh, k, c->flags, buf, KEYBUF);
  if (n < 0) { *ok = 0; return 0; }
  return XXH3_64bits(buf, (size_t)n);
}

/* The canonical text of component c of a row into buf; its length or -1. */
static long row_text(ps_table *t, size_t row, const component *c, char *buf) {
  size_t len = 0, flen = 0;
  int fmt = c->fcol >= 0 && c->kind == K_SHAPES;
  const char *s = c->col >= 0 ? ps_table_text(t, row, (size_t)c->col, &len) : "";
  const char *f = fmt ? ps_table_text(t, row, (size_t)c->fcol, &flen) : "";
  char err[256];
  return canon(c, s, len, c->fcol >= 0 ? f : NULL, flen, buf, err, sizeof err);
}

/* The row's input slots parsed once for both indexes (component 0, the shapes): every slot
 * restored and cut to n for the slot index, as ps_table_inputs gives them, and when the
 * component is hashed its key from the same first n slots (the restore is per slot). Returns
 * 1 with the key written, 0 when the key is to be made as usual, -1 when it has none. */
static int fused_row(ps_table *t, size_t row, keyctx *k, const component *c, ps_sid *key) {
  size_t len, flen = 0;
  const char *s = ps_table_text(t, row, (size_t)c->col, &len);
  char err[256];
  int ns = ps_lookup_key_parse_shapes(s, len, k->sh, PS_LOOKUP_KEY_MAXSLOTS, err, sizeof err);
  int kk = ns >= 0 && c->n > 0 && ns > c->n ? c->n : ns, ok = ns >= 0;
  if (ok && c->fcol >= 0) {
    const char *f = ps_table_text(t, row, (size_t)c->fcol, &flen);
    ok = ps_lookup_key_restore(k->sh, ns, f, flen, err, sizeof err) == 0;
  }
  if (ps_slotix_add(k->sx, row, k->sh, ok ? kk : -1) != 0) { k->oom = 1; return -1; }
  if (ns < 0) return -1;
  if (!ok || !c->hashed) return 0;  /* a later slot's restore failed: the key's own parse decides */
  /* the key from the slots' hashes, each slot group's made once (slots_hash's value) */
  size_t na, ng = ps_slotix_ngroups(k->sx);
  const uint32_t *gs = ps_slotix_added(k->sx, &na);
  if (ng > k->gcap) {
    size_t cap = k->gcap ? k->gcap : 1024;
    while (cap < ng) cap *= 2;
    uint64_t *gh = realloc(k->ghash, cap * sizeof *gh);
    if (gh) k->ghash = gh;
    unsigned char *st = gh ? realloc(k->gstate, cap) : NULL;
    if (st == NULL) { k->oom = 1; return -1; }
    memset(st + k->gcap, 0, cap - k->gcap);
    k->gstate = st;
    k->gcap = cap;
  }
  uint64_t h = SLOTS_SEED;
  int hok = na == (size_t)kk;
  for (size_t i = 0; i < na && hok; i++) {
    uint32_t g = gs[i];
    if (k->gstate[g] == 0) k->gstate[g] = slot_hash_words(&k->sh[i], c->flags, &k->ghash[g]) ? 1 : 2;
    if (k->gstate[g] == 2) hok = 0;
    else h = slots_fold(h, k->ghash[g]);
  }
  if (!hok) {  /* a slot slots_hash refuses: the rendered text's hash */
    h = shapes_hash(c, k->sh, kk, k->buf, &hok);
    if (!hok) return -1;
  }
  put_hash(key + c->slot, h);
  return 1;
}

static int keyfn(ps_table *t, size_t row, ps_sid *key, void *ud) {
  keyctx *k = ud;
  int fused = 0;
  if (k->sx && (fused = fused_row(t, row, k, &k->u->comp[0], key)) < 0) return 0;
  for (size_t i = 0; i < k->u->nkey; i++) {
    const component *c = &k->u->comp[i];
    if (i == 0 && fused) continue;
    if (c->hashed) {
      long n = row_text(t, row, c, k->buf);
      if (n < 0) return 0;
      put_hash(key + c->slot, key_hash(c, k->buf, (size_t)n));
      continue;
    }
    ps_sid v = row_component(t, row, c, k->buf, k->cache_b[i], k->cache_v[i], k->ncache);
    if (v == BAD || v == PS_SID_NONE) return 0;
    key[c->slot] = v;
  }
  return 1;
}

static slot_ud *new_slots(lua_State *L, int table, int scol, int fcol, int n);

static int t_index(lua_State *L) {
  ps_table *t = check_table(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int with_slots = lua_toboolean(L, 3);
  size_t n = lua_rawlen(L, 2);
  luaL_argcheck(L, n >= 1 && n <= MAXCOMP, 2, "1 to 8 key components");
  index_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  memset(u, 0, sizeof *u);
  luaL_setmetatable(L, INDEX);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);  /* the index keeps its table alive */
  u->nkey = n;
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    component *c = &u->comp[i];
    parse_component(L, t, lua_gettop(L), c, 0);
    lua_pop(L, 1);
    c->hashed = c->kind != K_RAW && c->col >= 0 && ps_table_plain(t, (size_t)c->col);
    c->slot = (int)u->nslots;
    u->nslots += c->hashed ? 2 : 1;
  }
  keyctx k = { u, malloc(KEYBUF), ps_table_nstrings(t), {0}, {0}, NULL, NULL, 0, NULL, NULL, 0 };
  int ok = k.buf != NULL;
  slot_ud *sx = NULL;
  if (with_slots) {
    /* the slot index of the same slots, from the same parse (t:slot_index(n, col, formats)) */
    const component *c = &u->comp[0];
    luaL_argcheck(L, c->kind == K_SHAPES && c->col >= 0, 3, "a slot index needs a shapes column first");
    sx = new_slots(L, 1, c->col, c->fcol, c->n);
    k.sx = sx->x = ps_slotix_new(ps_table_nrows(t));
    k.sh = malloc(PS_LOOKUP_KEY_MAXSLOTS * sizeof *k.sh);
    ok = ok && k.sx && k.sh;
    /* the groups' slot hashes sized before the indexes grow (few groups: no realloc
     * between their arrays, which would leave the heap holes) */
    k.gcap = 65536;
    k.ghash = malloc(k.gcap * sizeof *k.ghash);
    k.gstate = calloc(k.gcap, 1);
    ok = ok && k.ghash && k.gstate;
  }
  for (size_t i = 0; i < n && ok; i++) {
    if (u->comp[i].kind == K_RAW || u->comp[i].hashed) continue;
    k.cache_b[i] = malloc(k.ncache * sizeof(ps_sid));
    k.cache_v[i] = malloc(k.ncache * sizeof(ps_sid));
    ok = k.cache_b[i] && k.cache_v[i];
    if (ok) memset(k.cache_v[i], 0xff, k.ncache * sizeof(ps_sid));
  }
  if (ok) u->ix = ps_index_build(t, u->nslots, keyfn, &k);
  free(k.buf);
  free(k.sh);
  free(k.ghash);
  free(k.gstate);
  for (size_t i = 0; i < n; i++) { free(k.cache_b[i]); free(k.cache_v[i]); }
  if (u->ix == NULL || k.oom || (sx && ps_slotix_finish(sx->x) != 0))
    return luaL_error(L, "out of memory building an index");
  return with_slots ? 2 : 1;
}

/* t:key(component, text [, formats]) -> the canonical text the index would hold. */
static int t_key(lua_State *L) {
  ps_table *t = check_table(L, 1);
  component c;
  parse_component(L, t, 2, &c, 0);
  size_t len, flen = 0;
  const char *s = luaL_checklstring(L, 3, &len);
  const char *f = luaL_optlstring(L, 4, NULL, &flen);
  table_ud *u = lua_touserdata(L, 1);
  if (u->keybuf == NULL && (u->keybuf = malloc(KEYBUF)) == NULL) return luaL_error(L, "out of memory");
  char err[256];
  long n = canon(&c, s, len, f, flen, u->keybuf, err, sizeof err);
  if (n < 0) return ps_fail(L, err);
  lua_pushlstring(L, u->keybuf, (size_t)n);
  return 1;
}

/* Parses shapes text (FRACTAL_NZ restored by formats when f is not NULL) and pushes
 * {{d, ...}, {scalar = true}, ...}; or pushes nil, why. Returns the count pushed. */
static void push_parsed(lua_State *L, const ps_lookup_key_shape *sh, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    if (sh[i].rank < 0) {
      lua_createtable(L, 0, 1);
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "scalar");
    } else {
      lua_createtable(L, sh[i].rank, 0);
      for (int d = 0; d < sh[i].rank; d++) {
        lua_pushinteger(L, (lua_Integer)sh[i].dims[d]);
        lua_rawseti(L, -2, d + 1);
      }
    }
    lua_rawseti(L, -2, i + 1);
  }
}

static int push_shapes(lua_State *L, const char *s, size_t len, const char *f, size_t flen) {
  ps_lookup_key_shape sh[PS_LOOKUP_KEY_MAXSLOTS];
  char err[256];
  int n = ps_lookup_key_parse_shapes(s, len, sh, PS_LOOKUP_KEY_MAXSLOTS, err, sizeof err);
  if (n < 0) return ps_fail(L, err);
  if (f && ps_lookup_key_restore(sh, n, f, flen, err, sizeof err) != 0) return ps_fail(L, err);
  push_parsed(L, sh, n);
  return 1;
}

/* t:shapes(text [, formats]) -> {{d, ...}, {scalar = true}, ...} with FRACTAL_NZ restored by
 * formats, or nil, why: the consumer's parse without building canonical text. */
static int t_shapes(lua_State *L) {
  size_t len, flen = 0;
  const char *s = luaL_checklstring(L, 2, &len);
  const char *f = luaL_optlstring(L, 3, NULL, &flen);
  return push_shapes(L, s, len, f, flen);
}


static void push_list(lua_State *L, const char *s, size_t len) {
  lua_newtable(L);
  lua_Integer k = 0;
  const char *p = s, *part;
  size_t plen;
  while (ps_exact_list_part(&p, s + len, &part, &plen)) {
    lua_pushlstring(L, part, plen);
    lua_rawseti(L, -2, ++k);
  }
}

/* t:inputs(row, shapes_col [, formats_col [, dtypes_col]]) -> shapes, dtypes: the row's input
 * shapes as t:shapes(cell, formats cell) gives them and its dtypes as match.list(cell) ({}
 * without a dtypes column; a false or nil column is absent), or nil, why when the shapes do
 * not parse. One call, no cell text made into Lua strings. */
static int t_inputs(lua_State *L) {
  ps_table *t = check_table(L, 1);
  size_t r = row_arg(L, t, 2);
  int cs = column_arg(L, t, 3);
  if (cs < 0) return luaL_argerror(L, 3, "no such column");
  int cf = -1, cd = -1;
  if (lua_toboolean(L, 4) && (cf = column_arg(L, t, 4)) < 0) return luaL_argerror(L, 4, "no such column");
  if (lua_toboolean(L, 5) && (cd = column_arg(L, t, 5)) < 0) return luaL_argerror(L, 5, "no such column");
  ps_lookup_key_shape sh[PS_LOOKUP_KEY_MAXSLOTS];
  char err[256];
  int n = ps_table_inputs(t, r, cs, cf, 0, sh, err, sizeof err);
  if (n < 0) return ps_fail(L, err);
  push_parsed(L, sh, n);
  if (cd >= 0) {
    size_t dlen;
    const char *d = ps_table_text(t, r, (size_t)cd, &dlen);
    push_list(L, d, dlen);
  } else {
    lua_newtable(L);
  }
  return 2;
}

static void push_unquoted(lua_State *L, const ps_table *t, size_t row, size_t col) {
  size_t len;
  const char *a = ps_table_text(t, row, col, &len), *b = a + len;
  while (a < b && *a == '"') a++;
  while (b > a && b[-1] == '"') b--;
  lua_pushlstring(L, a, (size_t)(b - a));
}

/* t:unquoted(row, col) -> the cell without its leading and trailing runs of '"' (what
 * cell:gsub('^"+', ""):gsub('"+$', "") gives). */
static int t_unquoted(lua_State *L) {
  ps_table *t = check_table(L, 1);
  size_t r = row_arg(L, t, 2);
  int c = column_arg(L, t, 3);
  if (c < 0) return luaL_argerror(L, 3, "no such column");
  push_unquoted(L, t, r, (size_t)c);
  return 1;
}

/* t:unquoted_into(record, row, name1, col1, name2, col2, ...) -> record, with record[name_k] =
 * t:unquoted(row, col_k) for each pair (col_k false: the pair is skipped): one call for the
 * cells of a lookup's record. */
static int t_unquoted_into(lua_State *L) {
  ps_table *t = check_table(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t r = row_arg(L, t, 3);
  int top = lua_gettop(L);
  for (int a = 4; a + 1 <= top; a += 2) {
    if (!lua_toboolean(L, a + 1)) continue;
    int c = column_arg(L, t, a + 1);
    if (c < 0) return luaL_argerror(L, a + 1, "no such column");
    lua_pushvalue(L, a);
    push_unquoted(L, t, r, (size_t)c);
    lua_rawset(L, 2);
  }
  lua_settop(L, 2);
  return 1;
}

/* t:shapes_key(shapes, n) -> what t:key({kind = "shapes", strip1 = true, n = n},
 * match.shapes_text(shapes)) gives for a parsed shapes list ({{d, ...}, {scalar = true}}),
 * rendered directly; false when the list is unusual (no slots, more than 64, an empty or
 * over-long slot, a dimension that is not an integer or too large to read back), for which
 * the caller takes the text path. */
static int t_shapes_key(lua_State *L) {
  check_table(L, 1);
  table_ud *u = lua_touserdata(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_checkinteger(L, 3);
  lua_Integer k = (lua_Integer)lua_rawlen(L, 2);
  if (k < 1 || k > PS_LOOKUP_KEY_MAXSLOTS) { lua_pushboolean(L, 0); return 1; }
  if (n > 0 && k > n) k = n;
  /* at most 64 slots of 16 dimensions of 19 characters: well inside KEYBUF */
  if (u->keybuf == NULL && (u->keybuf = malloc(KEYBUF)) == NULL) return luaL_error(L, "out of memory");
  char *out = u->keybuf;
  size_t len = 0;
  for (lua_Integer i = 1; i <= k; i++) {
    if (lua_rawgeti(L, 2, i) != LUA_TTABLE) { lua_pushboolean(L, 0); return 1; }
    int slot = lua_gettop(L);
    if (i > 1) out[len++] = ';';
    lua_getfield(L, slot, "scalar");
    int scalar = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (scalar) {
      lua_pop(L, 1);
      out[len++] = '(';
      out[len++] = ')';
      continue;
    }
    lua_Integer rank = (lua_Integer)lua_rawlen(L, slot);
    if (rank < 1 || rank > PS_LOOKUP_KEY_MAXRANK) { lua_pushboolean(L, 0); return 1; }
    int64_t dims[PS_LOOKUP_KEY_MAXRANK];
    for (lua_Integer d = 1; d <= rank; d++) {
      int isint = lua_rawgeti(L, slot, d) == LUA_TNUMBER && lua_isinteger(L, -1);
      lua_Integer v = isint ? lua_tointeger(L, -1) : 0;
      lua_pop(L, 1);
      if (!isint || v >= SK_MAXDIM || v <= -SK_MAXDIM) { lua_pushboolean(L, 0); return 1; }
      dims[d - 1] = (int64_t)v;
    }
    lua_pop(L, 1);
    int first = rank > 1 && dims[0] == 1 ? 1 : 0;
    for (int d = first; d < (int)rank; d++) {
      if (d > first) out[len++] = ',';
      len += (size_t)snprintf(out + len, KEYBUF - len, "%lld", (long long)dims[d]);
    }
  }
  lua_pushlstring(L, out, len);
  return 1;
}

/* t:shapes_label(shapes) -> what perfscript.db's shapes_label gives for a parsed shapes list
 * ("(128,4096)x(4096)", a scalar or empty slot "()"), or false for a list it does not render
 * the same way (a slot that is not a table, a dimension that is not an integer). */
static int t_shapes_label(lua_State *L) {
  check_table(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer k = (lua_Integer)lua_rawlen(L, 2);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (lua_Integer i = 1; i <= k; i++) {
    /* read the slot below the buffer's top: push, copy what is needed, pop before adding */
    char slot[PS_LOOKUP_KEY_MAXRANK * 24 + 4];
    size_t len = 0;
    int t = lua_rawgeti(L, 2, i);
    if (t != LUA_TTABLE) { lua_pop(L, 1); return luaL_pushresult(&b), lua_pop(L, 1), lua_pushboolean(L, 0), 1; }
    int idx = lua_gettop(L);
    lua_getfield(L, idx, "scalar");
    int scalar = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_Integer rank = scalar ? 0 : (lua_Integer)lua_rawlen(L, idx);
    if (rank > PS_LOOKUP_KEY_MAXRANK) { lua_pop(L, 1); return luaL_pushresult(&b), lua_pop(L, 1), lua_pushboolean(L, 0), 1; }
    slot[len++] = '(';
    for (lua_Integer d = 1; d <= rank; d++) {
      int isint = lua_rawgeti(L, idx, d) == LUA_TNUMBER && lua_isinteger(L, -1);
      lua_Integer v = isint ? lua_tointeger(L, -1) : 0;
      lua_pop(L, 1);
      if (!isint) { lua_pop(L, 1); return luaL_pushresult(&b), lua_pop(L, 1), lua_pushboolean(L, 0), 1; }
      if (d > 1) slot[len++] = ',';
      len += ps_lookup_key_int(slot + len, (int64_t)v);  /* LUA_INTEGER_FMT's digits */
    }
    slot[len++] = ')';
    lua_pop(L, 1);
    if (i > 1) luaL_addchar(&b, 'x');
    luaL_addlstring(&b, slot, len);
  }
  luaL_pushresult(&b);
  return 1;
}

static int ix_gc(lua_State *L) {
  index_ud *u = luaL_checkudata(L, 1, INDEX);
  ps_index_free(u->ix);
  u->ix = NULL;
  return 0;
}

static ps_table *index_table(lua_State *L, int i) {
  lua_getiuservalue(L, i, 1);
  ps_table *t = check_table(L, -1);
  lua_pop(L, 1);
  return t;
}

/* The key slots of component c for a query text; 0 when no row can have it (a text that is
 * not interned). */
static int text_key(ps_table *t, const component *c, const char *s, size_t len, ps_sid *key) {
  if (c->hashed) { put_hash(key + c->slot, key_hash(c, s, len)); return 1; }
  key[c->slot] = ps_table_find_str(t, s, len);
  return key[c->slot] != PS_SID_NONE;
}

/* Reads the key texts at args 2..n+1; 0 when no row can have them. */
static int key_args(lua_State *L, index_ud *u, ps_table *t, ps_sid *key) {
  int ok = 1;
  for (size_t i = 0; i < u->nkey; i++) {
    size_t len;
    const char *s = luaL_checklstring(L, (int)i + 2, &len);
    ok = text_key(t, &u->comp[i], s, len, key) && ok;
  }
  return ok;
}

static int ix_find(lua_State *L) {
  index_ud *u = check_index(L, 1);
  ps_table *t = index_table(L, 1);
  ps_sid key[PS_INDEX_MAXKEY];
  lua_newtable(L);
  if (!key_args(L, u, t, key)) return 1;
  lua_Integer i = 0;
  for (long r = ps_index_find(u->ix, key); r >= 0; r = ps_index_next(u->ix, (size_t)r)) {
    lua_pushinteger(L, r + 1);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

/* ix:find_keys({k1, k2, ...}, last) -> the rows of ix:find(k1, last), then of ix:find(k2,
 * last), ... in one list (a row twice if two keys find it): the first key component varies,
 * the others (last: the remaining nkey - 1 components, one text for a two-part key, absent
 * for a one-part key) stay. */
static int ix_find_keys(lua_State *L) {
  index_ud *u = check_index(L, 1);
  ps_table *t = index_table(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_argcheck(L, u->nkey <= 2, 1, "find_keys: one- or two-part keys only");
  ps_sid key[PS_INDEX_MAXKEY];
  int have_rest = 1;
  if (u->nkey == 2) {
    size_t len;
    const char *s = luaL_checklstring(L, 3, &len);
    have_rest = text_key(t, &u->comp[1], s, len, key);
  }
  lua_Integer nk = (lua_Integer)lua_rawlen(L, 2);
  lua_newtable(L);
  lua_Integer i = 0;
  for (lua_Integer j = 1; j <= nk; j++) {
    size_t len;
    lua_rawgeti(L, 2, j);
    const char *s = lua_tolstring(L, -1, &len);
    if (s == NULL) return luaL_error(L, "find_keys: key %d is not a string", (int)j);
    int ok = have_rest && text_key(t, &u->comp[0], s, len, key);
    lua_pop(L, 1);
    if (!ok) continue;
    for (long r = ps_index_find(u->ix, key); r >= 0; r = ps_index_next(u->ix, (size_t)r)) {
      lua_pushinteger(L, r + 1);
      lua_rawseti(L, -2, ++i);
    }
  }
  return 1;
}

static int ix_ngroups(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ps_index_ngroups(check_index(L, 1)->ix));
  return 1;
}

static int ix_group(lua_State *L) {
  index_ud *u = check_index(L, 1);
  ps_table *t = index_table(L, 1);
  lua_Integer g = luaL_checkinteger(L, 2);
  if (g < 1 || (size_t)g > ps_index_ngroups(u->ix)) return 0;
  lua_pushinteger(L, (lua_Integer)ps_index_group_size(u->ix, (size_t)g - 1));
  lua_pushinteger(L, ps_index_group_first(u->ix, (size_t)g - 1) + 1);
  const ps_sid *key = ps_index_group_key(u->ix, (size_t)g - 1);
  luaL_checkstack(L, (int)u->nkey, "key too long");
  for (size_t i = 0; i < u->nkey; i++) {
    const component *c = &u->comp[i];
    if (!c->hashed) { push_sid(L, t, key[c->slot]); continue; }
    /* a hashed key's text, made again from the group's first row */
    luaL_Buffer b;
    char *buf = luaL_buffinitsize(L, &b, KEYBUF);
    long n = row_text(t, (size_t)ps_index_group_first(u->ix, (size_t)g - 1), c, buf);
    luaL_pushresultsize(&b, n < 0 ? 0 : (size_t)n);
  }
  return 2 + (int)u->nkey;
}

/* Rows of group g (1-based), in file order. */
static void push_group_rows(lua_State *L, index_ud *u, size_t g) {
  lua_createtable(L, (int)ps_index_group_size(u->ix, g), 0);
  lua_Integer i = 0;
  for (long r = ps_index_group_first(u->ix, g); r >= 0; r = ps_index_next(u->ix, (size_t)r)) {
    lua_pushinteger(L, r + 1);
    lua_rawseti(L, -2, ++i);
  }
}

static int ix_rows(lua_State *L) {
  index_ud *u = check_index(L, 1);
  lua_Integer g = luaL_checkinteger(L, 2);
  luaL_argcheck(L, g >= 1 && (size_t)g <= ps_index_ngroups(u->ix), 2, "group out of range");
  push_group_rows(L, u, (size_t)g - 1);
  return 1;
}

static int ix_groups(lua_State *L) {
  index_ud *u = check_index(L, 1);
  lua_Integer min = luaL_optinteger(L, 2, 2);
  lua_newtable(L);
  lua_Integer k = 0;
  for (size_t g = 0; g < ps_index_ngroups(u->ix); g++) {
    if ((lua_Integer)ps_index_group_size(u->ix, g) < min) continue;
    push_group_rows(L, u, g);
    lua_rawseti(L, -2, ++k);
  }
  return 1;
}

static int ix_skipped(lua_State *L) {
  index_ud *u = check_index(L, 1);
  size_t n = ps_index_nskipped(u->ix);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)ps_index_skipped(u->ix, i) + 1);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}


/* ---- the consumer's input rules (lookup_key.h), for perfscript.db.match -------------------- */

/* A shape as perfscript.db.match holds it ({d, ...} or {scalar = true}) into sh; 0 when it
 * cannot be one (a dimension that is not an integer, more than PS_LOOKUP_KEY_MAXRANK). */
static int shape_from(lua_State *L, int i, ps_lookup_key_shape *sh) {
  if (lua_type(L, i) != LUA_TTABLE) return 0;
  lua_getfield(L, i, "scalar");
  int scalar = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (scalar) { sh->rank = -1; return 1; }
  lua_Unsigned r = lua_rawlen(L, i);
  if (r > PS_LOOKUP_KEY_MAXRANK) return 0;
  sh->rank = (int)r;
  for (int d = 0; d < sh->rank; d++) {
    int ok;
    lua_rawgeti(L, i, d + 1);
    sh->dims[d] = (int64_t)lua_tointegerx(L, -1, &ok);
    lua_pop(L, 1);
    if (!ok) return 0;
  }
  return 1;
}

/* Reads two shape arguments; 0 when one is a table that cannot be a row's shape (more than 16
 * dimensions, one not an integer), which then matches nothing. */
static int shape_args(lua_State *L, int i, ps_lookup_key_shape *a, ps_lookup_key_shape *b) {
  luaL_checktype(L, i, LUA_TTABLE);
  luaL_checktype(L, i + 1, LUA_TTABLE);
  return shape_from(L, i, a) && shape_from(L, i + 1, b);
}

/* T.rule(kind, i, tc, csv) -> the rule's name or nil (kind: T.KIND_* bits). */
static int m_rule(lua_State *L) {
  unsigned kind = (unsigned)luaL_checkinteger(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  ps_lookup_key_shape tc, csv;
  const char *name = NULL;
  if (shape_args(L, 3, &tc, &csv))
    name = ps_lookup_rule_name(ps_lookup_rule(kind, i > INT32_MAX ? INT32_MAX : i < INT32_MIN ? INT32_MIN : (int)i,
                                              &tc, &csv));
  if (name) lua_pushstring(L, name);
  else lua_pushnil(L);
  return 1;
}

/* T.padded(tc, csv) -> whether the dimension tc is csv block-padded. */
static int m_padded(lua_State *L) {
  lua_pushboolean(L, ps_lookup_padded((int64_t)luaL_checkinteger(L, 1), (int64_t)luaL_checkinteger(L, 2)));
  return 1;
}

/* T.pads(tc, csv) -> every dimension equal or block-padded, at least one padded. */
static int m_pads(lua_State *L) {
  ps_lookup_key_shape tc, csv;
  lua_pushboolean(L, shape_args(L, 1, &tc, &csv) && ps_lookup_pads(&tc, &csv));
  return 1;
}

/* ---- the slot search of an exact lookup ---------------------------------------------------
 *   local x = t:slot_index(n, shapes_col [, formats_col])
 *   x:rows(pairs, upto, qshapes, qdtypes | nil, kind, float_group, dtypes_col | nil) -> {rows}
 * pairs = {j1, shape1, j2, shape2, ...}: the rows before upto (1-based) whose slot j is the
 * shape, in that order (each row once), that the compute exact match of a kernel without a
 * query rewrite (match.normalize) accepts: as many input slots as qshapes, each dtype in the
 * group of the query's (when qdtypes), each input matched by a rule. The rows others drop
 * could not be candidates; the caller still checks the rows it gets. */

static int sx_gc(lua_State *L) {
  slot_ud *u = luaL_checkudata(L, 1, SLOTIX);
  ps_slotix_free(u->x);
  u->x = NULL;
  ps_exact_memo_free(u->memo);
  u->memo = NULL;
  return 0;
}

/* A slot index userdata on the stack (its index not built yet), keeping the table at the
 * stack index table alive. */
static slot_ud *new_slots(lua_State *L, int table, int scol, int fcol, int n) {
  slot_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->x = NULL;
  u->memo = NULL;
  luaL_setmetatable(L, SLOTIX);
  lua_pushvalue(L, table);
  lua_setiuservalue(L, -2, 1);  /* the index keeps its table alive */
  u->scol = scol;
  u->fcol = fcol;
  u->n = n;
  return u;
}

static int t_slot_index(lua_State *L) {
  ps_table *t = check_table(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  int cs = column_arg(L, t, 3);
  if (cs < 0) return luaL_argerror(L, 3, "no such column");
  int cf = -1;
  if (lua_toboolean(L, 4) && (cf = column_arg(L, t, 4)) < 0) return luaL_argerror(L, 4, "no such column");
  slot_ud *u = new_slots(L, 1, cs, cf, n < 0 || n > PS_LOOKUP_KEY_MAXSLOTS ? 0 : (int)n);
  u->x = ps_slotix_build(t, cs, cf, u->n);
  if (u->x == NULL) return luaL_error(L, "out of memory building a slot index");
  return 1;
}

/* Reads the query shapes at i (n of them) into q; 0 when one cannot be a row's shape. */
static int query_shapes(lua_State *L, int i, ps_lookup_key_shape *q, int n) {
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, i, k + 1);
    int ok = shape_from(L, lua_gettop(L), &q[k]);
    lua_pop(L, 1);
    if (!ok) return 0;
  }
  return 1;
}

/* Reads the query dtypes at i (n of them; NULL where not a string): the strings stay alive in
 * the caller's table. */
static void query_dtypes(lua_State *L, int i, const char **qd, size_t *qdl, int n, int spread) {
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, i, spread ? 1 : k + 1);
    qd[k] = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &qdl[k]) : NULL;
    lua_pop(L, 1);
  }
}

static slot_ud *check_slots(lua_State *L, int i) {
  slot_ud *u = check_udata(L, i, UP_SLOTIX, SLOTIX);
  if (u->x == NULL) luaL_error(L, "attempt to use a freed slot index");
  if (u->memo == NULL && (u->memo = ps_exact_memo_new()) == NULL) luaL_error(L, "out of memory");
  return u;
}

static int sx_rows(lua_State *L) {
  slot_ud *u = check_slots(L, 1);
  lua_getiuservalue(L, 1, 1);
  ps_table *t = check_table(L, -1);
  lua_pop(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer upto = luaL_checkinteger(L, 3);
  luaL_checktype(L, 4, LUA_TTABLE);
  int has_dt = lua_toboolean(L, 5);
  if (has_dt) luaL_checktype(L, 5, LUA_TTABLE);
  unsigned kind = (unsigned)luaL_checkinteger(L, 6);
  int fg = lua_toboolean(L, 7);
  int cd = -1;
  if (lua_toboolean(L, 8) && (cd = column_arg(L, t, 8)) < 0) return luaL_argerror(L, 8, "no such column");
  lua_Integer nq = (lua_Integer)lua_rawlen(L, 4);
  lua_newtable(L);  /* the result */
  if (nq > PS_LOOKUP_KEY_MAXSLOTS || upto <= 1) return 1;  /* no row has more slots; none before row 1 */
  ps_lookup_key_shape q[PS_LOOKUP_KEY_MAXSLOTS];
  if (!query_shapes(L, 4, q, (int)nq)) return 1;  /* a query shape no row's can equal */
  const char *qd[PS_LOOKUP_KEY_MAXSLOTS];
  size_t qdl[PS_LOOKUP_KEY_MAXSLOTS];
  if (has_dt) query_dtypes(L, 5, qd, qdl, (int)nq, 0);
  ps_exact_query eq = { q, (int)nq, qd, qdl, has_dt, kind, fg };
  lua_Integer np = (lua_Integer)lua_rawlen(L, 2) / 2;
  /* the shapes first: their int64 dims need the userdata's alignment, the ints do not */
  ps_lookup_key_shape *pv = lua_newuserdatauv(L, (size_t)(np ? np : 1) * (sizeof(ps_lookup_key_shape) + sizeof(int)), 0);
  int *pj = (int *)(pv + (np ? np : 1));
  int npairs = 0;
  for (lua_Integer p = 0; p < np; p++) {
    lua_rawgeti(L, 2, 2 * p + 1);
    lua_Integer j = lua_tointeger(L, -1);
    lua_rawgeti(L, 2, 2 * p + 2);
    int ok = shape_from(L, lua_gettop(L), &pv[npairs]);
    lua_pop(L, 2);
    if (!ok || j < 1 || j > PS_LOOKUP_KEY_MAXSLOTS) continue;  /* no row's slot is that */
    pj[npairs++] = (int)j;
  }
  uint32_t *rows;
  long nr = ps_exact_slot_rows(t, u->x, u->memo, &eq, cd, pj, pv, npairs, (size_t)(upto - 1), &rows);
  lua_pop(L, 1);  /* the pairs */
  if (nr < 0) return luaL_error(L, "out of memory in a slot search");
  for (long m = 0; m < nr; m++) {
    lua_pushinteger(L, (lua_Integer)rows[m] + 1);
    lua_rawseti(L, -2, (lua_Integer)m + 1);
  }
  free(rows);
  return 1;
}


/* ---- the exact match in C (exact.h) -------------------------------------------------------
 *   ix:prepare(shapes_col, formats_col | false, dtypes_col | false, n, {latency cols}, {pri}, minpri)
 *   ix:exact(slot_index | false, qshapes, qdtypes, kind, float_group)
 *     -> row, distance, rule, {input rules}, latency, latency column position, ties, {tie rows},
 *        the input rules joined with ",", the row's line (t:line(row))
 *   qshapes may be the query's shapes text (as t:shapes reads it; a text it refuses gives nil),
 *   then qdtypes are its dtype names as given (one name for every input); the slot index is
 *   then used only for two inputs or more
 *     | nil when only the Lua scan answers as the consumer would (a query without dtypes on a
 *       two-part key, dtypes no row has, no distance-0 row among the key rows, unusual shapes)
 * ties counts the equally good rows after the chosen one; {tie rows} holds the first 10. */
static int ix_prepare(lua_State *L) {
  index_ud *u = check_index(L, 1);
  ps_table *t = index_table(L, 1);
  ps_exact_cols *c = &u->cols;
  c->scol = column_arg(L, t, 2);
  if (c->scol < 0) return luaL_argerror(L, 2, "no such column");
  c->fcol = c->dcol = -1;
  if (lua_toboolean(L, 3) && (c->fcol = column_arg(L, t, 3)) < 0) return luaL_argerror(L, 3, "no such column");
  if (lua_toboolean(L, 4) && (c->dcol = column_arg(L, t, 4)) < 0) return luaL_argerror(L, 4, "no such column");
  lua_Integer n = luaL_checkinteger(L, 5);
  c->n = n < 0 || n > PS_LOOKUP_KEY_MAXSLOTS ? 0 : (int)n;
  luaL_checktype(L, 6, LUA_TTABLE);
  luaL_checktype(L, 7, LUA_TTABLE);
  lua_Integer nl = (lua_Integer)lua_rawlen(L, 6);
  luaL_argcheck(L, nl <= PS_EXACT_MAXLAT, 6, "too many latency columns");
  c->nlat = (int)nl;
  for (int j = 0; j < c->nlat; j++) {
    lua_rawgeti(L, 6, j + 1);
    c->lat[j] = column_arg(L, t, lua_gettop(L));
    lua_rawgeti(L, 7, j + 1);
    c->pri[j] = (int)luaL_checkinteger(L, -1);
    lua_pop(L, 2);
    if (c->lat[j] < 0) return luaL_argerror(L, 6, "no such column");
  }
  c->minpri = (int)luaL_checkinteger(L, 8);
  u->has_cols = 1;
  return 0;
}

/* The canonical key text of the query shapes q (k slots, strip1) with slot repl replaced by
 * v (repl < 0: none), as t:shapes_key renders it; -1 for a list that function refuses (an
 * empty slot, a dimension too large to read back). */
static long query_key_text(const ps_lookup_key_shape *q, int k, int repl, const ps_lookup_key_shape *v,
                           char *out, size_t cap) {
  size_t len = 0;
  for (int i = 0; i < k; i++) {
    const ps_lookup_key_shape *s = i == repl ? v : &q[i];
    if (len + 2 + (size_t)PS_LOOKUP_KEY_MAXRANK * 21 >= cap) return -1;
    if (i > 0) out[len++] = ';';
    if (s->rank < 0) { out[len++] = '('; out[len++] = ')'; continue; }
    if (s->rank == 0) return -1;
    int first = s->rank > 1 && s->dims[0] == 1 ? 1 : 0;
    for (int d = first; d < s->rank; d++) {
      if (s->dims[d] >= SK_MAXDIM || s->dims[d] <= -SK_MAXDIM) return -1;
      if (d > first) out[len++] = ',';
      len += ps_lookup_key_int(out + len, s->dims[d]);
    }
  }
  return (long)len;
}

static int ix_exact(lua_State *L) {
  index_ud *u = check_index(L, 1);
  ps_table *t = index_table(L, 1);
  if (!u->has_cols) return luaL_error(L, "exact: ix:prepare first");
  slot_ud *sx = lua_toboolean(L, 2) ? check_slots(L, 2) : NULL;
  int text = lua_type(L, 3) == LUA_TSTRING;
  if (!text) luaL_checktype(L, 3, LUA_TTABLE);
  int has_dt = lua_toboolean(L, 4);
  unsigned kind = (unsigned)luaL_checkinteger(L, 5);
  int fg = lua_toboolean(L, 6);
  ps_lookup_key_shape q[PS_LOOKUP_KEY_MAXSLOTS];
  lua_Integer nq;
  if (text) {  /* the shapes text as t:shapes parses it; a text it refuses: the Lua path says why */
    size_t len;
    const char *s = lua_tolstring(L, 3, &len);
    char err[256];
    nq = ps_lookup_key_parse_shapes(s, len, q, PS_LOOKUP_KEY_MAXSLOTS, err, sizeof err);
    if (nq < 0) return 0;
    if (nq < 2) sx = NULL;  /* as the caller of the table form passes it */
  } else {
    nq = (lua_Integer)lua_rawlen(L, 3);
  }
  /* the key has a dtypes part: the Lua scan answers a query without dtypes */
  if (u->nkey != 2 || !has_dt || nq < 1 || nq > PS_LOOKUP_KEY_MAXSLOTS) return 0;
  luaL_checktype(L, 4, LUA_TTABLE);
  if (!text && !query_shapes(L, 3, q, (int)nq)) return 0;
  /* the text form's dtypes are the query's names as given: one name stands for every input
   * (as Kmethods:_query spreads it) */
  int spread = text && lua_rawlen(L, 4) == 1 && nq > 1;
  const char *qd[PS_LOOKUP_KEY_MAXSLOTS];
  size_t qdl[PS_LOOKUP_KEY_MAXSLOTS];
  query_dtypes(L, 4, qd, qdl, (int)nq, spread);
  lua_getiuservalue(L, 1, 1);
  table_ud *td = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (td->keybuf == NULL && (td->keybuf = malloc(KEYBUF)) == NULL) return luaL_error(L, "out of memory");
  char *buf = td->keybuf;
  /* the dtypes key: table.concat(q.dtypes, ";") under the key's list component */
  ps_sid key[PS_INDEX_MAXKEY];
  {
    /* joined in the second half of buf (a text of up to KEYBUF / 8 bytes, whose key, at most
     * 11/5 as long, fits the first half), else as a Lua string */
    lua_Integer nd = spread ? nq : (lua_Integer)lua_rawlen(L, 4);
    char *in = buf + KEYBUF / 2;
    size_t dlen = 0;
    int joined = 1;
    for (lua_Integer k = 1; k <= nd && joined; k++) {
      size_t l;
      if (lua_rawgeti(L, 4, spread ? 1 : k) != LUA_TSTRING) { lua_pop(L, 1); return 0; }
      const char *d = lua_tolstring(L, -1, &l);  /* kept alive by the table */
      if (dlen + l + 1 > KEYBUF / 8) joined = 0;
      else {
        if (k > 1) in[dlen++] = ';';
        memcpy(in + dlen, d, l);
        dlen += l;
      }
      lua_pop(L, 1);
    }
    if (!joined) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (lua_Integer k = 1; k <= nd; k++) {
        if (lua_rawgeti(L, 4, spread ? 1 : k) != LUA_TSTRING) { lua_pop(L, 1); return 0; }
        if (k > 1) luaL_addchar(&b, ';');
        luaL_addvalue(&b);
      }
      luaL_pushresult(&b);
      in = (char *)lua_tolstring(L, -1, &dlen);  /* read only; popped below */
    }
    const component *c = &u->comp[1];
    dkey_memo *dm = &u->dkey;
    if (joined && dm->valid && dm->len == dlen && memcmp(dm->text, in, dlen) == 0) {
      key[c->slot] = dm->key;  /* a found key's id stays (strings are never removed) */
    } else {
      long kl = ps_lookup_key_list(in, dlen, c->n, c->flags, buf, joined ? KEYBUF / 2 : KEYBUF);
      int found = kl >= 0 && text_key(t, c, buf, (size_t)kl, key);
      if (!joined) lua_pop(L, 1);
      if (!found) return 0;  /* dtypes no row has: the scan looks at every row */
      if (joined && !c->hashed && dlen <= DKEY_TEXT) {
        memcpy(dm->text, in, dlen);
        dm->len = dlen;
        dm->key = key[c->slot];
        dm->valid = 1;
      }
    }
  }
  /* the shape keys of the query's variants */
  enum { MAXV = 64 };
  int vslot[MAXV];
  ps_lookup_key_shape vshape[MAXV];  /* 9 KB of stack */
  ps_sid keys[MAXV * PS_INDEX_MAXKEY];
  int nv = ps_lookup_variants(kind, q, (int)nq, vslot, vshape, MAXV), nk = 0;
  if (nv >= MAXV) return 0;
  const component *c0 = &u->comp[0];
  int k = c0->n > 0 && nq > c0->n ? c0->n : (int)nq;
  for (int v = 0; v < nv; v++) {
    ps_sid *kk = keys + (size_t)nk * u->nslots;
    memcpy(kk, key, u->nslots * sizeof *kk);
    uint64_t h;
    if (c0->hashed && c0->kind == K_SHAPES && (c0->flags & PS_LOOKUP_KEY_STRIP1)) {
      /* the key's hash from the slots themselves (what key_hash gives for their text); the
       * lists query_key_text refuses are the ones slots_hash refuses */
      if (!slots_hash_with(q, k, vslot[v], &vshape[v], PS_LOOKUP_KEY_STRIP1, &h)) return 0;
      put_hash(kk + c0->slot, h);
      nk++;
      continue;
    }
    long kl = query_key_text(q, k, vslot[v], &vshape[v], buf, KEYBUF);
    if (kl < 0) return 0;
    if (text_key(t, c0, buf, (size_t)kl, kk)) nk++;
  }
  ps_exact_query eq = { q, (int)nq, qd, qdl, 1, kind, fg };
  ps_exact_answer a;
  if (nq >= 2 && sx == NULL) return luaL_error(L, "exact: a query of two inputs or more needs the slot index");
  int rc = ps_exact_lookup(t, u->ix, keys, nk, u->nslots, sx ? sx->x : NULL, sx ? sx->memo : NULL, &eq,
                           &u->cols, &a);
  if (rc < 0) return luaL_error(L, "out of memory in an exact lookup");
  if (rc == 0) return 0;
  lua_pushinteger(L, (lua_Integer)a.row + 1);
  lua_pushinteger(L, a.distance);
  lua_pushstring(L, ps_lookup_rule_name(a.rule));
  lua_createtable(L, (int)nq, 0);
  /* the input rules joined with "," as well (the record's "input rules"): in buf, which
   * holds them (a rule name is short), else a Lua buffer */
  size_t jl = 0;
  for (int i = 0; i < (int)nq && jl < KEYBUF; i++) {
    const char *rn = ps_lookup_rule_name(a.rules[i]);
    size_t rl = strlen(rn);
    lua_pushstring(L, rn);
    lua_rawseti(L, -2, i + 1);
    if (jl + rl + 1 > KEYBUF) { jl = KEYBUF; continue; }
    if (i > 0) buf[jl++] = ',';
    memcpy(buf + jl, rn, rl);
    jl += rl;
  }
  if (jl < KEYBUF) {
    lua_pushlstring(L, buf, jl);
  } else {
    luaL_Buffer rb;
    luaL_buffinit(L, &rb);
    for (int i = 0; i < (int)nq; i++) {
      if (i > 0) luaL_addchar(&rb, ',');
      luaL_addstring(&rb, ps_lookup_rule_name(a.rules[i]));
    }
    luaL_pushresult(&rb);
  }
  int joined = lua_gettop(L);
  lua_pushnumber(L, a.latency);
  lua_pushinteger(L, a.latpos + 1);
  lua_pushinteger(L, (lua_Integer)a.nties);
  if (a.nties == 0) {
    lua_pushnil(L);
  } else {
    size_t nt = a.nties < PS_EXACT_TIES ? a.nties : PS_EXACT_TIES;
    lua_createtable(L, (int)nt, 0);
    for (size_t i = 0; i < nt; i++) {
      lua_pushinteger(L, (lua_Integer)a.ties[i] + 1);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  }
  lua_pushvalue(L, joined);
  lua_remove(L, joined);
  lua_pushinteger(L, ps_table_line(t, a.row));
  return 10;
}

/* T.new_table(narray, nhash) -> an empty table with room for narray items and nhash fields,
 * as a constructor of that many fields makes it, without a constructor's nil fields (each
 * of which costs a store). */
static int m_new_table(lua_State *L) {
  lua_Integer na = luaL_checkinteger(L, 1), nh = luaL_checkinteger(L, 2);
  luaL_argcheck(L, na >= 0 && na <= 1 << 20, 1, "0 to 2^20 items");
  luaL_argcheck(L, nh >= 0 && nh <= 1 << 20, 2, "0 to 2^20 fields");
  lua_createtable(L, (int)na, (int)nh);
  return 1;
}

/* T.fold(rule, r) -> the rule the consumer reports after input rule r (ps_lookup_fold). */
static int rule_id(lua_State *L, int i) {
  const char *name = luaL_checkstring(L, i);
  for (int r = PS_RULE_IDENTITY; ps_lookup_rule_name(r); r++)
    if (strcmp(ps_lookup_rule_name(r), name) == 0) return r;
  return luaL_argerror(L, i, "not a rule name");
}

static int m_fold(lua_State *L) {
  lua_pushstring(L, ps_lookup_rule_name(ps_lookup_fold(rule_id(L, 1), rule_id(L, 2))));
  return 1;
}

static void push_shape(lua_State *L, const ps_lookup_key_shape *s) {
  if (s->rank < 0) {
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "scalar");
    return;
  }
  lua_createtable(L, s->rank, 0);
  for (int d = 0; d < s->rank; d++) {
    lua_pushinteger(L, (lua_Integer)s->dims[d]);
    lua_rawseti(L, -2, d + 1);
  }
}

/* T.variants(kind, shapes) -> {shapes, variant, ...} (ps_lookup_variants): each variant a new
 * list holding the query's slot tables but the one it replaces. */
static int m_variants(lua_State *L) {
  unsigned kind = (unsigned)luaL_checkinteger(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer nq = (lua_Integer)lua_rawlen(L, 2);
  lua_newtable(L);
  lua_pushvalue(L, 2);
  lua_rawseti(L, -2, 1);
  ps_lookup_key_shape *q = lua_newuserdatauv(L, (size_t)(nq ? nq : 1) * sizeof *q, 0);
  if (nq > PS_LOOKUP_KEY_MAXSLOTS || !query_shapes(L, 2, q, (int)nq)) { lua_pop(L, 1); return 1; }
  int maxv = 4 * (int)nq + 1;
  /* the shapes first: their int64 dims need the userdata's alignment, the ints do not */
  ps_lookup_key_shape *shape = lua_newuserdatauv(L, (size_t)maxv * (sizeof *shape + sizeof(int)), 0);
  int *slot = (int *)(shape + maxv);
  int nv = ps_lookup_variants(kind, q, (int)nq, slot, shape, maxv);
  for (int v = 1; v < nv; v++) {
    lua_createtable(L, (int)nq, 0);
    for (lua_Integer i = 1; i <= nq; i++) {
      if (i - 1 == slot[v]) push_shape(L, &shape[v]);
      else lua_rawgeti(L, 2, i);
      lua_rawseti(L, -2, i);
    }
    lua_rawseti(L, -4, v + 1);
  }
  lua_pop(L, 2);
  return 1;
}

/* T.slot_variants(kind, j, tc) -> {shape, ...} (ps_lookup_slot_variants). */
static int m_slot_variants(lua_State *L) {
  unsigned kind = (unsigned)luaL_checkinteger(L, 1);
  lua_Integer j = luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_newtable(L);
  ps_lookup_key_shape tc, out[PS_LOOKUP_SLOT_VARIANTS];
  if (!shape_from(L, 3, &tc)) return 1;
  int n = ps_lookup_slot_variants(kind, j > INT32_MAX ? INT32_MAX : j < INT32_MIN ? INT32_MIN : (int)j, &tc, out);
  for (int i = 0; i < n; i++) {
    push_shape(L, &out[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int sx_memory(lua_State *L) {
  slot_ud *u = luaL_checkudata(L, 1, SLOTIX);
  lua_pushinteger(L, u->x ? (lua_Integer)ps_slotix_memory(u->x) : 0);
  return 1;
}

static const luaL_Reg table_methods[] = {
  {"ncols", t_ncols}, {"path", t_path}, {"memory", t_memory}, {"columns", t_columns},
  {"column", t_column}, {"cell", t_cell}, {"num", t_num}, {"nums", t_nums}, {"strs", t_strs},
  {"record", t_record}, {"line", t_line}, {"nfields", t_nfields}, {"index", t_index},
  {"key", t_key}, {"shapes", t_shapes}, {"inputs", t_inputs}, {"unquoted", t_unquoted}, {"unquoted_into", t_unquoted_into},
  {"shapes_key", t_shapes_key}, {"shapes_label", t_shapes_label}, {"slot_index", t_slot_index},
  {"free", t_gc}, {NULL, NULL}
};

static const luaL_Reg index_methods[] = {
  {"find", ix_find}, {"find_keys", ix_find_keys}, {"prepare", ix_prepare}, {"exact", ix_exact}, {"ngroups", ix_ngroups}, {"group", ix_group}, {"rows", ix_rows},
  {"groups", ix_groups}, {"skipped", ix_skipped}, {NULL, NULL}
};

static const luaL_Reg table_meta[] = {
  {"__gc", t_gc}, {"__close", t_gc}, {"__len", t_len}, {"__tostring", t_tostring}, {NULL, NULL}
};

static const luaL_Reg index_meta[] = { {"__gc", ix_gc}, {"__close", ix_gc}, {NULL, NULL} };

static const luaL_Reg slot_methods[] = { {"rows", sx_rows}, {"memory", sx_memory}, {NULL, NULL} };
static const luaL_Reg slot_meta[] = { {"__gc", sx_gc}, {"__close", sx_gc}, {NULL, NULL} };

static const luaL_Reg module_functions[] = {
  {"load", t_load}, {"rule", m_rule}, {"padded", m_padded}, {"pads", m_pads}, {"fold", m_fold},
  {"variants", m_variants}, {"slot_variants", m_slot_variants}, {"new_table", m_new_table}, {NULL, NULL}
};

/* Sets the functions l into the table at target, each with the three metatables (at mt,
 * mt + 1, mt + 2) as its upvalues. */
static void set_functions(lua_State *L, int target, const luaL_Reg *l, int mt) {
  for (; l->name != NULL; l++) {
    for (int k = 0; k < NUP - 1; k++) lua_pushvalue(L, mt + k);
    lua_pushcclosure(L, l->func, NUP - 1);
    lua_setfield(L, target, l->name);
  }
}

int luaopen_perfscript_table(lua_State *L) {
  static const char *const names[NUP - 1] = { TABLE, INDEX, SLOTIX };
  static const luaL_Reg *const meta[NUP - 1] = { table_meta, index_meta, slot_meta };
  static const luaL_Reg *const methods[NUP - 1] = { table_methods, index_methods, slot_methods };
  int mt = lua_gettop(L) + 1;
  for (int k = 0; k < NUP - 1; k++) luaL_newmetatable(L, names[k]);
  for (int k = 0; k < NUP - 1; k++) {
    set_functions(L, mt + k, meta[k], mt);
    lua_newtable(L);
    set_functions(L, lua_gettop(L), methods[k], mt);
    lua_setfield(L, mt + k, "__index");
  }
  lua_newtable(L);
  set_functions(L, lua_gettop(L), module_functions, mt);
  lua_replace(L, mt);
  lua_settop(L, mt);
  static const struct { const char *name; int v; } kinds[] = {
    {"KIND_MATMUL", PS_RULE_KIND_MATMUL}, {"KIND_FLATTEN_3D", PS_RULE_KIND_FLATTEN_3D},
    {"KIND_MERGE_LAST", PS_RULE_KIND_MERGE_LAST}, {"KIND_INDEX", PS_RULE_KIND_INDEX}
  };
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    lua_pushinteger(L, kinds[i].v);
    lua_setfield(L, -2, kinds[i].name);
  }
  return 1;
}
