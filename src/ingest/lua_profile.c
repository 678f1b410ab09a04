/* perfscript.profile: streaming aggregation of kernel_details / op_summary files.
 *   local agg = profile.new([{threads = 1, split_min = bytes, hash = true}])   (no threads/split:
 *       defaults; hash: each file's XXH3 taken while it is read: agg:file_xxh3(i) -> integer | nil)
 *   local counts, absent = agg:add_file(path [, function(done, total) end])
 *                          -- or nil, "file: missing columns: ..." / "file:line: reason"
 *   agg:totals(), #agg, agg:group(i [, stats]) -> {type=, in_shapes=, ..., count=, mean=, ...}
 *       (stats = false: no mean/median/std/min/max/metrics, no sorting)
 *   agg:row(i) -> the 36 database cells (base columns, profiling statistics, counters)
 *   agg:types() -> {{type=, groups={i, ...}}, ...}: the groups of each kernel type, types in
 *       first-seen order (no Lua table per group)
 *   agg:keys(indices) -> the import keys of those groups, in the same order
 *   agg:provenance(indices, stem, common [, input, xxh3 [, as_text]]) -> text, n: the provenance log lines
 *       of those groups written as rows of <stem>.csv (src/store/provenance.h)
 *   agg:provenance_log(tables, common, input, xxh3, path) -> job: the same lines of many tables
 *       made and appended to path's temporary file by a thread while the run goes on;
 *       job:finish([stage]) commits it (see a_provenance_log)
 *   agg:fia_runtime(indices, files) -> {[i] = {16 Runtime cells}} of the FIA groups
 *       (profimport.fia_metadata's per-group part; see a_fia_runtime)
 *   agg:csv_renderer(lists [, eol [, extras]]) -> r: csv_text of each list, rendered ahead on
 *       the aggregate's threads; r:take(i) -> text (in any order, once each), r:close()
 *   profile.columns, profile.metrics, profile.required, profile.us_to_ns(s),
 *   profile.kernel_type(s), profile.is_na(s), profile.number(s),
 *   profile.import_key(type, in_shapes, in_dtypes, in_formats, out_shapes, out_dtypes)
 *       -> key, hash (the import's group key, import_key.h; a group's is g.import_key) */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "num.h"
#include "profile.h"
#include "import_key.h"
#include "csvwrite.h"
#include "grow.h"
#include "luabind.h"
#include "u64map.h"
#include "provenance.h"
#include "writeback_sig.h"
#include "atomicfile.h"
#include "stage.h"
#include "shape.h"
#include "text.h"

int luaopen_perfscript_num(lua_State *L);

#define AGG "perfscript.profile.aggregate"

/* render: the aggregate's renderer (csv_renderer) while it lives, stopped when p is freed */
typedef struct agg_ud { ps_profile *p; ps_profile_render *render; } agg_ud;

static ps_profile *check_agg(lua_State *L) {
  agg_ud *u = luaL_checkudata(L, 1, AGG);
  if (u->p == NULL) luaL_error(L, "attempt to use a closed profile aggregate");
  return u->p;
}

/* Element k of the list of group indices (1-based, as Lua sees them) at stack index t: 0 and
 * its 0-based index in *i, or -1 when it is not a group of p (*bad: what it was, for the
 * caller's "group index %d out of range" once it has freed what it holds). */
static int list_index(lua_State *L, int t, lua_Integer k, const ps_profile *p, size_t *i, lua_Integer *bad) {
  lua_rawgeti(L, t, k);
  lua_Integer g = lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (g < 1 || (uint64_t)g > ps_profile_ngroups(p)) return *bad = g, -1;
  *i = (size_t)(g - 1);
  return 0;
}

/* Group k of the list at stack index t (its cells, no statistics) into *g, for a caller that
 * holds nothing to free: its 0-based index, or raises "group index %d out of range". */
static size_t list_group(lua_State *L, int t, lua_Integer k, ps_profile *p, ps_profile_group_info *g) {
  size_t i = 0;   /* (luaL_error does not return) */
  lua_Integer bad;
  if (list_index(L, t, k, p, &i, &bad) != 0) luaL_error(L, "group index %d out of range", (int)bad);
  ps_profile_group(p, i, 0, g);
  return i;
}

static int p_new(lua_State *L) {
  agg_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->p = NULL, u->render = NULL;
  luaL_setmetatable(L, AGG);
  u->p = ps_profile_new();
  if (u->p == NULL) return luaL_error(L, "out of memory");
  if (lua_istable(L, 1)) {
    lua_Integer threads = (lua_getfield(L, 1, "threads"), lua_tointeger(L, -1));
    lua_Integer split_min = (lua_getfield(L, 1, "split_min"), lua_tointeger(L, -1));
    int hash = (lua_getfield(L, 1, "hash"), lua_toboolean(L, -1));
    lua_pop(L, 3);
    ps_profile_set_threads(u->p, (int)threads, split_min > 0 ? (uint64_t)split_min : 0);
    ps_profile_set_hash(u->p, hash);
  }
  return 1;
}

static int a_close(lua_State *L) {
  agg_ud *u = luaL_checkudata(L, 1, AGG);
  ps_profile_render_stop(u->render);   /* its threads read p */
  u->render = NULL;
  ps_profile_free(u->p);
  u->p = NULL;
  return 0;
}

static void push_counts(lua_State *L, const ps_profile_counts *c) {
  lua_createtable(L, 0, 8);
#define F(name) lua_pushinteger(L, (lua_Integer)c->name), lua_setfield(L, -2, #name)
  F(rows); F(used); F(na_shapes); F(no_type); F(no_shapes); F(bad_duration); F(duplicates);
  F(fia_rows);
#undef F
}

typedef struct progress_ctx { lua_State *L; int fn; } progress_ctx;

