/* Small helpers shared by the Lua bindings (src/lua_*.c), header-only because pscore has no
 * Lua: classes as named metatables with an __index method table, and the nil-plus-message
 * convention for I/O and data errors. */
#ifndef PS_LUABIND_H
#define PS_LUABIND_H

#include <stdlib.h>
#include <string.h>

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

/* A text made in C and kept in C buffers (perfscript.text): fs.write_atomic writes its pieces
 * as they are, so a big rendered text (a new database file's rows, the provenance lines) is
 * never copied into a Lua string. Writing it frees its buffers (the text is then empty); so
 * do text:free(), <close> and the collector. #text is its length in bytes. */
#define PS_TEXT_CLASS "perfscript.text"

typedef struct ps_text {
  char **p;
  size_t *len;
  size_t n, cap, total;
} ps_text;

static inline void ps_text_clear(ps_text *t) {
  for (size_t i = 0; i < t->n; i++) free(t->p[i]);
  free(t->p), free(t->len);
  t->p = NULL, t->len = NULL, t->n = t->cap = t->total = 0;
}

static inline int ps_text_gc(lua_State *L) {
  ps_text_clear(luaL_checkudata(L, 1, PS_TEXT_CLASS));
  return 0;
}

static inline int ps_text_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)((ps_text *)luaL_checkudata(L, 1, PS_TEXT_CLASS))->total);
  return 1;
}

/* Pushes a new empty text. */
static inline ps_text *ps_text_push(lua_State *L) {
  ps_text *t = lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  if (luaL_newmetatable(L, PS_TEXT_CLASS)) {
    static const luaL_Reg meta[] = {{"__gc", ps_text_gc}, {"__close", ps_text_gc},
                                    {"__len", ps_text_len}, {NULL, NULL}};
    static const luaL_Reg methods[] = {{"free", ps_text_gc}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
  }
  lua_setmetatable(L, -2);
  return t;
}

/* Appends buf (len bytes, malloc'd or NULL when len is 0) to t, which owns it from now on
 * (freed here when memory runs out). 0, or -1 when memory runs out. */
static inline int ps_text_add(ps_text *t, char *buf, size_t len) {
  if (len == 0) {
    free(buf);
    return 0;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 8;
    char **p = realloc(t->p, cap * sizeof *p);
    if (p) t->p = p;
    size_t *l = p ? realloc(t->len, cap * sizeof *l) : NULL;
    if (l == NULL) {
      free(buf);
      return -1;
    }
    t->len = l, t->cap = cap;
  }
  t->p[t->n] = buf, t->len[t->n] = len, t->n++, t->total += len;
  return 0;
}

/* The text at idx, or NULL when it is not one. */
static inline ps_text *ps_totext(lua_State *L, int idx) { return luaL_testudata(L, idx, PS_TEXT_CLASS); }

#endif
