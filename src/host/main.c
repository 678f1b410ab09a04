/* perfscript [options] [script [args]]: the command line, modelled on Lua 5.4's lua.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "host.h"
#include "lifetime.h"

static const char *progname = PS_PROGNAME;

static void print_usage(FILE *out) {
  fprintf(out,
    "usage: %s [options] [script [args]]\n"
    "Runs a perfscript recipe (a Lua 5.4 script), or the REPL when there is none.\n"
    "Available options are:\n"
    "  -e stat       execute string 'stat'\n"
    "  -i            enter the REPL after running 'script'\n"
    "  -l mod        require library 'mod' into global 'mod'\n"
    "  -v            show version information\n"
    "  -E            ignore environment variables (PERFSCRIPT_INIT, PERFSCRIPT_LUA_DIR)\n"
    "  -W            turn warnings on\n"
    "  --db DIR      open the database directory DIR as global 'db' and enter the REPL\n"
    "  --lua-dir DIR load perfscript Lua modules (presets, builders, grid rules) from DIR first\n"
    "  -h, --help    show this help\n"
    "  --            stop handling options\n"
    "  -             stop handling options and execute stdin\n"
    "Recipes answer --help themselves: %s recipes/parse_profile.lua --help\n",
    progname, progname);
}

static void print_version(void) {
  printf("perfscript %s (%s)\n", PERFSCRIPT_VERSION, LUA_RELEASE);
  fflush(stdout);
}

/* ---- argument scanning ------------------------------------------------------------------- */

enum { HAS_ERROR = 1, HAS_I = 2, HAS_V = 4, HAS_E = 8, HAS_LOWER_E = 16, HAS_HELP = 32,
       HAS_DB = 64 };

/* Returns the flags; *first is the index of the script (or argc when there is none). */
static int collect_args(char **argv, int *first) {
  int flags = 0;
  int i;
  for (i = 1; argv[i] != NULL; i++) {
    *first = i;
    if (argv[i][0] != '-')
      return flags;
    if (strcmp(argv[i], "-") == 0)
      return flags;
    if (strcmp(argv[i], "--") == 0) {
      *first = i + 1;
      return flags;
    }
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      flags |= HAS_HELP;
    } else if (strcmp(argv[i], "--db") == 0 || strcmp(argv[i], "--lua-dir") == 0) {
      if (argv[i + 1] == NULL) { *first = i; return flags | HAS_ERROR; }
      if (argv[i][2] == 'd') flags |= HAS_DB;
      i++;
    } else if (strcmp(argv[i], "-E") == 0) {
      flags |= HAS_E;
    } else if (strcmp(argv[i], "-W") == 0) {
      /* handled in run_args */
    } else if (strcmp(argv[i], "-i") == 0) {
      flags |= HAS_I | HAS_V;
    } else if (strcmp(argv[i], "-v") == 0) {
      flags |= HAS_V;
    } else if (strcmp(argv[i], "-e") == 0 || strcmp(argv[i], "-l") == 0) {
      if (argv[i][1] == 'e') flags |= HAS_LOWER_E;
      if (argv[i + 1] == NULL || argv[i + 1][0] == '-') { *first = i; return flags | HAS_ERROR; }
      i++;
    } else {
      *first = i;
      return flags | HAS_ERROR;
    }
  }
  *first = i;
  return flags;
}

/* arg[0] = script, arg[1..n] = its arguments, negative indices = the interpreter and options. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  int base = script == argc ? 0 : script;
  lua_createtable(L, argc - base, base + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - base);
  }
  lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = ps_docall(L, 0, 0);
  return ps_report(L, status);
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* require(name) into global name, as lua.c's -l. */
static int dolibrary(lua_State *L, const char *name) {
  lua_getglobal(L, "require");
  lua_pushstring(L, name);
  int status = ps_docall(L, 1, 1);
  if (status == LUA_OK) {
    const char *dot = strrchr(name, '.');
    lua_setglobal(L, dot ? dot + 1 : name);
  }
  return ps_report(L, status);
}

/* Lets a user's recipe require its own neighbours: <dir>/?.lua and <dir>/../?.lua (as a
 * project's recipes/x.lua loading "helpers.y"). The perfscript library never relies on it: its
 * presets, builders and grid rules are embedded modules (perfscript.models, ...). */
static void add_script_dir_to_path(lua_State *L, const char *script) {
  const char *slash = strrchr(script, '/');
  lua_getglobal(L, LUA_LOADLIBNAME);
  if (slash)
    lua_pushlstring(L, script, (size_t)(slash - script));
  else
    lua_pushliteral(L, ".");
  const char *dir = lua_tostring(L, -1);
  lua_getfield(L, -2, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s/../?.lua;%s/../?/init.lua;%s",
                  dir, dir, dir, dir, lua_tostring(L, -1));
  lua_setfield(L, -4, "path");
  lua_pop(L, 3);
}

