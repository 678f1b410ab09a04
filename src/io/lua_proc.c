/* perfscript.proc: child processes from argv arrays (see proc.h).
 *   local p = proc.spawn{argv = {"msprof", "--output=" .. dir, ...}, env = {K = "v", X = false},
 *                        cwd = dir, stdout = path, stderr = path, stdin_null = true}
 *             -> process | nil, "msprof: not found"
 *   p:wait([timeout]) -> code, "exit" | "signal"   or   nil, "timeout" (still running)
 *   p:kill([grace = 2]) kills the whole process group (TERM, then KILL after grace seconds)
 *   p:pid(), p:running(); a process dropped while running is killed with its group
 *   proc.run{..., timeout = s} -> code, "exit" | "signal" | "timeout" (group killed on timeout)
 *   proc.which(name) -> full path | nil
 *   proc.fork_map(keys, fn, done[, workers]) -> true | nil, message: runs fn(key) -> string for
 *     each integer of the list keys (handed out in that order) in forked worker processes
 *     (forkmap.h; default: one per core, at most #keys); done(key, ok, string) is called here as
 *     each result arrives (ok false: fn raised, string is the error as text). nil, message when
 *     a job raised (the others stop after their current one), a worker died or a fork failed;
 *     an error in done stops the run too (done still gets what arrives) and is raised again
 *     once the workers are gone.
 *   proc.cores() -> the processors online */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "forkmap.h"
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

typedef struct fm_ud {
  lua_State *L;
  int fn, done;   /* stack indices */
  int top;        /* the stack height a worker's job starts from */
  int raised;     /* done raised: its error is on the stack at index `raised` */
} fm_ud;

/* In a worker: fn(key) under pcall; the result (or the error as text) stays on the stack. */
static int fm_fn(void *ud, long key, const char **out, size_t *len) {
  fm_ud *u = ud;
  lua_State *L = u->L;
  lua_settop(L, u->top);
  lua_pushvalue(L, u->fn);
  lua_pushinteger(L, key);
  int ok = lua_pcall(L, 1, 1, 0) == LUA_OK;
  if (ok && lua_type(L, -1) != LUA_TSTRING) {
    lua_pushfstring(L, "fork_map: job %I returned a %s, not a string", (lua_Integer)key,
                    luaL_typename(L, -1));
    ok = 0;
  } else if (!ok) {
    luaL_tolstring(L, -1, NULL); /* a user error (perf.fail) says its message */
  }
  *out = lua_tolstring(L, -1, len);
  return ok ? 0 : -1;
}

/* In the parent: done(key, ok, bytes); the first error stops the run and is kept for later
 * (done still gets the results that arrive after it: they may hold what the caller must
 * release; its later errors are dropped). */
static int fm_done(void *ud, long key, int ok, const char *bytes, size_t len) {
  fm_ud *u = ud;
  lua_State *L = u->L;
  lua_pushvalue(L, u->done);
  lua_pushinteger(L, key);
  lua_pushboolean(L, ok);
  lua_pushlstring(L, bytes, len);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
    if (u->raised) {
      lua_pop(L, 1);
      return -1;
    }
    u->raised = lua_gettop(L);
    return -1;
  }
  return 0;
}

static int l_fork_map(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  lua_Integer workers = luaL_optinteger(L, 4, ps_forkmap_cores());
  lua_settop(L, 4);
  size_t n = (size_t)lua_rawlen(L, 1);
  long *keys = lua_newuserdatauv(L, sizeof(long) * (n ? n : 1), 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    int isint;
    lua_Integer k = lua_tointegerx(L, -1, &isint);
    if (!isint) return luaL_error(L, "fork_map: keys[%d] is not an integer", (int)i + 1);
    keys[i] = (long)k;
    lua_pop(L, 1);
  }
  luaL_checkstack(L, 8, "fork_map");
  fm_ud u = {L, 2, 3, lua_gettop(L), 0};
  ps_forkmap m = {keys, n, workers < 1 ? 1 : (workers > 64 ? 64 : (int)workers), fm_fn, fm_done, &u};
  char err[1024];
  int r = ps_forkmap_run(&m, err, sizeof err);
  if (u.raised) {
    lua_pushvalue(L, u.raised);
    return lua_error(L);
  }
  if (r != 0) return ps_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_cores(lua_State *L) {
  lua_pushinteger(L, ps_forkmap_cores());
  return 1;
}

int luaopen_perfscript_proc(lua_State *L) {
  static const luaL_Reg meta[] = {
    {"__gc", p_gc}, {"__close", p_gc}, {"__tostring", p_tostring}, {NULL, NULL}};
  static const luaL_Reg methods[] = {
    {"wait", p_wait}, {"kill", p_kill}, {"pid", p_pid}, {"running", p_running}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"spawn", l_spawn}, {"run", l_run}, {"which", l_which}, {"fork_map", l_fork_map},
    {"cores", l_cores}, {NULL, NULL}};
  ps_newclass(L, PROC, meta, methods);
  luaL_newlib(L, funcs);
  return 1;
}
