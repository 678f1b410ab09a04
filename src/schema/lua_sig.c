/* perfscript.sig: row signatures for Lua (rules in writeback_sig.h).
 *   sig.row(row [, op_name]) -> text, hash      row: {["Input Shapes"] = ..., ...}
 *   sig.row_hash(row [, op_name]) -> hash        sig.row's hash, without making its text
 *   sig.tuple(row [, op_name]) -> {f1, ..., f5[, ep]}, matmul_canonical (bool)
 *   sig.columns(header) -> cols     header: array of column names (a CSV header)
 *   sig.record(fields, cols [, op_name]) -> text, hash   fields: a CSV record (array)
 *   sig.display(row) -> "<Input Shapes or N/A> -> <Output Shapes or N/A>"
 *   sig.hash(text) -> 64-bit XXH3 as a Lua integer
 *   sig.op_name(name) -> normalised op name      sig.is_matmul(name) -> bool
 *   sig.scan(path, {op = name, columns = {names}, want = {[hash] = true}, rows = {[i] = true},
 *                   valid = {col1, col2}, defaults = {col = value}})
 *       -> {header = {...}, n = rows, valid = {code, ...}, first = {[wanted hash] = row},
 *           dups = {{first row, count}, ...}, values = {[name] = {[i] = v, ...}},
 *           hashes = {h1, ...} (only with hashes = true)}
 *       one streaming pass in C over a database CSV: every row's signature hash (file stem
 *       as op name); valid[i] = 1 when col1 holds a real duration (> 0) + 2 for col2; the
 *       values of the named columns for rows whose hash is in want or whose number is in
 *       rows (every row when neither is given); defaults stand in for signature columns the
 *       file lacks (EP Size of legacy files). nil, message on error
 *   sig.SEP: the separator between tuple fields in the canonical text ("\31")
 * The row's op is the explicit op_name, else its `OP Type`, else its `OP State`. */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "csvread.h"
#include "grow.h"
#include "num.h"
#include "writeback_sig.h"
#include "u64map.h"

#define SIG_STATE "perfscript.sig.state"

typedef struct sig_ud { ps_sig *g; } sig_ud;

/* The row's columns, in the order of the cols table sig.columns builds. */
#define COLUMNS ps_sig_columns
#define NCOLS PS_SIG_NCOLUMNS

static ps_sig *state(lua_State *L) {
  sig_ud *u = lua_touserdata(L, lua_upvalueindex(1));
  return u->g;
}

static int state_gc(lua_State *L) {
  sig_ud *u = luaL_checkudata(L, 1, SIG_STATE);
  ps_sig_free(u->g);
  u->g = NULL;
  return 0;
}

static int ps_sig_fail(lua_State *L, const char *msg) {
  luaL_pushfail(L);
  lua_pushstring(L, msg);
  return 2;
}

static const char *opt_str(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : luaL_checkstring(L, idx);
}

/* Fills r from the table at t (keyed by column name); values stay on the stack. */
static void row_from_table(lua_State *L, int t, ps_sig_row *r) {
  const char **dst[NCOLS] = {&r->op_type, &r->op_state, &r->in_shapes, &r->in_dtypes,
                             &r->in_formats, &r->out_shapes, &r->out_dtypes, &r->ep_size};
  luaL_checkstack(L, NCOLS, NULL);
  for (int i = 0; i < NCOLS; i++) {
    int ty = lua_getfield(L, t, COLUMNS[i]);
    *dst[i] = (ty == LUA_TSTRING || ty == LUA_TNUMBER) ? lua_tostring(L, -1) : NULL;
  }
}

static void compute(lua_State *L, ps_sig *g, const ps_sig_row *r) {
  if (ps_sig_compute(g, r) != 0) luaL_error(L, "out of memory");
}

static int push_text_hash(lua_State *L, ps_sig *g) {
  size_t len;
  const char *text = ps_sig_text(g, &len);
  lua_pushlstring(L, text, len);
  lua_pushinteger(L, (lua_Integer)ps_sig_hash(g));
  return 2;
}

/* The signature of the row table at 1 (op name at 2), computed into the shared state. */
static ps_sig *compute_row(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ps_sig_row r = {0};
  r.op_name = opt_str(L, 2);
  row_from_table(L, 1, &r);
  ps_sig *g = state(L);
  compute(L, g, &r);
  return g;
}

static int l_row(lua_State *L) { return push_text_hash(L, compute_row(L)); }

