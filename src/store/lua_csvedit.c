/* perfscript.csvedit: rewrite a CSV file in one streaming pass, for database write-back of
 * files too large to hold as Lua tables.
 *   csvedit.rewrite(src, dst, {
 *     header = {"col", ...},           output header
 *     map = {i1, i2, ...},             source column (1-based) of each output column; 0: empty
 *     edits = {[row] = {[col] = "v"}}, replacements, by data row (1-based) and output column
 *     delete = {[row] = true},         rows left out
 *     append = {{...}, ...},           output rows added at the end
 *     eol = "\n" | "\r\n", bom = bool  (default: keep the source's style)
 *     stage = st                       perf.fs.stage(): only stage dst (src/io/stage.h)
 *   }) -> "created" | "replaced" | "unchanged", rows written   or nil, message
 * src may be nil (a new file) or equal to dst: the output is written to a temporary file and
 * renamed over dst only on success, so dst stays whole on any failure.
 * csvedit.merge (below) is the write-back merge policy of src/merge.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "csvread.h"
#include "csvwrite.h"
#include "luabind.h"
#include "merge.h"
#include "writeback_sig.h"

typedef struct ctx {
  ps_csv_reader *r;
  ps_csv_writer w;
  int wopen;
  const char **f;
  size_t *l;
} ctx;

/* One row through the one quoter (csvwrite.c). */
static int put_row(ctx *c, size_t n, char *err, size_t es) {
  return ps_csv_writer_row(&c->w, c->f, c->l, n, err, es);
}

static void ctx_close(ctx *c) {
  if (c->r) ps_csv_close(c->r);
  if (c->wopen) ps_csv_writer_abort(&c->w);
  free(c->f);
  free(c->l);
  c->r = NULL;
  c->wopen = 0;
  c->f = NULL;
  c->l = NULL;
}

/* The array at stack index t (strings) as n fields; the strings stay referenced by it. */
static void row_fields(lua_State *L, int t, size_t n, const char **f, size_t *l) {
  for (size_t j = 0; j < n; j++) {
    lua_rawgeti(L, t, (lua_Integer)j + 1);
    size_t len = 0;
    const char *s = lua_tolstring(L, -1, &len);
    f[j] = s ? s : "";
    l[j] = s ? len : 0;
    lua_pop(L, 1);
  }
}

