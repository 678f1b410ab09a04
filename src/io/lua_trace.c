/* perfscript.trace: Chrome-trace events, one at a time (reader in trace.h).
 *   local r = assert(trace.open(path))
 *   for ev in r:events() do ... end      -- raises "file: reason" on bad JSON
 *   r:read() -> ev | nil (end) | nil, message;  r:truncated(), r:progress(), r:close()
 * An event is a table of its members as text (see trace.h): ev.name, ev.ph, ev.ts, ev.dur,
 * ..., ev.args (a table, when the event has an args object), ev.ts_ns (ts as integer
 * nanoseconds, exact, when ts is a decimal number of microseconds) and ev.index (1-based).
 * trace.open(path, {types = true}) adds ev.types = {name = "string", dur = "number", ...}. */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "num.h"
#include "trace.h"

#define READER "perfscript.trace.reader"

typedef struct tr_ud { ps_trace_reader *r; int types; } tr_ud;

static tr_ud *check_reader(lua_State *L, int i) {
  tr_ud *u = luaL_checkudata(L, i, READER);
  if (u->r == NULL) luaL_error(L, "attempt to use a closed trace reader");
  return u;
}

static int t_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int types = 0;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "types");
    types = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  tr_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->r = NULL;
  u->types = types;
  luaL_setmetatable(L, READER);
  char err[700];
  u->r = ps_trace_open(path, err, sizeof err);
  if (u->r == NULL) {
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 1;
}

static const char *const type_names[] = {"string", "number", "boolean", "null", "array", "object"};

static void set_members(lua_State *L, int t, const ps_trace_member *m, size_t n, int types) {
  for (size_t i = 0; i < n; i++) {
    if (m[i].type == PS_TJ_NULL) continue;
    lua_pushlstring(L, m[i].value, m[i].len);
    lua_setfield(L, t, m[i].key);
    if (types) {
      lua_pushstring(L, type_names[m[i].type]);
      lua_setfield(L, types, m[i].key);
    }
  }
}

/* 1: event pushed; 0: end; -1: message pushed */
static int next_event(lua_State *L, tr_ud *u) {
  ps_trace_event ev;
  int st = ps_trace_next(u->r, &ev);
  if (st < 0) {
    lua_pushstring(L, ps_trace_error(u->r));
    return -1;
  }
  if (st == 0) return 0;
  lua_createtable(L, 0, (int)ev.nmembers + 3);
  int e = lua_gettop(L), types = 0;
  if (u->types) {
    lua_newtable(L);
    types = lua_gettop(L);
  }
  set_members(L, e, ev.members, ev.nmembers, types);
  if (types) lua_setfield(L, e, "types");
  if (ev.has_args) {
    lua_createtable(L, 0, (int)ev.nargs);
    set_members(L, lua_gettop(L), ev.args, ev.nargs, 0);
    lua_setfield(L, e, "args");
  }
  const ps_trace_member *ts = ps_trace_find(ev.members, ev.nmembers, "ts");
  int64_t ns;
  if (ts && (ts->type == PS_TJ_NUMBER || ts->type == PS_TJ_STRING) &&
      ps_num_us_to_ns(ts->value, ts->len, &ns) == 0) {
    lua_pushinteger(L, ns);
    lua_setfield(L, e, "ts_ns");
  }
  lua_pushinteger(L, (lua_Integer)ev.index + 1);
  lua_setfield(L, e, "index");
  return 1;
}

static int r_read(lua_State *L) {
  tr_ud *u = check_reader(L, 1);
  int st = next_event(L, u);
  if (st == 1) return 1;
  luaL_pushfail(L);
  if (st < 0) {
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

static int events_iter(lua_State *L) {
  tr_ud *u = check_reader(L, lua_upvalueindex(1));
  int st = next_event(L, u);
  if (st < 0) return lua_error(L);
  if (st == 0) lua_pushnil(L);
  return 1;
}

static int r_events(lua_State *L) {
  check_reader(L, 1);
  lua_pushvalue(L, 1);
  lua_pushcclosure(L, events_iter, 1);
  return 1;
}

static int r_truncated(lua_State *L) {
  lua_pushboolean(L, ps_trace_truncated(check_reader(L, 1)->r));
  return 1;
}

static int r_progress(lua_State *L) {
  tr_ud *u = check_reader(L, 1);
  lua_pushinteger(L, (lua_Integer)ps_trace_bytes_read(u->r));
  lua_pushinteger(L, (lua_Integer)ps_trace_file_size(u->r));
  return 2;
}

static int r_close(lua_State *L) {
  tr_ud *u = luaL_checkudata(L, 1, READER);
  ps_trace_close(u->r);
  u->r = NULL;
  return 0;
}

static int r_tostring(lua_State *L) {
  tr_ud *u = luaL_checkudata(L, 1, READER);
  lua_pushstring(L, u->r ? "trace reader" : "trace reader (closed)");
  return 1;
}

int luaopen_perfscript_trace(lua_State *L) {
  static const luaL_Reg meta[] = {
    {"__gc", r_close}, {"__close", r_close}, {"__tostring", r_tostring}, {NULL, NULL}};
  static const luaL_Reg methods[] = {
    {"read", r_read}, {"events", r_events}, {"truncated", r_truncated},
    {"progress", r_progress}, {"close", r_close}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"open", t_open}, {NULL, NULL}};
  luaL_newmetatable(L, READER);
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
