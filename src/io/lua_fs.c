/* perfscript.fs: the file operations that keep a database safe.
 *   fs.lock(dir[, {wait = true, timeout = seconds, quiet = false}]) -> lock (lock:release(),
 *     <close>); once held, the temporary files of writes killed mid-way (dead processes) are
 *     removed and said on stderr (unless quiet); lock:recovered() lists them
 *   fs.write_atomic(path, text[, {if_changed = true}]) -> "created"|"replaced"|"unchanged"
 *   fs.mkdir_p(path) -> true | nil, message */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "atomicfile.h"
#include "dirlock.h"
#include "luabind.h"

#define LOCK "perfscript.fs.lock"

typedef struct lock_ud { int fd; } lock_ud;

static void say_waiting(const char *holder, void *ud) {
  const char *dir = ud;
  fprintf(stderr, "perfscript: %s is locked by another run (%s); waiting for it to finish...\n",
          dir, *holder ? holder : "unknown holder");
  fflush(stderr);
}

typedef struct recover_ctx { lua_State *L; int quiet, list; lua_Integer n; } recover_ctx;

static void on_recovered(const char *path, long pid, void *ud) {
  recover_ctx *c = ud;
  if (!c->quiet) {
    fprintf(stderr, "perfscript: removed %s, left by a write of process %ld that did not finish "
            "(killed or crashed)\n", path, pid);
    fflush(stderr);
  }
  lua_pushstring(c->L, path);
  lua_rawseti(c->L, c->list, ++c->n);
}

static int fs_lock(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  double timeout = -1;
  int wait = 1, quiet = 0;
  if (lua_type(L, 2) == LUA_TTABLE) {
    if (lua_getfield(L, 2, "wait") != LUA_TNIL) wait = lua_toboolean(L, -1);
    if (lua_getfield(L, 2, "timeout") != LUA_TNIL) timeout = luaL_checknumber(L, -1);
    if (lua_getfield(L, 2, "quiet") != LUA_TNIL) quiet = lua_toboolean(L, -1);
    lua_pop(L, 3);
  }
  lock_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->fd = -1;
  luaL_setmetatable(L, LOCK);
  int lock = lua_gettop(L);
  char err[600];
  u->fd = ps_dirlock_acquire(dir, wait ? timeout : 0, quiet ? NULL : say_waiting, (void *)dir,
                             err, sizeof err);
  if (u->fd < 0) {
    return ps_fail(L, err);
  }
  lua_newtable(L);
  recover_ctx c = {L, quiet, lua_gettop(L), 0};
  ps_dirlock_recover(dir, on_recovered, &c);
  lua_setiuservalue(L, lock, 1);
  lua_settop(L, lock);
  return 1;
}

/* The temporary files removed when the lock was taken (paths). */
static int lock_recovered(lua_State *L) {
  luaL_checkudata(L, 1, LOCK);
  lua_getiuservalue(L, 1, 1);
  lua_newtable(L);
  lua_Integer n = lua_istable(L, -2) ? (lua_Integer)lua_rawlen(L, -2) : 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -2, i);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

static int lock_release(lua_State *L) {
  lock_ud *u = luaL_checkudata(L, 1, LOCK);
  ps_dirlock_release(u->fd);
  u->fd = -1;
  return 0;
}

static int lock_tostring(lua_State *L) {
  lock_ud *u = luaL_checkudata(L, 1, LOCK);
  lua_pushstring(L, u->fd >= 0 ? "database lock (held)" : "database lock (released)");
  return 1;
}

static int fs_write_atomic(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  int if_changed = 1;
  if (lua_type(L, 3) == LUA_TTABLE) {
    if (lua_getfield(L, 3, "if_changed") != LUA_TNIL) if_changed = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  char err[600];
  return ps_push_write_result(L, ps_atomic_write(path, text, len, if_changed, err, sizeof err),
                              err);
}

static int fs_mkdir_p(lua_State *L) {
  size_t len;
  const char *path = luaL_checklstring(L, 1, &len);
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, len + 1);
  memcpy(p, path, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (p[i] == '/' || p[i] == '\0') {
      char c = p[i];
      p[i] = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        luaL_pushfail(L);
        lua_pushfstring(L, "%s: cannot create directory: %s", p, strerror(errno));
        return 2;
      }
      p[i] = c;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: exists and is not a directory", path);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

int luaopen_perfscript_fs(lua_State *L) {
  static const luaL_Reg lock_meta[] = {
    {"__gc", lock_release}, {"__close", lock_release}, {"__tostring", lock_tostring},
    {NULL, NULL}};
  static const luaL_Reg lock_methods[] = {
    {"release", lock_release}, {"recovered", lock_recovered}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"lock", fs_lock}, {"write_atomic", fs_write_atomic}, {"mkdir_p", fs_mkdir_p},
    {NULL, NULL}};
  ps_newclass(L, LOCK, lock_meta, lock_methods);
  luaL_newlib(L, funcs);
  return 1;
}
