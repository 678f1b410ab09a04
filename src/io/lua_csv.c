/* perfscript.csv: the streaming reader and the atomic writer, for Lua.
 *   local r = assert(csv.open(path, {trim = true, header = true, reuse = false}))
 *   r:header(), r:column(name), r:columns{names}, for fields in r:lines() do ... end,
 *   r:read() -> fields | nil (end) | nil, "file:line: reason", r:line(), r:close()
 *   local w = assert(csv.writer(path, {eol = "\r\n" | "\n", bom = bool}))
 *   w:write{...}, w:commit{if_changed = true} -> "created" | "replaced" | "unchanged", w:abort()
 *   csv.quote(v) -> v as one CSV field (minimal quoting, csvwrite.h; v through tostring)
 *   csv.format_row(fields [, eol]) -> the record as CSV text, eol appended when given
 *   csv.is_lfs_pointer(path) -> true when the file is a Git LFS pointer, not data */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "csvread.h"
#include "csvsniff.h"
#include "csvwrite.h"
#include "luabind.h"

#define READER "perfscript.csv.reader"
#define WRITER "perfscript.csv.writer"

typedef struct reader_ud {
  ps_csv_reader *r;
  int reuse;             /* hand out the same table each time (fast loops that copy) */
  long last_line;
  size_t ncols;
  char **cols;           /* header copy for column lookups */
} reader_ud;

static reader_ud *check_reader(lua_State *L) {
  reader_ud *u = luaL_checkudata(L, 1, READER);
  if (u->r == NULL) luaL_error(L, "attempt to use a closed CSV reader");
  return u;
}

