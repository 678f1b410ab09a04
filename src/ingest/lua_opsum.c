/* perfscript.opsum: op_summary aggregation in C (see opsum.h), returned as database rows.
 *   opsum.aggregate({path, ...}) -> {samples = n, groups = {row, ...}} or nil, message
 *   row = {["OP State"] = ..., ["Accelerator Core"] = <Task Type>, ..., _op = op,
 *          and for a group with a valid duration: ["Average Duration(us)"] = "%.6f" (the
 *          minimum), _m = 25 counter means as native doubles, NaN when no sample
 *          (aggregate.metrics decodes it), _hash = signature hash, _samples = valid samples;
 *          else _count = samples}
 * (one table a group: a wrapper around each row cost as much as the row) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "luabind.h"
#include "num.h"
#include "opsum.h"

/* t[keys[k]] = v */
static void set_integer(lua_State *L, int t, int keys, int k, lua_Integer v) {
  lua_rawgeti(L, keys, k);
  lua_pushinteger(L, v);
  lua_rawset(L, t);
}

/* The string at stack slot at becomes v, unless it already holds those bytes (no interning). */
static void reuse_string(lua_State *L, int at, const char *v, size_t n) {
  size_t ln;
  const char *lv = lua_tolstring(L, at, &ln);
  if (ln == n && memcmp(lv, v, n) == 0) return;
  lua_pushlstring(L, v, n);
  lua_replace(L, at);
}

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
  /* Column and member names made into Lua strings once: setting a field by a C string would
   * hash it again for every group. keys[1..8] base columns, [9] the duration, then NAMES. */
  static const char *const names[] = {"_m", "_hash", "_samples", "_op", "_count"};
  enum { K_M = 10, K_RHASH, K_RSAMPLES, K_ROP, K_RCOUNT };
  lua_createtable(L, K_RCOUNT, 0);
  int keys = lua_gettop(L);
  for (int c = 0; c < PS_NBASE; c++) {
    lua_pushstring(L, ps_base_columns[c]);
    lua_rawseti(L, keys, c + 1);
  }
  lua_pushliteral(L, "Average Duration(us)");
  lua_rawseti(L, keys, 9);
  for (int k = K_M; k <= K_RCOUNT; k++) {
    lua_pushstring(L, names[k - K_M]);
    lua_rawseti(L, keys, k);
  }
  /* the last value of each base column (and of the op), as a Lua string: most groups repeat
   * the op, OP State, the task type, the dtypes and formats of the one before, and a string
   * found again costs no interning (a lookup in a string table of every cell, missing the
   * cache) */
  int last = lua_gettop(L) + 1;
  for (int c = 0; c <= PS_NBASE; c++) lua_pushliteral(L, "");
  int last_op = last + PS_NBASE;
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)ps_opsum_rows(a));
  lua_setfield(L, -2, "samples");
  lua_createtable(L, (int)ng, 0);
  char num[64];
  for (size_t i = 0; i < ng; i++) {
    const ps_opsum_group *g = ps_opsum_group_at(a, i);
    reuse_string(L, last_op, g->op, strlen(g->op));
    /* the base columns, _op, and the duration, _m, _hash and _samples (a row with a valid
     * sample) or _count: sized for them (room for 25 counter fields as well made each row
     * 2 KiB, 100 MB at 50k groups) */
    lua_createtable(L, 0, PS_NBASE + 1 + 1 + 3);
    int row = lua_gettop(L);
    for (int c = 0; c < PS_NBASE; c++) {
      const char *v = c == 1 ? g->cells[PS_OPSUM_TASK_TYPE] : g->cells[c];
      reuse_string(L, last + c, v, strlen(v));
      lua_rawgeti(L, keys, c + 1);
      lua_pushvalue(L, last + c);
      lua_rawset(L, row);
    }
    lua_rawgeti(L, keys, K_ROP);
    lua_pushvalue(L, last_op);
    lua_rawset(L, row);
    if (g->nvalid) {
      ps_num_fmt6(num, sizeof num, g->min);
      lua_rawgeti(L, keys, 9);
      lua_pushstring(L, num);
      lua_rawset(L, row);
      /* The 25 counter means packed as native doubles (NaN: no valid sample) in one string,
       * _m: 25 table fields per group cost more than the whole aggregation. */
      double means[PS_NCOUNTERS];
      for (int m = 0; m < PS_NCOUNTERS; m++)
        means[m] = g->counts[m] ? g->sums[m] / (double)g->counts[m] : NAN;
      lua_rawgeti(L, keys, K_M);
      lua_pushlstring(L, (const char *)means, sizeof means);
      lua_rawset(L, row);
      set_integer(L, row, keys, K_RHASH, (lua_Integer)g->hash);
      set_integer(L, row, keys, K_RSAMPLES, (lua_Integer)g->nvalid);
    } else {
      set_integer(L, row, keys, K_RCOUNT, (lua_Integer)g->count);
    }
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
