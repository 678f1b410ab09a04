/* State setup, module registration, the error handler and protected calls. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#include "embedded.h"
#include "host.h"

int luaopen_lfs(lua_State *L);
int luaopen_cjson(lua_State *L);
int luaopen_cjson_safe(lua_State *L);

static int luaopen_library(lua_State *L);
extern const luaL_Reg ps_c_modules[];   /* generated from src/lua_*.c */

const char *ps_lua_dir = NULL;

static const luaL_Reg bundled_modules[] = {
  {"lfs", luaopen_lfs},
  {"cjson", luaopen_cjson},
  {"cjson.safe", luaopen_cjson_safe},
  {"perfscript.library", luaopen_library},
  {NULL, NULL}
};

static void preload(lua_State *L, const luaL_Reg *mods) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (; mods->name; mods++) {
    lua_pushcfunction(L, mods->func);
    lua_setfield(L, -2, mods->name);
  }
  lua_pop(L, 1);
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Tries DIR/a/b.lua then DIR/a/b/init.lua for module "a.b". */
static int search_live_tree(lua_State *L, const char *name) {
  luaL_Buffer b;
  const char *rel = luaL_gsub(L, name, ".", "/");
  const char *suffixes[] = {".lua", "/init.lua"};
  for (int i = 0; i < 2; i++) {
    luaL_buffinit(L, &b);
    luaL_addstring(&b, ps_lua_dir);
    luaL_addchar(&b, '/');
    luaL_addstring(&b, rel);
    luaL_addstring(&b, suffixes[i]);
    luaL_pushresult(&b);
    const char *path = lua_tostring(L, -1);
    if (file_exists(path)) {
      if (luaL_loadfilex(L, path, "t") != LUA_OK)
        return luaL_error(L, "error loading module '%s' from '%s':\n\t%s", name, path,
                          lua_tostring(L, -1));
      lua_insert(L, -2);  /* loader, path */
      return 2;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);  /* rel */
  return 0;
}

/* package.searchers entry: the perfscript Lua library, live tree first when one is set. */
static int search_embedded(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  if (strncmp(name, "perfscript", 10) != 0)
    return 0;
  if (ps_lua_dir) {
    int n = search_live_tree(L, name);
    if (n) return n;
  }
  for (const ps_embedded_file *f = ps_embedded_files; f->module; f++) {
    if (strcmp(f->module, name) == 0) {
      lua_pushfstring(L, "@%s", f->path);
      if (luaL_loadbufferx(L, f->source, f->size, lua_tostring(L, -1), "t") != LUA_OK)
        return luaL_error(L, "error loading embedded module '%s':\n\t%s", name,
                          lua_tostring(L, -1));
      lua_pushfstring(L, "embedded:%s", f->path);
      return 2;
    }
  }
  lua_pushfstring(L, "no embedded module '%s'", name);
  return 1;
}

/* ---- perfscript.library: the library tree as files ---------------------------------------- */

/* library.read("perfscript/replay/executor.py") -> text, origin: a file of the library that is
 * not a Lua module (the replay executor), from the live tree when it has one, else the copy
 * embedded in the binary; nil, message when neither has it. */
static int library_read(lua_State *L) {
  const char *rel = luaL_checkstring(L, 1);
  if (ps_lua_dir) {
    lua_pushfstring(L, "%s/%s", ps_lua_dir, rel);
    const char *path = lua_tostring(L, -1);
    FILE *f = file_exists(path) ? fopen(path, "rb") : NULL;
    if (f) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      size_t n;
      char buf[8192];
      while ((n = fread(buf, 1, sizeof buf, f)) > 0) luaL_addlstring(&b, buf, n);
      int bad = ferror(f);
      fclose(f);
      if (bad) return luaL_fileresult(L, 0, path);
      luaL_pushresult(&b);
      lua_insert(L, -2);  /* text, path */
      return 2;
    }
    lua_pop(L, 1);
  }
  lua_pushfstring(L, "lua/%s", rel);
  for (const ps_embedded_file *e = ps_embedded_files; e->path; e++) {
    if (strcmp(e->path, lua_tostring(L, -1)) == 0) {
      lua_pushlstring(L, e->source, e->size);
      lua_pushfstring(L, "embedded:%s", e->path);
      return 2;
    }
  }
  lua_pushnil(L);
  lua_pushfstring(L, "%s: not in the perfscript library%s%s", rel,
                  ps_lua_dir ? " (nor under " : "", ps_lua_dir ? ps_lua_dir : "");
  if (ps_lua_dir) { lua_pushliteral(L, ")"); lua_concat(L, 2); }
  return 2;
}

