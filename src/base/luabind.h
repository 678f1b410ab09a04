/* Small helpers shared by the Lua bindings (src/lua_*.c), header-only because pscore has no
 * Lua: classes as named metatables with an __index method table, and the nil-plus-message
 * convention for I/O and data errors. */
#ifndef PS_LUABIND_H
#define PS_LUABIND_H

#include <lauxlib.h>
#include <lua.h>

#include "atomicfile.h"
#include "stage.h"

/* The class of perf.fs.stage() objects (src/io/lua_fs.c); the userdata is a ps_stage. */
#define PS_STAGE_CLASS "perfscript.fs.stage"

/* The stage named by opts.stage (opts at index idx, a table or nothing), or NULL. A stage
 * already committed or aborted is misuse. */
static inline ps_stage *ps_optstage(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return NULL;
  ps_stage *s = NULL;
  if (lua_getfield(L, idx, "stage") != LUA_TNIL) {
    s = luaL_checkudata(L, -1, PS_STAGE_CLASS);
    if (s->state != 0) luaL_error(L, "stage already committed or aborted");
  }
  lua_pop(L, 1); /* the caller's opts table keeps the stage alive */
  return s;
}

/* Registers metatable `name` with metamethods `meta` and methods `methods` as __index. */
static inline void ps_newclass(lua_State *L, const char *name, const luaL_Reg *meta,
                               const luaL_Reg *methods) {
  luaL_newmetatable(L, name);
  luaL_setfuncs(L, meta, 0);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

/* return ps_fail(L, msg): pushes nil, msg (the luaL_pushfail convention) and returns 2. */
static inline int ps_fail(lua_State *L, const char *msg) {
  luaL_pushfail(L);
  lua_pushstring(L, msg);
  return 2;
}

/* Pushes what an atomic write did ("created", "replaced", "unchanged"), or nil, err. */
static inline int ps_push_write_result(lua_State *L, int status, const char *err) {
  if (status < 0) return ps_fail(L, err);
  lua_pushstring(L, status == PS_ATOMIC_CREATED ? "created" :
                    status == PS_ATOMIC_REPLACED ? "replaced" : "unchanged");
  return 1;
}

#endif