/* Writes the array at stack index t (strings) as one row of n fields. */
static int write_array(lua_State *L, ctx *c, int t, size_t n, char *err, size_t es) {
  row_fields(L, t, n, c->f, c->l);
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
  ps_stage *stage = ps_optstage(L, 3);
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
  c.w.file.stage = stage;
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

/* ---- csvedit.merge: the write-back merge policy (src/store/merge.c) ----------------------------
 *   csvedit.merge(path, {
 *     op = stem, ep_default = "8" | nil,   the file's op name; EP Size when it has no column
 *     header = {...}, map = {...},         output columns and their source columns (1-based)
 *     fill = {[col] = "v"},                a value for every row of an output column
 *     src = {mb =, prof =, ["OP Type"] =, ...}  source columns (1-based, 0: absent) read
 *     mb_out = col,                        output column of the microbench duration
 *     copy = {{key, col}, ...},            update row fields copied into matched rows
 *     mcols = {col x 25},                  output columns of the packed counter means (row._m)
 *     updates = {[hash] = {mb =, record =, row =}},
 *     mode_all = bool, prune = bool,
 *     append = function(matched) -> rows  rows to append (tables keyed by column name, _m: packed
 *                                          counter means), given {[hash] = true} of the matches;
 *                                          their cells as csvedit.cells makes them
 *     stage = st                           perf.fs.stage(): only stage the file (src/io/stage.h)
 *     csv_name = "Add.csv",                the file's name, for the gap records
 *   }) -> {status, updated, unchanged, rows, written, gaps, deleted, duplicates, matched,
 *          applied = {[hash] = true} of the matches whose values were written}
 *   gaps: {op_type = op, csv_name, signature, mb_us, prof_us, diff_us, ratio} per matched
 *   row with both durations (the report's records)
 *   or nil, message */

static int opt_int(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  int v = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Lua-owned scratch memory (a userdata left on the stack until the call returns). */
static void *scratch(lua_State *L, size_t n) { return lua_newuserdatauv(L, n ? n : 1, 0); }

/* The values an update copies into its row, read from the Lua update when it is written
 * (ps_merge_load): its strings stay referenced by the options table. */
typedef struct loader {
  lua_State *L;
  int updates, copy;
  int keys;              /* {[key] = k} of the copied keys, or 0 when a key repeats */
  size_t ncopy;
  ps_merge_value *vals;  /* ncopy */
  double means[PS_NCOUNTERS];
} loader;

/* A copied value: the row's number or string at the top of the stack (kept alive by the row). */
static void copy_value(lua_State *L, int ty, ps_merge_value *v) {
  if (ty == LUA_TNUMBER) v->kind = PS_MERGE_NUM, v->num = lua_tonumber(L, -1);
  else if (ty == LUA_TSTRING) v->kind = PS_MERGE_STR, v->s = lua_tolstring(L, -1, &v->len);
}

static void load_update(void *ud, size_t i, ps_merge_update *x) {
  loader *ld = ud;
  lua_State *L = ld->L;
  (void)i;
  int top = lua_gettop(L);
  lua_rawgeti(L, ld->updates, (lua_Integer)x->hash);
  if (lua_getfield(L, -1, "row") == LUA_TTABLE) {
    int row = lua_gettop(L);
    for (size_t k = 0; k < ld->ncopy; k++) ld->vals[k] = (ps_merge_value){PS_MERGE_ABSENT, NULL, 0, 0};
    if (ld->keys) { /* the row's own fields (a dozen) looked up among the copied keys (25) */
      lua_pushnil(L);
      while (lua_next(L, row)) {
        lua_pushvalue(L, -2);
        lua_Integer k = lua_rawget(L, ld->keys) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
        lua_pop(L, 1);
        if (k >= 1 && (size_t)k <= ld->ncopy) copy_value(L, lua_type(L, -1), &ld->vals[k - 1]);
        lua_pop(L, 1);
      }
    } else {
      for (size_t k = 0; k < ld->ncopy; k++) {
        lua_rawgeti(L, ld->copy, (lua_Integer)k + 1);
        lua_rawgeti(L, -1, 1);
        copy_value(L, lua_gettable(L, row), &ld->vals[k]);
        lua_pop(L, 2);
      }
    }
    x->copy = ld->vals;
    size_t pl = 0;
    lua_getfield(L, row, "_m");
    const char *packed = lua_tolstring(L, -1, &pl);
    if (packed && pl == sizeof ld->means) {
      memcpy(ld->means, packed, sizeof ld->means);
      x->means = ld->means;
    }
  }
  lua_settop(L, top);
}

/* The incoming updates ({[hash] = {mb, record, row}}) as C structs in scratch memory; their
 * copied values come later through load_update. */
static ps_merge_update *read_updates(lua_State *L, int updates, size_t *nout) {
  size_t n = 0;
  if (lua_istable(L, updates)) {
    lua_pushnil(L);
    while (lua_next(L, updates)) {
      if (lua_isinteger(L, -2) && lua_istable(L, -1)) n++;
      lua_pop(L, 1);
    }
  }
  ps_merge_update *u = scratch(L, n * sizeof *u);
  size_t i = 0;
  if (n) {
    lua_pushnil(L);
    while (lua_next(L, updates)) {
      if (i < n && lua_isinteger(L, -2) && lua_istable(L, -1)) {
        int t = lua_gettop(L);
        ps_merge_update *x = &u[i++];
        *x = (ps_merge_update){.hash = (uint64_t)lua_tointeger(L, t - 1)};
        if (lua_getfield(L, t, "mb") == LUA_TSTRING) x->mb = lua_tolstring(L, -1, &x->mblen);
        x->record = (lua_getfield(L, t, "record"), lua_toboolean(L, -1));
        lua_settop(L, t);
      }
      lua_pop(L, 1);
    }
  }
  *nout = i;
  return u;
}

/* The options table at index sp as a ps_merge_opts (scratch memory on the Lua stack). */
static void read_opts(lua_State *L, int sp, ps_merge_opts *o) {
  const char *srcname[PS_MERGE_NSRC] = {[PS_MERGE_MB] = "mb", [PS_MERGE_PROF] = "prof"};
  for (int k = 0; k < PS_SIG_NCOLUMNS; k++) srcname[k] = ps_sig_columns[k]; /* same order */
  lua_getfield(L, sp, "header");
  int header = lua_gettop(L);
  luaL_argcheck(L, lua_istable(L, header), 2, "header must be a table");
  size_t n = lua_rawlen(L, header);
  if (n == 0) luaL_error(L, "csvedit.merge: empty header");
  o->ncols = n;
  const char **hv = scratch(L, n * sizeof *hv);
  size_t *hl = scratch(L, n * sizeof *hl);
  size_t *map = scratch(L, n * sizeof *map);
  const char **fill = scratch(L, n * sizeof *fill);
  lua_getfield(L, sp, "map");
  int mapt = lua_gettop(L);
  lua_getfield(L, sp, "fill");
  int fillt = lua_gettop(L);
  for (size_t j = 0; j < n; j++) {
    lua_rawgeti(L, header, (lua_Integer)j + 1);
    hv[j] = lua_tolstring(L, -1, &hl[j]); /* referenced by the header table */
    if (!hv[j]) hv[j] = "", hl[j] = 0;
    map[j] = lua_istable(L, mapt) ? (lua_rawgeti(L, mapt, (lua_Integer)j + 1), (size_t)lua_tointeger(L, -1)) : 0;
    fill[j] = lua_istable(L, fillt) ? (lua_rawgeti(L, fillt, (lua_Integer)j + 1), lua_tostring(L, -1)) : NULL;
    lua_settop(L, fillt);
  }
  o->header = hv, o->header_len = hl, o->map = map, o->fill = fill;
  o->op = (lua_getfield(L, sp, "op"), lua_tostring(L, -1));
  o->ep_default = (lua_getfield(L, sp, "ep_default"), lua_tostring(L, -1));
  o->mode_all = (lua_getfield(L, sp, "mode_all"), lua_toboolean(L, -1));
  o->prune = (lua_getfield(L, sp, "prune"), lua_toboolean(L, -1));
  o->mb_out = opt_int(L, sp, "mb_out") - 1;
  lua_getfield(L, sp, "src");
  int srct = lua_gettop(L);
  for (int k = 0; k < PS_MERGE_NSRC; k++) o->src[k] = lua_istable(L, srct) ? opt_int(L, srct, srcname[k]) - 1 : -1;
  lua_getfield(L, sp, "mcols");
  for (int k = 0; k < PS_NCOUNTERS; k++) {
    o->mean_out[k] = -1;
    if (lua_istable(L, -1)) {
      lua_rawgeti(L, -1, k + 1);
      o->mean_out[k] = (int)lua_tointeger(L, -1) - 1;
      lua_pop(L, 1);
    }
  }
  lua_getfield(L, sp, "copy");
  int copy = lua_gettop(L);
  o->ncopy = lua_istable(L, copy) ? lua_rawlen(L, copy) : 0;
  int *copy_out = scratch(L, o->ncopy * sizeof *copy_out);
  for (size_t k = 0; k < o->ncopy; k++) {
    lua_rawgeti(L, copy, (lua_Integer)k + 1);
    copy_out[k] = lua_istable(L, -1) ? (lua_rawgeti(L, -1, 2), (int)lua_tointeger(L, -1) - 1) : -1;
    lua_settop(L, copy + 1);
  }
  o->copy_out = copy_out;
  lua_getfield(L, sp, "updates");
  int updates = lua_gettop(L);
  o->updates = read_updates(L, updates, &o->nupdates);
  /* the copied keys by name, so that a row's fields are walked once (not 25 lookups); a key
   * that is not a string, or repeats, leaves the lookups by key */
  lua_createtable(L, 0, (int)o->ncopy);
  int keys = lua_gettop(L), by_name = 1;
  for (size_t k = 0; k < o->ncopy && by_name; k++) {
    lua_rawgeti(L, copy, (lua_Integer)k + 1);
    if (!lua_istable(L, -1) || lua_rawgeti(L, -1, 1) != LUA_TSTRING) {
      by_name = 0;
    } else {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, keys) != LUA_TNIL) by_name = 0;
      lua_pop(L, 1);
      if (by_name) {
        lua_pushinteger(L, (lua_Integer)k + 1);
        lua_rawset(L, keys);
      }
    }
    lua_settop(L, keys);
  }
  if (!by_name) keys = 0;
  loader *ld = scratch(L, sizeof *ld);
  *ld = (loader){L, updates, copy, keys, o->ncopy, scratch(L, o->ncopy * sizeof *ld->vals), {0}};
  o->load = load_update, o->load_ud = ld;
}
static int merge_gc(lua_State *L) {
  ps_merge **box = luaL_checkudata(L, 1, "perfscript.csvedit.merge");
  ps_merge_free(*box);
  *box = NULL;
  return 0;
}