static void on_progress(void *ud, uint64_t done, uint64_t total) {
  progress_ctx *c = ud;
  lua_pushvalue(c->L, c->fn);
  lua_pushinteger(c->L, (lua_Integer)done);
  lua_pushinteger(c->L, (lua_Integer)total);
  if (lua_pcall(c->L, 2, 0, 0) != LUA_OK) lua_pop(c->L, 1);  /* a display problem only */
}

static int a_add_file(lua_State *L) {
  ps_profile *p = check_agg(L);
  const char *path = luaL_checkstring(L, 2);
  progress_ctx ctx = {L, 3};
  int with_cb = !lua_isnoneornil(L, 3);
  if (with_cb) luaL_checktype(L, 3, LUA_TFUNCTION);
  ps_profile_counts counts;
  char absent[2048], err[1024];
  if (ps_profile_add_file(p, path, &counts, absent, sizeof absent, with_cb ? on_progress : NULL,
                          &ctx, err, sizeof err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  push_counts(L, &counts);
  lua_pushstring(L, absent);
  return 2;
}

/* agg:file_xxh3(i) -> the XXH3 of the i-th file added (as perfscript.sig.hash_file gives
 * it), taken while it was read (profile.new{hash = true}), or nil */
static int a_file_xxh3(lua_State *L) {
  ps_profile *p = check_agg(L);
  lua_Integer i = luaL_checkinteger(L, 2);
  uint64_t h;
  if (i < 1 || ps_profile_file_hash(p, (long)(i - 1), &h) != 0) return luaL_pushfail(L), 1;
  lua_pushinteger(L, (lua_Integer)h);
  return 1;
}

static int a_totals(lua_State *L) {
  push_counts(L, ps_profile_totals(check_agg(L)));
  return 1;
}

static int a_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ps_profile_ngroups(check_agg(L)));
  return 1;
}

static void get_info(lua_State *L, ps_profile *p, int stats, ps_profile_group_info *info) {
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || ps_profile_group(p, (size_t)(i - 1), stats, info) != 0)
    luaL_argerror(L, 2, "group index out of range");
}

static const char *const cell_names[PS_PC_NCELLS] = {
  "type", "op_state", "core", "in_shapes", "in_dtypes", "in_formats", "out_shapes",
  "out_dtypes", "out_formats",
};

static void push_num(lua_State *L, double v) {
  if (isnan(v)) lua_pushboolean(L, 0);
  else lua_pushnumber(L, v);
}

static int a_group(lua_State *L) {
  ps_profile *p = check_agg(L);
  ps_profile_group_info g;
  int stats = lua_isnoneornil(L, 3) || lua_toboolean(L, 3);
  get_info(L, p, stats, &g);
  lua_createtable(L, 0, 24);
  for (int c = 0; c < PS_PC_NCELLS; c++) {
    lua_pushstring(L, g.cells[c]);
    lua_setfield(L, -2, cell_names[c]);
  }
  lua_pushlstring(L, g.key, g.keylen), lua_setfield(L, -2, "import_key");
  lua_pushinteger(L, (lua_Integer)g.hash), lua_setfield(L, -2, "hash");
  lua_pushinteger(L, (lua_Integer)g.count), lua_setfield(L, -2, "count");
  if (stats) {
    push_num(L, g.mean), lua_setfield(L, -2, "mean");
    push_num(L, g.median), lua_setfield(L, -2, "median");
    push_num(L, g.std), lua_setfield(L, -2, "std");
    push_num(L, g.min), lua_setfield(L, -2, "min");
    push_num(L, g.max), lua_setfield(L, -2, "max");
    lua_createtable(L, PS_NCOUNTERS, 0);
    for (int m = 0; m < PS_NCOUNTERS; m++) {
      push_num(L, g.metric_mean[m]);
      lua_rawseti(L, -2, m + 1);
    }
    lua_setfield(L, -2, "metrics");
  }
  if (g.first_start_ns != INT64_MIN) {
    lua_pushinteger(L, g.first_start_ns), lua_setfield(L, -2, "first_ns");
    lua_pushinteger(L, g.last_start_ns), lua_setfield(L, -2, "last_ns");
  }
  if (g.fia_file >= 0) {
    lua_pushinteger(L, g.fia_file + 1), lua_setfield(L, -2, "fia_file");
    lua_pushinteger(L, g.fia_ordinal + 1), lua_setfield(L, -2, "fia_ordinal");
  }
  return 1;
}

/* agg:types(): one pass over the groups, the type names interned once each. */
static int a_types(lua_State *L) {
  ps_profile *p = check_agg(L);
  size_t n = ps_profile_ngroups(p);
  /* each group's type (a map on the hash of the name, names compared), then the groups in
   * type order (a counting sort, group order kept) and one table of its size per type: no Lua
   * lookup per group (they were a tenth of the serial work after a big aggregation) */
  size_t *tix = malloc((2 * n + 1) * sizeof *tix), *order = tix + n;
  size_t ntypes = 0, captypes = 0, *count = NULL;
  const char **name = NULL;
  ps_u64map m;
  ps_u64map_init(&m, 64);
  int oom = tix == NULL;
  for (size_t i = 0; i < n && !oom; i++) {
    const char *t = ps_profile_group_type(p, i);
    uint64_t h = ps_sig_hash_bytes(t, strlen(t));
    size_t cursor = 0, id;
    while ((id = ps_u64map_next(&m, h, &cursor)) != PS_U64MAP_NONE && strcmp(name[id], t) != 0) {}
    if (id == PS_U64MAP_NONE) {
      id = ntypes;
      if (ntypes == captypes) {
        size_t c = captypes ? 2 * captypes : 32;
        const char **nn = realloc(name, c * sizeof *nn);
        if (nn) name = nn;
        size_t *nc = nn ? realloc(count, c * sizeof *nc) : NULL;
        if (nc) count = nc;
        if (nn == NULL || nc == NULL || ps_u64map_add(&m, h, id) != 0) {
          oom = 1;
          break;
        }
        captypes = c;
      } else if (ps_u64map_add(&m, h, id) != 0) {
        oom = 1;
        break;
      }
      name[ntypes] = t;
      count[ntypes++] = 0;
    }
    tix[i] = id;
    count[id]++;
  }
  ps_u64map_free(&m);
  if (oom) {
    free(tix), free(name), free(count);
    return luaL_error(L, "out of memory");
  }
  for (size_t t = 0, at = 0; t < ntypes; t++) {   /* count[t]: where type t's groups start */
    size_t c = count[t];
    count[t] = at;
    at += c;
  }
  for (size_t i = 0; i < n; i++) order[count[tix[i]]++] = i;
  lua_createtable(L, (int)ntypes, 0);
  for (size_t t = 0, at = 0; t < ntypes; t++) {
    size_t end = count[t];   /* now where type t's groups end */
    lua_createtable(L, 0, 2);
    lua_pushstring(L, name[t]), lua_setfield(L, -2, "type");
    lua_createtable(L, (int)(end - at), 0);
    for (lua_Integer k = 1; at < end; at++, k++) lua_pushinteger(L, (lua_Integer)order[at] + 1), lua_rawseti(L, -2, k);
    lua_setfield(L, -2, "groups");
    lua_rawseti(L, -2, (lua_Integer)t + 1);
  }
  free(tix), free(name), free(count);
  return 1;
}

