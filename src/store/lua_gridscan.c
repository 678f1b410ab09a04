/* perfscript.gridscan: one streaming pass in C over a database CSV for the shape grid
 * (lua/perfscript/grid/run.lua), so that the existing rows cost no Lua table each.
 *   gridscan.scan(path, {op = kernel, variants = bool, variant_cols = {names},
 *                        reach_cols = {names}, key_n = n | nil})
 *     -> {header = {...}, eol = "\n" | "\r\n", nrows = n,
 *         templates = {{fields of row 1}, ...}   (with variants: the first row of every
 *                                                 distinct variant_cols combination),
 *         existing = {[signature hash] = true}   (perfscript.sig's record hash, op as name),
 *         keys = set | nil                       (with key_n: the rows' compute keys,
 *                                                 gridscan.h; set:has(key) -> bool),
 *         rows = {n = count, [reach col] = {cell, ...}}}  (the rows without a C key, in file
 *                                                 order, column by column: every row without
 *                                                 key_n; a cell the row lacks is nil)
 *     nil, message on a read error. Fields are read as perfscript.csv reads them (no trim). */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "csvread.h"
#include "gridscan.h"
#include "luabind.h"
#include "shape.h"
#include "u64map.h"
#include "writeback_sig.h"

#define KEYSET "perfscript.gridscan.keys"
#define MAXCOLS 32

typedef struct keyset { ps_u64map map; } keyset;

static int keys_gc(lua_State *L) {
  keyset *k = luaL_checkudata(L, 1, KEYSET);
  ps_u64map_free(&k->map);
  memset(&k->map, 0, sizeof k->map);
  return 0;
}

static int keys_has(lua_State *L) {
  keyset *k = luaL_checkudata(L, 1, KEYSET);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  lua_pushboolean(L, ps_u64map_get(&k->map, ps_sig_hash_bytes(s, len)) != PS_U64MAP_NONE);
  return 1;
}

/* gridscan.keep(is, idt, ifm, ep, n, set, flags [, earlier_set, earlier_flags]...) -> true |
 * false | nil: Reach's keep in compute mode for a candidate row's cells (gridscan.h): false
 * when a key of its query is in an earlier kernel's set or its own (an earlier row answers
 * it), else true with its key added to set; nil when the cells are not in the plain form (the
 * caller then takes the Lua path). n < 0: every slot. */
typedef struct keys_probe { keyset **sets; int nsets; } keys_probe;

static int probe(void *ud, const char *key, size_t len) {
  keys_probe *p = ud;
  uint64_t h = ps_sig_hash_bytes(key, len);
  for (int i = 0; i < p->nsets; i++)
    if (ps_u64map_get(&p->sets[i]->map, h) != PS_U64MAP_NONE) return 1;
  return 0;
}

static const char *opt_cell(lua_State *L, int i) { return lua_isnoneornil(L, i) ? NULL : luaL_checkstring(L, i); }

#define KEEP_MAXSETS 256

/* The sets from stack index at on (set, flags pairs; the own set last in sets): the count. */
static int keep_sets(lua_State *L, int at, keyset **sets, unsigned *flags) {
  int top = lua_gettop(L), k = 0;
  if ((top - at) % 2 == 0) return luaL_error(L, "gridscan.keep: an earlier set without its flags");
  if ((top - at + 1) / 2 > KEEP_MAXSETS) return luaL_error(L, "gridscan.keep: too many sets");
  /* the earlier kernels first, each with its own variants, then the kernel's own set */
  for (int i = at + 2; i <= top + 1; i += 2) {
    int j = i <= top ? i : at;
    sets[k] = luaL_checkudata(L, j, KEYSET);
    flags[k++] = (unsigned)luaL_checkinteger(L, j + 1);
  }
  return k;
}

/* keep's answer for one row: 1 (its key added to the own set, sets[nsets - 1]), 0, or -1
 * (not in the plain form); -2 when out of memory. */