/* The gap records, as the report reads them: {op_type = op, csv_name = name, signature,
 * mb_us, prof_us, diff_us = |mb - prof|, ratio = mb / prof}; the keys made Lua strings once. */
static void push_gaps(lua_State *L, const ps_merge *m, const char *op, const char *name) {
  const ps_merge_result *r = ps_merge_result_of(m);
  static const char *const keys[] = {"op_type", "csv_name", "signature", "mb_us", "prof_us",
                                     "diff_us", "ratio"};
  enum { NK = sizeof keys / sizeof *keys };
  int k0 = lua_gettop(L) + 1;
  for (int k = 0; k < NK; k++) lua_pushstring(L, keys[k]);
  lua_pushstring(L, op ? op : "");
  lua_pushstring(L, name ? name : "");
  int ops = k0 + NK;
  lua_createtable(L, (int)r->ngaps, 0);
  for (size_t i = 0; i < r->ngaps; i++) {
    const ps_merge_gap *g = &r->gaps[i];
    lua_createtable(L, 0, NK);
    for (int k = 0; k < NK; k++) {
      lua_pushvalue(L, k0 + k);
      switch (k) {
      case 0: lua_pushvalue(L, ops); break;
      case 1: lua_pushvalue(L, ops + 1); break;
      case 2: lua_pushstring(L, ps_merge_text(m, g->disp)); break;
      case 3: lua_pushnumber(L, g->mb); break;
      case 4: lua_pushnumber(L, g->prof); break;
      case 5: lua_pushnumber(L, fabs(g->mb - g->prof)); break;
      default: lua_pushnumber(L, g->mb / g->prof); break;
      }
      lua_rawset(L, -3);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_replace(L, k0);
  lua_settop(L, k0);
}

/* Pushes the result: every count, the gaps, pruned rows, duplicates and matches. */
static void push_result(lua_State *L, const ps_merge *m, int status, int matched,
                        const char *op, const char *name) {
  const ps_merge_result *r = ps_merge_result_of(m);
  lua_createtable(L, 0, 10);
  lua_pushstring(L, status == PS_ATOMIC_CREATED ? "created" : status == PS_ATOMIC_REPLACED ? "replaced" : "unchanged");
  lua_setfield(L, -2, "status");
  push_gaps(L, m, op, name);
  lua_setfield(L, -2, "gaps");
  lua_createtable(L, (int)r->ndeleted, 0);
  for (size_t i = 0; i < r->ndeleted; i++) {
    lua_pushstring(L, ps_merge_text(m, r->deleted[i]));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "deleted");
  lua_createtable(L, (int)r->ndups, 0);
  for (size_t i = 0; i < r->ndups; i++) {
    lua_createtable(L, 2, 0);
    lua_pushstring(L, ps_merge_text(m, r->dups[i].disp));
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, r->dups[i].count);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "duplicates");
  lua_pushvalue(L, matched);
  lua_setfield(L, -2, "matched");
  static const char *const names[] = {"updated", "unchanged", "rows", "written"};
  const long v[] = {r->updated, r->unchanged, r->rows, r->written};
  for (int k = 0; k < 4; k++) {
    lua_pushinteger(L, v[k]);
    lua_setfield(L, -2, names[k]);
  }
}

/* The counter (0-based) of each of n output columns, -1 for none, from the counter columns
 * mcols (a Lua array of 1-based output columns, 0: absent) at stack index t; Lua-owned. */
static int *counters_of(lua_State *L, int t, size_t n) {
  int *ctr = scratch(L, n * sizeof *ctr);
  for (size_t j = 0; j < n; j++) ctr[j] = -1;
  for (int k = 0; lua_istable(L, t) && k < PS_NCOUNTERS; k++) {
    lua_Integer c = (lua_rawgeti(L, t, k + 1), lua_tointeger(L, -1));
    lua_pop(L, 1);
    if (c >= 1 && (size_t)c <= n) ctr[c - 1] = k;
  }
  return ctr;
}

/* The cells of the appended row at stack index row (a table keyed by the names in the array
 * header), by the merge's rule (ps_merge_cell), into f and l (num: n numbers of
 * PS_MERGE_NUMW). The values stay on the stack: the caller drops them after the row. */
static void row_cells(lua_State *L, int row, int header, size_t n, const int *ctr, char *num,
                      const char **f, size_t *l) {
  luaL_checkstack(L, (int)n + 4, "appended row");
  double means[PS_NCOUNTERS];
  size_t pl = 0;
  const char *packed = (lua_getfield(L, row, "_m"), lua_tolstring(L, -1, &pl));
  if (packed && pl == sizeof means) memcpy(means, packed, sizeof means);
  for (size_t j = 0; j < n; j++) {
    lua_rawgeti(L, header, (lua_Integer)j + 1);
    int ty = lua_rawget(L, row);
    ps_merge_value v = {PS_MERGE_ABSENT, NULL, 0, 0};
    if (ty == LUA_TNUMBER && !lua_isinteger(L, -1)) v.kind = PS_MERGE_NUM, v.num = lua_tonumber(L, -1);
    else if (ty == LUA_TSTRING || ty == LUA_TNUMBER) v.kind = PS_MERGE_STR, v.s = lua_tolstring(L, -1, &v.len);
    else if (ty != LUA_TNIL) v.kind = PS_MERGE_STR, v.s = luaL_tolstring(L, -1, &v.len);
    l[j] = ps_merge_cell(&v, ctr[j], packed && pl == sizeof means ? means : NULL,
                         num + j * PS_MERGE_NUMW, &f[j]);
  }
}

/* csvedit.cells(row, header, mcols) -> {cell, ...}: an appended row's cells (ps_merge_cell),
 * for a new file's rows (csvedit.rewrite's append). */
static int l_cells(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t n = lua_rawlen(L, 2);
  int *ctr = counters_of(L, 3, n);
  char *num = scratch(L, n * PS_MERGE_NUMW);
  const char **f = scratch(L, n * sizeof *f);
  size_t *l = scratch(L, n * sizeof *l);
  int top = lua_gettop(L);
  row_cells(L, 1, 2, n, ctr, num, f, l);
  lua_createtable(L, (int)n, 0);
  for (size_t j = 0; j < n; j++) {
    lua_pushlstring(L, f[j], l[j]);
    lua_rawseti(L, -2, (lua_Integer)j + 1);
  }
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return 1;
}

static int l_merge(lua_State *L) {
  ps_merge_opts o = {0};
  o.path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checkstack(L, 64, NULL);
  read_opts(L, 2, &o);
  o.stage = ps_optstage(L, 2);
  lua_getfield(L, 2, "append");
  int append_fn = lua_gettop(L);
  ps_merge **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = NULL;
  luaL_setmetatable(L, "perfscript.csvedit.merge"); /* frees the merge on any error */
  char err[700];
  ps_merge *m = *box = ps_merge_open(&o, err, sizeof err);
  if (!m || ps_merge_rows(m, err, sizeof err) != 0) return ps_fail(L, err);
  const ps_merge_result *r = ps_merge_result_of(m);
  lua_newtable(L);
  int matched = lua_gettop(L);
  lua_newtable(L);
  int applied = lua_gettop(L);
  for (size_t i = 0; i < o.nupdates; i++)
    if (r->matched[i]) {
      lua_pushboolean(L, 1);
      lua_rawseti(L, matched, (lua_Integer)o.updates[i].hash);
      if (r->applied[i]) {
        lua_pushboolean(L, 1);
        lua_rawseti(L, applied, (lua_Integer)o.updates[i].hash);
      }
    }
  if (lua_isfunction(L, append_fn)) { /* rows to append, chosen now that the matches are known */
    const char **f = scratch(L, o.ncols * sizeof *f);
    size_t *l = scratch(L, o.ncols * sizeof *l);
    char *num = scratch(L, o.ncols * PS_MERGE_NUMW);
    int header = (lua_getfield(L, 2, "header"), lua_gettop(L));
    int *ctr = (lua_getfield(L, 2, "mcols"), counters_of(L, lua_gettop(L), o.ncols));
    lua_pushvalue(L, append_fn);
    lua_pushvalue(L, matched);
    lua_call(L, 1, 1);
    int app = lua_gettop(L);
    lua_Integer na = lua_istable(L, app) ? (lua_Integer)lua_rawlen(L, app) : 0;
    for (lua_Integer k = 1; k <= na; k++) {
      if (lua_rawgeti(L, app, k) != LUA_TTABLE)
        return luaL_error(L, "csvedit.merge: append row %d is not a table", (int)k);
      row_cells(L, app + 1, header, o.ncols, ctr, num, f, l);
      if (ps_merge_append(m, f, l, err, sizeof err) != 0) return ps_fail(L, err);
      lua_settop(L, app);
    }
  }
  int status = ps_merge_commit(m, err, sizeof err);
  if (status < 0) return ps_fail(L, err);
  const char *name = (lua_getfield(L, 2, "csv_name"), lua_tostring(L, -1));
  push_result(L, m, status, matched, o.op, name);
  lua_pushvalue(L, applied);
  lua_setfield(L, -2, "applied");
  /* the signature table and the displays (some 100 MB for a million rows) go now, not when
   * the collector gets to the box: they would add to the peak of what the run does next */
  ps_merge_free(m);
  *box = NULL;
  return 1;
}

/* csvedit.hotspots(gaps, lo, hi) -> the gaps whose ratio is below lo or above hi, in report
 * order: the larger max(ratio, 1/ratio) first, then the larger diff_us, then the later
 * op_type (bytes), then the earlier position; a total order, so any sort gives this list
 * (report.lua's rule: a Lua comparator cost ~600 instructions a call). */
typedef struct hot { double k, d; const char *o; size_t ol; lua_Integer i; } hot;

static int hot_cmp(const void *pa, const void *pb) {
  const hot *a = pa, *b = pb;
  if (a->k != b->k) return a->k > b->k ? -1 : 1;
  if (a->d != b->d) return a->d > b->d ? -1 : 1;
  size_t n = a->ol < b->ol ? a->ol : b->ol;
  int c = memcmp(a->o, b->o, n);
  if (c != 0) return c > 0 ? -1 : 1;
  if (a->ol != b->ol) return a->ol > b->ol ? -1 : 1;
  return a->i < b->i ? -1 : 1;
}

static double hot_num(lua_State *L, int t, const char *name, lua_Integer i) {
  int isnum;
  lua_getfield(L, t, name);
  double v = lua_tonumberx(L, -1, &isnum);
  if (!isnum) luaL_error(L, "gaps[%d].%s is not a number", (int)i, name);
  lua_pop(L, 1);
  return v;
}

static int l_hotspots(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double lo = luaL_checknumber(L, 2), hi = luaL_checknumber(L, 3);
  lua_settop(L, 3);
  lua_Integer n = luaL_len(L, 1), nh = 0;
  hot *h = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *h, 0);
  lua_newtable(L); /* keeps the op_type strings of h alive */
  int keep = lua_gettop(L);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, i) != LUA_TTABLE) luaL_error(L, "gaps[%d] is not a table", (int)i);
    int g = lua_gettop(L);
    double r = hot_num(L, g, "ratio", i);
    if (r < lo || r > hi) {
      hot *x = &h[nh++];
      x->k = r < 1 / r ? 1 / r : r; /* math.max(r, 1 / r) */
      x->d = hot_num(L, g, "diff_us", i);
      if (lua_getfield(L, g, "op_type") != LUA_TSTRING) luaL_error(L, "gaps[%d].op_type is not a string", (int)i);
      x->o = lua_tolstring(L, -1, &x->ol);
      lua_rawseti(L, keep, nh);
      x->i = i;
    }
    lua_settop(L, keep);
  }
  qsort(h, (size_t)nh, sizeof *h, hot_cmp);
  lua_createtable(L, (int)nh, 0);
  for (lua_Integer j = 0; j < nh; j++) {
    lua_rawgeti(L, 1, h[j].i);
    lua_rawseti(L, -2, j + 1);
  }
  return 1;
}

int luaopen_perfscript_csvedit(lua_State *L) {
  static const luaL_Reg funcs[] = {{"rewrite", l_rewrite}, {"merge", l_merge}, {"cells", l_cells},
                                   {"hotspots", l_hotspots}, {NULL, NULL}};
  luaL_newmetatable(L, "perfscript.csvedit.merge");
  lua_pushcfunction(L, merge_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