static int a_keys(lua_State *L) {
  ps_profile *p = check_agg(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    ps_profile_group_info g;
    list_group(L, 2, k, p, &g);
    lua_pushlstring(L, g.key, g.keylen);
    lua_rawseti(L, -2, k);
  }
  return 1;
}

/* The text of slot i (0-based) of a parsed shape cell: its dims as "a,b", "" for an empty,
 * unparsable or absent slot (what profimport's slot_text makes of shape.parse(text, true)). */
static void push_slot_text(lua_State *L, const ps_shape *s, size_t i) {
  if (i >= s->nslots || s->state[i] != PS_SLOT_DIMS || ps_shape_rank(s, i) == 0) {
    lua_pushvalue(L, 6);   /* a_fia_runtime's "" */
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t r = ps_shape_rank(s, i);
  const int64_t *d = ps_shape_slot(s, i);
  for (size_t k = 0; k < r; k++) {
    char num[24];
    int n = snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)d[k]);
    luaL_addlstring(&b, num, (size_t)n);
  }
  luaL_pushresult(&b);
}

static int shape_free_gc(lua_State *L) {
  ps_shape_free(lua_touserdata(L, 1));
  return 0;
}

/* 1 when s has a byte that is neither whitespace nor '"' (Lua's s:find('[^%s"]')). */
static int has_content(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != '"' && !ps_is_space(s[i])) return 1;
  return 0;
}

/* agg:fia_runtime(indices, files) -> {[group index] = {16 Runtime cells}} for the
 * FusedInferAttentionScore groups among indices (docs/rules.md, Import: FIA pairing; the rule
 * is profimport.fia_metadata's, which gives files): files[f] = {source = name, base = n,
 * ops = {Input Shapes of the directory's FIA operator rows} | nil} for each file f a group's
 * first FIA row came from. A group's shapes are its operator row's (ops[base + ordinal]) when
 * that has any text, else its own Input Shapes; the cells are source_profile, slot 6 of them
 * (actual_seq_lengths_shape), slot 7 (actual_seq_lengths_kv_shape), slot 15
 * (block_table_shape) and "profile_shapes_only" in the 16 columns' places (fia.IMPORT); no Lua
 * table or parse per group in Lua. */
static int a_fia_runtime(lua_State *L) {
  ps_profile *p = check_agg(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 3);
  lua_Integer n = luaL_len(L, 2);
  /* 4: the result, its size set once (keyed by group index: rehashing as it grew was a fifth
   * of the work) */
  lua_createtable(L, 0, n > 0 && n < INT32_MAX ? (int)n : 0);
  ps_shape *s = lua_newuserdatauv(L, sizeof *s, 0);   /* 5: freed by its __gc on an error */
  ps_shape_init(s);
  lua_newtable(L);   /* its metatable */
  lua_pushcfunction(L, shape_free_gc), lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, 5);
  lua_pushliteral(L, "");   /* 6: the empty cell, pushed by copy (each literal push is a lookup) */
  for (lua_Integer k = 1; k <= n; k++) {
    ps_profile_group_info g;
    size_t i = list_group(L, 2, k, p, &g);
    if (strcmp(g.cells[PS_PC_TYPE], PS_PROFILE_FIA_TYPE) != 0) continue;
    const char *text = g.cells[PS_PC_IN_SHAPES];
    size_t tlen = strlen(text);
    int top = lua_gettop(L);
    if (g.fia_file >= 0) {
      if (lua_rawgeti(L, 3, (lua_Integer)g.fia_file + 1) != LUA_TTABLE)
        return luaL_error(L, "fia_runtime: no entry for file %d", (int)g.fia_file + 1);
      int f = lua_gettop(L);
      lua_getfield(L, f, "source");   /* top + 2: kept for the cells below */
      lua_getfield(L, f, "base");
      lua_Integer at = lua_tointeger(L, -1) + (lua_Integer)g.fia_ordinal + 1;
      lua_pop(L, 1);
      if (lua_getfield(L, f, "ops") == LUA_TTABLE && lua_rawgeti(L, -1, at) == LUA_TSTRING) {
        size_t ol;
        const char *op = lua_tolstring(L, -1, &ol);
        if (has_content(op, ol)) text = op, tlen = ol;   /* stays on the stack while parsed */
      }
    } else {
      lua_pushvalue(L, 6);
    }
    if (ps_shape_parse(s, text, tlen) != 0) return luaL_error(L, "out of memory");
    lua_createtable(L, 16, 0);
    int cells = lua_gettop(L);
    for (int c = 1; c <= 16; c++) {
      switch (c) {
        case 1: lua_pushvalue(L, g.fia_file >= 0 ? top + 2 : top + 1); break;
        case 2: push_slot_text(L, s, 5); break;
        case 4: push_slot_text(L, s, 6); break;
        case 7: push_slot_text(L, s, 14); break;
        case 16: lua_pushliteral(L, "profile_shapes_only"); break;
        default: lua_pushvalue(L, 6);
      }
      lua_rawseti(L, cells, c);
    }
    lua_rawseti(L, 4, (lua_Integer)i + 1);   /* keyed by the group's Lua index */
    lua_settop(L, top);
  }
  lua_settop(L, 4);
  return 1;
}

