/* The REPL, as lua.c's: an expression first ("return <line>"), then a statement that may run
 * over several lines until it compiles (a syntax error ending in "<eof>" means "incomplete").
 * Readline with history and completion of globals and fields on a terminal; plain lines
 * without prompts otherwise, so tests can drive it through a pipe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include <lauxlib.h>

#include "host.h"

#define EOFMARK "<eof>"
#define MAXINPUT 4096
#define HISTORY_SIZE 2000

static lua_State *repl_state = NULL;
static int use_readline = 0;
static char history_path[4096];

/* ---- input --------------------------------------------------------------------------- */

static const char *get_prompt(lua_State *L, int first) {
  const char *p = NULL;
  if (lua_getglobal(L, first ? "_PROMPT" : "_PROMPT2") == LUA_TSTRING)
    p = lua_tostring(L, -1);  /* stays alive: the global holds it */
  lua_pop(L, 1);
  return p ? p : (first ? "> " : ">> ");
}

/* Pushes the next line (without its newline); returns 0 at end of input. */
static int push_line(lua_State *L, int first) {
  char buf[MAXINPUT];
  char *line = buf;
  if (use_readline) {
    line = readline(get_prompt(L, first));
    if (line == NULL) return 0;
  } else {
    if (fgets(buf, sizeof buf, stdin) == NULL) return 0;
    size_t len = strlen(buf);
    if (len > 0 && buf[len - 1] == '\n') buf[len - 1] = '\0';
  }
  if (first && line[0] == '=')  /* the 5.2 habit: "=expr" */
    lua_pushfstring(L, "return %s", line + 1);
  else
    lua_pushstring(L, line);
  if (line != buf) free(line);
  return 1;
}

static void save_line(const char *line) {
  if (use_readline && line[0] != '\0') {
    add_history(line);
    if (history_path[0]) append_history(1, history_path);
  }
}

/* ---- compile --------------------------------------------------------------------------- */

static int incomplete(lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    if (lmsg >= sizeof(EOFMARK) - 1 && strcmp(msg + lmsg - (sizeof(EOFMARK) - 1), EOFMARK) == 0) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;
}

/* Line on top; try it as "return <line>;". On success the chunk replaces... stays on top. */
static int add_return(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK) {
    lua_remove(L, -2);  /* the modified line */
    save_line(line);
  } else {
    lua_pop(L, 2);  /* error and modified line */
  }
  return status;
}

static int multi_line(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    if (!incomplete(L, status) || !push_line(L, 0)) {
      save_line(line);
      return status;
    }
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/* Reads a whole statement; leaves its compiled chunk (or an error) on the stack. */
static int load_line(lua_State *L) {
  lua_settop(L, 0);
  if (!push_line(L, 1)) return -1;
  int status = add_return(L);
  if (status != LUA_OK) status = multi_line(L);
  lua_remove(L, 1);
  return status;
}

/* ---- output ---------------------------------------------------------------------------- */

/* Prints results through perfscript.pretty (tables readably), or print if that is missing. */
static void print_results(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_getglobal(L, "require");
  lua_pushliteral(L, "perfscript.pretty");
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    lua_getfield(L, -1, "print");
    lua_remove(L, -2);
  } else {
    lua_pop(L, 1);
    lua_getglobal(L, "print");
  }
  lua_pushvalue(L, 1);  /* the first result: kept as _ for the next line (save(_, "x.csv")) */
  lua_setglobal(L, "_");
  lua_insert(L, 1);
  if (lua_pcall(L, n, 0, 0) != LUA_OK)
    ps_message(PS_PROGNAME, lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1)));
}

/* ---- completion ------------------------------------------------------------------------ */

static char **matches = NULL;
static size_t nmatches = 0, matches_cap = 0;

static void add_match(const char *s) {
  if (nmatches + 1 >= matches_cap) {
    size_t cap = matches_cap ? matches_cap * 2 : 32;
    char **m = realloc(matches, cap * sizeof *m);
    if (m == NULL) return;
    matches = m;
    matches_cap = cap;
  }
  char *copy = strdup(s);
  if (copy) matches[nmatches++] = copy;
}

/* The rule that keeps fields and methods apart: after ':' only functions are offered (the
 * methods: db:kernels, not db:MatMulV2); after '.' on a table, the functions its metatable's
 * __index provides are not (they are methods, called with ':': db.MatMulV2, not db.kernels).
 * A userdata's methods are offered after either, as before. */
