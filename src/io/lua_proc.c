/* perfscript.proc: child processes from argv arrays (see proc.h).
 *   local p = proc.spawn{argv = {"msprof", "--output=" .. dir, ...}, env = {K = "v", X = false},
 *                        cwd = dir, stdout = path, stderr = path, stdin_null = true}
 *             -> process | nil, "msprof: not found"
 *   p:wait([timeout]) -> code, "exit" | "signal"   or   nil, "timeout" (still running)
 *   p:kill([grace = 2]) kills the whole process group (TERM, then KILL after grace seconds)
 *   p:pid(), p:running(); a process dropped while running is killed with its group
 *   proc.run{..., timeout = s} -> code, "exit" | "signal" | "timeout" (group killed on timeout)
 *   proc.which(name) -> full path | nil */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "luabind.h"
#include "proc.h"

#define PROC "perfscript.proc.process"

static const char *opt_field(lua_State *L, int t, const char *k) {
  const char *v = NULL;
  if (lua_getfield(L, t, k) != LUA_TNIL) v = luaL_checkstring(L, -1);
  lua_pop(L, 1);
  return v; /* still referenced by the options table */
}

/* Spawns from the options table at index t; pushes the process or nil, message. */
static int spawn(lua_State *L, int t) {
  luaL_checktype(L, t, LUA_TTABLE);
  if (lua_getfield(L, t, "argv") != LUA_TTABLE) return luaL_error(L, "proc: argv must be a table");
  int argv_t = lua_gettop(L);
  int n = (int)lua_rawlen(L, argv_t);
  if (n == 0) return luaL_error(L, "proc: empty argv");
  const char **argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, argv_t, i + 1);
    if (!lua_isstring(L, -1)) return luaL_error(L, "proc: argv[%d] is not a string", i + 1);
    lua_tostring(L, -1);
    lua_rawseti(L, argv_t, i + 1); /* store the string form back so it stays referenced */
    lua_rawgeti(L, argv_t, i + 1);
    argv[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  argv[n] = NULL;
  /* Environment: a table of name -> value (false unsets). */
  const char **env = NULL;
  if (lua_getfield(L, t, "env") == LUA_TTABLE) {
    int env_t = lua_gettop(L);
    int count = 0;
    lua_pushnil(L);
    while (lua_next(L, env_t)) count++, lua_pop(L, 1);
    env = lua_newuserdatauv(L, sizeof(char *) * (size_t)(count + 1), 0);
    int k = 0;
    lua_newtable(L); /* keeps the "K=V" strings alive */
    int keep = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, env_t)) {
      const char *name = luaL_checkstring(L, -2);
      if (lua_toboolean(L, -1)) lua_pushfstring(L, "%s=%s", name, luaL_checkstring(L, -1));
      else lua_pushstring(L, name);
      env[k++] = lua_tostring(L, -1);
      lua_rawseti(L, keep, k);
      lua_pop(L, 1);
    }
    env[k] = NULL;
  }
  ps_proc_opts o = {.argv = argv, .env = env};
  o.cwd = opt_field(L, t, "cwd");
  o.stdout_path = opt_field(L, t, "stdout");
  o.stderr_path = opt_field(L, t, "stderr");
  lua_getfield(L, t, "stdin_null");
  o.stdin_null = lua_toboolean(L, -1);
  lua_pop(L, 1);
  ps_proc *p = lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  p->pid = -1;
  luaL_setmetatable(L, PROC);
  char err[600];
  if (ps_proc_spawn(p, &o, err, sizeof err) != 0) return ps_fail(L, err);
  return 1;
}

static int l_spawn(lua_State *L) { return spawn(L, 1); }

static int push_status(lua_State *L, ps_proc *p) {
  lua_pushinteger(L, ps_proc_exit_code(p));
  lua_pushstring(L, ps_proc_term_signal(p) ? "signal" : "exit");
  return 2;
}

static int p_wait(lua_State *L) {
  ps_proc *p = luaL_checkudata(L, 1, PROC);
  double timeout = luaL_optnumber(L, 2, -1);
  int r = ps_proc_wait(p, timeout);
  if (r < 0) return ps_fail(L, strerror(errno));
  if (r == 0) return ps_fail(L, "timeout");
  return push_status(L, p);
}

static int p_kill(lua_State *L) {
  ps_proc *p = luaL_checkudata(L, 1, PROC);
  ps_proc_kill(p, luaL_optnumber(L, 2, 2.0));
  return 0;
}

static int p_pid(lua_State *L) {
  ps_proc *p = luaL_checkudata(L, 1, PROC);
  lua_pushinteger(L, p->pid);
  return 1;
}

static int p_running(lua_State *L) {
  ps_proc *p = luaL_checkudata(L, 1, PROC);
  lua_pushboolean(L, p->pid > 0 && ps_proc_wait(p, 0) == 0);
  return 1;
}

static int p_gc(lua_State *L) {
  ps_proc *p = luaL_checkudata(L, 1, PROC);
  if (p->pid > 0 && !p->done) ps_proc_kill(p, 0.5);
  return 0;
}

static int p_tostring(lua_State *L) {
  ps_proc *p = luaL_checkudata(L, 1, PROC);
  lua_pushfstring(L, "process %d (%s)", (int)p->pid, p->done ? "ended" : "running");
  return 1;
}

static int l_run(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double timeout = -1;
  if (lua_getfield(L, 1, "timeout") != LUA_TNIL) timeout = luaL_checknumber(L, -1);
  lua_pop(L, 1);
  int r = spawn(L, 1);
  if (r == 2) return 2;
  ps_proc *p = lua_touserdata(L, -1);
  int w = ps_proc_wait(p, timeout);
  if (w < 0) return ps_fail(L, strerror(errno));
  if (w == 0) {
    ps_proc_kill(p, 2.0);
    lua_pushinteger(L, ps_proc_exit_code(p));
    lua_pushliteral(L, "timeout");
    return 2;
  }
  return push_status(L, p);
}

static int l_which(lua_State *L) {
  char out[4096];
  if (ps_proc_which(luaL_checkstring(L, 1), out, sizeof out) != 0) {
    luaL_pushfail(L);
    return 1;
  }
  lua_pushstring(L, out);
  return 1;
}

int luaopen_perfscript_proc(lua_State *L) {
  static const luaL_Reg meta[] = {
    {"__gc", p_gc}, {"__close", p_gc}, {"__tostring", p_tostring}, {NULL, NULL}};
  static const luaL_Reg methods[] = {
    {"wait", p_wait}, {"kill", p_kill}, {"pid", p_pid}, {"running", p_running}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"spawn", l_spawn}, {"run", l_run}, {"which", l_which}, {NULL, NULL}};
  ps_newclass(L, PROC, meta, methods);
  luaL_newlib(L, funcs);
  return 1;
}