static void push_fixed(lua_State *L, double v) {
  if (isnan(v)) {
    lua_pushliteral(L, "");
    return;
  }
  char buf[512];
  ps_num_fmt6(buf, sizeof buf, v);
  lua_pushstring(L, buf);
}

/* The database cells of group i, in column order (see profile.columns). */
static int a_row(lua_State *L) {
  ps_profile *p = check_agg(L);
  ps_profile_group_info g;
  get_info(L, p, 1, &g);
  lua_createtable(L, 11 + PS_NCOUNTERS, 0);
  int k = 0;
  for (int c = PS_PC_OP_STATE; c < PS_PC_NCELLS; c++) {
    lua_pushstring(L, g.cells[c]);
    lua_rawseti(L, -2, ++k);
  }
  push_fixed(L, g.mean), lua_rawseti(L, -2, ++k);
  push_fixed(L, g.median), lua_rawseti(L, -2, ++k);
  push_fixed(L, g.std), lua_rawseti(L, -2, ++k);
  for (int m = 0; m < PS_NCOUNTERS; m++) {
    push_fixed(L, g.metric_mean[m]);
    lua_rawseti(L, -2, ++k);
  }
  return 1;
}

/* Hands the malloc'd pieces texts[0..r) to L: as a new perfscript.text (as_text; luabind.h)
 * or one string. Frees them either way; raises on out of memory. */
static void push_pieces(lua_State *L, int as_text, char **texts, size_t *lens, int r) {
  if (as_text) {
    ps_text *t = ps_text_push(L);
    int oom = 0;
    for (int i = 0; i < r; i++)
      if (oom) free(texts[i]);
      else oom = ps_text_add(t, texts[i], lens[i]) != 0;
    if (oom) luaL_error(L, "out of memory");
    return;
  }
  if (r == 1) {
    lua_pushlstring(L, texts[0] ? texts[0] : "", lens[0]);
  } else {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; i < r; i++) luaL_addlstring(&b, texts[i] ? texts[i] : "", lens[i]);
    luaL_pushresult(&b);
  }
  for (int i = 0; i < r; i++) free(texts[i]);
}

/* Appends rows[off[k], off[k + 1]) for k < n (the row of group idx[k]), each followed by the
 * strings of the table extra[idx[k] + 1] (extra: a stack index), quoted, and eol, to *out
 * (*len bytes of *cap). 0, or -1 when memory runs out. */
