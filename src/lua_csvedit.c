/* perfscript.csvedit: rewrite a CSV file in one streaming pass, for database write-back of
 * files too large to hold as Lua tables.
 *   csvedit.rewrite(src, dst, {
 *     header = {"col", ...},           output header
 *     map = {i1, i2, ...},             source column (1-based) of each output column; 0: empty
 *     edits = {[row] = {[col] = "v"}}, replacements, by data row (1-based) and output column
 *     delete = {[row] = true},         rows left out
 *     append = {{...}, ...},           output rows added at the end
 *     eol = "\n" | "\r\n", bom = bool  (default: keep the source's style)
 *   }) -> "created" | "replaced" | "unchanged", rows written   or nil, message
 * src may be nil (a new file) or equal to dst: the output is written to a temporary file and
 * renamed over dst only on success, so dst stays whole on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "csvread.h"
#include "csvwrite.h"
#include "luabind.h"

typedef struct ctx {
  ps_csv_reader *r;
  ps_csv_writer w;
  int wopen;
  const char **f;
  size_t *l;
  char *buf;             /* one formatted row: a single fwrite per row */
  size_t cap;
} ctx;

static int need(ctx *c, size_t n) {
  if (n <= c->cap) return 0;
  size_t cap = c->cap ? c->cap : 4096;
  while (cap < n) cap *= 2;
  char *b = realloc(c->buf, cap);
  if (!b) return -1;
  c->buf = b;
  c->cap = cap;
  return 0;
}

/* Minimal quoting as csvwrite.h (quote a field holding a comma, quote, CR or LF). */
static int put_row(ctx *c, size_t n, char *err, size_t es) {
  size_t o = 0;
  if (n == 1 && c->l[0] == 0) return ps_csv_writer_row(&c->w, c->f, c->l, n, err, es);
  for (size_t j = 0; j < n; j++) {
    const char *s = c->f[j];
    size_t len = c->l[j];
    if (need(c, o + 2 * len + 8) != 0) goto oom;
    if (j) c->buf[o++] = ',';
    int quote = 0;
    for (size_t k = 0; k < len && !quote; k++)
      quote = s[k] == ',' || s[k] == '"' || s[k] == '\r' || s[k] == '\n';
    if (!quote) {
      memcpy(c->buf + o, s, len);
      o += len;
    } else {
      c->buf[o++] = '"';
      for (size_t k = 0; k < len; k++) {
        if (s[k] == '"') c->buf[o++] = '"';
        c->buf[o++] = s[k];
      }
      c->buf[o++] = '"';
    }
  }
  size_t el = strlen(c->w.eol);
  if (need(c, o + el) != 0) goto oom;
  memcpy(c->buf + o, c->w.eol, el);
  o += el;
  if (fwrite(c->buf, 1, o, c->w.file.fp) != o) {
    snprintf(err, es, "%s: write failed", c->w.file.path);
    return -1;
  }
  c->w.rows++;
  return 0;
oom:
  snprintf(err, es, "out of memory");
  return -1;
}

static void ctx_close(ctx *c) {
  if (c->r) ps_csv_close(c->r);
  if (c->wopen) ps_csv_writer_abort(&c->w);
  free(c->f);
  free(c->l);
  free(c->buf);
  c->buf = NULL;
  c->r = NULL;
  c->wopen = 0;
  c->f = NULL;
  c->l = NULL;
}

/* Writes the array at stack index t (strings) as one row of n fields. */
static int write_array(lua_State *L, ctx *c, int t, size_t n, char *err, size_t es) {
  for (size_t j = 0; j < n; j++) {
    lua_rawgeti(L, t, (lua_Integer)j + 1);
    size_t len = 0;
    const char *s = lua_tolstring(L, -1, &len);
    c->f[j] = s ? s : "";
    c->l[j] = s ? len : 0;
    lua_pop(L, 1); /* still referenced by the table */
  }
  return put_row(c, n, err, es);
}

