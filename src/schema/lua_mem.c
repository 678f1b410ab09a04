/* perfscript.mem: memory estimate of shape rows, for the grid's HBM budget.
 *   mem.dtype_bytes(name) -> 1|2|4|8|16 (2 for unknown names)
 *   mem.parse_dtypes(cell) -> {"DT_BF16", "", ...}   (';' slots kept, empty ones too;
 *                                                     a list without ';' splits on spaces)
 *   mem.tensor_bytes(shape, dtype) -> integer
 *   mem.row_bytes(in_shapes, in_dtypes, out_shapes [, out_dtypes]) -> integer
 *       dtypes are a cell string or an array; slot i uses dtype i (2 bytes when missing);
 *       out_dtypes nil means "use in_dtypes"
 *   mem.exceeds(bytes, budget) -> bytes > budget   (strict)
 *   mem.format(n) -> "1.02 MiB" */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "mem.h"
#include "shape.h"

static void push_u64(lua_State *L, uint64_t v) {
  lua_pushinteger(L, v > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)v);
}

/* Pushes the dtype cell as an array of strings (fixed slot semantics). */
static void push_parsed(lua_State *L, const char *s, size_t len) {
  while (len && (isspace((unsigned char)*s) || *s == '"')) s++, len--;
  while (len && (isspace((unsigned char)s[len - 1]) || s[len - 1] == '"')) len--;
  lua_newtable(L);
  if (len == 0) return;
  int semi = memchr(s, ';', len) != NULL;
  lua_Integer n = 0;
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    if (semi) {
      while (j < len && s[j] != ';') j++;
    } else {
      while (i < len && isspace((unsigned char)s[i])) i++;
      if (i >= len) break;
      j = i;
      while (j < len && !isspace((unsigned char)s[j])) j++;
    }
    size_t a = i, b = j;
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    lua_pushlstring(L, s + a, b - a);
    lua_rawseti(L, -2, ++n);
    i = j + 1;
  }
}

static int l_parse_dtypes(lua_State *L) {
  size_t len = 0;
  const char *s = lua_isnoneornil(L, 1) ? "" : luaL_checklstring(L, 1, &len);
  push_parsed(L, s, len);
  return 1;
}

static int l_dtype_bytes(lua_State *L) {
  size_t len = 0;
  const char *s = lua_isnoneornil(L, 1) ? "" : luaL_checklstring(L, 1, &len);
  lua_pushinteger(L, ps_dtype_bytes(s, len));
  return 1;
}

/* Bytes of the shape array at index idx, with elem bytes. */
static uint64_t shape_bytes(lua_State *L, int idx, int elem) {
  int64_t dims[64];
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  if (n > 64) luaL_error(L, "shape has %d dimensions (at most 64)", (int)n);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    int ok;
    lua_Integer d = lua_tointegerx(L, -1, &ok);
    if (!ok) luaL_error(L, "shape dimension %d is not an integer", (int)i);
    dims[i - 1] = (int64_t)d;
    lua_pop(L, 1);
  }
  return ps_shape_nbytes(dims, (size_t)n, elem);
}

static int l_tensor_bytes(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t len = 0;
  const char *dt = luaL_optlstring(L, 2, "", &len);
  push_u64(L, shape_bytes(L, 1, ps_dtype_bytes(dt, len)));
  return 1;
}

/* Leaves a dtype array at the top of the stack for the argument at idx. */
static void dtype_array(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    push_parsed(L, s, len);
  } else if (lua_istable(L, idx)) {
    lua_pushvalue(L, idx);
  } else if (lua_isnoneornil(L, idx)) {
    lua_newtable(L);
  } else {
    luaL_typeerror(L, idx, "dtype cell or array");
  }
}

static uint64_t slots_bytes(lua_State *L, int shapes, int dtypes) {
  uint64_t total = 0;
  lua_Integer n = (lua_Integer)lua_rawlen(L, shapes);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, shapes, i);
    if (!lua_istable(L, -1)) luaL_error(L, "shape slot %d is not an array", (int)i);
    int elem = 2;
    if (lua_rawgeti(L, dtypes, i) == LUA_TSTRING) {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      elem = ps_dtype_bytes(s, len);
    }
    lua_pop(L, 1);
    total = ps_mem_add(total, shape_bytes(L, lua_gettop(L), elem));
    lua_pop(L, 1);
  }
  return total;
}

static int l_row_bytes(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 4);
  dtype_array(L, 2);                          /* 5 */
  if (lua_isnil(L, 4)) lua_pushvalue(L, 5);   /* absent output dtypes: the input list */
  else dtype_array(L, 4);                     /* 6 */
  uint64_t total = slots_bytes(L, 1, 5);
  total = ps_mem_add(total, slots_bytes(L, 3, 6));
  push_u64(L, total);
  return 1;
}

static int l_exceeds(lua_State *L) {
  lua_Integer bytes = luaL_checkinteger(L, 1);
  lua_Integer budget = luaL_checkinteger(L, 2);
  lua_pushboolean(L, bytes > budget);
  return 1;
}

static int l_format(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  char buf[64];
  ps_mem_format(n < 0 ? 0 : (uint64_t)n, buf, sizeof buf);
  lua_pushstring(L, buf);
  return 1;
}

int luaopen_perfscript_mem(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"dtype_bytes", l_dtype_bytes}, {"parse_dtypes", l_parse_dtypes},
    {"tensor_bytes", l_tensor_bytes}, {"row_bytes", l_row_bytes},
    {"exceeds", l_exceeds}, {"format", l_format}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_pushinteger(L, (lua_Integer)32 * 1024 * 1024 * 1024);
  lua_setfield(L, -2, "DEFAULT_BUDGET");
  return 1;
}