static int add_extra_rows(lua_State *L, int extra, const char *rows, const size_t *off,
                          const size_t *idx, size_t n, const char *eol, size_t eollen,
                          char **out, size_t *len, size_t *cap) {
  for (size_t k = 0; k < n; k++) {
    size_t rl = off[k + 1] - off[k];
    if (ps_grow((void **)out, cap, *len + rl + eollen, 1) != 0) return -1;
    memcpy(*out + *len, rows + off[k], rl), *len += rl;
    if (lua_rawgeti(L, extra, (lua_Integer)idx[k] + 1) == LUA_TTABLE) {
      lua_Integer ne = luaL_len(L, -1);
      for (lua_Integer e = 1; e <= ne; e++) {
        size_t vl;
        lua_rawgeti(L, -1, e);
        const char *v = lua_tolstring(L, -1, &vl);
        if (ps_grow((void **)out, cap, *len + 1 + (v ? PS_CSV_QUOTED_MAX(vl) : 0) + eollen, 1) != 0) {
          lua_pop(L, 2);
          return -1;
        }
        (*out)[(*len)++] = ',';
        if (v) *len += ps_csv_quote(*out + *len, v, vl);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
    memcpy(*out + *len, eol, eollen), *len += eollen;
  }
  return 0;
}

/* agg:csv_text(indices [, extra [, eol [, as_text]]]) -> the CSV lines of those groups (row()
 * cells, then the strings of extra[i] when given), minimal quoting, one string (as_text: a
 * perfscript.text, written by fs.write_atomic without a copy): writing a new database file
 * needs no Lua table per row. The rows are encoded in C on the aggregate's threads
 * (ps_profile_rows_pieces, line ends included); with extra, its cells are added here. */
static int a_csv_text(lua_State *L) {
  ps_profile *p = check_agg(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  int has_extra = lua_istable(L, 3);
  size_t eollen;
  const char *eol = luaL_optlstring(L, 4, "\r\n", &eollen);
  int as_text = lua_toboolean(L, 5);
  lua_settop(L, 4);
  size_t n = (size_t)luaL_len(L, 2);
  size_t *idx = malloc((2 * n + 1) * sizeof *idx);
  if (idx == NULL) return luaL_error(L, "out of memory");
  size_t *off = idx + n;
  for (size_t k = 0; k < n; k++) {
    lua_Integer bad;
    if (list_index(L, 2, (lua_Integer)k + 1, p, &idx[k], &bad) != 0) {
      free(idx);
      return luaL_error(L, "group index %d out of range", (int)bad);
    }
  }
  size_t bad = 0;
  if (!has_extra) {
    char *texts[PS_PROFILE_MAX_PIECES];
    size_t lens[PS_PROFILE_MAX_PIECES];
    int r = ps_profile_rows_pieces(p, idx, n, eol, eollen, texts, lens, &bad);
    free(idx);
    if (r == -1) return luaL_error(L, "group index %d out of range", (int)bad + 1);
    if (r < 0) return luaL_error(L, "out of memory");
    push_pieces(L, as_text, texts, lens, r);
    return 1;
  }
  char *rows;
  int rc = ps_profile_rows_text(p, idx, n, &rows, off, &bad);
  if (rc != 0) {
    free(idx);
    if (rc == -1) return luaL_error(L, "group index %d out of range", (int)bad + 1);
    return luaL_error(L, "out of memory");
  }
  /* one malloc'd buffer (a luaL_Buffer would share the stack with the extra cells) */
  char *out = NULL;
  size_t len = 0, cap = 0;
  if (ps_grow((void **)&out, &cap, off[n] + n * eollen + 1, 1) != 0 ||
      add_extra_rows(L, 3, rows, off, idx, n, eol, eollen, &out, &len, &cap) != 0)
    goto oom;
  free(rows);
  free(idx);
  push_pieces(L, as_text, &out, &len, 1);
  return 1;
oom:
  free(out);
  free(rows);
  free(idx);
  return luaL_error(L, "out of memory");
}

/* ---- agg:csv_renderer ------------------------------------------------------------------ */

#define RENDERER "perfscript.profile.renderer"

typedef struct render_ud {
  ps_profile_render *r;
  agg_ud *agg;     /* its aggregate (user value 1 keeps it alive; 2: the extra cells) */
  char eol[8];
  size_t eollen;
} render_ud;

/* agg:csv_renderer(lists [, eol [, extras]]) -> r: the CSV rows of several lists of group
 * indices (each row as csv_text(list, extras[i], eol) gives it: eol "\r\n" by default, at most
 * 8 bytes), made ahead on the aggregate's threads (ps_profile_render_*): r:take(i) -> list i's
 * rows as a perfscript.text (each list taken once), waiting for them; while the caller writes
 * one list the next is being made (a list's extra cells are added by take, on this thread).
 * r:close() (also <close>, __gc and the aggregate's close) ends the threads. */
static int a_csv_renderer(lua_State *L) {
  ps_profile *p = check_agg(L);
  agg_ud *u = lua_touserdata(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t eollen;
  const char *eol = luaL_optlstring(L, 3, "\r\n", &eollen);
  if (eollen > sizeof ((render_ud *)0)->eol)
    return luaL_error(L, "csv_renderer: a line end of at most 8 bytes");
  if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
  int has_extras = lua_istable(L, 4);
  lua_settop(L, 4);
  size_t nl = (size_t)luaL_len(L, 2);
  render_ud *ud = lua_newuserdatauv(L, sizeof *ud, 2);   /* at 5: frees what follows on error */
  ud->r = NULL, ud->agg = u;
  memcpy(ud->eol, eol, eollen), ud->eollen = eollen;
  luaL_setmetatable(L, RENDERER);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 5, 1);
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, 5, 2);
  size_t *start = lua_newuserdatauv(L, (nl + 1) * sizeof *start, 0);   /* collected */
  unsigned char *offs = lua_newuserdatauv(L, nl ? nl : 1, 0);
  size_t *idx = NULL, cap = 0, n = 0;
  for (size_t i = 0; i < nl; i++) {
    start[i] = n;
    offs[i] = has_extras && lua_rawgeti(L, 4, (lua_Integer)i + 1) == LUA_TTABLE;
    if (has_extras) lua_pop(L, 1);
    if (lua_rawgeti(L, 2, (lua_Integer)i + 1) != LUA_TTABLE) {
      free(idx);
      return luaL_error(L, "csv_renderer: list %d is not a table", (int)i + 1);
    }
    size_t m = (size_t)luaL_len(L, -1);
    if (ps_grow((void **)&idx, &cap, n + m, sizeof *idx) != 0) {
      free(idx);
      return luaL_error(L, "out of memory");
    }
    for (size_t k = 0; k < m; k++) {
      lua_Integer bad;
      if (list_index(L, lua_gettop(L), (lua_Integer)k + 1, p, &idx[n++], &bad) != 0) {
        free(idx);
        return luaL_error(L, "group index %d out of range", (int)bad);
      }
    }
    lua_pop(L, 1);
  }
  start[nl] = n;
  int err;
  size_t bad = 0;
  ud->r = ps_profile_render_start(p, idx, start, nl, offs, eol, eollen, &err, &bad);
  free(idx);
  if (ud->r == NULL) {
    if (err == -1) return luaL_error(L, "group index %d out of range", (int)bad + 1);
    return luaL_error(L, "out of memory");
  }
  ps_profile_render_stop(u->render);   /* one renderer an aggregate: an older one ends */
  u->render = ud->r;
  lua_settop(L, 5);
  return 1;
}

static int r_take(lua_State *L) {
  render_ud *ud = luaL_checkudata(L, 1, RENDERER);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (ud->r == NULL || ud->agg->render != ud->r) return luaL_error(L, "csv_renderer: closed");
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, 2);   /* 3: the extras */
  int extra = i >= 1 && lua_istable(L, 3) && lua_rawgeti(L, 3, i) == LUA_TTABLE;   /* at 4 */
  size_t np = i >= 1 ? ps_profile_render_pieces(ud->r, (size_t)i - 1) : 0, m = np ? np : 1;
  char **texts = calloc(m, sizeof *texts + 2 * sizeof(size_t) + sizeof(size_t *));
  if (texts == NULL) return luaL_error(L, "out of memory");
  size_t *lens = (size_t *)(texts + m), *rows = lens + m, **offs = (size_t **)(rows + m);
  int rc = i >= 1 ? ps_profile_render_take(ud->r, (size_t)i - 1, texts, lens, offs, rows) : -1;
  if (rc != 0) {
    free(texts);
    if (rc == -1) return luaL_error(L, "csv_renderer: list %d out of range or taken before", (int)i);
    return luaL_error(L, "out of memory");
  }
  ps_text *t = ps_text_push(L);
  int oom = 0;
  size_t nidx;
  const size_t *idx = ps_profile_render_list(ud->r, (size_t)i - 1, &nidx);
  for (size_t k = 0; k < np; k++) {
    if (extra && !oom) {   /* the rows again, each with its extra cells and the line end */
      char *out = NULL;
      size_t len = 0, cap = 0;
      oom = ps_grow((void **)&out, &cap, lens[k] + rows[k] * ud->eollen + 1, 1) != 0 ||
            add_extra_rows(L, 4, texts[k], offs[k], idx, rows[k], ud->eol, ud->eollen, &out,
                           &len, &cap) != 0;
      idx += rows[k];
      free(texts[k]);
      texts[k] = out, lens[k] = len;
    }
    free(offs[k]);
    if (oom) free(texts[k]);
    else oom = ps_text_add(t, texts[k], lens[k]) != 0;
  }
  free(texts);
  if (oom) return luaL_error(L, "out of memory");
  return 1;
}

static int r_close(lua_State *L) {
  render_ud *ud = luaL_checkudata(L, 1, RENDERER);
  if (ud->agg && ud->agg->render == ud->r) ud->agg->render = NULL;
  ps_profile_render_free(ud->r);
  ud->r = NULL;
  return 0;
}

/* The provenance lines of groups idx[from, to) (a_provenance's work, on one thread). */
typedef struct prov_job {
  ps_profile *p;
  const size_t *idx;
  size_t from, to;
  const char *stem, *head, *tail;   /* head, tail: every line's pieces around its own members */
  size_t hlen, tlen;
  ps_prov_buf b;
  int oom;
} prov_job;

static void *prov_work(void *arg) {
  prov_job *j = arg;
  ps_sig *g = ps_sig_new();
  j->oom = g == NULL;
  for (size_t k = j->from; k < j->to && !j->oom; k++) {
    ps_profile_group_info info;
    ps_profile_prefetch(j->p, j->idx, k, j->to, 0);
    ps_profile_group(j->p, j->idx[k], 0, &info);   /* in range: checked by the caller */
    size_t lens[5] = {strlen(info.cells[PS_PC_IN_SHAPES]), strlen(info.cells[PS_PC_IN_DTYPES]),
                      strlen(info.cells[PS_PC_IN_FORMATS]), strlen(info.cells[PS_PC_OUT_SHAPES]),
                      strlen(info.cells[PS_PC_OUT_DTYPES])};
    ps_sig_row row = {.op_name = j->stem, .op_state = info.cells[PS_PC_OP_STATE],
                      .in_shapes = info.cells[PS_PC_IN_SHAPES], .in_dtypes = info.cells[PS_PC_IN_DTYPES],
                      .in_formats = info.cells[PS_PC_IN_FORMATS], .out_shapes = info.cells[PS_PC_OUT_SHAPES],
                      .out_dtypes = info.cells[PS_PC_OUT_DTYPES], .lens = lens};
    if (ps_sig_compute(g, &row) != 0 ||
        ps_prov_group_line(&j->b, j->head, j->hlen, ps_sig_hash(g), row.in_shapes, lens[0],
                           row.out_shapes, lens[3], j->tail, j->tlen) != 0) {
      j->oom = 1;
      break;
    }
  }
  ps_sig_free(g);
  return NULL;
}

/* agg:provenance(indices, stem, common [, input, xxh3 [, as_text]]) -> text, n (as_text: the
 * text as a perfscript.text, see csv_text): each group's row key is its
 * write-back signature with the stem as the operator name (what perf.sig.row computes of the
 * row's signature cells), without a Lua table per group: an import logs every row it writes.
 * The lines are made on the aggregate's threads, each a range of the groups, in order. */
static int a_provenance(lua_State *L) {
  ps_profile *p = check_agg(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t klen, clen, il = 0, xl = 0;
  const char *stem = luaL_checklstring(L, 3, &klen);
  const char *common = luaL_checklstring(L, 4, &clen);
  const char *input = luaL_optlstring(L, 5, NULL, &il), *xxh3 = luaL_optlstring(L, 6, NULL, &xl);
  int as_text = lua_toboolean(L, 7);
  lua_Integer n = luaL_len(L, 2);
  size_t *idx = malloc((n > 0 ? (size_t)n : 1) * sizeof *idx);
  /* ,"input":..,"input_xxh3":..}\n as ps_prov_line writes them, and the line's start */
  char *tail = malloc(PS_PROV_TAIL_MAX(il, xl));
  char *head = malloc(clen + PS_JSON_QUOTED_MAX(klen) + 20);
  if (idx == NULL || tail == NULL || head == NULL) {
    free(idx), free(tail), free(head);
    return luaL_error(L, "out of memory");
  }
  size_t hlen = ps_prov_head(head, common, clen, stem, klen), tlen = ps_prov_tail(tail, input, il, xxh3, xl);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_Integer bad;
    if (list_index(L, 2, k, p, &idx[k - 1], &bad) != 0) {
      free(idx), free(tail), free(head);
      return luaL_error(L, "group index %d out of range", (int)bad);
    }
  }
  int T = ps_profile_row_threads(p, (size_t)n);
  prov_job job[64];
  if (T > 64) T = 64;
  for (int t = 0; t < T; t++)
    job[t] = (prov_job){p, idx, (size_t)n * (size_t)t / (size_t)T, (size_t)n * (size_t)(t + 1) / (size_t)T,
                        stem, head, tail, hlen, tlen, {0}, 0};
  ps_profile_run(T, prov_work, job, sizeof *job);
  int oom = 0;
  for (int t = 0; t < T; t++) oom |= job[t].oom;
  free(idx);
  free(tail);
  free(head);
  char *texts[64];
  size_t lens[64];
  for (int t = 0; t < T; t++) {
    texts[t] = job[t].b.text, lens[t] = job[t].b.len;
    if (oom) free(texts[t]);
  }
  if (oom) return luaL_error(L, "out of memory");
  push_pieces(L, as_text, texts, lens, T);
  lua_pushinteger(L, n);
  return 2;
}

/* ---- the log of a fresh database's import, made while the files are made ----------------
 * agg:provenance_log(tables, common, input, xxh3, path) -> job | nil, message: the lines of
 * every group of tables ({{groups = {i, ...}, stem = name}, ...}, in order; each line as
 * agg:provenance makes it), appended to a temporary file beside path (atomicfile.h: path's
 * bytes first, when it exists) by a thread of its own, one table at a time into one reused
 * buffer: the log's 15 MB of a big import are rendered and written while the CSV files are
 * made, not before them, and never held whole. job:finish([stage]) -> status | nil, message:
 * waits for it, then commits the file (staged with stage: renamed at its commit). Until
 * finished (or on __close/__gc) the aggregate is kept alive; an unfinished job is waited for
 * and its file removed. The aggregate must not change meanwhile (nothing adds to it after the
 * pass; csv_text's median reorders durations, which the lines do not read). */
#define LOGJOB "perfscript.profile.logjob"

typedef struct logtable { size_t *idx; size_t n; char *head, *stem; size_t hlen; } logtable;

typedef struct logjob {
  ps_profile *p;
  logtable *tab;
  size_t ntab;
  char *tail;
  size_t tlen;
  ps_atomic a;
  int open, started, done;   /* a open; the thread running; finished or given up */
  pthread_t th;
  int err;                   /* 0, an errno of a failed write, or -1 (out of memory) */
} logjob;

static void *logjob_main(void *arg) {
  logjob *j = arg;
  ps_prov_buf b = {0};
  for (size_t t = 0; t < j->ntab && j->err == 0; t++) {
    logtable *lt = &j->tab[t];
    prov_job w = {j->p, lt->idx, 0, lt->n, lt->stem, lt->head, j->tail, lt->hlen, j->tlen, b, 0};
    w.b.len = 0;
    prov_work(&w);
    b = w.b;   /* the buffer, grown or not, for the next table */
    if (w.oom) j->err = -1;
    else if (b.len > 0 && fwrite(b.text, 1, b.len, j->a.fp) != b.len) j->err = errno ? errno : EIO;
  }
  free(b.text);
  /* the bytes to the disk now, off the run's way (the stage's own fsync then finds them there) */
  if (j->err == 0 && fflush(j->a.fp) == 0) (void)fsync(fileno(j->a.fp));
  return NULL;
}

static void logjob_wait(logjob *j) {
  if (j->started) pthread_join(j->th, NULL), j->started = 0;
}

static void logjob_free_tables(logjob *j) {
  for (size_t t = 0; t < j->ntab; t++) free(j->tab[t].idx), free(j->tab[t].head), free(j->tab[t].stem);
  free(j->tab), j->tab = NULL, j->ntab = 0;
  free(j->tail), j->tail = NULL;
}

static int logjob_gc(lua_State *L) {
  logjob *j = luaL_checkudata(L, 1, LOGJOB);
  logjob_wait(j);
  if (j->open) ps_atomic_abort(&j->a), j->open = 0;
  logjob_free_tables(j);
  j->done = 1;
  return 0;
}

static int logjob_finish(lua_State *L) {
  logjob *j = luaL_checkudata(L, 1, LOGJOB);
  if (j->done) return luaL_error(L, "provenance log already finished");
  ps_stage *stage = lua_isnoneornil(L, 2) ? NULL : luaL_checkudata(L, 2, PS_STAGE_CLASS);
  logjob_wait(j);
  logjob_free_tables(j);
  j->done = 1;
  char err[600];
  if (j->err != 0) {
    snprintf(err, sizeof err, "%s: write failed: %s (the original is untouched)", j->a.path,
             j->err < 0 ? "out of memory" : strerror(j->err));
    ps_atomic_abort(&j->a), j->open = 0;
    return ps_fail(L, err);
  }
  j->a.stage = stage;
  j->open = 0;   /* the commit takes the file (or removes it on a failure) */
  return ps_push_write_result(L, ps_atomic_commit(&j->a, 0, err, sizeof err), err);
}

static int a_provenance_log(lua_State *L) {
  ps_profile *p = check_agg(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t clen, il = 0, xl = 0;
  const char *common = luaL_checklstring(L, 3, &clen);
  const char *input = luaL_optlstring(L, 4, NULL, &il), *xxh3 = luaL_optlstring(L, 5, NULL, &xl);
  const char *path = luaL_checkstring(L, 6);
  lua_settop(L, 6);
  logjob *j = lua_newuserdatauv(L, sizeof *j, 1);   /* 7 */
  memset(j, 0, sizeof *j);
  j->p = p;
  luaL_setmetatable(L, LOGJOB);
  lua_pushvalue(L, 1), lua_setiuservalue(L, 7, 1);   /* the aggregate lives as long as the job */
  size_t ntab = (size_t)luaL_len(L, 2);
  j->tab = calloc(ntab ? ntab : 1, sizeof *j->tab);
  j->tail = malloc(PS_PROV_TAIL_MAX(il, xl));
  if (j->tab == NULL || j->tail == NULL) return luaL_error(L, "out of memory");
  j->tlen = ps_prov_tail(j->tail, input, il, xxh3, xl);
  for (size_t t = 0; t < ntab; t++) {
    lua_rawgeti(L, 2, (lua_Integer)t + 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_getfield(L, -1, "stem");
    size_t klen;
    const char *stem = luaL_checklstring(L, -1, &klen);
    logtable *lt = &j->tab[j->ntab++];
    lt->stem = malloc(klen + 1);
    lt->head = malloc(clen + PS_JSON_QUOTED_MAX(klen) + 20);
    if (lt->stem == NULL || lt->head == NULL) return luaL_error(L, "out of memory");
    memcpy(lt->stem, stem, klen + 1);
    lt->hlen = ps_prov_head(lt->head, common, clen, stem, klen);
    lua_pop(L, 1);
    lua_getfield(L, -1, "groups");
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, -1);
    lt->idx = malloc((n > 0 ? (size_t)n : 1) * sizeof *lt->idx);
    if (lt->idx == NULL) return luaL_error(L, "out of memory");
    for (lua_Integer k = 1; k <= n; k++) {
      lua_Integer bad;
      if (list_index(L, lua_gettop(L), k, p, &lt->idx[k - 1], &bad) != 0)
        return luaL_error(L, "group index %d out of range", (int)bad);
    }
    lt->n = (size_t)n;
    lua_pop(L, 2);
  }
  int last;   /* (the log's lines are whole: fs.write_atomic's append does not look at it either) */
  char err[600];
  if (ps_atomic_open_append(&j->a, path, &last, err, sizeof err) != 0) return ps_fail(L, err);
  j->open = 1;
  /* signals (Ctrl-C) stay the main thread's */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  j->started = pthread_create(&j->th, NULL, logjob_main, j) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!j->started) logjob_main(j);   /* no thread: the work now, in this one */
  return 1;
}

static int a_tostring(lua_State *L) {
  agg_ud *u = luaL_checkudata(L, 1, AGG);
  if (u->p == NULL) lua_pushliteral(L, "profile aggregate (closed)");
  else lua_pushfstring(L, "profile aggregate (%I groups)", (lua_Integer)ps_profile_ngroups(u->p));
  return 1;
}

static int f_kernel_type(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  s = ps_profile_kernel_type(s, &len);
  lua_pushlstring(L, s, len);
  return 1;
}

static int f_is_na(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, ps_profile_is_na(s, len));
  return 1;
}

