/* perfscript.term: what a recipe needs to know about its terminal.
 *   term.isatty(fd) -> bool   (0 stdin, 1 stdout, 2 stderr)
 *   term.columns() -> width of stderr's terminal, or nil */
#include <sys/ioctl.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

static int t_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int t_columns(lua_State *L) {
  struct winsize ws;
  if (ioctl(2, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) luaL_pushfail(L);
  else lua_pushinteger(L, ws.ws_col);
  return 1;
}

int luaopen_perfscript_term(lua_State *L) {
  static const luaL_Reg funcs[] = {{"isatty", t_isatty}, {"columns", t_columns}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