/* The hash alone: a caller keying rows (the shape grid, per candidate) makes no string. */
static int l_row_hash(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ps_sig_hash(compute_row(L)));
  return 1;
}

static int l_tuple(lua_State *L) {
  ps_sig *g = compute_row(L);
  int n = ps_sig_nfields(g);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    size_t len;
    const char *f = ps_sig_field(g, i, &len);
    lua_pushlstring(L, f, len);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushboolean(L, ps_sig_is_canonical_matmul(g));
  return 2;
}

/* cols[i] = 1-based index in header of COLUMNS[i], or 0 when absent. */
static int l_columns(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  lua_createtable(L, NCOLS, 0);
  for (int i = 0; i < NCOLS; i++) {
    lua_Integer found = 0;
    for (lua_Integer j = 1; j <= n && !found; j++) {
      if (lua_rawgeti(L, 1, j) == LUA_TSTRING && strcmp(lua_tostring(L, -1), COLUMNS[i]) == 0)
        found = j;
      lua_pop(L, 1);
    }
    /* The op_summary spelling of the same column. */
    if (!found && i == 0)
      for (lua_Integer j = 1; j <= n && !found; j++) {
        if (lua_rawgeti(L, 1, j) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "Type") == 0)
          found = j;
        lua_pop(L, 1);
      }
    lua_pushinteger(L, found);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_record(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  ps_sig_row r = {0};
  r.op_name = opt_str(L, 3);
  const char **dst[NCOLS] = {&r.op_type, &r.op_state, &r.in_shapes, &r.in_dtypes,
                             &r.in_formats, &r.out_shapes, &r.out_dtypes, &r.ep_size};
  luaL_checkstack(L, 2 * NCOLS, NULL);
  for (int i = 0; i < NCOLS; i++) {
    lua_rawgeti(L, 2, i + 1);
    lua_Integer idx = lua_tointeger(L, -1);
    *dst[i] = NULL;
    if (idx > 0) {
      int ty = lua_rawgeti(L, 1, idx);
      if (ty == LUA_TSTRING || ty == LUA_TNUMBER) *dst[i] = lua_tostring(L, -1);
    }
  }
  ps_sig *g = state(L);
  compute(L, g, &r);
  return push_text_hash(L, g);
}

static int l_display(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *cols[2] = {"Input Shapes", "Output Shapes"};
  for (int i = 0; i < 2; i++) {
    int ty = lua_getfield(L, 1, cols[i]);
    size_t len = 0;
    if (ty == LUA_TSTRING || ty == LUA_TNUMBER) lua_tolstring(L, -1, &len); /* a number: its text */
    if (len == 0) {
      lua_pop(L, 1);
      lua_pushliteral(L, "N/A");
    }
    if (i == 0) lua_pushliteral(L, " -> ");
  }
  lua_concat(L, 3);
  return 1;
}

/* A valid duration (src/schema/num.c: finite and > 0, the consumer's rule). */
static int is_real(const char *s) { return ps_num_duration_cell(s, strlen(s)); }

/* Signature hash -> (first row, count): a u64map from the hash to an index into sigs. */
typedef struct sigrows { uint32_t first, count; } sigrows;
typedef struct hmap { ps_u64map map; sigrows *sigs; size_t cap; } hmap;

static int hmap_add(hmap *m, uint64_t h, uint32_t row) {
  size_t id = m->map.used;
  int added = ps_u64map_put(&m->map, h, &id);
  if (added < 0) return -1;
  if (added) {
    if (ps_grow((void **)&m->sigs, &m->cap, id + 1, sizeof *m->sigs) != 0) return -1;
    m->sigs[id] = (sigrows){row, 1};
  } else {
    m->sigs[id].count++;
  }
  return 0;
}

static void hmap_free(hmap *m) {
  ps_u64map_free(&m->map);
  free(m->sigs);
}

/* Index of name in the header table at index header, or -1. */
static int header_index(lua_State *L, int header, size_t ncols, const char *name) {
  for (size_t i = 0; name && i < ncols; i++) {
    lua_rawgeti(L, header, (lua_Integer)i + 1);
    int eq = strcmp(lua_tostring(L, -1), name) == 0;
    lua_pop(L, 1);
    if (eq) return (int)i;
  }
  return -1;
}

/* sig.scan: see the header comment. */
static int l_scan(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checkstack(L, 100, NULL);
  lua_getfield(L, 2, "op");
  const char *op = luaL_optstring(L, -1, NULL);
  lua_getfield(L, 2, "want");
  int want_t = lua_istable(L, -1) ? lua_gettop(L) : 0;
  lua_getfield(L, 2, "rows");
  int rows_t = lua_istable(L, -1) ? lua_gettop(L) : 0;
  char err[600];
  ps_csv_reader *r = ps_csv_open(path, PS_CSV_TRIM, err, sizeof err);
  if (!r) return ps_sig_fail(L, err);
  ps_csv_record rec;
  int st = ps_csv_next(r, &rec);
  if (st < 0) {
    lua_pushstring(L, ps_csv_error(r));
    ps_csv_close(r);
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  lua_createtable(L, 0, 5); /* result */
  int res = lua_gettop(L);
  size_t ncols = st ? rec.nfields : 0;
  lua_createtable(L, (int)ncols, 0);
  for (size_t i = 0; i < ncols; i++) {
    lua_pushlstring(L, rec.fields[i], rec.lens[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  int header = lua_gettop(L);
  lua_pushvalue(L, header);
  lua_setfield(L, res, "header");
  /* Signature columns: index in the header, else a default value. */
  int idx[NCOLS];
  const char *defaults[NCOLS];
  lua_getfield(L, 2, "defaults");
  int deft = lua_gettop(L);
  for (int c = 0; c < NCOLS; c++) {
    idx[c] = header_index(L, header, ncols, COLUMNS[c]);
    defaults[c] = NULL;
    if (idx[c] < 0 && lua_istable(L, deft)) {
      lua_getfield(L, deft, COLUMNS[c]);
      defaults[c] = lua_tostring(L, -1); /* stays on the stack */
    }
  }
  /* Validity columns: valid[i] = 1 (first real) + 2 (second real). */
  int vcol[2] = {-1, -1};
  if (lua_getfield(L, 2, "valid") == LUA_TTABLE) {
    for (int k = 0; k < 2; k++) {
      lua_rawgeti(L, -1, k + 1);
      vcol[k] = header_index(L, header, ncols, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_newtable(L);
  int valid = lua_gettop(L);
  /* Requested value columns: for every row, or only rows whose hash is in want / whose
   * number is in rows. */
  lua_newtable(L);
  int values = lua_gettop(L);
  int want[64], nwant = 0, wantcol[64];
  if (lua_getfield(L, 2, "columns") == LUA_TTABLE) {
    int cols = lua_gettop(L);
    int n = (int)lua_rawlen(L, cols);
    for (int k = 1; k <= n && nwant < 64; k++) {
      lua_rawgeti(L, cols, k);
      const char *name = lua_tostring(L, -1);
      int found = header_index(L, header, ncols, name);
      if (found >= 0) {
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, values, name); /* name is still below the new table */
        lua_remove(L, -2);
        want[nwant] = lua_gettop(L);
        wantcol[nwant++] = found;
      } else {
        lua_pop(L, 1);
      }
    }
  }
  lua_getfield(L, 2, "hashes");
  int keep_hashes = lua_toboolean(L, -1);
  lua_newtable(L);
  int hashes = lua_gettop(L);
  ps_sig *g = state(L);
  lua_Integer n = 0;
  hmap map = {0};
  ps_u64map_init(&map.map, 1 << 16);
  while (st > 0 && (st = ps_csv_next(r, &rec)) > 0) {
    ps_sig_row row = {.op_name = op};
    const char **dst[NCOLS] = {&row.op_type, &row.op_state, &row.in_shapes, &row.in_dtypes,
                               &row.in_formats, &row.out_shapes, &row.out_dtypes, &row.ep_size};
    for (int c = 0; c < NCOLS; c++)
      *dst[c] = idx[c] >= 0 ? ((size_t)idx[c] < rec.nfields ? rec.fields[idx[c]] : "") : defaults[c];
    if (ps_sig_compute(g, &row) != 0) {
      ps_csv_close(r);
      return luaL_error(L, "out of memory");
    }
    n++;
    lua_Integer h = (lua_Integer)ps_sig_hash(g);
    if (keep_hashes) {
      lua_pushinteger(L, h);
      lua_rawseti(L, hashes, n);
    }
    if (hmap_add(&map, (uint64_t)h, (uint32_t)n) != 0) {
      hmap_free(&map);
      ps_csv_close(r);
      return luaL_error(L, "out of memory");
    }
    if (vcol[0] >= 0 || vcol[1] >= 0) {
      int code = 0;
      for (int k = 0; k < 2; k++)
        if (vcol[k] >= 0 && (size_t)vcol[k] < rec.nfields && is_real(rec.fields[vcol[k]])) code |= 1 << k;
      lua_pushinteger(L, code);
      lua_rawseti(L, valid, n);
    }
    if (nwant) {
      int take = !want_t && !rows_t;
      if (!take && want_t) {
        take = lua_rawgeti(L, want_t, h) != LUA_TNIL;
        lua_pop(L, 1);
      }
      if (!take && rows_t) {
        take = lua_rawgeti(L, rows_t, n) != LUA_TNIL;
        lua_pop(L, 1);
      }
      for (int k = 0; take && k < nwant; k++) {
        size_t i = (size_t)wantcol[k];
        if (i < rec.nfields) lua_pushlstring(L, rec.fields[i], rec.lens[i]);
        else lua_pushliteral(L, "");
        lua_rawseti(L, want[k], n);
      }
    }
  }
  if (st < 0) {
    hmap_free(&map);
    lua_pushstring(L, ps_csv_error(r));
    ps_csv_close(r);
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  ps_csv_close(r);
  /* first[h] for the wanted hashes; dups = {{first row, count}, ...} */
  lua_newtable(L);
  if (want_t && map.map.used) {
    lua_pushnil(L);
    while (lua_next(L, want_t)) {
      lua_pop(L, 1);
      if (lua_isinteger(L, -1)) {
        size_t id = ps_u64map_get(&map.map, (uint64_t)lua_tointeger(L, -1));
        if (id != PS_U64MAP_NONE) {
          lua_pushvalue(L, -1);
          lua_pushinteger(L, map.sigs[id].first);
          lua_rawset(L, -4);
        }
      }
    }
  }
  lua_setfield(L, res, "first");
  lua_newtable(L);
  lua_Integer nd = 0;
  for (size_t j = 0; j < map.map.size; j++) { /* in slot order, as sig.scan always listed them */
    size_t id = ps_u64map_slot_id(&map.map, j);
    if (id == PS_U64MAP_NONE || map.sigs[id].count < 2) continue;
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, map.sigs[id].first);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, map.sigs[id].count);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, ++nd);
  }
  lua_setfield(L, res, "dups");
  hmap_free(&map);
  lua_pushvalue(L, hashes);
  lua_setfield(L, res, "hashes");
  lua_pushvalue(L, values);
  lua_setfield(L, res, "values");
  lua_pushvalue(L, valid);
  lua_setfield(L, res, "valid");
  lua_pushinteger(L, n);
  lua_setfield(L, res, "n");
  lua_settop(L, res);
  return 1;
}

static int l_hash(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushinteger(L, (lua_Integer)ps_sig_hash_bytes(s, len));
  return 1;
}

/* sig.hash_file(path) -> the XXH3 of the file's bytes (as hash(text) of its whole text), or
 * nil, "path: reason". */
static int l_hash_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uint64_t h;
  if (ps_sig_hash_file(path, &h) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)h);
  return 1;
}

static int l_op_name(lua_State *L) {
  const char *name = luaL_optstring(L, 1, "");
  char out[256];
  size_t n = ps_sig_op_name(name, out, sizeof out);
  lua_pushlstring(L, out, n);
  return 1;
}

static int l_is_matmul(lua_State *L) {
  const char *name = luaL_optstring(L, 1, "");
  char out[256];
  ps_sig_op_name(name, out, sizeof out);
  lua_pushboolean(L, ps_sig_is_matmul(out));
  return 1;
}

int luaopen_perfscript_sig(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"row", l_row}, {"row_hash", l_row_hash}, {"tuple", l_tuple}, {"columns", l_columns}, {"record", l_record},
    {"display", l_display}, {"hash", l_hash}, {"hash_file", l_hash_file}, {"op_name", l_op_name},
    {"is_matmul", l_is_matmul}, {"scan", l_scan}, {NULL, NULL}};
  luaL_newlibtable(L, funcs);
  sig_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->g = ps_sig_new();
  if (!u->g) return luaL_error(L, "out of memory");
  if (luaL_newmetatable(L, SIG_STATE)) {
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  luaL_setfuncs(L, funcs, 1);
  lua_pushliteral(L, "\x1f");
  lua_setfield(L, -2, "SEP");
  return 1;
}