/* profile.import_key(type, in_shapes, in_dtypes, in_formats, out_shapes, out_dtypes)
 * -> key, hash: the import's group key of such a row (to match database rows to groups).
 * type is taken as given (the canonical kernel type). */
static int f_import_key(lua_State *L) {
  size_t tlen, lens[PS_IMPORT_KEY_CELLS];
  const char *type = luaL_checklstring(L, 1, &tlen);
  const char *cells[PS_IMPORT_KEY_CELLS];
  for (int i = 0; i < PS_IMPORT_KEY_CELLS; i++) cells[i] = luaL_optlstring(L, i + 2, "", &lens[i]);
  ps_import_key *k = ps_import_key_new();
  if (k == NULL) return luaL_error(L, "out of memory");
  size_t keylen;
  uint64_t hash[2];
  const char *key = ps_import_key_build(k, type, tlen, cells, lens, &keylen, hash);
  if (key) {
    lua_pushlstring(L, key, keylen);
    lua_pushinteger(L, (lua_Integer)hash[0]);
  }
  ps_import_key_free(k);
  if (key == NULL) return luaL_error(L, "out of memory");
  return 2;
}

static void push_list(lua_State *L, const char *const *names, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

int luaopen_perfscript_profile(lua_State *L) {
  static const luaL_Reg meta[] = {
    {"__gc", a_close}, {"__close", a_close}, {"__len", a_len}, {"__tostring", a_tostring},
    {NULL, NULL}};
  static const luaL_Reg methods[] = {
    {"add_file", a_add_file}, {"totals", a_totals}, {"group", a_group}, {"row", a_row},
    {"csv_text", a_csv_text}, {"csv_renderer", a_csv_renderer}, {"provenance", a_provenance},
    {"types", a_types}, {"keys", a_keys}, {"file_xxh3", a_file_xxh3}, {"fia_runtime", a_fia_runtime},
    {"provenance_log", a_provenance_log}, {"close", a_close}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"new", p_new}, {"kernel_type", f_kernel_type},
    {"is_na", f_is_na}, {"import_key", f_import_key}, {NULL, NULL}};
  static const luaL_Reg job_meta[] = {{"__gc", logjob_gc}, {"__close", logjob_gc}, {NULL, NULL}};
  static const luaL_Reg job_methods[] = {{"finish", logjob_finish}, {"abort", logjob_gc}, {NULL, NULL}};
  ps_newclass(L, LOGJOB, job_meta, job_methods);
  luaL_newmetatable(L, AGG);
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg rmeta[] = {{"__gc", r_close}, {"__close", r_close}, {NULL, NULL}};
  static const luaL_Reg rmethods[] = {{"take", r_take}, {"close", r_close}, {NULL, NULL}};
  luaL_newmetatable(L, RENDERER);
  luaL_setfuncs(L, rmeta, 0);
  luaL_newlib(L, rmethods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  luaL_newlib(L, funcs);
  /* number(s) and us_to_ns(s) are perfscript.num's (the one cell parser) */
  luaL_requiref(L, "perfscript.num", luaopen_perfscript_num, 0);
  lua_getfield(L, -1, "finite");
  lua_setfield(L, -3, "number");
  lua_getfield(L, -1, "us_to_ns");
  lua_setfield(L, -3, "us_to_ns");
  lua_pop(L, 1);
  push_list(L, ps_counter_columns, PS_NCOUNTERS);
  lua_setfield(L, -2, "metrics");
  int nreq = 0;
  while (ps_profile_required[nreq]) nreq++;
  push_list(L, ps_profile_required, nreq);
  lua_setfield(L, -2, "required");
  /* database columns written by row(): base, statistics, counters */
  static const char *const stats[] = {
    "Profiling Average Duration(us)", "Profiling Median Duration(us)", "Profiling Std Duration(us)"};
  lua_createtable(L, 11 + PS_NCOUNTERS, 0);
  for (int i = 0; i < 11; i++) {
    lua_pushstring(L, i < PS_NBASE ? ps_base_columns[i] : stats[i - PS_NBASE]);
    lua_rawseti(L, -2, i + 1);
  }
  for (int m = 0; m < PS_NCOUNTERS; m++) {
    lua_pushfstring(L, "Profiling Average %s", ps_counter_columns[m]);
    lua_rawseti(L, -2, 12 + m);
  }
  lua_setfield(L, -2, "columns");
  lua_pushliteral(L, PS_PROFILE_FIA_TYPE);
  lua_setfield(L, -2, "FIA_TYPE");
  return 1;
}
