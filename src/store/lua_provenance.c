/* perfscript.provenance: the provenance log's lines built in C (provenance.h).
 *   local text, n = provenance.lines(common, results [, input, xxh3 [, input_of]])
 * common: the run's members, JSON without braces; results: the merge results, each
 * {stem = kernel, written_rows = {{key = signature hash, row = {[column] = cell, _samples = n}}}};
 * input, xxh3: the file every row came from (strings or nil); input_of(kernel, key_hex, row)
 * -> file, xxh3: per row instead, when given. text: the lines, each ending in "\n"; n: how
 * many. (An import's new files log through agg:provenance, src/ingest/lua_profile.c.) */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>

#include "provenance.h"

/* The cell at t[name] as a string (numbers converted), or NULL; the value stays on the stack. */
static const char *cell(lua_State *L, int t, const char *name, size_t *len) {
  int ty = lua_getfield(L, t, name);
  *len = 0;
  return (ty == LUA_TSTRING || ty == LUA_TNUMBER) ? lua_tolstring(L, -1, len) : NULL;
}

/* Fills the samples and duration of r from the row at t (two values pushed). */
static void measures(lua_State *L, int t, ps_prov_row *r) {
  int ty = lua_getfield(L, t, "_samples");
  if (ty == LUA_TNUMBER) r->has_samples = 1, r->samples = lua_tonumber(L, -1);
  else if (ty == LUA_TSTRING) r->samples_text = lua_tostring(L, -1);
  ty = lua_getfield(L, t, "Average Duration(us)");
  if (ty == LUA_TNUMBER) {
    r->has_duration = 1, r->duration_us = lua_tonumber(L, -1);
  } else if (ty == LUA_TSTRING) {  /* as Lua's tonumber reads it */
    const char *s = lua_tostring(L, -1);
    if (lua_stringtonumber(L, s) != 0) {
      r->has_duration = 1, r->duration_us = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  }
}

/* The text being built, in a userdata so an error on the way (a bad row, input_of raising)
 * frees it. */
#define BUF_CLASS "perfscript.provenance.buffer"

static int buf_gc(lua_State *L) {
  ps_prov_buf *b = luaL_checkudata(L, 1, BUF_CLASS);
  free(b->text);
  b->text = NULL;
  return 0;
}

static ps_prov_buf *new_buf(lua_State *L) {
  ps_prov_buf *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->text = NULL, b->len = b->cap = 0;
  luaL_setmetatable(L, BUF_CLASS);
  return b;
}

static int l_lines(lua_State *L) {
  size_t clen;
  const char *common = luaL_checklstring(L, 1, &clen);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *input = luaL_optstring(L, 3, NULL);
  const char *xxh3 = luaL_optstring(L, 4, NULL);
  int input_of = lua_isfunction(L, 5);
  lua_settop(L, 5);
  ps_prov_buf *b = new_buf(L);
  lua_Integer n = 0;
  lua_Integer nres = luaL_len(L, 2);
  for (lua_Integer i = 1; i <= nres; i++) {
    int base = lua_gettop(L);
    if (lua_rawgeti(L, 2, i) != LUA_TTABLE) luaL_error(L, "results[%d] is not a table", (int)i);
    int res = base + 1;
    size_t klen;
    const char *kernel = (lua_getfield(L, res, "stem"), lua_tolstring(L, -1, &klen));
    if (kernel == NULL) luaL_error(L, "results[%d].stem is not a string", (int)i);
    if (lua_getfield(L, res, "written_rows") != LUA_TTABLE) {
      lua_settop(L, base);
      continue;
    }
    int rows = lua_gettop(L);
    lua_Integer nrows = luaL_len(L, rows);
    for (lua_Integer j = 1; j <= nrows; j++) {
      int top = lua_gettop(L);
      lua_rawgeti(L, rows, j);
      int w = top + 1;
      ps_prov_row r = {0};
      lua_getfield(L, w, "key");
      int isnum;
      r.key = (uint64_t)lua_tointegerx(L, -1, &isnum);
      if (!isnum) luaL_error(L, "results[%d].written_rows[%d].key is not an integer", (int)i, (int)j);
      if (lua_getfield(L, w, "row") != LUA_TTABLE) luaL_error(L, "results[%d].written_rows[%d].row is not a table", (int)i, (int)j);
      int row = lua_gettop(L);
      r.in_shapes = cell(L, row, "Input Shapes", &r.in_len);
      r.out_shapes = cell(L, row, "Output Shapes", &r.out_len);
      measures(L, row, &r);
      r.input = input, r.input_xxh3 = xxh3;
      if (input_of) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r.key);
        lua_pushvalue(L, 5);
        lua_pushvalue(L, base + 2);
        lua_pushstring(L, hex);
        lua_pushvalue(L, row);
        lua_call(L, 3, 2);
        r.input = lua_tostring(L, -2), r.input_xxh3 = lua_tostring(L, -1);
      }
      if (ps_prov_line(b, common, clen, kernel, klen, &r) != 0) return luaL_error(L, "out of memory");
      n++;
      lua_settop(L, top);
    }
    lua_settop(L, base);
  }
  lua_pushlstring(L, b->text ? b->text : "", b->len);
  lua_pushinteger(L, n);
  return 2;
}

int luaopen_perfscript_provenance(lua_State *L) {
  static const luaL_Reg funcs[] = {{"lines", l_lines}, {NULL, NULL}};
  luaL_newmetatable(L, BUF_CLASS);
  lua_pushcfunction(L, buf_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