static int handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0)
    fname = NULL;  /* stdin */
  else
    add_script_dir_to_path(L, fname);
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    lua_getglobal(L, "arg");
    if (!lua_istable(L, -1)) return luaL_error(L, "'arg' is not a table");
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
    lua_remove(L, -n - 1);
    status = ps_docall(L, n, 0);
  }
  return ps_report(L, status);
}

/* Runs -e, -l, -W, --db and --lua-dir in order. Returns 0 when one of them fails. */
static int run_args(lua_State *L, char **argv, int script) {
  for (int i = 1; i < script; i++) {
    const char *opt = argv[i];
    if (strcmp(opt, "-e") == 0) {
      if (dostring(L, argv[++i], "=(command line)") != LUA_OK) return 0;
    } else if (strcmp(opt, "-l") == 0) {
      if (dolibrary(L, argv[++i]) != LUA_OK) return 0;
    } else if (strcmp(opt, "-W") == 0) {
      lua_warning(L, "@on", 0);
    } else if (strcmp(opt, "--db") == 0) {
      lua_getglobal(L, "require");
      lua_pushliteral(L, "perfscript.repl");
      int status = ps_docall(L, 1, 1);
      if (status == LUA_OK) {
        lua_getfield(L, -1, "open_db");
        lua_remove(L, -2);
        lua_pushstring(L, argv[++i]);
        status = ps_docall(L, 1, 0);
      }
      if (ps_report(L, status) != LUA_OK) return 0;
    } else if (strcmp(opt, "--lua-dir") == 0) {
      i++;  /* taken before the state was made */
    }
  }
  return 1;
}

static int handle_init(lua_State *L) {
  const char *init = getenv("PERFSCRIPT_INIT");
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dochunk(L, luaL_loadfile(L, init + 1));
  return dostring(L, init, "=PERFSCRIPT_INIT");
}

/* Everything runs in here, under lua_pcall, as lua.c's pmain. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script = argc;
  int flags = collect_args(argv, &script);
  luaL_checkversion(L);
  if (flags & HAS_ERROR) {
    const char *bad = argv[script];
    if (strcmp(bad, "-e") == 0 || strcmp(bad, "-l") == 0 || strcmp(bad, "--db") == 0 ||
        strcmp(bad, "--lua-dir") == 0)
      fprintf(stderr, "%s: '%s' needs an argument\n", progname, bad);
    else
      fprintf(stderr, "%s: unrecognized option '%s'\n", progname, bad);
    print_usage(stderr);
    return 0;
  }
  if (flags & HAS_HELP) {
    print_usage(stdout);
    lua_pushboolean(L, 1);
    return 1;
  }
  for (int i = 1; i < script; i++)
    if (strcmp(argv[i], "--lua-dir") == 0) ps_lua_dir = argv[i + 1];
  if (flags & HAS_E) {
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  } else {
    const char *dir = getenv("PERFSCRIPT_LUA_DIR");
    if (!ps_lua_dir && dir && *dir) ps_lua_dir = dir;
  }
  ps_host_open(L);
  if (flags & HAS_V) print_version();
  create_arg_table(L, argv, argc, script);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (!(flags & HAS_E) && handle_init(L) != LUA_OK) return 0;
  if (!run_args(L, argv, script)) return 0;
  if (script < argc && handle_script(L, argv + script) != LUA_OK) return 0;
  if ((flags & HAS_I) || (flags & HAS_DB)) {
    ps_repl(L);
  } else if (script == argc && !(flags & (HAS_LOWER_E | HAS_V))) {
    if (isatty(0)) {
      print_version();
      ps_repl(L);
    } else if (dochunk(L, luaL_loadfile(L, NULL)) != LUA_OK) {
      return 0;
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* Lua's allocator once the script has run (lifetime.h): a block given back is left to the
 * process's exit (lua_close frees every object one by one, a cache miss each: 5 ms after a
 * big import); blocks asked for still come (the finalisers run and may allocate). */
static void *exit_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud, (void)osize;
  return nsize == 0 ? NULL : realloc(ptr, nsize);
}

int main(int argc, char **argv) {
  /* over a file size limit (ulimit -f) a write fails with EFBIG, which the writers report,
   * instead of the signal killing the run mid-way (Python ignores it too) */
  signal(SIGXFSZ, SIG_IGN);
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    ps_message(argv[0], "cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int result = lua_toboolean(L, -1);
  ps_report(L, status);
  ps_set_exiting();
  if (ps_exiting()) lua_setallocf(L, exit_alloc, NULL);
  lua_close(L);
  return (result && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