/* library.dir() -> the live tree (--lua-dir, PERFSCRIPT_LUA_DIR) or nil: where a user's own
 * presets, builders and grid rules are looked for before the embedded ones. */
static int library_dir(lua_State *L) {
  if (ps_lua_dir) lua_pushstring(L, ps_lua_dir); else lua_pushnil(L);
  return 1;
}

/* library.list("perfscript/replay/golden") -> {"__init__.py", ...}: the names of the files
 * embedded directly in that library directory, sorted (the replay writes the executor's golden
 * package beside it; the live tree's own files are listed by the caller). */
static int library_list(lua_State *L) {
  lua_pushfstring(L, "lua/%s/", luaL_checkstring(L, 1));
  size_t plen;
  const char *prefix = lua_tolstring(L, -1, &plen);
  lua_newtable(L);
  lua_Integer n = 0;
  for (const ps_embedded_file *e = ps_embedded_files; e->path; e++) {
    if (strncmp(e->path, prefix, plen) == 0 && !strchr(e->path + plen, '/')) {
      lua_pushstring(L, e->path + plen);
      lua_rawseti(L, -2, ++n);
    }
  }
  return 1;  /* the embedded table is generated sorted (cmake/embed_lua.cmake) */
}

static int luaopen_library(lua_State *L) {
  static const luaL_Reg funcs[] = {{"read", library_read}, {"dir", library_dir},
                                   {"list", library_list}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}

static void install_searcher(lua_State *L) {
  lua_getglobal(L, LUA_LOADLIBNAME);
  lua_getfield(L, -1, "searchers");
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = n; i >= 2; i--) {  /* shift to make room at position 2 */
    lua_rawgeti(L, -1, i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushcfunction(L, search_embedded);
  lua_rawseti(L, -2, 2);
  lua_pop(L, 2);
}

void ps_host_open(lua_State *L) {
  luaL_openlibs(L);
  preload(L, bundled_modules);
  preload(L, ps_c_modules);
  install_searcher(L);
}

/* ---- errors ---------------------------------------------------------------------------- */

void ps_message(const char *progname, const char *msg) {
  if (progname) fprintf(stderr, "%s: ", progname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}

/* A user error (perfscript.fail) is a table with field 'message' and no need for a traceback:
 * the recipe already said what is wrong. Everything else gets one, as in lua.c. */
int ps_msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (lua_type(L, 1) == LUA_TTABLE && lua_getfield(L, 1, "message") == LUA_TSTRING)
      return 1;
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int ps_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    ps_message(PS_PROGNAME, msg ? msg : "(error without a message)");
    lua_pop(L, 1);
  }
  return status;
}

/* ---- Ctrl-C: as lua.c, set a hook from the signal handler and raise at the next hook point */

static lua_State *running_state = NULL;

static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_sigint(int sig) {
  int flags = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  signal(sig, SIG_DFL);  /* a second Ctrl-C kills the process */
  lua_sethook(running_state, stop_hook, flags, 1);
}

int ps_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, ps_msghandler);
  lua_insert(L, base);
  running_state = L;
  signal(SIGINT, on_sigint);
  int status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}