static int l_rewrite(lua_State *L) {
  const char *src = luaL_optstring(L, 1, NULL);
  const char *dst = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_getfield(L, 3, "header");
  int header = lua_gettop(L);
  luaL_checktype(L, header, LUA_TTABLE);
  lua_getfield(L, 3, "map");
  int map = lua_gettop(L);
  lua_getfield(L, 3, "edits");
  int edits = lua_gettop(L);
  lua_getfield(L, 3, "delete");
  int del = lua_gettop(L);
  lua_getfield(L, 3, "append");
  int append = lua_gettop(L);
  lua_getfield(L, 3, "eol");
  const char *eol = lua_tostring(L, -1);
  int bom = -1;
  if (lua_getfield(L, 3, "bom") != LUA_TNIL) bom = lua_toboolean(L, -1);
  size_t n = lua_rawlen(L, header);
  if (n == 0) return luaL_error(L, "csvedit.rewrite: empty header");
  size_t *srcidx = lua_newuserdatauv(L, n * sizeof *srcidx, 0);
  for (size_t j = 0; j < n; j++) {
    srcidx[j] = 0;
    if (lua_istable(L, map)) {
      lua_rawgeti(L, map, (lua_Integer)j + 1);
      srcidx[j] = (size_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  ctx c = {0};
  c.f = calloc(n, sizeof *c.f);
  c.l = calloc(n, sizeof *c.l);
  char err[700];
  if (!c.f || !c.l) {
    ctx_close(&c);
    return luaL_error(L, "out of memory");
  }
  if (src) {
    c.r = ps_csv_open(src, 0, err, sizeof err);
    if (!c.r) {
      ctx_close(&c);
      return ps_fail(L, err);
    }
  }
  if (ps_csv_writer_open(&c.w, dst, eol, bom, err, sizeof err) != 0) {
    ctx_close(&c);
    return ps_fail(L, err);
  }
  c.wopen = 1;
  lua_Integer written = 0;
  if (write_array(L, &c, header, n, err, sizeof err) != 0) goto fail;
  if (c.r) {
    ps_csv_record rec;
    int st = ps_csv_next(c.r, &rec); /* the source header */
    lua_Integer row = 0;
    while (st > 0 && (st = ps_csv_next(c.r, &rec)) > 0) {
      row++;
      if (lua_istable(L, del) && lua_rawgeti(L, del, row) != LUA_TNIL && lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        continue;
      }
      if (lua_istable(L, del)) lua_pop(L, 1);
      int e = 0;
      if (lua_istable(L, edits)) {
        if (lua_rawgeti(L, edits, row) == LUA_TTABLE) e = lua_gettop(L);
        else lua_pop(L, 1);
      }
      for (size_t j = 0; j < n; j++) {
        size_t i = srcidx[j];
        c.f[j] = "";
        c.l[j] = 0;
        if (i >= 1 && i <= rec.nfields) {
          c.f[j] = rec.fields[i - 1];
          c.l[j] = rec.lens[i - 1];
        }
      }
      if (e) { /* only the edited cells: walk the (small) edit table */
        lua_pushnil(L);
        while (lua_next(L, e)) {
          lua_Integer j = lua_tointeger(L, -2);
          size_t len;
          const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
          if (s && j >= 1 && (size_t)j <= n) c.f[j - 1] = s, c.l[j - 1] = len;
          lua_pop(L, 1); /* the edits table keeps the string alive */
        }
      }
      if (e) lua_settop(L, e - 1);
      if (put_row(&c, n, err, sizeof err) != 0) goto fail;
      written++;
    }
    if (st < 0) {
      snprintf(err, sizeof err, "%s", ps_csv_error(c.r));
      goto fail;
    }
  }
  if (lua_istable(L, append)) {
    lua_Integer na = (lua_Integer)lua_rawlen(L, append);
    for (lua_Integer k = 1; k <= na; k++) {
      lua_rawgeti(L, append, k);
      if (!lua_istable(L, -1)) {
        ctx_close(&c);
        return luaL_error(L, "csvedit.rewrite: append[%d] is not a table", (int)k);
      }
      int t = lua_gettop(L);
      if (write_array(L, &c, t, n, err, sizeof err) != 0) goto fail;
      lua_pop(L, 1);
      written++;
    }
  }
  if (c.r) {
    ps_csv_close(c.r);
    c.r = NULL;
  }
  c.wopen = 0;
  int status = ps_csv_writer_commit(&c.w, 1, err, sizeof err);
  ctx_close(&c);
  int nret = ps_push_write_result(L, status, err);
  if (nret == 1) {
    lua_pushinteger(L, written);
    nret = 2;
  }
  return nret;
fail:
  ctx_close(&c);
  return ps_fail(L, err);
}

int luaopen_perfscript_csvedit(lua_State *L) {
  static const luaL_Reg funcs[] = {{"rewrite", l_rewrite}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
