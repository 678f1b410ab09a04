/* The grid expression language (lua/perfscript/expr.lua) in an embedded Lua state, on arbitrary
 * text: compiling and evaluating it must either give an integer or a boolean, or fail with the
 * language's own error (perf.fail, a user error naming the expression); any other Lua error
 * (an internal bug: indexing nil, a comparison of mixed types, a stack overflow) aborts. Deep
 * nesting is capped by the harness at 200 levels. fuzz/expr_diff.py compares the values with
 * Python's. The input: the expression, then after a NUL optional values of a, b, c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#ifndef PS_FUZZ_LUA_DIR
#error "PS_FUZZ_LUA_DIR (the source tree's lua/) must be defined"
#endif

static lua_State *L;

static const char driver[] =
  "local perf = require 'perfscript'\n"
  "local expr = require 'perfscript.expr'\n"
  "return function(text, a, b, c)\n"
  "  local ok, f = pcall(expr.compile, text)\n"
  "  if not ok then return perf.is_user_error(f) and 'user' or tostring(f) end\n"
  "  local ok2, v = pcall(f, { a = a, b = b, c = c, tokens = 128 })\n"
  "  if not ok2 then return perf.is_user_error(v) and 'user' or tostring(v) end\n"
  "  if math.type(v) ~= 'integer' and type(v) ~= 'boolean' then return 'not an integer: ' .. tostring(v) end\n"
  "  return 'ok'\n"
  "end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  L = luaL_newstate();
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_pushstring(L, PS_FUZZ_LUA_DIR "/?.lua;" PS_FUZZ_LUA_DIR "/?/init.lua");
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  if (luaL_dostring(L, driver) != LUA_OK) {
    fprintf(stderr, "fuzz_expr: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_setglobal(L, "check");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t n = 0, depth = 0, max = 0;
  while (n < size && data[n]) {
    if (data[n] == '(') max = ++depth > max ? depth : max;
    else if (data[n] == ')' && depth) depth--;
    n++;
  }
  if (max > 200) return 0;   /* recursion depth: Lua's C stack limit, not a finding */
  int64_t v[3] = {7, -3, 1 << 20};
  if (size > n + 1) memcpy(v, data + n + 1, size - n - 1 < sizeof v ? size - n - 1 : sizeof v);
  lua_getglobal(L, "check");
  lua_pushlstring(L, (const char *)data, n);
  for (int i = 0; i < 3; i++) lua_pushinteger(L, (lua_Integer)v[i]);
  if (lua_pcall(L, 4, 1, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_expr: driver error: %s\n", lua_tostring(L, -1));
    abort();
  }
  const char *r = lua_tostring(L, -1);
  if (strcmp(r, "ok") != 0 && strcmp(r, "user") != 0) {
    fprintf(stderr, "fuzz_expr: '%.*s': %s\n", (int)n, (const char *)data, r);
    abort();
  }
  lua_pop(L, 1);
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