static int opt_bool(lua_State *L, int t, const char *k, int def) {
  if (lua_type(L, t) != LUA_TTABLE) return def;
  int v = lua_getfield(L, t, k) == LUA_TNIL ? def : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Pushes the record as a fresh array, or fills the reused one (uservalue 2). */
static void push_record(lua_State *L, int ud_index, reader_ud *u, const ps_csv_record *rec) {
  if (u->reuse) {
    lua_getiuservalue(L, ud_index, 2);
    lua_Integer old = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = (lua_Integer)rec->nfields + 1; i <= old; i++) {
      lua_pushnil(L);
      lua_rawseti(L, -2, i);
    }
  } else {
    lua_createtable(L, (int)rec->nfields, 0);
  }
  for (size_t i = 0; i < rec->nfields; i++) {
    lua_pushlstring(L, rec->fields[i], rec->lens[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* 1 record pushed; 0 end; -1 error message pushed. */
static int next_record(lua_State *L, int ud_index, reader_ud *u) {
  ps_csv_record rec;
  int st = ps_csv_next(u->r, &rec);
  if (st < 0) {
    lua_pushstring(L, ps_csv_error(u->r));
    return -1;
  }
  if (st == 0) return 0;
  u->last_line = rec.line;
  push_record(L, ud_index, u, &rec);
  return 1;
}

static int csv_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  unsigned flags = opt_bool(L, 2, "trim", 0) ? PS_CSV_TRIM : 0;
  int want_header = opt_bool(L, 2, "header", 1);
  reader_ud *u = lua_newuserdatauv(L, sizeof *u, 2);
  memset(u, 0, sizeof *u);
  luaL_setmetatable(L, READER);
  int ud = lua_gettop(L);
  u->reuse = opt_bool(L, 2, "reuse", 0);
  char err[600];
  u->r = ps_csv_open(path, flags, err, sizeof err);
  if (u->r == NULL) {
    return ps_fail(L, err);
  }
  lua_newtable(L);
  lua_setiuservalue(L, ud, 2);
  if (want_header) {
    ps_csv_record rec;
    int st = ps_csv_next(u->r, &rec);
    if (st < 0) {
      lua_pushstring(L, ps_csv_error(u->r));
      ps_csv_close(u->r);
      u->r = NULL;
      luaL_pushfail(L);
      lua_insert(L, -2);
      return 2;
    }
    lua_createtable(L, st ? (int)rec.nfields : 0, 0);
    if (st > 0) {
      u->cols = calloc(rec.nfields ? rec.nfields : 1, sizeof(char *));
      for (size_t i = 0; i < rec.nfields && u->cols; i++) {
        lua_pushlstring(L, rec.fields[i], rec.lens[i]);
        u->cols[i] = strdup(rec.fields[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      u->ncols = u->cols ? rec.nfields : 0;
      u->last_line = rec.line;
    }
  } else {
    lua_newtable(L);
  }
  lua_setiuservalue(L, ud, 1);
  lua_settop(L, ud);
  return 1;
}

static int r_header(lua_State *L) {
  check_reader(L);
  lua_getiuservalue(L, 1, 1);
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  lua_createtable(L, (int)n, 0);  /* a copy: callers may edit theirs */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -2, i);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

static int r_column(lua_State *L) {
  reader_ud *u = check_reader(L);
  const char *name = luaL_checkstring(L, 2);
  int i = ps_csv_find_column(u->cols, u->ncols, name);
  if (i < 0) luaL_pushfail(L);
  else lua_pushinteger(L, i + 1);
  return 1;
}

/* r:columns{"A", "B", ...} -> {A = 1, B = 7} or nil, "file: missing columns: A, B" */
static int r_columns(lua_State *L) {
  reader_ud *u = check_reader(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_newtable(L);  /* 3: result */
  lua_newtable(L);  /* 4: missing names */
  lua_Integer n = luaL_len(L, 2), nmissing = 0;
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, 2, k);
    const char *name = luaL_checkstring(L, -1);
    int i = ps_csv_find_column(u->cols, u->ncols, name);
    if (i < 0) {
      lua_rawseti(L, 4, ++nmissing);
    } else {
      lua_pushinteger(L, i + 1);
      lua_rawset(L, 3);
    }
  }
  if (nmissing == 0) {
    lua_settop(L, 3);
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "%s: missing column%s: ", ps_csv_path(u->r), nmissing > 1 ? "s" : "");
  luaL_addvalue(&b);
  for (lua_Integer k = 1; k <= nmissing; k++) {
    if (k > 1) luaL_addstring(&b, ", ");
    lua_rawgeti(L, 4, k);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  luaL_pushfail(L);
  lua_insert(L, -2);
  return 2;
}

static int r_read(lua_State *L) {
  reader_ud *u = check_reader(L);
  int st = next_record(L, 1, u);
  if (st == 1) return 1;
  luaL_pushfail(L);
  if (st < 0) {
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

static int lines_iter(lua_State *L) {
  reader_ud *u = luaL_checkudata(L, lua_upvalueindex(1), READER);
  if (u->r == NULL) return luaL_error(L, "attempt to read from a closed CSV reader");
  int st = next_record(L, lua_upvalueindex(1), u);
  if (st < 0) return lua_error(L);  /* "file:line: reason": a loop must not end silently */
  if (st == 0) { lua_pushnil(L); return 1; }
  return 1;
}

static int r_lines(lua_State *L) {
  check_reader(L);
  lua_pushvalue(L, 1);
  lua_pushcclosure(L, lines_iter, 1);
  return 1;
}

static int r_line(lua_State *L) {
  reader_ud *u = check_reader(L);
  lua_pushinteger(L, u->last_line);
  return 1;
}

static int r_path(lua_State *L) {
  lua_pushstring(L, ps_csv_path(check_reader(L)->r));
  return 1;
}

/* bytes read so far, file size: for progress bars */
static int r_progress(lua_State *L) {
  reader_ud *u = check_reader(L);
  lua_pushinteger(L, (lua_Integer)ps_csv_bytes_read(u->r));
  lua_pushinteger(L, (lua_Integer)ps_csv_file_size(u->r));
  return 2;
}

/* The file's style, for a writer that must keep it: eol ("\r\n" or "\n"), bom (boolean). */
static int r_style(lua_State *L) {
  reader_ud *u = check_reader(L);
  const char *eol = ps_csv_eol(u->r);
  lua_pushstring(L, eol ? eol : "\n");
  lua_pushboolean(L, ps_csv_has_bom(u->r));
  return 2;
}

static int r_close(lua_State *L) {
  reader_ud *u = luaL_checkudata(L, 1, READER);
  ps_csv_close(u->r);
  u->r = NULL;
  if (u->cols) {
    for (size_t i = 0; i < u->ncols; i++) free(u->cols[i]);
    free(u->cols);
    u->cols = NULL;
  }
  return 0;
}

static int r_tostring(lua_State *L) {
  reader_ud *u = luaL_checkudata(L, 1, READER);
  if (u->r) lua_pushfstring(L, "csv reader (%s, line %d)", ps_csv_path(u->r), (int)u->last_line);
  else lua_pushliteral(L, "csv reader (closed)");
  return 1;
}

/* ---- writer ---------------------------------------------------------------------------- */

typedef struct writer_ud {
  ps_csv_writer w;
  int open;
  const char **fields;
  size_t *lens;
  size_t cap;
} writer_ud;

static writer_ud *check_writer(lua_State *L) {
  writer_ud *u = luaL_checkudata(L, 1, WRITER);
  if (!u->open) luaL_error(L, "attempt to use a committed or aborted CSV writer");
  return u;
}

static int csv_writer(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const char *eol = NULL;
  int bom = -1;
  if (lua_type(L, 2) == LUA_TTABLE) {
    if (lua_getfield(L, 2, "eol") == LUA_TSTRING) {
      eol = lua_tostring(L, -1);
      luaL_argcheck(L, strcmp(eol, "\n") == 0 || strcmp(eol, "\r\n") == 0, 2,
                    "eol must be \"\\n\" or \"\\r\\n\"");
      eol = eol[0] == '\r' ? "\r\n" : "\n";
    }
    if (lua_getfield(L, 2, "bom") != LUA_TNIL) bom = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  writer_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  memset(u, 0, sizeof *u);
  luaL_setmetatable(L, WRITER);
  char err[600];
  if (ps_csv_writer_open(&u->w, path, eol, bom, err, sizeof err) != 0) {
    return ps_fail(L, err);
  }
  u->open = 1;
  return 1;
}

static int w_write(lua_State *L) {
  writer_ud *u = check_writer(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t n = (size_t)luaL_len(L, 2);
  if (n > u->cap) {
    const char **f = realloc(u->fields, n * sizeof *f);
    size_t *l = f ? realloc(u->lens, n * sizeof *l) : NULL;
    if (f) u->fields = f;
    if (l == NULL) return luaL_error(L, "out of memory");
    u->lens = l;
    u->cap = n;
  }
  int top = lua_gettop(L);
  luaL_checkstack(L, (int)n + 1, "row too wide");
  for (size_t i = 0; i < n; i++) {
    int t = lua_rawgeti(L, 2, (lua_Integer)i + 1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER)
      return luaL_error(L, "row field %d is a %s (strings and numbers only)", (int)i + 1,
                        lua_typename(L, t));
    u->fields[i] = lua_tolstring(L, -1, &u->lens[i]);  /* kept alive on the stack */
  }
  char err[600];
  int st = ps_csv_writer_row(&u->w, u->fields, u->lens, n, err, sizeof err);
  lua_settop(L, top);
  if (st != 0) {
    return ps_fail(L, err);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int w_commit(lua_State *L) {
  writer_ud *u = check_writer(L);
  int if_changed = opt_bool(L, 2, "if_changed", 1);
  u->w.file.stage = ps_optstage(L, 2);
  char err[600];
  u->open = 0;
  return ps_push_write_result(L, ps_csv_writer_commit(&u->w, if_changed, err, sizeof err), err);
}

static int w_rows(lua_State *L) {
  writer_ud *u = luaL_checkudata(L, 1, WRITER);
  lua_pushinteger(L, u->w.rows);
  return 1;
}

static int w_abort(lua_State *L) {
  writer_ud *u = luaL_checkudata(L, 1, WRITER);
  if (u->open) ps_csv_writer_abort(&u->w);
  u->open = 0;
  free(u->fields);
  free(u->lens);
  u->fields = NULL;
  u->lens = NULL;
  u->cap = 0;
  return 0;
}

static int w_tostring(lua_State *L) {
  writer_ud *u = luaL_checkudata(L, 1, WRITER);
  lua_pushfstring(L, "csv writer (%s)", u->open ? u->w.file.path : "closed");
  return 1;
}

/* csv.quote(v) -> v (any value, through tostring) as one CSV field */
static int csv_quote(lua_State *L) {
  size_t len;
  const char *s = luaL_tolstring(L, 1, &len);
  if (!ps_csv_needs_quote(s, len)) return 1;
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, PS_CSV_QUOTED_MAX(len));
  luaL_pushresultsize(&b, ps_csv_quote(out, s, len));
  return 1;
}

/* csv.format_row(fields [, eol]) -> one record of CSV text (fields through tostring) */
static int csv_format_row(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *eol = luaL_optstring(L, 2, NULL);
  size_t n = (size_t)luaL_len(L, 1);
  luaL_checkstack(L, (int)n + 4, "row too wide");
  const char **fields = lua_newuserdatauv(L, n * (sizeof(char *) + sizeof(size_t)) + 1, 0);
  size_t *lens = (size_t *)(fields + n);
  int base = lua_gettop(L);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    fields[i] = luaL_tolstring(L, -1, &lens[i]);  /* kept alive on the stack */
    lua_remove(L, -2);
  }
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, ps_csv_row_max(lens, n, eol));
  size_t len = ps_csv_format_row(out, fields, lens, n, eol);
  luaL_pushresultsize(&b, len);
  lua_replace(L, base);
  lua_settop(L, base);
  return 1;
}

/* csv.is_lfs_pointer(path) -> true when the file is a Git LFS pointer (false when unreadable) */
static int csv_is_lfs_pointer(lua_State *L) {
  lua_pushboolean(L, ps_file_is_lfs_pointer(luaL_checkstring(L, 1)));
  return 1;
}

/* csv.aliases(name) -> array of the names that mean the same column */
static int csv_aliases(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *const *g = ps_csv_aliases(name);
  lua_newtable(L);
  if (g == NULL) {
    lua_pushstring(L, name);
    lua_rawseti(L, -2, 1);
  }
  for (int i = 0; g && g[i]; i++) {
    lua_pushstring(L, g[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

int luaopen_perfscript_csv(lua_State *L) {
  static const luaL_Reg reader_meta[] = {
    {"__gc", r_close}, {"__close", r_close}, {"__tostring", r_tostring}, {NULL, NULL}};
  static const luaL_Reg reader_methods[] = {
    {"header", r_header}, {"column", r_column}, {"columns", r_columns}, {"read", r_read},
    {"lines", r_lines}, {"line", r_line}, {"path", r_path}, {"progress", r_progress},
    {"style", r_style}, {"close", r_close}, {NULL, NULL}};
  static const luaL_Reg writer_meta[] = {
    {"__gc", w_abort}, {"__close", w_abort}, {"__tostring", w_tostring}, {NULL, NULL}};
  static const luaL_Reg writer_methods[] = {
    {"write", w_write}, {"commit", w_commit}, {"abort", w_abort}, {"rows", w_rows},
    {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"open", csv_open}, {"writer", csv_writer}, {"aliases", csv_aliases}, {"quote", csv_quote},
    {"format_row", csv_format_row}, {"is_lfs_pointer", csv_is_lfs_pointer}, {NULL, NULL}};
  ps_newclass(L, READER, reader_meta, reader_methods);
  ps_newclass(L, WRITER, writer_meta, writer_methods);
  luaL_newlib(L, funcs);
  return 1;
}
