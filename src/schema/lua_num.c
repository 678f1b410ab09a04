/* perfscript.num: the cell number parser and the valid-duration rule (src/schema/num.c).
 *   num.parse(s) -> number or nil      Python float(s); a number is returned as a float
 *   num.finite(s) -> number or nil     parse, nil for nan and inf too (a number: itself if finite)
 *   num.or_zero(s) -> number           parse, 0.0 when empty or not a number
 *   num.is_duration(x) -> boolean      x (number or cell text) is finite and > 0
 *   num.us_to_ns(s) -> integer or nil  decimal microseconds as exact int64 nanoseconds
 *   num.int(s) -> integer or nil       Python int(s) of a cell (base 10, int64)
 *   num.fmt6(x) -> string              x as string.format("%.6f", x) writes it, faster */
#include <math.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "num.h"

static int f_parse(lua_State *L) {
  if (lua_type(L, 1) == LUA_TNUMBER) {
    lua_pushnumber(L, lua_tonumber(L, 1));
    return 1;
  }
  size_t len;
  const char *s = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
  double d;
  if (s == NULL || ps_num_parse(s, len, &d) != 0) luaL_pushfail(L);
  else lua_pushnumber(L, d);
  return 1;
}

static int f_finite(lua_State *L) {
  if (lua_type(L, 1) == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, 1);
    if (isfinite(v)) lua_pushnumber(L, v);
    else luaL_pushfail(L);
    return 1;
  }
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  double d;
  if (ps_num_finite(s, len, &d) != 0) luaL_pushfail(L);
  else lua_pushnumber(L, d);
  return 1;
}

static int f_or_zero(lua_State *L) {
  size_t len = 0;
  const char *s = lua_type(L, 1) == LUA_TNUMBER ? NULL : luaL_optlstring(L, 1, "", &len);
  lua_pushnumber(L, s ? ps_num_or_zero(s, len) : lua_tonumber(L, 1));
  return 1;
}

static int f_is_duration(lua_State *L) {
  int t = lua_type(L, 1);
  size_t len;
  if (t == LUA_TNUMBER) lua_pushboolean(L, ps_num_is_duration(lua_tonumber(L, 1)));
  else if (t == LUA_TSTRING) {
    const char *s = lua_tolstring(L, 1, &len);
    lua_pushboolean(L, ps_num_duration_cell(s, len));
  } else lua_pushboolean(L, 0);
  return 1;
}

static int f_us_to_ns(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  int64_t ns;
  if (ps_num_us_to_ns(s, len, &ns) != 0) luaL_pushfail(L);
  else lua_pushinteger(L, (lua_Integer)ns);
  return 1;
}

static int f_int(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  int64_t v;
  if (ps_num_int(s, len, &v) != 0) luaL_pushfail(L);
  else lua_pushinteger(L, (lua_Integer)v);
  return 1;
}

static int f_fmt6(lua_State *L) {
  char buf[512]; /* room for any double's %.6f (DBL_MAX has 309 digits) */
  int n = ps_num_fmt6(buf, sizeof buf, luaL_checknumber(L, 1));
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

int luaopen_perfscript_num(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"parse", f_parse}, {"finite", f_finite}, {"or_zero", f_or_zero}, {"is_duration", f_is_duration},
    {"us_to_ns", f_us_to_ns}, {"int", f_int}, {"fmt6", f_fmt6}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
