/* Small helpers shared by the Lua bindings (src/lua_*.c), header-only because pscore has no
 * Lua: classes as named metatables with an __index method table, and the nil-plus-message
 * convention for I/O and data errors. */
#ifndef PS_LUABIND_H
#define PS_LUABIND_H

#include <lauxlib.h>
#include <lua.h>

#include "atomicfile.h"

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