static int keep_one(const char *is, const char *idt, const char *ifm, const char *ep, int n,
                    keyset **sets, const unsigned *flags, int nsets) {
  ps_gridscan_view v;
  if (ps_gridscan_view_of(&v, is, idt, ifm, ep, n) != 0) return -1;
  char key[8192];
  keyset *one[1];
  keys_probe p = {one, 1};
  for (int i = 0; i < nsets; i++) {
    one[0] = sets[i];
    int r = ps_gridscan_variant_keys(&v, flags[i], key, sizeof key, probe, &p);
    if (r < 0) return -1;
    if (r) return 0;
  }
  long klen = ps_gridscan_view_key(&v, key, sizeof key);
  if (klen < 0) return -1;
  size_t id = 0;
  if (ps_u64map_put(&sets[nsets - 1]->map, ps_sig_hash_bytes(key, (size_t)klen), &id) < 0) return -2;
  return 1;
}

static int l_keep(lua_State *L) {
  const char *is = opt_cell(L, 1), *idt = opt_cell(L, 2), *ifm = opt_cell(L, 3), *ep = opt_cell(L, 4);
  int n = (int)luaL_checkinteger(L, 5);
  keyset *sets[KEEP_MAXSETS];
  unsigned flags[KEEP_MAXSETS];
  int ns = keep_sets(L, 6, sets, flags);
  int r = keep_one(is, idt, ifm, ep, n, sets, flags, ns);
  if (r == -2) return luaL_error(L, "out of memory");
  if (r < 0) lua_pushnil(L); else lua_pushboolean(L, r);
  return 1;
}

/* gridscan.keep_rows(cells, idx, from, idt, ifm, ep, n, out, set, flags [, earlier_set,
 * earlier_flags]...) -> shadowed [, stop]: keep for the rows idx[from..] whose Input Shapes
 * are cells[idx[p]] (the other cells shared), in order: a kept row's index appended to out,
 * the others counted; stop: the first position keep answers nil for (not decided). */
static int l_keep_rows(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer from = luaL_checkinteger(L, 3);
  const char *idt = opt_cell(L, 4), *ifm = opt_cell(L, 5), *ep = opt_cell(L, 6);
  int n = (int)luaL_checkinteger(L, 7);
  luaL_checktype(L, 8, LUA_TTABLE);
  keyset *sets[KEEP_MAXSETS];
  unsigned flags[KEEP_MAXSETS];
  int ns = keep_sets(L, 9, sets, flags);
  lua_Integer len = (lua_Integer)lua_rawlen(L, 2), nout = (lua_Integer)lua_rawlen(L, 8), shadowed = 0;
  for (lua_Integer p = from; p <= len; p++) {
    lua_rawgeti(L, 2, p);
    lua_Integer i = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (lua_rawgeti(L, 1, i) != LUA_TSTRING) { lua_pop(L, 1); lua_pushinteger(L, shadowed); lua_pushinteger(L, p); return 2; }
    const char *is = lua_tostring(L, -1);  /* anchored by cells */
    lua_pop(L, 1);
    int r = keep_one(is, idt, ifm, ep, n, sets, flags, ns);
    if (r == -2) return luaL_error(L, "out of memory");
    if (r < 0) { lua_pushinteger(L, shadowed); lua_pushinteger(L, p); return 2; }
    if (r) { lua_pushinteger(L, i); lua_rawseti(L, 8, ++nout); }
    else shadowed++;
  }
  lua_pushinteger(L, shadowed);
  return 1;
}

/* Indexes in header (0-based, -1 when absent) of the names in the array at idx. */
static int header_cols(lua_State *L, int idx, char *const *header, size_t n, int *cols, const char **names) {
  int k = 0;
  if (lua_getfield(L, 2, idx ? "reach_cols" : "variant_cols") != LUA_TTABLE) { lua_pop(L, 1); return 0; }
  lua_Integer m = (lua_Integer)lua_rawlen(L, -1);
  for (lua_Integer i = 1; i <= m && k < MAXCOLS; i++) {
    lua_rawgeti(L, -1, i);
    const char *name = luaL_checkstring(L, -1);
    int c = -1;
    for (size_t j = 0; j < n && c < 0; j++) if (strcmp(header[j], name) == 0) c = (int)j;
    names[k] = name;  /* kept alive by opts */
    lua_pop(L, 1);
    cols[k++] = c;
  }
  lua_pop(L, 1);
  return k;
}

static const char *cell(const ps_csv_record *rec, int c) {
  return c >= 0 && (size_t)c < rec->nfields ? rec->fields[c] : NULL;
}

