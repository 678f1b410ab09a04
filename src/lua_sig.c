/* perfscript.sig: row signatures for Lua (rules in sig.h).
 *   sig.row(row [, op_name]) -> text, hash      row: {["Input Shapes"] = ..., ...}
 *   sig.tuple(row [, op_name]) -> {f1, ..., f5[, ep]}, matmul_canonical (bool)
 *   sig.columns(header) -> cols     header: array of column names (a CSV header)
 *   sig.record(fields, cols [, op_name]) -> text, hash   fields: a CSV record (array)
 *   sig.display(row) -> "<Input Shapes or N/A> -> <Output Shapes or N/A>"
 *   sig.hash(text) -> 64-bit XXH3 as a Lua integer
 *   sig.op_name(name) -> normalised op name      sig.is_matmul(name) -> bool
 *   sig.SEP: the separator between tuple fields in the canonical text ("\31")
 * The row's op is the explicit op_name, else its `OP Type`, else its `OP State`. */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "sig.h"

#define SIG_STATE "perfscript.sig.state"

typedef struct sig_ud { ps_sig *g; } sig_ud;

/* The row's columns, in the order of the cols table sig.columns builds. */
static const char *const COLUMNS[] = {
  "OP Type", "OP State", "Input Shapes", "Input Data Types", "Input Formats",
  "Output Shapes", "Output Data Types", "EP Size"};
#define NCOLS 8

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

static int l_row(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ps_sig_row r = {0};
  r.op_name = opt_str(L, 2);
  row_from_table(L, 1, &r);
  ps_sig *g = state(L);
  compute(L, g, &r);
  return push_text_hash(L, g);
}

static int l_tuple(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ps_sig_row r = {0};
  r.op_name = opt_str(L, 2);
  row_from_table(L, 1, &r);
  ps_sig *g = state(L);
  compute(L, g, &r);
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
    if (!(ty == LUA_TSTRING || ty == LUA_TNUMBER) || lua_rawlen(L, -1) == 0) {
      lua_pop(L, 1);
      lua_pushliteral(L, "N/A");
    } else {
      lua_tostring(L, -1);
    }
    if (i == 0) lua_pushliteral(L, " -> ");
  }
  lua_concat(L, 3);
  return 1;
}

static int l_hash(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushinteger(L, (lua_Integer)ps_sig_hash_bytes(s, len));
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
    {"row", l_row}, {"tuple", l_tuple}, {"columns", l_columns}, {"record", l_record},
    {"display", l_display}, {"hash", l_hash}, {"op_name", l_op_name},
    {"is_matmul", l_is_matmul}, {NULL, NULL}};
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