static void collect_keys(lua_State *L, int t, const char *head, size_t headlen, char sep,
                         const char *word, size_t wordlen, int depth, int base_is_table) {
  if (depth > 3 || !lua_istable(L, t)) return;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int is_func = lua_type(L, -1) == LUA_TFUNCTION;
    int wanted = sep == ':' ? is_func : !(sep == '.' && depth > 0 && base_is_table && is_func);
    if (wanted && lua_type(L, -2) == LUA_TSTRING) {
      size_t klen;
      const char *k = lua_tolstring(L, -2, &klen);
      if (klen >= wordlen && strncmp(k, word, wordlen) == 0 && (k[0] != '_' || word[0] == '_')) {
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addlstring(&b, head, headlen);
        if (sep) luaL_addchar(&b, sep);
        luaL_addlstring(&b, k, klen);
        luaL_pushresult(&b);
        add_match(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  /* methods reached through the metatable's __index table */
  if (lua_getmetatable(L, t)) {
    if (lua_getfield(L, -1, "__index") == LUA_TTABLE)
      collect_keys(L, lua_gettop(L), head, headlen, sep, word, wordlen, depth + 1, base_is_table);
    lua_pop(L, 2);
  }
}

/* Pushes the value named by a dotted path ("db.kernels" of "db.kernels.x"), or nil. */
static void push_path(lua_State *L, const char *path, size_t len) {
  lua_pushglobaltable(L);
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || path[i] == '.' || path[i] == ':') {
      if (lua_isnil(L, -1)) return;
      if (lua_istable(L, -1) || luaL_getmetafield(L, -1, "__index") != LUA_TNIL) {
        if (!lua_istable(L, -1)) {  /* userdata: look in its __index table */
          lua_remove(L, -2);
          if (!lua_istable(L, -1)) { lua_pop(L, 1); lua_pushnil(L); return; }
        }
        lua_pushlstring(L, path + start, i - start);
        lua_gettable(L, -2);
        lua_remove(L, -2);
      } else {
        lua_pop(L, 1);
        lua_pushnil(L);
        return;
      }
      start = i + 1;
    }
  }
}

static char *match_generator(const char *text, int state) {
  static size_t next;
  (void)text;
  if (state == 0) next = 0;
  return next < nmatches ? strdup(matches[next++]) : NULL;  /* readline frees what it gets */
}

/* Inside a string argument (db:lookup("Mat<Tab>) the candidates come from Lua:
 * perfscript.repl.complete_string(word, line_before_the_quote) returns an array. A single
 * match is closed with the quote it was opened with (readline's rule). */
static void complete_in_string(lua_State *L, const char *text, int start) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "perfscript.repl");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) return;
  if (lua_getfield(L, -1, "complete_string") != LUA_TFUNCTION) return;
  lua_pushstring(L, text);
  lua_pushlstring(L, rl_line_buffer, (size_t)(start - 1));
  if (lua_pcall(L, 2, 1, 0) != LUA_OK || !lua_istable(L, -1)) return;
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, -1, i) == LUA_TSTRING) add_match(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
}

static char **complete(const char *text, int start, int end) {
  (void)end;
  lua_State *L = repl_state;
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0';
  for (size_t i = 0; i < nmatches; i++) free(matches[i]);
  nmatches = 0;
  int top = lua_gettop(L);
  if (start > 0 && (rl_line_buffer[start - 1] == '"' || rl_line_buffer[start - 1] == '\'')) {
    complete_in_string(L, text, start);
    lua_settop(L, top);
    return nmatches ? rl_completion_matches(text, match_generator) : NULL;
  }
  const char *sep = strrchr(text, '.');
  const char *colon = strrchr(text, ':');
  if (colon > sep) sep = colon;
  if (sep) {
    size_t headlen = (size_t)(sep - text);
    push_path(L, text, headlen);
    int base_is_table = lua_istable(L, -1);
    if (!base_is_table && luaL_getmetafield(L, -1, "__index") != LUA_TNIL)
      lua_remove(L, -2);
    collect_keys(L, lua_gettop(L), text, headlen, *sep, sep + 1, strlen(sep + 1), 0, base_is_table);
  } else {
    lua_pushglobaltable(L);
    collect_keys(L, lua_gettop(L), "", 0, 0, text, strlen(text), 0, 1);
  }
  lua_settop(L, top);
  if (nmatches == 0) return NULL;
  return rl_completion_matches(text, match_generator);
}

static void setup_readline(void) {
  rl_readline_name = "perfscript";
  rl_basic_word_break_characters = " \t\n\"\\'><=;+-*/%^~#{}()[],";
  rl_attempted_completion_function = complete;
  const char *home = getenv("HOME");
  if (home && *home) {
    snprintf(history_path, sizeof history_path, "%s/.perfscript_history", home);
    read_history(history_path);
    FILE *touch = fopen(history_path, "a");  /* append_history needs the file to exist */
    if (touch) fclose(touch);
  }
  stifle_history(HISTORY_SIZE);
}

void ps_repl(lua_State *L) {
  repl_state = L;
  use_readline = isatty(0);
  if (use_readline) setup_readline();
  lua_getglobal(L, "require");  /* help(), save(), perf: the REPL's comforts */
  lua_pushliteral(L, "perfscript.repl");
  int st = ps_docall(L, 1, 1);
  if (st == LUA_OK && lua_istable(L, -1) && lua_getfield(L, -1, "interactive") == LUA_TFUNCTION)
    st = ps_docall(L, 0, 0);
  ps_report(L, st);
  lua_settop(L, 0);
  int status;
  while ((status = load_line(L)) != -1) {
    if (status == LUA_OK) status = ps_docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK)
      print_results(L);
    else
      ps_report(L, status);
  }
  lua_settop(L, 0);
  if (use_readline) {
    if (history_path[0]) history_truncate_file(history_path, HISTORY_SIZE);
    fputc('\n', stdout);
  }
  fflush(stdout);
  for (size_t i = 0; i < nmatches; i++) free(matches[i]);
  free(matches);
  matches = NULL;
  nmatches = matches_cap = 0;
}
