/* perfscript.opsum: op_summary aggregation in C (see opsum.h), returned as database rows.
 *   opsum.aggregate({path, ...}) -> {samples = n, groups = {g, ...}} or nil, message
 *   g = {op = "MatMulV2", hash = <signature hash>, count = n, nvalid = n, min = d | nil,
 *        row = {["OP State"] = ..., ["Accelerator Core"] = <Task Type>, ... ,
 *               ["Average Duration(us)"] = "%.6f", _m = 25 counter means as native doubles, NaN when no sample (aggregate.metrics
 *               decodes it)}} */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "luabind.h"
#include "num.h"
#include "opsum.h"

static int l_aggregate(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ps_opsum *a = ps_opsum_new();
  if (!a) return luaL_error(L, "out of memory");
  char err[700];
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    const char *path = lua_tostring(L, -1);
    if (!path || ps_opsum_add_file(a, path, err, sizeof err) != 0) {
      if (!path) snprintf(err, sizeof err, "opsum.aggregate: paths[%d] is not a string", (int)i);
      ps_opsum_free(a);
      return ps_fail(L, err);
    }
    lua_pop(L, 1);
  }
  size_t ng = ps_opsum_ngroups(a);
  /* Column names made into Lua strings once: setting a field by a C string would hash it
   * again for every group. keys[1..8] base columns, [9] the duration. */
  lua_createtable(L, PS_NBASE + 1, 0);
  int keys = lua_gettop(L);
  for (int c = 0; c < PS_NBASE; c++) {
    lua_pushstring(L, ps_base_columns[c]);
    lua_rawseti(L, keys, c + 1);
  }
  lua_pushliteral(L, "Average Duration(us)");
  lua_rawseti(L, keys, 9);
  /* the last value of each base column, as a Lua string: most groups repeat the OP State, the
   * task type, the dtypes and formats of the one before, and a string found again costs no
   * interning (a lookup in a string table of every cell, missing the cache) */
  int last = lua_gettop(L) + 1;
  for (int c = 0; c < PS_NBASE; c++) lua_pushliteral(L, "");
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)ps_opsum_rows(a));
  lua_setfield(L, -2, "samples");
  lua_createtable(L, (int)ng, 0);
  char num[64];
  for (size_t i = 0; i < ng; i++) {
    const ps_opsum_group *g = ps_opsum_group_at(a, i);
    lua_createtable(L, 0, 6);
    lua_pushstring(L, g->op);
    lua_setfield(L, -2, "op");
    lua_pushinteger(L, (lua_Integer)g->hash);
    lua_setfield(L, -2, "hash");
    lua_pushinteger(L, (lua_Integer)g->count);
    lua_setfield(L, -2, "count");
    lua_pushinteger(L, (lua_Integer)g->nvalid);
    lua_setfield(L, -2, "nvalid");
    if (g->nvalid) {
      lua_pushnumber(L, g->min);
      lua_setfield(L, -2, "min");
    }
    /* the base columns, the duration, _m and the three fields aggregate.lua adds: sized
     * for them (room for 25 counter fields as well made each row 2 KiB, 100 MB at 50k groups) */
    lua_createtable(L, 0, PS_NBASE + 1 + 1 + 3);
    for (int c = 0; c < PS_NBASE; c++) {
      const char *v = c == 1 ? g->cells[PS_OPSUM_TASK_TYPE] : g->cells[c];
      size_t n = strlen(v), ln;
      const char *lv = lua_tolstring(L, last + c, &ln);
      lua_rawgeti(L, keys, c + 1);
      if (ln == n && memcmp(lv, v, n) == 0) {
        lua_pushvalue(L, last + c);
      } else {
        lua_pushlstring(L, v, n);
        lua_copy(L, -1, last + c);
      }
      lua_rawset(L, -3);
    }
    if (g->nvalid) {
      ps_num_fmt6(num, sizeof num, g->min);
      lua_rawgeti(L, keys, 9);
      lua_pushstring(L, num);
      lua_rawset(L, -3);
      /* The 25 counter means packed as native doubles (NaN: no valid sample) in one string,
       * _m: 25 table fields per group cost more than the whole aggregation. */
      double means[PS_NCOUNTERS];
      for (int m = 0; m < PS_NCOUNTERS; m++)
        means[m] = g->counts[m] ? g->sums[m] / (double)g->counts[m] : NAN;
      lua_pushlstring(L, (const char *)means, sizeof means);
      lua_setfield(L, -2, "_m");
    }
    lua_setfield(L, -2, "row");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "groups");
  ps_opsum_free(a);
  return 1;
}

int luaopen_perfscript_opsum(lua_State *L) {
  static const luaL_Reg funcs[] = {{"aggregate", l_aggregate}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