typedef struct scan_state {
  ps_csv_reader *r;
  ps_u64map seen_sigs;
  char **header;
  size_t ncols;
  char *key;
  size_t keycap;
  char **variants;
  size_t *vlens, nvariants;
} scan_state;

static void state_free(scan_state *s) {
  if (s->r) ps_csv_close(s->r);
  for (size_t i = 0; i < s->ncols; i++) free(s->header[i]);
  free(s->header);
  for (size_t i = 0; i < s->nvariants; i++) free(s->variants[i]);
  free(s->variants);
  free(s->vlens);
  free(s->key);
  memset(s, 0, sizeof *s);
}

static int select_columns(scan_state *S, const int *sigcol, const int *rcols, int nr) {
  if (S->ncols == 0) return 0;
  unsigned char *want = calloc(S->ncols, 1);
  if (!want) return -1;
  for (int i = 0; i < PS_SIG_NCOLUMNS; i++) if (sigcol[i] >= 0) want[sigcol[i]] = 1;
  for (int i = 0; i < nr; i++) if (rcols[i] >= 0) want[rcols[i]] = 1;
  int rc = ps_csv_select(S->r, want, S->ncols);
  free(want);
  return rc;
}

static void push_fields(lua_State *L, const ps_csv_record *rec) {
  lua_createtable(L, (int)rec->nfields, 0);
  for (size_t i = 0; i < rec->nfields; i++) {
    lua_pushlstring(L, rec->fields[i], rec->lens[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static int scan_body(lua_State *L, scan_state *S, int out) {
  char err[600];
  const char *path = luaL_checkstring(L, 1);
  const char *op = (lua_getfield(L, 2, "op"), lua_tostring(L, -1));
  int variants = (lua_getfield(L, 2, "variants"), lua_toboolean(L, -1));
  int want_keys = lua_getfield(L, 2, "key_n") != LUA_TNIL;
  int key_n = want_keys ? (int)luaL_checkinteger(L, -1) : -1;
  lua_pop(L, 3);
  S->r = ps_csv_open(path, 0, err, sizeof err);
  if (!S->r) return ps_fail(L, err);
  ps_csv_record rec;
  int st = ps_csv_next(S->r, &rec);
  if (st < 0) return ps_fail(L, ps_csv_error(S->r));
  lua_createtable(L, st ? (int)rec.nfields : 0, 0);
  if (st > 0) {
    S->header = calloc(rec.nfields ? rec.nfields : 1, sizeof *S->header);
    if (!S->header) return luaL_error(L, "out of memory");
    for (size_t i = 0; i < rec.nfields; i++) {
      lua_pushlstring(L, rec.fields[i], rec.lens[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
      if (!(S->header[i] = strdup(rec.fields[i]))) return luaL_error(L, "out of memory");
      S->ncols = i + 1;
    }
  }
  lua_setfield(L, out, "header");
  const char *eol = ps_csv_eol(S->r);
  lua_pushstring(L, eol ? eol : "\n");
  lua_setfield(L, out, "eol");
  /* the signature's columns as perfscript.sig's columns() finds them ("Type" for OP Type) */
  int sigcol[PS_SIG_NCOLUMNS];
  for (int i = 0; i < PS_SIG_NCOLUMNS; i++) {
    sigcol[i] = -1;
    for (size_t j = 0; j < S->ncols && sigcol[i] < 0; j++)
      if (strcmp(S->header[j], ps_sig_columns[i]) == 0) sigcol[i] = (int)j;
    for (size_t j = 0; i == 0 && j < S->ncols && sigcol[i] < 0; j++)
      if (strcmp(S->header[j], "Type") == 0) sigcol[i] = (int)j;
  }
  int vcols[MAXCOLS], rcols[MAXCOLS];
  const char *vnames[MAXCOLS], *rnames[MAXCOLS];
  int nv = header_cols(L, 0, S->header, S->ncols, vcols, vnames);
  int nr = header_cols(L, 1, S->header, S->ncols, rcols, rnames);
  int cIS = -1, cIDT = -1, cIF = -1, cEP = -1;
  for (int i = 0; i < nr; i++) {
    if (strcmp(rnames[i], "Input Shapes") == 0) cIS = rcols[i];
    else if (strcmp(rnames[i], "Input Data Types") == 0) cIDT = rcols[i];
    else if (strcmp(rnames[i], "Input Formats") == 0) cIF = rcols[i];
    else if (strcmp(rnames[i], "EP Size") == 0) cEP = rcols[i];
  }
  ps_sig *g = ps_sig_new();
  if (!g) return luaL_error(L, "out of memory");
  keyset *ks = NULL;
  if (want_keys) {
    ks = lua_newuserdatauv(L, sizeof *ks, 0);
    memset(ks, 0, sizeof *ks);
    luaL_setmetatable(L, KEYSET);
    lua_setfield(L, out, "keys");
  }
  lua_newtable(L);
  int existing = lua_gettop(L);
  lua_newtable(L);
  int templates = lua_gettop(L);
  /* the handed-back rows by column (no Lua table a row): rows[name][i] */
  lua_createtable(L, 0, nr + 1);
  int rows = lua_gettop(L);
  for (int i = 0; i < nr; i++) {
    lua_newtable(L);
    lua_setfield(L, rows, rnames[i]);
  }
  int colt = lua_gettop(L) + 1;  /* the column tables, on the stack during the scan */
  luaL_checkstack(L, nr + 8, "too many reach columns");
  for (int i = 0; i < nr; i++) lua_getfield(L, rows, rnames[i]);
  lua_Integer nrows = 0, nfall = 0, ntempl = 0;
  const char *fail = NULL;
  while ((st = S->r ? ps_csv_next(S->r, &rec) : 0) > 0) {
    nrows++;
    if (nrows == 1 || variants) {
      /* the variant's identity: its cells joined by NUL, as run.lua's load_csv made it */
      size_t len = 0;
      for (int i = 0; i < nv; i++) if (vcols[i] >= 0) len += (cell(&rec, vcols[i]) ? strlen(cell(&rec, vcols[i])) : 0) + 1;
      char *v = malloc(len + 1), *p = v;
      if (!v) { fail = "out of memory"; break; }
      for (int i = 0; i < nv; i++) {
        if (vcols[i] < 0) continue;
        const char *c = cell(&rec, vcols[i]);
        size_t l = c ? strlen(c) : 0;
        memcpy(p, c ? c : "", l);
        p += l;
        *p++ = '\0';
      }
      size_t vlen = (size_t)(p - v);
      int known = 0;
      for (size_t i = 0; i < S->nvariants && !known; i++)
        known = S->vlens[i] == vlen && memcmp(S->variants[i], v, vlen) == 0;
      if (known) {
        free(v);
      } else {
        char **nvs = realloc(S->variants, (S->nvariants + 1) * sizeof *nvs);
        if (nvs) S->variants = nvs;
        size_t *nls = nvs ? realloc(S->vlens, (S->nvariants + 1) * sizeof *nls) : NULL;
        if (!nls) { free(v); fail = "out of memory"; break; }
        S->vlens = nls;
        S->vlens[S->nvariants] = vlen;
        S->variants[S->nvariants++] = v;
        push_fields(L, &rec);
        lua_rawseti(L, templates, ++ntempl);
      }
    }
    ps_sig_row sr = {0};
    sr.op_name = op;
    const char **dst[PS_SIG_NCOLUMNS] = {&sr.op_type, &sr.op_state, &sr.in_shapes, &sr.in_dtypes,
                                         &sr.in_formats, &sr.out_shapes, &sr.out_dtypes, &sr.ep_size};
    for (int i = 0; i < PS_SIG_NCOLUMNS; i++) *dst[i] = cell(&rec, sigcol[i]);
    if (ps_sig_compute(g, &sr) != 0) { fail = "out of memory"; break; }
    lua_pushinteger(L, (lua_Integer)ps_sig_hash(g));
    lua_pushboolean(L, 1);
    lua_rawset(L, existing);
    long klen = -1;
    if (ks) {
      for (;;) {
        klen = S->keycap ? ps_gridscan_compute_key(cell(&rec, cIS), cell(&rec, cIDT), cell(&rec, cIF),
                                                  cell(&rec, cEP), key_n, S->key, S->keycap) : -1;
        if (klen >= 0 || S->keycap >= ((size_t)1 << 20)) break;
        size_t cap = S->keycap ? S->keycap * 4 : 4096;
        char *k = realloc(S->key, cap);
        if (!k) break;
        S->key = k, S->keycap = cap;
      }
      if (klen >= 0) {
        size_t id = 0;
        if (ps_u64map_put(&ks->map, ps_sig_hash_bytes(S->key, (size_t)klen), &id) < 0) { fail = "out of memory"; break; }
      }
    }
    if (klen < 0) {
      nfall++;
      for (int i = 0; i < nr; i++) {
        const char *c = cell(&rec, rcols[i]);
        if (!c) continue;
        lua_pushstring(L, c);
        lua_rawseti(L, colt + i, nfall);
      }
    }
    /* past the template (the first row; with variants any row may be one, read whole), only
     * the signature's and the reach cells are cut out of a row (set before the next read: the
     * scanner's field arrays of this one are not touched while it is in use) */
    if (nrows == 1 && !variants && select_columns(S, sigcol, rcols, nr) != 0) { fail = "out of memory"; break; }
  }
  ps_sig_free(g);
  if (fail) return luaL_error(L, "%s", fail);
  if (st < 0) return ps_fail(L, ps_csv_error(S->r));
  lua_settop(L, rows);
  lua_pushinteger(L, nfall);
  lua_setfield(L, rows, "n");
  lua_setfield(L, out, "rows");
  lua_setfield(L, out, "templates");
  lua_setfield(L, out, "existing");
  lua_pushinteger(L, nrows);
  lua_setfield(L, out, "nrows");
  lua_settop(L, out);
  return 1;
}

static int l_scan(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checkstack(L, 40, NULL);
  lua_settop(L, 2);
  /* the reader and buffers live in a userdata so that an error frees them (__gc) */
  scan_state *S = lua_newuserdatauv(L, sizeof *S, 0);
  memset(S, 0, sizeof *S);
  luaL_setmetatable(L, "perfscript.gridscan.state");
  lua_newtable(L);
  int out = lua_gettop(L);
  int n = scan_body(L, S, out);
  state_free(S);
  return n;
}

/* gridscan.order(keys, n) -> {i, ...}: the last 4 bytes (big-endian) of keys[1..n] read as
 * integers, in the byte order of the keys (perfscript.shape.sort_key's strings, each ending in
 * its row's index): table.sort's order in the C locale, without a Lua comparison per pair. */

static int l_order(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0 && n < (lua_Integer)1 << 31, 2, "count out of range");
  /* the array is a userdata (the collector's memory: an error leaks nothing) */
  ps_shape_key *k = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *k, 0);
  for (lua_Integer i = 0; i < n; i++) {
    if (lua_rawgeti(L, 1, i + 1) != LUA_TSTRING) return luaL_error(L, "gridscan.order: key %d is not a string", (int)i + 1);
    k[i].s = (const unsigned char *)lua_tolstring(L, -1, &k[i].len);  /* anchored by the table */
    lua_pop(L, 1);
    if (k[i].len < 4) return luaL_error(L, "gridscan.order: key %d is shorter than its index", (int)i + 1);
  }
  qsort(k, (size_t)n, sizeof *k, ps_shape_key_cmp);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 0; i < n; i++) {
    const unsigned char *e = (const unsigned char *)k[i].s + k[i].len - 4;
    lua_pushinteger(L, (lua_Integer)((uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3]));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int state_gc(lua_State *L) {
  state_free(luaL_checkudata(L, 1, "perfscript.gridscan.state"));
  return 0;
}

int luaopen_perfscript_gridscan(lua_State *L) {
  static const luaL_Reg keys_meta[] = {{"__gc", keys_gc}, {NULL, NULL}};
  static const luaL_Reg keys_methods[] = {{"has", keys_has}, {NULL, NULL}};
  static const luaL_Reg state_meta[] = {{"__gc", state_gc}, {NULL, NULL}};
  static const luaL_Reg none[] = {{NULL, NULL}};
  ps_newclass(L, KEYSET, keys_meta, keys_methods);
  ps_newclass(L, "perfscript.gridscan.state", state_meta, none);
  static const luaL_Reg funcs[] = {{"scan", l_scan}, {"keep", l_keep}, {"keep_rows", l_keep_rows}, {"order", l_order},
                                   {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
